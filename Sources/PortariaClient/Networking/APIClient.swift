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

/// The app's HTTP client: JSON in and out, the error envelope decoded into `APIClientError`.
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

    /// Sends a request and decodes a 2xx answer as `Response`.
    public func send<Response: Decodable>(_ method: String, _ path: String, body: (any Encodable)? = nil,
                                          headers: [String: String] = [:],
                                          as type: Response.Type = Response.self) async throws -> Response {
        let (data, status) = try await raw(method, path, body: body, headers: headers)
        return try Self.decode(data: data, status: status)
    }

    static func decode<Response: Decodable>(data: Data, status: Int, as type: Response.Type = Response.self) throws -> Response {
        guard (200..<300).contains(status) else {
            if let envelope = try? JSONCoding.decoder().decode(ErrorEnvelope.self, from: data) {
                throw APIClientError.server(status: status, error: envelope.error)
            }
            throw APIClientError.unexpected(status: status)
        }
        // 204 and friends: an empty body reads as `{}` for types that allow it.
        return try JSONCoding.decoder().decode(Response.self, from: data.isEmpty ? Data("{}".utf8) : data)
    }

    /// Sends a request and returns the body and status, whatever the status.
    public func raw(_ method: String, _ path: String, body: (any Encodable)? = nil,
                    headers: [String: String] = [:]) async throws -> (Data, Int) {
        let response = try await exchange(try request(method, path, body: body, headers: headers))
        return (response.body, response.status)
    }

    /// Builds a request with this client's bearer and company (explicit `headers` win).
    public func request(_ method: String, _ path: String, query: [URLQueryItem] = [], body: (any Encodable)? = nil,
                        headers: [String: String] = [:]) throws -> ClientHTTPRequest {
        var request = ClientHTTPRequest(method: method, path: path, query: query)
        if let body {
            request.body = try JSONCoding.encoder().encode(body)
            request.headers["Content-Type"] = "application/json"
        }
        if let bearerToken { request.headers["Authorization"] = "Bearer \(bearerToken)" }
        if let companyID { request.headers["X-Company-Id"] = companyID }
        for (name, value) in headers { request.headers[name] = value }
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
