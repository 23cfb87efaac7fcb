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
    private let session: URLSession

    public init(baseURL: URL, session: URLSession = .shared) {
        self.baseURL = baseURL
        self.session = session
    }

    /// Sends a request and decodes a 2xx answer as `Response`.
    public func send<Response: Decodable>(_ method: String, _ path: String, body: (any Encodable)? = nil,
                                          headers: [String: String] = [:],
                                          as type: Response.Type = Response.self) async throws -> Response {
        let (data, status) = try await raw(method, path, body: body, headers: headers)
        guard (200..<300).contains(status) else {
            if let envelope = try? JSONCoding.decoder().decode(ErrorEnvelope.self, from: data) {
                throw APIClientError.server(status: status, error: envelope.error)
            }
            throw APIClientError.unexpected(status: status)
        }
        return try JSONCoding.decoder().decode(Response.self, from: data)
    }

    /// Sends a request and returns the body and status, whatever the status.
    public func raw(_ method: String, _ path: String, body: (any Encodable)? = nil,
                    headers: [String: String] = [:]) async throws -> (Data, Int) {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        if let body {
            request.httpBody = try JSONCoding.encoder().encode(body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let bearerToken { request.setValue("Bearer \(bearerToken)", forHTTPHeaderField: "Authorization") }
        if let companyID { request.setValue(companyID, forHTTPHeaderField: "X-Company-Id") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        do {
            let (data, response) = try await session.data(for: request)
            return (data, (response as? HTTPURLResponse)?.statusCode ?? 0)
        } catch {
            throw APIClientError.transport(error.localizedDescription)
        }
    }
}
