import Foundation
import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing

/// Framing, head deadlines and response headers of the real `portaria serve`
/// (decisions 0060, 0061): what a hostile client tries at the HTTP layer.
@Suite("HTTP hygiene", .serialized)
struct HTTPHygieneTests {
    @Test("Content-Length with Transfer-Encoding is answered 400 with Connection: close, and the bytes after it are never served", arguments: [
        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 40\r\n",
        "Transfer-Encoding: gzip, chunked\r\n",
    ])
    func smugglingShapeIsRefusedAndClosed(framing: String) async throws {
        try await TestServer.with { server in
            let connection = try await server.connect()
            defer { connection.close() }
            // A front proxy framing by the other header would see the GET as part of the
            // body; whichever way it is read, nothing after the head may be answered.
            let attack = "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + framing + "\r\n"
                + "0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            let (bytes, _) = try await offload { () -> ([UInt8], Bool) in
                try connection.send(attack)
                return try connection.readUntilClosed(timeout: .seconds(20))
            }
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 400 "), "first answer: \(text.prefix(200))")
            #expect(text.lowercased().contains("connection: close"), "no Connection: close: \(text.prefix(400))")
            #expect(text.components(separatedBy: "HTTP/1.1 ").count - 1 == 1, "more than one answer on the connection:\n\(text)")
            #expect(!text.contains("\"status\":\"ok\""), "the smuggled GET /healthz was served")
            await server.expectHealthy()
        }
    }

    @Test("every answer carries X-Content-Type-Options: nosniff: JSON, error envelopes, a 413 from the body check, static pages")
    func noSniffEverywhere() async throws {
        try await TestServer.with { server in
            let health = try await server.request("GET", "/healthz")
            #expect(health.status == 200)
            #expect(health.header("x-content-type-options") == "nosniff", "JSON 200")
            let missing = try await server.request("GET", "/v1/no-such-route")
            #expect(missing.status == 404)
            #expect(missing.header("x-content-type-options") == "nosniff", "error envelope")
            let tooLarge = try await server.request("POST", "/v1/auth/login",
                                                    headers: [("Content-Type", "application/json"), ("Expect", "100-continue")],
                                                    body: [UInt8](repeating: 0x20, count: 2 << 20))
            #expect(tooLarge.status == 413)
            #expect(tooLarge.header("x-content-type-options") == "nosniff", "413 from the access handler")
            let page = try await server.request("GET", "/app/")
            #expect(page.status == 200)
            #expect(page.header("x-content-type-options") == "nosniff", "static page")
            #expect(page.header("x-content-type-options")?.contains(",") != true, "the header is sent twice")
        }
    }

    @Test("a request head trickled a byte at a time is closed at --head-timeout-seconds although every byte restarts the idle timer; others are served")
    func trickledHeadIsClosed() async throws {
        // The environment, not options: a server that does not know it still starts.
        try await TestServer.with([], environment: ["PORTARIA_HEAD_TIMEOUT_SECONDS": "2"]) { server in
            let tricklers = try await (0..<5).asyncMap { _ in try await server.connect() }
            defer { tricklers.forEach { $0.close() } }
            // An endless header, one byte every half second for up to 40 s.
            let head = Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8) + [UInt8](repeating: 0x61, count: 80)
            let closed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for connection in tricklers {
                    group.addTask { try await offload { connection.trickleUntilClosed(head, interval: .milliseconds(500)) } }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(closed == tricklers.count, "\(tricklers.count - closed) of \(tricklers.count) trickled heads still open after 40 s")
            // A head sent whole on a fresh connection is answered as always.
            #expect(try await server.request("GET", "/healthz").status == 200)
        }
    }

    @Test("a WebSocket is not closed by the head deadline: idle past it, it still echoes")
    func upgradedSocketOutlivesHeadDeadline() async throws {
        try await TestServer.with(["--enable-bench-routes"], environment: ["PORTARIA_HEAD_TIMEOUT_SECONDS": "1"]) { server in
            let socket = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/v1/bench/ws/echo")
            var events = socket.events.makeAsyncIterator()
            socket.send(text: "antes")
            #expect(await events.next() == .text("antes"))
            // A connection opened after the socket and silent: once the server has closed it
            // for its head deadline, the socket's own deadline (were it tracked) has passed too.
            let silent = try await server.connect()
            let closed = try await offload { silent.waitForClose(timeout: .seconds(30)) }
            #expect(closed, "the silent connection was never closed")
            socket.send(text: "depois")
            #expect(await events.next() == .text("depois"))
            socket.close(code: .normal)
            #expect(await events.next() == .closed(code: .normal, reason: ""))
        }
    }
}
