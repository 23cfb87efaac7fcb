#if canImport(Glibc)
import Foundation
import Glibc
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// An upgraded WebSocket owns its socket once libmicrohttpd hands its connection back
/// (decision 0125), so libmicrohttpd's own limits no longer see it: the server counts it
/// towards `connectionLimit` and `perIPConnectionLimit` itself, over real loopback sockets.
@Suite("WebSocket connection limits")
struct WebSocketConnectionLimitsTests {
    @Test("an address holding perIPConnectionLimit WebSockets is refused the next with 429; another address is served; a closed WebSocket frees its place")
    func perAddressLimitCountsWebSockets() async throws {
        let limit = 3
        let server = try WebSocketTestServer(configuration: WebSocketIdleTests.withoutPings) { $0.perIPConnectionLimit = limit }
        defer { server.stop() }
        var held: [RawConnection] = []
        defer { held.forEach { $0.close() } }
        for _ in 0..<limit {
            held.append(try await Self.handshake(port: server.port, from: "127.0.0.1", until: { $0 == 101 }).connection)
        }

        let (refusedConnection, refused) = try await Self.handshake(port: server.port, from: "127.0.0.1")
        defer { refusedConnection.close() }
        #expect(refused.status == 429, "a WebSocket beyond the address's limit was admitted")
        #expect(refused.header("retry-after") == "5")
        let error = try refused.json()["error"] as? [String: Any]
        #expect(error?["code"] as? String == "RATE_LIMITED")
        #expect(error?["retry_after"] as? Int == 5)
        #expect(try await offload { refusedConnection.waitForClose(timeout: .seconds(10)) }, "a refused handshake keeps its connection")

        // Another address is neither refused a plain request nor a WebSocket.
        let other = try RawConnection(port: server.port, from: "127.0.0.2")
        defer { other.close() }
        try other.send("GET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let plain = try await offload { try other.readResponse(timeout: .seconds(10)) }
        #expect(plain?.status == 200)
        let otherSocket = try await Self.handshake(port: server.port, from: "127.0.0.2")
        defer { otherSocket.connection.close() }
        #expect(otherSocket.response.status == 101)

        // The first address's closed WebSocket gives its place back.
        held.removeFirst().close()
        let admitted = try await Self.handshake(port: server.port, from: "127.0.0.1", until: { $0 == 101 })
        held.append(admitted.connection)
    }

    @Test("with connectionLimit sockets held as WebSockets, a new connection is closed unanswered, as libmicrohttpd does past its own limit, until one closes")
    func totalLimitCountsWebSockets() async throws {
        let limit = 3
        let server = try WebSocketTestServer(configuration: WebSocketIdleTests.withoutPings) { $0.connectionLimit = limit }
        defer { server.stop() }
        var held: [RawConnection] = []
        defer { held.forEach { $0.close() } }
        for index in 0..<limit {
            held.append(try await Self.handshake(port: server.port, from: "127.0.0.\(index + 1)", until: { $0 == 101 }).connection)
        }

        // Neither a WebSocket nor a plain request: the sockets held are at the limit, and
        // libmicrohttpd's own count (which no longer sees the WebSockets) would admit both.
        for request in [RawSocket.upgradeRequest(path: "/ws/echo"), "GET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"] {
            let refused = try RawConnection(port: server.port, from: "127.0.0.9")
            defer { refused.close() }
            try? refused.send(request)
            let answer = try? await offload { try refused.readResponse(timeout: .seconds(10), skipInterim: false) }
            #expect(answer == nil, "a connection past the limit was answered \(answer?.status ?? 0)")
        }

        held.removeFirst().close()
        let admitted = try await Self.handshake(port: server.port, from: "127.0.0.9", until: { $0 == 101 })
        held.append(admitted.connection)
    }

    // MARK: Helpers

    /// A WebSocket handshake from `source` and its answer (the 101 is returned, not
    /// skipped), tried again until the answer's status satisfies `accept`. A fresh try is
    /// also needed when libmicrohttpd drops the connection unanswered: its own limits
    /// still count an upgraded connection until the connection has been handed back.
    static func handshake(port: UInt16, from source: String,
                          until accept: @escaping @Sendable (Int) -> Bool = { _ in true }) async throws -> (connection: RawConnection, response: RawResponse) {
        return try await RawConnection.firstAnswer(port: port, from: source, sending: RawSocket.upgradeRequest(path: "/ws/echo"), until: accept)
    }
}
#endif
