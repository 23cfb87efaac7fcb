/// A close status code (RFC 6455 §7.4), with the ones this project uses named.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// The purpose of the connection is fulfilled.
    public static let normal = WebSocketCloseCode(1000)
    /// The server is shutting down, or the peer went away.
    public static let goingAway = WebSocketCloseCode(1001)
    /// A malformed frame (unmasked client frame, reserved opcode or bits...).
    public static let protocolError = WebSocketCloseCode(1002)
    public static let unsupportedData = WebSocketCloseCode(1003)
    /// The close frame carried no code (never sent on the wire).
    public static let noStatus = WebSocketCloseCode(1005)
    /// The connection ended without a close frame (never sent on the wire).
    public static let abnormal = WebSocketCloseCode(1006)
    /// A text message that is not UTF-8.
    public static let invalidPayload = WebSocketCloseCode(1007)
    /// Used for slow consumers whose outbound queue overflowed.
    public static let policyViolation = WebSocketCloseCode(1008)
    /// A message over ``WebSocketConfiguration/maxMessageSize``.
    public static let messageTooBig = WebSocketCloseCode(1009)
    public static let internalError = WebSocketCloseCode(1011)
    public static let tryAgainLater = WebSocketCloseCode(1013)

    public var description: String { String(rawValue) }
}

/// Limits and timers of one WebSocket.
public struct WebSocketConfiguration: Sendable {
    /// Largest message accepted; a bigger one closes the socket with 1009.
    public var maxMessageSize: Int = 1 << 20
    /// An idle socket (nothing received for this long) is pinged; `nil` disables pings.
    public var pingInterval: Duration? = .seconds(30)
    /// A pinged peer that sends nothing for this long is dropped.
    public var pongTimeout: Duration = .seconds(10)
    /// How long to wait for the peer's close frame after sending ours.
    public var closeTimeout: Duration = .seconds(5)
    /// Outbound bytes that may wait for a slow reader before it is dropped with 1008.
    public var maxQueuedBytes: Int = 1 << 20
    /// Outbound messages that may wait for a slow reader before it is dropped with 1008.
    public var maxQueuedMessages: Int = 4096

    public init() {}

    /// Server defaults: the server keeps idle sockets alive and detects dead peers.
    public static var server: WebSocketConfiguration { WebSocketConfiguration() }

    /// Client defaults: the server pings; the client only answers (wslay does that).
    public static var client: WebSocketConfiguration {
        var configuration = WebSocketConfiguration()
        configuration.pingInterval = nil
        return configuration
    }
}

/// What a WebSocket delivers, in order; `.closed` is always the last event.
public enum WebSocketEvent: Sendable, Equatable {
    case text(String)
    case binary([UInt8])
    case closed(code: WebSocketCloseCode, reason: String)
}
