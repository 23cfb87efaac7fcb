import Foundation
import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
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

    /// The lingering close (WebSocketConnection.linger): when the server fails a connection
    /// whose peer is still sending, its close frame must still arrive. The client lets echoes
    /// pile up unread until its receive buffer is full and the rest waits in the server's
    /// kernel send buffer, then sends an invalid text message (the server fails the
    /// connection with 1007, queues its close frame behind those echoes and stops reading)
    /// and 64 KiB the server never reads. Released on those unread bytes, the socket would be
    /// reset, and a reset throws away everything still queued for us, close frame included:
    /// the client would read what its own buffer held, then ECONNRESET.
    @Test("a connection failed while its peer is still sending delivers everything queued, the close frame (1007) last, then a clean end of stream")
    func lingeringClose() async throws {
        try await TestServer.with(["--enable-bench-routes"]) { server in
            let connection = try await server.connect()
            defer { connection.close() }
            let heldByClient = try await offload { () -> Int in
                try connection.send("GET /v1/bench/ws/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                    + "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: \(WebSocketHandshake.makeKey())\r\n\r\n")
                let handshake = try connection.readResponse(timeout: .seconds(10), skipInterim: false)
                try #require(handshake?.status == 101)
                let message = [UInt8](repeating: UInt8(ascii: "e"), count: 60_000)
                for _ in 0..<6 { try connection.send(Self.clientFrame(opcode: 0x1, message)) }
                // Wait (by observation, not by a clock) until our receive buffer stops filling:
                // the server has read the batch and what it echoed beyond our window waits
                // in its kernel send buffer.
                var held = -1, stableChecks = 0
                let deadline = ContinuousClock.now + .seconds(20)
                while stableChecks < 4 && ContinuousClock.now < deadline {
                    let now = connection.unreadByteCount()
                    stableChecks = now == held && now > 0 ? stableChecks + 1 : 0
                    held = now
                    usleep(50_000)
                }
                try connection.send(Self.clientFrame(opcode: 0x1, [0xC3, 0x28])) // not UTF-8
                for _ in 0..<4 { try connection.send(Self.clientFrame(opcode: 0x2, [UInt8](repeating: 0, count: 16_000))) }
                return held
            }
            // Reading late is the point: an old server has released (and reset) the socket by
            // now; a lingering one keeps its queue for us. Nothing waits on this for correctness.
            try await Task.sleep(for: .milliseconds(500))
            let (bytes, reset) = try await offload { try connection.readUntilClosed(timeout: .seconds(20)) }
            #expect(!reset, "the server reset the connection after \(bytes.count) bytes (the client's buffer held \(heldByClient))")
            // The scenario happened: the server had queued more than our buffer held.
            #expect(bytes.count > heldByClient + 2 + 2 + 60_000, "received \(bytes.count), the client's buffer held \(heldByClient)")
            let frames = try Self.serverFrames(bytes)
            #expect(frames.dropLast().allSatisfy { $0.opcode == 0x1 && $0.payload.count == 60_000 })
            let last = try #require(frames.last)
            #expect(last.opcode == 0x8)
            #expect(last.payload.count >= 2 && UInt16(last.payload[0]) << 8 | UInt16(last.payload[1]) == 1007)
            await server.expectHealthy()
        }
    }

    /// A masked client frame (mask key zero: the payload goes out as is, which RFC 6455
    /// allows; the point of masking is unpredictability to proxies, not secrecy).
    static func clientFrame(opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = [0x80 | opcode]
        switch payload.count {
        case ..<126: frame.append(0x80 | UInt8(payload.count))
        case ..<65_536: frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: frame += [0x80 | 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        return frame + [0, 0, 0, 0] + payload
    }

    /// Splits unmasked server frames; throws on a truncated one.
    static func serverFrames(_ bytes: [UInt8]) throws -> [(opcode: UInt8, payload: [UInt8])] {
        var frames: [(opcode: UInt8, payload: [UInt8])] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 2 else { throw HarnessError("truncated frame header at \(offset)") }
            var length = Int(bytes[offset + 1] & 0x7F)
            var header = 2
            if length == 126 {
                guard bytes.count - offset >= 4 else { throw HarnessError("truncated length at \(offset)") }
                length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
                header = 4
            } else if length == 127 {
                guard bytes.count - offset >= 10 else { throw HarnessError("truncated length at \(offset)") }
                length = (2..<10).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }
                header = 10
            }
            guard length >= 0, bytes.count - offset - header >= length else {
                throw HarnessError("truncated frame at \(offset): \(length) bytes announced, \(bytes.count - offset - header) present")
            }
            frames.append((bytes[offset] & 0x0F, Array(bytes[(offset + header)..<(offset + header + length)])))
            offset += header + length
        }
        return frames
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
