#if canImport(Glibc)
import Foundation
import Glibc
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

@Suite("Socket census")
struct SocketCensusTests {
    @Test("a socket is counted once from its accept to its close, whether libmicrohttpd or a WebSocket closes it")
    func countedOnce() {
        var census = SocketCensus(limits: .init(total: 10, perAddress: 5))
        census.opened(1, address: "a")
        census.opened(2, address: "a")
        census.opened(3, address: "b")
        #expect(census.total == 3)
        #expect(census.holding("a") == 2)
        let address = census.handedOver(1)
        #expect(address == "a")
        #expect(census.handedOver(1) == nil, "a socket is handed over once")
        census.closed(1)   // libmicrohttpd lets go of its connection: the WebSocket holds the socket
        #expect(census.holding("a") == 2)
        census.closed(2)
        #expect(census.holding("a") == 1)
        census.released(address: "a")
        #expect(census.holding("a") == 0)
        census.closed(3)
        census.closed(3)
        #expect(census.total == 0)
        #expect(census.byAddress.isEmpty)
        #expect(census.handedOver(99) == nil, "an untracked connection owes nothing")
    }

    @Test("an upgrade may bring the counts to the limits, not past them; a limit of 0 is none")
    func refusals() {
        var census = SocketCensus(limits: .init(total: 4, perAddress: 2))
        census.opened(1, address: "a")
        census.opened(2, address: "a")
        #expect(census.refusal(forUpgradeOf: 2) == nil)
        census.opened(3, address: "a")
        #expect(census.refusal(forUpgradeOf: 3) == .address)
        census.opened(4, address: "b")
        #expect(census.refusal(forUpgradeOf: 4) == nil)
        census.opened(5, address: "c")
        #expect(census.refusal(forUpgradeOf: 5) == .total)
        census.closed(3)
        #expect(census.refusal(forUpgradeOf: 2) == nil)
        #expect(census.refusal(forUpgradeOf: 5) == nil)

        var unlimited = SocketCensus(limits: .init(total: 0, perAddress: 0))
        for id in 1...100 { unlimited.opened(UInt(id), address: "") }
        #expect(unlimited.refusal(forUpgradeOf: 100) == nil)
    }

    @Test("without a spare descriptor an upgrade is refused with close 1013 after its 101; the socket is closed and uncounted, and the server goes on")
    func refusedWithoutASpareDescriptor() async throws {
        let server = try WebSocketTestServer(configuration: WebSocketIdleTests.withoutPings, http: { $0.perIPConnectionLimit = 4 }) { router, http in
            HTTPServer(router: router, configuration: http, log: Log(minimumLevel: .error),
                       duplicatingWith: { _ in errno = EMFILE; return -1 })
        }
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        defer { connection.close() }
        try connection.send(RawSocket.upgradeRequest(path: "/ws/echo"))
        let answer = try await offload { try connection.readResponse(timeout: .seconds(10), skipInterim: false) }
        #expect(answer?.status == 101)
        let rest = try await offload { try connection.readUntilClosed(timeout: .seconds(10)) }
        #expect(rest.bytes == [0x88, 0x02, 0x03, 0xF5], "a close frame with 1013, then the end of the stream")
        try await waitUntil("the refused socket is handed back and uncounted") {
            server.server.upgrades.current.open == 0 && server.server.sockets.current.total == 0
        }
        #expect(await server.hub.count() == 0)
        #expect(server.opened.count == 0)

        let next = try RawConnection(port: server.port)
        defer { next.close() }
        try next.send("GET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(try await offload { try next.readResponse(timeout: .seconds(10)) }?.status == 200)
    }
}
#endif
