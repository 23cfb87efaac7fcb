import Foundation
import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing

/// Joins and leaves among many sockets of one company, against the real binary: every
/// socket still present gets each event once, and a socket joining late gets what follows.
@Suite("Realtime stream with many sockets")
struct RealtimeManySocketsTests {
    typealias R = RealtimeTests

    @Test("among 240 sockets, half of them leaving, every remaining and every newly joined socket gets the next visit")
    func joinsAndLeavesAmongMany() async throws {
        try await TestServer.with(["--demo", "--realtime-connections-per-user", "1000"]) { server in
            let maria = try await R.login(server, "maria")
            var readers: [R.Reader] = []
            for _ in 0..<240 { readers.append(try await R.subscribe(server, maria)) }
            // Every other socket leaves (leaving walks the leaver's own entries only).
            for (index, reader) in readers.enumerated() where index % 2 == 1 { reader.connection.close() }
            for (index, reader) in readers.enumerated() where index % 2 == 1 { _ = await reader.closeCode(timeout: .seconds(20)) }
            let staying = readers.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
            var late: [R.Reader] = []
            for _ in 0..<10 { late.append(try await R.subscribe(server, maria)) }

            let (visitID, _) = try await R.ring(server)
            for reader in staying + late {
                let frames = try await reader.until("visit.created", timeout: .seconds(20))
                #expect(frames.last?["data"]?["visit_id"]?.stringValue == visitID)
                #expect(frames.filter { $0["type"]?.stringValue == "visit.created" }.count == 1)
            }
        }
    }
}
