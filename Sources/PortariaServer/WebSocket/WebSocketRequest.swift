import Foundation
import PortariaCore
import PortariaWebSocket

extension ErrorCode {
    /// 426: the route only speaks WebSocket (or a WebSocket version this server lacks).
    public static let upgradeRequired = ErrorCode("UPGRADE_REQUIRED")
}

/// RFC 6455 §4.2.1: what makes a request a valid WebSocket opening handshake.
enum WebSocketRequest {
    /// Checks the opening handshake and returns the `Sec-WebSocket-Accept` value.
    /// Plain HTTP to a WebSocket route and unknown versions answer 426; a malformed
    /// handshake answers 400, both with the JSON error envelope.
    static func acceptValue(for request: HTTPRequest) throws -> String {
        guard request.method == "GET" else {
            throw HTTPError.invalidRequest("a WebSocket handshake must use GET")
        }
        guard let upgrade = request.header("upgrade"),
              tokens(upgrade).contains("websocket") else {
            // RFC 9110 §15.5.22: a 426 names the protocol to upgrade to.
            throw HTTPError(status: 426, code: .upgradeRequired,
                            message: "this endpoint requires a WebSocket upgrade",
                            headers: [("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13")])
        }
        guard let connection = request.header("connection"), tokens(connection).contains("upgrade") else {
            throw HTTPError.invalidRequest("the Connection header must contain \"upgrade\"", field: "connection")
        }
        guard request.header("sec-websocket-version")?.trimmingCharacters(in: .whitespaces) == "13" else {
            // §4.2.2: name the version we speak so the client can retry with it.
            throw HTTPError(status: 426, code: .upgradeRequired,
                            message: "unsupported WebSocket version; this server speaks version 13",
                            headers: [("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13")])
        }
        guard let key = request.header("sec-websocket-key")?.trimmingCharacters(in: .whitespaces),
              WebSocketHandshake.isValidKey(key) else {
            throw HTTPError.invalidRequest("Sec-WebSocket-Key must be 16 random bytes in base64",
                                           field: "sec-websocket-key")
        }
        return WebSocketHandshake.acceptValue(forKey: key)
    }

    /// Comma-separated header tokens, lowercased (`Connection: keep-alive, Upgrade`).
    private static func tokens(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }
}
