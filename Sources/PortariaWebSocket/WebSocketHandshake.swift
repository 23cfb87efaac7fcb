import COpenSSL
import Foundation

/// RFC 6455 §4: the opening handshake's key derivation, shared by server and client.
public enum WebSocketHandshake {
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`.
    public static func acceptValue(forKey key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        _ = input.withUnsafeBufferPointer { SHA1($0.baseAddress, $0.count, &digest) }
        return Data(digest).base64EncodedString()
    }

    /// A fresh random `Sec-WebSocket-Key` (16 random bytes, base64).
    public static func makeKey() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        _ = RAND_bytes(&bytes, 16)
        return Data(bytes).base64EncodedString()
    }

    /// A key is valid when it is the base64 form of exactly 16 bytes.
    public static func isValidKey(_ key: String) -> Bool {
        Data(base64Encoded: key)?.count == 16
    }
}
