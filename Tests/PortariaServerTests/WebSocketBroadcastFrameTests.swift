#if canImport(Glibc)
import Foundation
import Glibc
import PortariaCore
@testable import PortariaServer
@testable import PortariaWebSocket
import PortariaTestSupport
import Testing

/// A broadcast is framed once and written as-is to every idle socket; a socket that does
/// not take it all at once keeps the rest ahead of anything framed after it.
@Suite("WebSocket broadcast frames")
struct WebSocketBroadcastFrameTests {
    @Test("a prebuilt frame has RFC 6455's header: FIN, text, the shortest length form, no mask", arguments: [0, 125, 126, 65_535, 65_536])
    func frameHeader(length: Int) {
        let payload = [UInt8](repeating: UInt8(ascii: "x"), count: length)
        let frame = ServerFrame(text: payload)
        #expect(frame.bytes[0] == 0x81)
        let header: [UInt8]
        switch length {
        case ..<126: header = [0x81, UInt8(length)]
        case ..<65_536: header = [0x81, 126, UInt8(length >> 8), UInt8(length & 0xff)]
        default: header = [0x81, 127, 0, 0, 0, 0, 0, UInt8(length >> 16), UInt8((length >> 8) & 0xff), UInt8(length & 0xff)]
        }
        #expect(Array(frame.bytes.prefix(header.count)) == header)
        #expect(Array(frame.bytes.dropFirst(header.count)) == payload)
    }

    @Test("broadcasts of every length form reach an idle socket intact, and the socket makes no framing state for them")
    func idleSocketTakesPrebuiltFrames() async throws {
        let server = try WebSocketTestServer(configuration: WebSocketIdleTests.withoutPings)
        defer { server.stop() }
        let raw = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        defer { raw.close() }
        let connection = try #require(await server.opened.wait(count: 1).first)
        for length in [0, 125, 126, 65_535, 65_536] {
            let text = String(repeating: "é", count: length / 2) + String(repeating: "a", count: length % 2)
            #expect(await server.hub.broadcast(text: text, topic: "echo") == 1)
            let frame = try await raw.readFrame()
            #expect(frame?.opcode == 1)
            #expect(frame.map { String(decoding: $0.payload, as: UTF8.self) } == text, "\(length) bytes")
            #expect(await connection.loop.submit { connection.holdsFramingStateOnLoop } == false,
                    "a broadcast to an idle socket made wslay state")
        }
        // The socket still reads and echoes through wslay afterwards.
        try await raw.write(RawSocket.frame(opcode: 1, payload: Array("echo".utf8), masked: true))
        #expect(try await raw.readFrame().map { String(decoding: $0.payload, as: UTF8.self) } == "echo")
    }

    @Test("a reader that stops reading mid-broadcast gets every message whole and in order once it reads again, prebuilt and wslay-framed alike")
    func partialWriteKeepsOrder() async throws {
        var configuration = WebSocketIdleTests.withoutPings
        configuration.maxQueuedBytes = 64 << 20
        let server = try WebSocketTestServer(configuration: configuration)
        defer { server.stop() }
        let raw = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        defer { raw.close() }
        // ~30 MB while the client reads nothing: the kernel buffers fill part-way through a
        // frame, the rest of that frame waits in the connection, and the frames after it go
        // through wslay's queue.
        let messages = (0..<60).map { index in
            String(repeating: String(UnicodeScalar(UInt8(65 + index % 26))), count: 500_000 + index)
        }
        for message in messages { #expect(await server.hub.broadcast(text: message, topic: "echo") == 1) }
        for (index, message) in messages.enumerated() {
            let frame = try await raw.readFrame()
            #expect(frame?.opcode == 1, "message \(index)")
            #expect(frame.map { String(decoding: $0.payload, as: UTF8.self) } == message, "message \(index) differs")
        }
        #expect(await server.hub.count() == 1, "the reader was slow, not gone: it stays")
    }
}
#endif
