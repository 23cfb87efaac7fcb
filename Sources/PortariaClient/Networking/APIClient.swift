import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PortariaCore

/// Errors a client sees: the server's error envelope, or a transport failure.
public enum APIClientError: Error, Sendable {
    case server(status: Int, error: ErrorBody)
    case transport(String)
    case unexpected(status: Int)
}

/// The app's HTTP client: requests built from the route catalogue (`APIRoutes`), JSON in
/// and out, the error envelope decoded into `APIClientError`. Calls that need the session
/// (a 401 refreshes once) take the same road through `AuthorizedHTTP.send`.
public struct APIClient: Sendable {
    public var baseURL: URL
    public var bearerToken: String?
    public var companyID: String?
    public let transport: any HTTPTransport

    public init(baseURL: URL, transport: any HTTPTransport = URLSessionTransport()) {
        self.baseURL = baseURL
        self.transport = transport
    }

    public init(baseURL: URL, session: URLSession) {
        self.init(baseURL: baseURL, transport: URLSessionTransport(session: session))
    }

    /// `endpoint` with a JSON body, with this client's bearer and company; a 2xx answer
    /// decoded as `Response`.
    public func send<Request: Encodable, Response: Decodable>(_ endpoint: APIEndpoint<Request, Response>, _ body: Request,
                                                              headers: [String: String] = [:]) async throws -> Response {
        try await Self.call(try ClientHTTPRequest(endpoint, json: body, headers: headers), as: Response.self,
                            over: { try await transport.send(authorizing($0), to: baseURL) })
    }

    /// `endpoint` without a body.
    public func send<Response: Decodable>(_ endpoint: APIEndpoint<NoBody, Response>,
                                          headers: [String: String] = [:]) async throws -> Response {
        try await Self.call(try ClientHTTPRequest(endpoint, headers: headers), as: Response.self,
                            over: { try await transport.send(authorizing($0), to: baseURL) })
    }

    /// The one road of a typed call, whoever carries it (this client, or a session that
    /// refreshes on 401): one exchange, a transport failure as `APIClientError.transport`,
    /// the answer decoded by `decode`.
    static func call<Response: Decodable>(_ request: ClientHTTPRequest, as type: Response.Type,
                                          over exchange: (ClientHTTPRequest) async throws -> ClientHTTPResponse) async throws -> Response {
        let answer: ClientHTTPResponse
        do { answer = try await exchange(request) } catch let error as TransportError {
            throw APIClientError.transport(error.detail)
        }
        return try decode(data: answer.body, status: answer.status)
    }

    /// A 2xx answer as `Response` (`Data`: the bytes as they came; an empty body reads as
    /// `{}`, which `NoBody` accepts); any other status as `APIClientError.server` when the
    /// body is the error envelope, else `.unexpected`.
    public static func decode<Response: Decodable>(data: Data, status: Int, as type: Response.Type = Response.self) throws -> Response {
        guard (200..<300).contains(status) else {
            if let envelope = try? JSONCoding.decoder().decode(ErrorEnvelope.self, from: data) {
                throw APIClientError.server(status: status, error: envelope.error)
            }
            throw APIClientError.unexpected(status: status)
        }
        if let bytes = data as? Response { return bytes }
        return try JSONCoding.decoder().decode(Response.self, from: data.isEmpty ? Data("{}".utf8) : data)
    }

    /// `request` with this client's bearer and company, unless it names its own.
    public func authorizing(_ request: ClientHTTPRequest) -> ClientHTTPRequest {
        var request = request
        let named = Set(request.headers.keys.map { $0.lowercased() })
        if let bearerToken, !named.contains("authorization") { request.headers["Authorization"] = "Bearer \(bearerToken)" }
        if let companyID, !named.contains("x-company-id") { request.headers["X-Company-Id"] = companyID }
        return request
    }

    /// One exchange; a transport failure becomes `APIClientError.transport`.
    public func exchange(_ request: ClientHTTPRequest) async throws -> ClientHTTPResponse {
        do {
            return try await transport.send(request, to: baseURL)
        } catch let error as TransportError {
            throw APIClientError.transport(error.detail)
        }
    }
}

extension ClientHTTPRequest {
    /// The request for a catalogue endpoint: how the client core names every API path.
    /// - Throws: `RouteError.emptyParameter` when a path parameter is empty (the path would
    ///   be another route's).
    public init<Request, Response>(_ endpoint: APIEndpoint<Request, Response>, query: [URLQueryItem] = [],
                                   headers: [String: String] = [:], body: Data? = nil) throws {
        self.init(method: endpoint.method.rawValue, path: try endpoint.checkedPath(), query: query, headers: headers, body: body)
    }

    /// The request for a catalogue endpoint with its JSON body.
    public init<Request: Encodable, Response>(_ endpoint: APIEndpoint<Request, Response>, json body: Request,
                                              query: [URLQueryItem] = [], headers: [String: String] = [:]) throws {
        var headers = headers
        if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) { headers["Content-Type"] = "application/json" }
        try self.init(endpoint, query: query, headers: headers, body: try JSONCoding.encoder().encode(body))
    }
}

extension AuthorizedHTTP {
    /// `endpoint` with a JSON body over the session (a 401 refreshes once); a 2xx answer
    /// decoded as `Response`, anything else thrown as `APIClientError`.
    public func send<Request: Encodable, Response: Decodable>(_ endpoint: APIEndpoint<Request, Response>, _ body: Request,
                                                              headers: [String: String] = [:]) async throws -> Response {
        try await APIClient.call(try ClientHTTPRequest(endpoint, json: body, headers: headers), as: Response.self,
                                 over: { try await sendAuthorized($0) })
    }

    /// `endpoint` without a body over the session.
    public func send<Response: Decodable>(_ endpoint: APIEndpoint<NoBody, Response>, query: [URLQueryItem] = [],
                                          headers: [String: String] = [:]) async throws -> Response {
        try await APIClient.call(try ClientHTTPRequest(endpoint, query: query, headers: headers), as: Response.self,
                                 over: { try await sendAuthorized($0) })
    }

    /// A request the session carries as it is, decoded like any typed call (a media URL
    /// the server gave).
    func send<Response: Decodable>(_ request: ClientHTTPRequest, as type: Response.Type) async throws -> Response {
        try await APIClient.call(request, as: type, over: { try await sendAuthorized($0) })
    }
}
