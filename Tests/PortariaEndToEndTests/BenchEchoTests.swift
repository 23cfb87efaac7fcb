import Foundation
import PortariaCore
import PortariaWebSocket
import Testing

/// `GET /v1/bench/ws/echo`, the WebSocket `make conformance` hands to Autobahn|Testsuite:
/// present only with `--enable-bench-routes`, echoing text and binary messages larger
/// than the realtime route's 1 MiB limit.
@Suite("Bench WebSocket echo")
struct BenchEchoTests {
    @Test("without --enable-bench-routes the echo route does not exist")
    func absentByDefault() async throws {
        try await TestServer.with { server in
            let response = try await server.request("GET", "/v1/bench/ws/echo", headers: [
                ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Key", WebSocketHandshake.makeKey()),
            ])
            #expect(response.status == 404)
            #expect(try response.errorEnvelope().code == .notFound)
        }
    }

    @Test("PORTARIA_ENABLE_BENCH_ROUTES=1 enables it: text, binary and a 3 MiB message come back unchanged")
    func echoes() async throws {
        let server = try await TestServer.start(environment: ["PORTARIA_ENABLE_BENCH_ROUTES": "1"])
        do {
            try await exchange(with: server)
        } catch {
            await server.stop()
            throw error
        }
        await server.expectHealthy()
        #expect(await server.stop() == 0)
    }

    private func exchange(with server: TestServer) async throws {
        var configuration = WebSocketConfiguration.client
        configuration.maxMessageSize = 8 << 20
        let socket = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/v1/bench/ws/echo",
                                                       configuration: configuration)
        var events = socket.events.makeAsyncIterator()

        socket.send(text: "olá, portaria ✓")
        #expect(await events.next() == .text("olá, portaria ✓"))

        let binary = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        socket.send(binary: binary)
        #expect(await events.next() == .binary(binary))

        // Over the realtime route's 1 MiB: the echo route's own limit applies.
        let large = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) }
        socket.send(binary: large)
        let echoed = await events.next()
        guard case .binary(let bytes) = echoed else {
            Issue.record("expected the 3 MiB binary message back, got \(String(describing: echoed).prefix(200))")
            return
        }
        #expect(bytes == large)

        socket.close(code: .normal)
        #expect(await events.next() == .closed(code: .normal, reason: ""))
    }
}
