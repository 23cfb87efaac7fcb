import Foundation
import PortariaCore
import PortariaWebSocket

/// `GET /v1/bench/ws/echo`: a WebSocket that sends every text and binary message back
/// as it came. It exists for conformance suites (`make conformance` runs Autobahn's
/// fuzzingclient against it) and is registered only with `--enable-bench-routes`.
///
/// Everything framing-related (fragmentation, UTF-8 of text, control frames, close
/// codes) is the production code path of `/v1/realtime`; only the limits differ.
struct BenchWebSocketEcho {
    let hub: WebSocketHub

    static let path = "/v1/bench/ws/echo"

    /// Autobahn's 9.x cases send single messages of up to 16 MiB and expect them back;
    /// the realtime route keeps the hub's 1 MiB. A slow reader still gets dropped, only
    /// later: the queue may hold a couple of such echoes.
    static var configuration: WebSocketConfiguration {
        var configuration = WebSocketConfiguration.server
        configuration.maxMessageSize = 20 << 20
        configuration.maxQueuedBytes = 64 << 20
        return configuration
    }

    func register(on router: Router) {
        let handlers = WebSocketConnection.Handlers(
            onText: { connection, text in connection.sendOnLoop(text: Array(text.utf8)) },
            onBinary: { connection, bytes in connection.sendOnLoop(binary: bytes) })
        router.get(Self.path) { request in
            try hub.upgrade(request, handlers: handlers, configuration: Self.configuration)
        }
    }
}
