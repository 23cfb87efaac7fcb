import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PortariaCore

/// One HTTP request as the client core builds it: from the route catalogue
/// (`ClientHTTPRequest(APIRoutes.visit(id:))`), or a path the server gave.
public struct ClientHTTPRequest: Sendable, Equatable {
    public var method: String
    /// Relative to the server, percent-encoded (`/v1/visits/a%2Fb`); sent as it is.
    public var path: String
    /// Query items, appended percent-encoded.
    public var query: [URLQueryItem]
    public var headers: [String: String]
    public var body: Data?

    public init(method: String, path: String, query: [URLQueryItem] = [], headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }
}

/// One answer, whatever its status.
public struct ClientHTTPResponse: Sendable, Equatable {
    public var status: Int
    /// Lower-cased names.
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    public var isSuccess: Bool { (200..<300).contains(status) }

    /// The error envelope's body, when this answer is one.
    public var errorBody: ErrorBody? {
        guard !isSuccess else { return nil }
        return (try? JSONCoding.decoder().decode(ErrorEnvelope.self, from: body))?.error
    }
}

/// Why a request got no HTTP answer at all (no route, refused, reset, timed out). The
/// request may or may not have reached the server.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    public var detail: String
    public init(_ detail: String) { self.detail = detail }
    public var description: String { detail }
}

/// The I/O seam of every client HTTP call: URLSession in the apps and on Linux, a
/// scripted fake in unit tests. Throws `TransportError` only when there is no answer.
public protocol HTTPTransport: Sendable {
    func send(_ request: ClientHTTPRequest, to baseURL: URL) async throws -> ClientHTTPResponse
}

/// URLSession (FoundationNetworking on Linux), with a per-request timeout.
public struct URLSessionTransport: HTTPTransport {
    let session: URLSession
    public var timeout: TimeInterval

    public init(session: URLSession? = nil, timeout: TimeInterval = 15) {
        if let session {
            self.session = session
        } else {
            let configuration = URLSessionConfiguration.ephemeral
            // No cookies, no cache: every answer the core reads must come from the server now.
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            configuration.urlCache = nil
            configuration.httpCookieStorage = nil
            self.session = URLSession(configuration: configuration)
        }
        self.timeout = timeout
    }

    /// Whether `path` starts with "/" and holds only characters a URL path may carry, each
    /// "%" starting an escape (what `percentEncodedPath` accepts without trapping).
    static func isPercentEncodedPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/".utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, bytes[index + 1].isHexDigitASCII, bytes[index + 2].isHexDigitASCII else { return false }
                index += 3
            } else {
                guard allowed.contains(bytes[index]) else { return false }
                index += 1
            }
        }
        return true
    }

    public func send(_ request: ClientHTTPRequest, to baseURL: URL) async throws -> ClientHTTPResponse {
        // The path is already percent-encoded: appended as it is, never encoded twice.
        guard Self.isPercentEncodedPath(request.path), var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) else {
            throw TransportError("invalid URL for \(request.path)")
        }
        let base = components.percentEncodedPath.hasSuffix("/") ? String(components.percentEncodedPath.dropLast())
                                                                 : components.percentEncodedPath
        components.percentEncodedPath = base + request.path
        if !request.query.isEmpty { components.queryItems = request.query }
        guard let url = components.url else { throw TransportError("invalid URL for \(request.path)") }
        var urlRequest = URLRequest(url: url, timeoutInterval: timeout)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        do {
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = response as? HTTPURLResponse else { throw TransportError("not an HTTP answer") }
            var headers: [String: String] = [:]
            for (name, value) in http.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
            }
            return ClientHTTPResponse(status: http.statusCode, headers: headers, body: data)
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError(error.localizedDescription)
        }
    }
}

private extension UInt8 {
    var isHexDigitASCII: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
