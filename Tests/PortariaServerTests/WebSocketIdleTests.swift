#if canImport(Glibc)
import Foundation
import Glibc
import PortariaCore
@testable import PortariaServer
@testable import PortariaWebSocket
import PortariaTestSupport
import Testing

/// What an idle WebSocket costs and how its timers run, over real loopback sockets: wslay's
/// buffers exist only while a frame is in flight, and only due sockets are woken.
@Suite("WebSocket idle sockets")
struct WebSocketIdleTests {
    @Test("an idle socket holds no framing state; a frame arriving in pieces keeps it until the frame is whole")
    func framingStateOnlyWhileAFrameIsInFlight() async throws {
        let server = try WebSocketTestServer(configuration: Self.withoutPings)
        defer { server.stop() }
        let raw = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        defer { raw.close() }
        let connection = try #require(await server.opened.wait(count: 1).first)
        try await waitUntil("the opened socket is idle") { await !holdsState(connection) }

        let frame = RawSocket.frame(opcode: 1, payload: Array("in two pieces".utf8), masked: true)
        try await raw.write(Array(frame[0..<5]))
        // Half a header and mask: wslay must keep what it read until the rest comes.
        try await waitUntil("the half frame is held") { await holdsState(connection) }
        try await raw.write(Array(frame[5...]))
        let echoed = try await raw.readFrame()
        #expect(echoed?.opcode == 1)
        #expect(echoed.map { String(decoding: $0.payload, as: UTF8.self) } == "in two pieces")
        try await waitUntil("the socket is idle again") { await !holdsState(connection) }
    }

    @Test("a large message in fragments with a ping between them arrives whole, and the state goes once it is echoed")
    func fragmentedMessageKeepsStateUntilItsLastFragment() async throws {
        let server = try WebSocketTestServer(configuration: Self.withoutPings)
        defer { server.stop() }
        let raw = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        defer { raw.close() }
        let connection = try #require(await server.opened.wait(count: 1).first)
        let payload = (0..<60_000).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        try await raw.write(Self.frame(opcode: 1, fin: false, payload: Array(payload[0..<30_000])))
        try await raw.write(Self.frame(opcode: 9, fin: true, payload: Array("mid".utf8)))
        // The pong proves the server read the first fragment: the message is half-assembled.
        let pong = try await raw.readFrame()
        #expect(pong?.opcode == 10)
        #expect(pong.map { String(decoding: $0.payload, as: UTF8.self) } == "mid")
        #expect(await holdsState(connection), "a half-assembled message must keep wslay's state")
        try await raw.write(Self.frame(opcode: 0, fin: false, payload: Array(payload[30_000..<45_000])))
        try await raw.write(Self.frame(opcode: 0, fin: true, payload: Array(payload[45_000...])))
        let echoed = try await raw.readFrame()
        #expect(echoed?.opcode == 1)
        #expect(echoed?.payload == payload)
        try await waitUntil("the socket is idle again") { await !holdsState(connection) }
        // And it still works from a fresh state.
        try await raw.write(RawSocket.frame(opcode: 1, payload: Array("again".utf8), masked: true))
        #expect(try await raw.readFrame().map { String(decoding: $0.payload, as: UTF8.self) } == "again")
    }

    @Test("every one of many idle sockets is pinged, a socket that keeps talking is not dropped for ignoring pings, and is pinged once it falls quiet")
    func idleSocketsArePingedAndTalkersStay() async throws {
        var configuration = WebSocketConfiguration.server
        configuration.pingInterval = .milliseconds(300)
        configuration.pongTimeout = .seconds(5)
        let server = try WebSocketTestServer(configuration: configuration)
        defer { server.stop() }
        var silent: [RawSocket] = []
        for _ in 0..<20 { silent.append(try await RawSocket.upgraded(port: server.port, path: "/ws/echo")) }
        defer { silent.forEach { $0.close() } }
        let talker = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        defer { talker.close() }

        for socket in silent {
            let ping = try await socket.readFrame()
            #expect(ping?.opcode == 9, "each idle socket gets its ping")
        }
        // The talker's messages count as activity: pings it ignores do not end it. It talks
        // until the silent sockets were dropped for not answering theirs.
        var index = 0
        let silentDropped = try await eventually(within: .seconds(30), every: .milliseconds(100)) {
            index += 1
            try await talker.write(RawSocket.frame(opcode: 1, payload: Array("tick \(index)".utf8), masked: true))
            while let frame = try await talker.readFrame() {
                if frame.opcode == 1 {
                    #expect(String(decoding: frame.payload, as: UTF8.self) == "tick \(index)")
                    break
                }
                #expect(frame.opcode == 9, "only pings may come between the echoes")
            }
            return server.closeCodes.count >= silent.count
        }
        #expect(silentDropped, "silent sockets are dropped after the pong timeout")
        #expect(await server.closeCodes.wait(count: silent.count).allSatisfy { $0 == .abnormal })
        try await talker.write(RawSocket.frame(opcode: 1, payload: Array("still here".utf8), masked: true))
        var reply = try await talker.readFrame()
        while reply?.opcode == 9 { reply = try await talker.readFrame() }
        #expect(reply.map { String(decoding: $0.payload, as: UTF8.self) } == "still here")
        #expect(server.closeCodes.count == silent.count, "the talker was not dropped")
        // Quiet now: its wake-ups while it talked found it busy and asked again for later,
        // so it is pinged like any idle socket.
        let quietPing = try await eventually(within: .seconds(30), every: .zero) {
            guard let frame = try await talker.readFrame() else { return false }
            return frame.opcode == 9
        }
        #expect(quietPing, "a socket that falls quiet is pinged")
    }

    @Test("an upgraded socket is handed back to libmicrohttpd at once and keeps working on its own descriptor")
    func upgradedSocketLeavesLibmicrohttpd() async throws {
        let server = try WebSocketTestServer(configuration: Self.withoutPings)
        defer { server.stop() }
        let raw = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        defer { raw.close() }
        // libmicrohttpd's connection (and its memory pool) is released while the socket lives.
        try await waitUntil("libmicrohttpd has its connection back") { server.server.upgrades.current.open == 0 }
        try await raw.write(RawSocket.frame(opcode: 1, payload: Array("after".utf8), masked: true))
        #expect(try await raw.readFrame().map { String(decoding: $0.payload, as: UTF8.self) } == "after")
        try await raw.write(RawSocket.frame(opcode: 8, payload: [0x03, 0xE8], masked: true))
        #expect(try await raw.readCloseCode() == 1000)
        #expect(await server.closeCodes.wait(count: 1) == [.normal])
        #expect(await server.hub.count() == 0)
    }

    @Test("a client connects from the local address it is given")
    func clientBindsItsSourceAddress() async throws {
        let server = try WebSocketTestServer(configuration: Self.withoutPings)
        defer { server.stop() }
        let client = try await WebSocketClient.connect(url: server.url("/ws/echo"), loop: WebSocketTests.loop, timeout: .seconds(60),
                                                       sourceAddress: "127.0.0.2", handlers: .init())
        defer { client.close() }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let status = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client.descriptor, $0, &length) }
        }
        #expect(status == 0)
        #expect(address.sin_addr.s_addr == inet_addr("127.0.0.2"))
    }

    @Test("the server takes as many connections as its open-file limit allows, less a reserve")
    func connectionBudgetFollowsTheOpenFileLimit() {
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let soft = Int(min(limit.rlim_cur, rlim_t(Int32.max)))
        #expect(ResourceLimits.connectionBudget() == max(1024, soft - ResourceLimits.reservedDescriptors))
    }

    // MARK: Helpers

    /// No keep-alive pings: on a loaded machine a test may outlast the 30 s interval, and a
    /// ping would come between the frames these tests read.
    static var withoutPings: WebSocketConfiguration {
        var configuration = WebSocketConfiguration.server
        configuration.pingInterval = nil
        return configuration
    }

    private func holdsState(_ connection: WebSocketConnection) async -> Bool {
        await connection.loop.submit { connection.holdsFramingStateOnLoop }
    }

    /// A masked client frame with the FIN bit as given.
    static func frame(opcode: UInt8, fin: Bool, payload: [UInt8]) -> [UInt8] {
        var frame = RawSocket.frame(opcode: opcode, payload: payload, masked: true)
        if !fin { frame[0] &= 0x7f }
        return frame
    }
}
#endif
