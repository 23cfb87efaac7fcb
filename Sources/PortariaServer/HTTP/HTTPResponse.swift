import Foundation
import PortariaCore

/// What a handler answers. A WebSocket upgrade is a response too: the route decides
/// (after authenticating) and the server performs the switch.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)] = []
    public var body: [UInt8] = []
    public var upgrade: (any WebSocketUpgrade)?

    public static func json<T: Encodable>(_ value: T, status: Int = 200,
                                          headers: [(String, String)] = []) -> HTTPResponse {
        do {
            let data = try JSONCoding.encoder().encode(value)
            return HTTPResponse(status: status,
                                headers: [("Content-Type", "application/json")] + headers,
                                body: Array(data))
        } catch {
            return HTTPError(status: 500, code: .internalError, message: "response encoding failed").response
        }
    }

    public static func text(_ text: String, status: Int = 200,
                            contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }

    public static func noContent() -> HTTPResponse { HTTPResponse(status: 204) }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }
}

/// Performed by the server once the 101 answer has been sent: hands the raw socket to
/// the WebSocket layer.
public protocol WebSocketUpgrade: Sendable {
    func upgraded(socket: Int32, bufferedInput: [UInt8], close: @escaping @Sendable () -> Void)
}
