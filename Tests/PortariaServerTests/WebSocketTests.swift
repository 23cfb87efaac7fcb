#if canImport(Glibc)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import PortariaCore
@testable import PortariaServer
import PortariaWebSocket
import PortariaTestSupport
import Testing

/// WebSocket layer over real loopback sockets: an in-process `HTTPServer` on port 0,
/// the wslay client, and a raw socket for frames no well-behaved client would send.
@Suite("WebSocket")
struct WebSocketTests {
    /// One loop for every test here: 50 ms ticks make keep-alive timers testable quickly.
    static let loop = EventLoop(name: "websocket-tests", tickInterval: .milliseconds(50))

    // MARK: Round trips and close handshake

    @Test func echoRoundTrip() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        let client = try await WebSocketClient.connect(url: server.url("/ws/echo"), loop: Self.loop, timeout: .seconds(60))
        var events = client.events.makeAsyncIterator()
        client.send(text: "olá, portaria")
        #expect(await events.next() == .text("olá, portaria"))
        client.send(binary: [0, 1, 2, 255])
        #expect(await events.next() == .binary([0, 1, 2, 255]))
        client.close(code: .normal, reason: "done")
        #expect(await events.next() == .closed(code: .normal, reason: "done"))
        #expect(await events.next() == nil)
        #expect(await server.closeCodes.wait(count: 1) == [.normal])
        #expect(await server.hub.count() == 0)
    }

    @Test func serverInitiatedCloseCarriesCodeAndReason() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        let client = try await WebSocketClient.connect(url: server.url("/ws/echo"), loop: Self.loop, timeout: .seconds(60))
        client.send(text: "close-me")
        let last = await lastEvent(client.events)
        #expect(last == .closed(code: WebSocketCloseCode(4000), reason: "bye"))
        // The server saw our echoed close frame: a complete handshake, not a dropped socket.
        #expect(await server.closeCodes.wait(count: 1) == [WebSocketCloseCode(4000)])
    }

    @Test func routesCanGreetOnOpen() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        let client = try await WebSocketClient.connect(url: server.url("/ws/welcome"), loop: Self.loop, timeout: .seconds(60))
        var events = client.events.makeAsyncIterator()
        #expect(await events.next() == .text("welcome"))
        client.close()
    }

    @Test func bufferedFramesAfterTheHandshakeAreNotLost() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        // The request and a first frame in one write: libmicrohttpd may read the frame
        // together with the head and hand it over as `bufferedInput`.
        let raw = try await RawSocket.connect(port: server.port)
        var bytes = Array(RawSocket.upgradeRequest(path: "/ws/echo").utf8)
        bytes += RawSocket.frame(opcode: 1, payload: Array("early".utf8), masked: true)
        try await raw.write(bytes)
        let head = try await raw.readHead()
        #expect(head.hasPrefix("HTTP/1.1 101"))
        let frame = try await raw.readFrame()
        #expect(frame?.opcode == 1)
        #expect(frame.map { String(decoding: $0.payload, as: UTF8.self) } == "early")
        raw.close()
    }

    @Test func burstsUnderBackPressureArriveIntactAndInOrder() async throws {
        var configuration = WebSocketConfiguration.server
        configuration.maxQueuedBytes = 64 << 20
        let server = try WebSocketTestServer(configuration: configuration)
        defer { server.stop() }
        var clientConfiguration = WebSocketConfiguration.client
        clientConfiguration.maxQueuedBytes = 64 << 20
        let client = try await WebSocketClient.connect(url: server.url("/ws/echo"),
                                                       configuration: clientConfiguration, loop: Self.loop, timeout: .seconds(60))
        // ~10 MB each way in one burst: both kernel buffers fill, so sends stop midway
        // through frames and resume on EPOLLOUT.
        let messages = (0..<80).map { index in
            String(repeating: String(UnicodeScalar(UInt8(65 + index % 26))), count: 120_000 + index)
        }
        for message in messages { client.send(text: message) }
        var events = client.events.makeAsyncIterator()
        for (index, message) in messages.enumerated() {
            let event = await events.next()
            guard case .text(let text) = event else {
                Issue.record("message \(index): \(String(describing: event))")
                return
            }
            #expect(text == message, "message \(index) differs")
        }
        client.close()
    }

    @Test func sendsFromManyTasksAtOnceAllArrive() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        let client = try await WebSocketClient.connect(url: server.url("/ws/echo"), loop: Self.loop, timeout: .seconds(60))
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask { for index in 0..<50 { client.send(text: "\(task)-\(index)") } }
            }
        }
        var received = Set<String>()
        for await event in client.events {
            guard case .text(let text) = event else { break }
            received.insert(text)
            if received.count == 400 { break }
        }
        #expect(received.count == 400)
        client.close()
    }

    // MARK: Keep-alive

    @Test func idleSocketsArePingedAndLiveClientsStay() async throws {
        var configuration = WebSocketConfiguration.server
        configuration.pingInterval = .milliseconds(200)
        // Long enough that the live client below answers in time on a loaded machine (at
        // 300 ms it was dropped once at load 12: its loop answered late); the silent peer
        // is dropped all the same, just later.
        configuration.pongTimeout = .seconds(2)
        let server = try WebSocketTestServer(configuration: configuration)
        defer { server.stop() }

        // A silent peer gets a ping, and is dropped when it does not answer.
        let raw = try await RawSocket.connect(port: server.port)
        try await raw.write(Array(RawSocket.upgradeRequest(path: "/ws/echo").utf8))
        #expect(try await raw.readHead().hasPrefix("HTTP/1.1 101"))

        // A wslay client answers pings by itself and stays connected through several.
        let client = try await WebSocketClient.connect(url: server.url("/ws/echo"), loop: Self.loop, timeout: .seconds(60))

        let ping = try await raw.readFrame()
        #expect(ping?.opcode == 9)
        let sawEnd = try await eventually(within: .seconds(20), every: .zero) {
            guard let frame = try await raw.readFrame() else { return true }
            #expect(frame.opcode == 8 || frame.opcode == 9)
            return false
        }
        #expect(sawEnd, "the server should drop a peer that never answers pings")
        raw.close()

        try await Task.sleep(for: .milliseconds(600))
        var events = client.events.makeAsyncIterator()
        client.send(text: "still here")
        #expect(await events.next() == .text("still here"))
        #expect(await server.closeCodes.wait(count: 1) == [.abnormal])
        client.close()
    }

    // MARK: Failing the connection

    @Test func oversizedMessageClosesWith1009() async throws {
        var configuration = WebSocketConfiguration.server
        configuration.maxMessageSize = 64 * 1024
        let server = try WebSocketTestServer(configuration: configuration)
        defer { server.stop() }
        let client = try await WebSocketClient.connect(url: server.url("/ws/echo"), loop: Self.loop, timeout: .seconds(60))
        client.send(text: String(repeating: "x", count: 64 * 1024 + 1))
        let last = await lastEvent(client.events)
        #expect(last.map(closeCode) == .messageTooBig)
        #expect(await server.closeCodes.wait(count: 1) == [.messageTooBig])
    }

    @Test func invalidUTF8TextClosesWith1007() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        let raw = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        try await raw.write(RawSocket.frame(opcode: 1, payload: [0x6f, 0xc3, 0x28, 0x21], masked: true))
        #expect(try await raw.readCloseCode() == 1007)
        #expect(await server.closeCodes.wait(count: 1) == [.invalidPayload])
        raw.close()
    }

    @Test func unmaskedClientFrameClosesWith1002() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        let raw = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        try await raw.write(RawSocket.frame(opcode: 1, payload: Array("hi".utf8), masked: false))
        #expect(try await raw.readCloseCode() == 1002)
        #expect(await server.closeCodes.wait(count: 1) == [.protocolError])
        raw.close()
    }

    @Test func reservedOpcodeClosesWith1002() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        let raw = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        try await raw.write(RawSocket.frame(opcode: 3, payload: [1, 2], masked: true))
        #expect(try await raw.readCloseCode() == 1002)
        raw.close()
    }

    // MARK: Opening handshake

    @Test func badHandshakesAreRefusedWithTheErrorEnvelope() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        let key = WebSocketHandshake.makeKey()
        let cases: [(headers: String, status: Int, code: String)] = [
            ("", 426, "UPGRADE_REQUIRED"),
            ("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 8\r\nSec-WebSocket-Key: \(key)\r\n", 426, "UPGRADE_REQUIRED"),
            ("Upgrade: websocket\r\nConnection: keep-alive\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: \(key)\r\n", 400, "INVALID_REQUEST"),
            ("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: c2hvcnQ=\r\n", 400, "INVALID_REQUEST"),
            ("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n", 400, "INVALID_REQUEST"),
        ]
        for (headers, status, code) in cases {
            let raw = try await RawSocket.connect(port: server.port)
            try await raw.write(Array("GET /ws/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)\r\n".utf8))
            let (head, body) = try await raw.readResponse()
            raw.close()
            #expect(head.hasPrefix("HTTP/1.1 \(status)"), "\(headers) → \(head)")
            if status == 426 {
                #expect(head.contains("Upgrade: websocket\r\n") && head.contains("Sec-WebSocket-Version: 13\r\n"))
            }
            let envelope = try JSONDecoder().decode(ErrorEnvelope.self, from: Data(body))
            #expect(envelope.error.code.rawValue == code)
        }
        // The client reports the refusal with its status and body.
        await #expect(throws: WebSocketClientError.self) {
            _ = try await WebSocketClient.connect(url: server.url("/not-here"), loop: Self.loop, timeout: .seconds(60))
        }
    }

    @Test func clientRejectsAServerWithAWrongAccept() async throws {
        let listener = try RawListener()
        listener.serveOnce(response: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                           + "Connection: Upgrade\r\nSec-WebSocket-Accept: bm90IHRoZSByaWdodCBvbmU=\r\n\r\n")
        await #expect(throws: WebSocketClientError.invalidAccept) {
            _ = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(listener.port)/x", loop: Self.loop, timeout: .seconds(60))
        }
    }

    // MARK: Back-pressure

    @Test func slowConsumerIsDroppedWithBoundedMemory() async throws {
        var configuration = WebSocketConfiguration.server
        configuration.pingInterval = nil
        configuration.maxQueuedBytes = 256 * 1024
        let server = try WebSocketTestServer(configuration: configuration)
        defer { server.stop() }
        // Never reads: the kernel buffers fill, then the server's queue, then it is dropped.
        let raw = try await RawSocket.upgraded(port: server.port, path: "/ws/echo")
        let residentBefore = residentSetBytes()
        let chunk = String(repeating: "y", count: 32 * 1024)
        var pushed = 0
        while pushed < 4000, await server.hub.broadcast(text: chunk, topic: "echo") > 0 {
            pushed += 1
        }
        #expect(pushed < 4000, "a reader that never reads must be dropped")
        #expect(await server.closeCodes.wait(count: 1) == [.policyViolation])
        #expect(await server.hub.count() == 0)
        // Kernel socket buffers (a few MB on loopback) plus our 256 KB queue, not 125 MB.
        let grown = residentSetBytes() - residentBefore
        #expect(grown < 64 << 20, "resident memory grew by \(grown) bytes")
        raw.close()
    }

    // MARK: Hub

    @Test func broadcastReachesTwoHundredConnections() async throws {
        let server = try WebSocketTestServer()
        defer { server.stop() }
        let received = Locked(0)
        let everyone = AsyncStream<Void>.makeStream()
        var connections: [WebSocketConnection] = []
        for _ in 0..<200 {
            let connection = try await WebSocketClient.connect(
                url: server.url("/ws/room"), loop: Self.loop,
                handlers: .init(onText: { _, text in
                    guard text == "to everyone" else { return }
                    if received.withLock({ $0 += 1; return $0 }) == 200 { everyone.continuation.finish() }
                }))
            connections.append(connection)
        }
        // The upgrade completes on the loop after the 101: wait until all have joined.
        try await waitUntil { await server.hub.count(topic: "room") == 200 }
        #expect(await server.hub.broadcast(text: "to everyone", topic: "room") == 200)
        for await _ in everyone.stream {}
        #expect(received.current == 200)
        for connection in connections { connection.close() }
    }

    @Test func shutdownClosesEverySocketWith1001() async throws {
        let server = try WebSocketTestServer()
        var clients: [WebSocketClientConnection] = []
        for _ in 0..<5 {
            clients.append(try await WebSocketClient.connect(url: server.url("/ws/echo"), loop: Self.loop, timeout: .seconds(60)))
        }
        try await waitUntil { await server.hub.count() == 5 }
        await server.hub.shutdown()
        await server.server.shutdown(gracePeriod: .seconds(1))
        for client in clients {
            #expect(await lastEvent(client.events) == .closed(code: .goingAway, reason: "server shutting down"))
        }
        #expect(await server.closeCodes.wait(count: 5).allSatisfy { $0 == .goingAway })
    }
}

// MARK: - Application wiring

@Suite("WebSocket bench routes")
struct WebSocketApplicationTests {
    @Test func benchRoutesBroadcastAndShutdownSays1001() async throws {
        let path = NSTemporaryDirectory() + "ws-app-\(UUID().uuidString).db"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.databaseURL = "sqlite://" + path
        configuration.benchRoutes = true
        let application = try await Application(configuration: configuration, log: Log(minimumLevel: .error))
        try await application.start()
        let port = application.server.port

        let client = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/v1/bench/ws")
        try await waitUntil { await application.webSockets.count(topic: BenchRoutes.topic) == 1 }
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/bench/broadcast")!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"payload": "seq=1"}"#.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(answer?["connections"] as? Int == 1)

        var events = client.events.makeAsyncIterator()
        #expect(await events.next() == .text("seq=1"))
        await application.shutdown()
        #expect(await events.next() == .closed(code: .goingAway, reason: "server shutting down"))
    }
}

// MARK: - Helpers

/// An `HTTPServer` on 127.0.0.1:0 with WebSocket routes backed by a private hub.
struct WebSocketTestServer {
    let server: HTTPServer
    let hub: WebSocketHub
    let closeCodes = Collector<WebSocketCloseCode>()
    /// The server side of every `/ws/echo` socket, as it opens.
    let opened = Collector<WebSocketConnection>()
    var port: UInt16 { server.port }

    /// - Parameters:
    ///   - http: changes to the listener's limits.
    ///   - serve: makes the server (a test may give it its own descriptor duplication).
    init(configuration: WebSocketConfiguration = .server,
         http change: (inout HTTPServerConfiguration) -> Void = { _ in },
         serve: (Router, HTTPServerConfiguration) -> HTTPServer = {
             HTTPServer(router: $0, configuration: $1, log: Log(minimumLevel: .error))
         }) throws {
        let hub = WebSocketHub(loop: WebSocketTests.loop, configuration: configuration, log: Log(minimumLevel: .error))
        let closeCodes = closeCodes, opened = opened
        let router = Router()
        let handlers = WebSocketConnection.Handlers(
            onOpen: { opened.append($0) },
            onText: { connection, text in
                if text == "close-me" { connection.close(code: WebSocketCloseCode(4000), reason: "bye") }
                else { connection.send(text: text) }
            },
            onBinary: { connection, bytes in connection.send(binary: bytes) },
            onClose: { _, code, _ in closeCodes.append(code) })
        router.get("/ws/echo") { request in try hub.upgrade(request, topics: ["echo"], handlers: handlers) }
        router.get("/ws/room") { request in try hub.upgrade(request, topics: ["room"]) }
        router.get("/ws/welcome") { request in
            try hub.upgrade(request, handlers: .init(onOpen: { $0.sendOnLoop(text: Array("welcome".utf8)) }))
        }
        router.get("/plain") { _ in .text("plain") }
        var http = HTTPServerConfiguration()
        http.port = 0
        http.threadPoolSize = 2
        change(&http)
        server = serve(router, http)
        try server.start()
        self.hub = hub
    }

    func url(_ path: String) -> String { "ws://127.0.0.1:\(port)\(path)" }

    /// Drops whatever is still open without waiting (tests end fast).
    func stop() {
        let hub = hub, server = server
        Task {
            await hub.shutdown(timeout: .milliseconds(200))
            await server.shutdown(gracePeriod: .milliseconds(200))
        }
    }
}

/// Values appended from the event loop, awaited by a test.
final class Collector<Value: Sendable>: Sendable {
    private let values = Locked<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var count: Int { values.current.count }
    /// The first `count` values, waiting up to twenty seconds for them.
    func wait(count: Int) async -> [Value] {
        _ = await eventually(within: .seconds(20), every: .milliseconds(10)) { values.current.count >= count }
        return Array(values.current.prefix(count))
    }
}

struct TimedOut: Error {}

/// The stream's last event (its `.closed`), waiting up to five seconds.
func lastEvent(_ events: AsyncStream<WebSocketEvent>) async -> WebSocketEvent? {
    await withTaskGroup(of: WebSocketEvent?.self) { group in
        group.addTask {
            var last: WebSocketEvent?
            for await event in events { last = event }
            return last
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(5))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

func closeCode(_ event: WebSocketEvent) -> WebSocketCloseCode? {
    if case .closed(let code, _) = event { return code }
    return nil
}

func residentSetBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kilobytes = Int(line.split(separator: " ")[1]) else { return 0 }
    return kilobytes * 1024
}

/// A blocking TCP socket for hand-made frames. Blocking calls run on threads of their
/// own, never on the cooperative pool the server's handlers need.
final class RawSocket: Sendable {
    let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    static func connect(port: UInt16) async throws -> RawSocket {
        try await blocking {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard result == 0 else { Glibc.close(descriptor); throw TimedOut() }
            return RawSocket(descriptor: descriptor)
        }
    }

    /// Connected and upgraded, ready for frames.
    static func upgraded(port: UInt16, path: String) async throws -> RawSocket {
        let raw = try await connect(port: port)
        try await raw.write(Array(upgradeRequest(path: path).utf8))
        let head = try await raw.readHead()
        guard head.hasPrefix("HTTP/1.1 101") else { throw TimedOut() }
        return raw
    }

    static func upgradeRequest(path: String) -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: \(WebSocketHandshake.makeKey())\r\n\r\n"
    }

    /// One final frame, masked as a client must (or not, to provoke 1002).
    static func frame(opcode: UInt8, payload: [UInt8], masked: Bool) -> [UInt8] {
        var frame: [UInt8] = [0x80 | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            frame.append(maskBit | UInt8(payload.count))
        } else {
            frame.append(maskBit | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        }
        guard masked else { return frame + payload }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return frame
    }

    func write(_ bytes: [UInt8]) async throws {
        let descriptor = descriptor
        try await Self.blocking {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes[offset...].withUnsafeBufferPointer { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard sent > 0 else { throw TimedOut() }
                offset += sent
            }
        }
    }

    /// Reads exactly `count` bytes; nil at end of stream.
    func read(_ count: Int) async throws -> [UInt8]? {
        let descriptor = descriptor
        return try await Self.blocking {
            var bytes = [UInt8](repeating: 0, count: count)
            var offset = 0
            while offset < count {
                let received = bytes.withUnsafeMutableBufferPointer { recv(descriptor, $0.baseAddress! + offset, count - offset, 0) }
                if received == 0 { return nil }
                if received < 0 {
                    if errno == ECONNRESET { return nil }
                    throw TimedOut()
                }
                offset += received
            }
            return bytes
        }
    }

    /// The response head, read byte by byte so no frame byte is consumed.
    func readHead() async throws -> String {
        var head: [UInt8] = []
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard let byte = try await read(1) else { throw TimedOut() }
            head += byte
        }
        return String(decoding: head, as: UTF8.self)
    }

    /// A complete HTTP response: head and `Content-Length` body.
    func readResponse() async throws -> (head: String, body: [UInt8]) {
        let head = try await readHead()
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        return (head, try await read(length) ?? [])
    }

    /// One unmasked server frame; nil at end of stream.
    func readFrame() async throws -> (opcode: UInt8, payload: [UInt8])? {
        guard let header = try await read(2) else { return nil }
        var length = Int(header[1] & 0x7f)
        if length == 126 {
            guard let extended = try await read(2) else { return nil }
            length = Int(extended[0]) << 8 | Int(extended[1])
        } else if length == 127 {
            guard let extended = try await read(8) else { return nil }
            length = extended.reduce(0) { $0 << 8 | Int($1) }
        }
        guard let payload = try await read(length) else { return nil }
        return (header[0] & 0x0f, payload)
    }

    /// Skips frames until a close frame and returns its status code.
    func readCloseCode() async throws -> Int? {
        while let frame = try await readFrame() {
            if frame.opcode == 8 {
                return frame.payload.count >= 2 ? Int(frame.payload[0]) << 8 | Int(frame.payload[1]) : 1005
            }
        }
        return nil
    }

    func close() { Glibc.close(descriptor) }

    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            // A thread of its own: GCD's global pool is only as wide as the CPU count, and
            // parallel tests blocked in recv would queue behind each other.
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}

/// A one-shot fake server on 127.0.0.1:0 that answers any request with a fixed response.
final class RawListener: Sendable {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 4) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { Glibc.close(descriptor); throw TimedOut() }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    func serveOnce(response: String) {
        let descriptor = descriptor
        Thread {
            let connection = accept(descriptor, nil, nil)
            var head: [UInt8] = []
            var byte: UInt8 = 0
            while !head.suffix(4).elementsEqual([13, 10, 13, 10]) && recv(connection, &byte, 1, 0) == 1 { head.append(byte) }
            let bytes = Array(response.utf8)
            _ = send(connection, bytes, bytes.count, Int32(MSG_NOSIGNAL))
            usleep(200_000)
            Glibc.close(connection)
            Glibc.close(descriptor)
        }.start()
    }
}
#endif
