import Foundation
import PortariaCore

/// What the user sees about the live connection (Home shows it: "estado de conexão visível").
public enum ConnectionState: String, Sendable, Equatable {
    /// First connection in progress.
    case connecting
    /// Subscribed: every event reaches this screen as it commits.
    case live
    /// Lost; trying again with backoff (the screen shows what the last REST read said).
    case reconnecting
    /// Stopped (background, logged out).
    case offline
}

/// One open realtime socket.
public protocol RealtimeConnection: Sendable {
    /// Text frames in order; the stream finishes when the socket closes.
    var messages: AsyncStream<String> { get }
    func send(_ text: String)
    func close()
}

/// Why a socket could not be opened.
public enum RealtimeConnectError: Error, Sendable, Equatable {
    /// The server refused the upgrade with this status (401: the token needs a refresh).
    case rejected(status: Int)
    /// No answer (network, refused, timed out).
    case unreachable(String)
}

/// Opens realtime sockets: the wslay client on Linux (`WebSocketRealtimeTransport`),
/// `URLSessionWebSocketTask` on Apple platforms (PortariaClientApple), a fake in tests.
public protocol RealtimeTransport: Sendable {
    /// - Parameters:
    ///   - url: `ws://…/v1/realtime?…` (or `wss://`).
    ///   - headers: `Authorization` and `X-Company-Id`.
    func connect(url: URL, headers: [String: String]) async throws(RealtimeConnectError) -> any RealtimeConnection
}

#if canImport(Glibc)
import PortariaWebSocket

/// The Linux transport: `PortariaWebSocket`'s wslay client.
public struct WebSocketRealtimeTransport: RealtimeTransport {
    /// The client pings: a phone whose network vanished without a FIN learns it within
    /// `pingInterval + pongTimeout` instead of waiting for the server's next event.
    public var configuration: WebSocketConfiguration

    public init(pingInterval: Duration = .seconds(20), pongTimeout: Duration = .seconds(10)) {
        var configuration = WebSocketConfiguration.client
        configuration.pingInterval = pingInterval
        configuration.pongTimeout = pongTimeout
        self.configuration = configuration
    }

    public func connect(url: URL, headers: [String: String]) async throws(RealtimeConnectError) -> any RealtimeConnection {
        var text = url.absoluteString
        // The wslay client speaks plain ws:// (TLS is terminated in front of the server
        // on Linux deployments; the Apple transport does wss://).
        if text.hasPrefix("wss://") || text.hasPrefix("https://") {
            throw .unreachable("TLS WebSockets are not supported by the Linux transport")
        }
        do {
            let connection = try await WebSocketClient.connect(url: text, headers: headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                                                               configuration: configuration, timeout: .seconds(10))
            return WebSocketRealtimeConnection(connection)
        } catch let error as WebSocketClientError {
            if case .handshakeRejected(let status, _) = error, status > 0 { throw .rejected(status: status) }
            text = error.description
            throw .unreachable(text)
        } catch {
            throw .unreachable(String(describing: error))
        }
    }
}

final class WebSocketRealtimeConnection: RealtimeConnection {
    let connection: WebSocketClientConnection
    let messages: AsyncStream<String>

    init(_ connection: WebSocketClientConnection) {
        self.connection = connection
        let events = connection.events
        messages = AsyncStream { continuation in
            let task = Task {
                for await event in events {
                    if case .text(let text) = event { continuation.yield(text) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func send(_ text: String) { connection.send(text: text) }
    func close() { connection.close(code: .normal, reason: "") }
}
#endif

/// A transport that never connects: for platforms whose adapter lives elsewhere
/// (PortariaClientApple), so code that builds a `RealtimeClient` still compiles there.
public struct UnavailableRealtimeTransport: RealtimeTransport {
    public init() {}
    public func connect(url: URL, headers: [String: String]) async throws(RealtimeConnectError) -> any RealtimeConnection {
        throw .unreachable("no realtime transport on this platform")
    }
}
