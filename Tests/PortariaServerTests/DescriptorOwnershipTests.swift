import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One owner per descriptor (docs/architecture.md, "Who closes a descriptor").
///
/// The test process is one fd table: WebSocket clients and servers, libmicrohttpd
/// upgrades, SQLite files and libpq sockets all draw numbers from it. A close of a number
/// someone else owns breaks that someone else later and far away. This suite churns every
/// kind of descriptor at once — including the paths where a second close is easy to
/// write (a socket whose `connect` failed, closed in `init` and again in `deinit`; an
/// HTTP server stopped while WebSockets it upgraded are still open) — while databases
/// keep working.
@Suite("Descriptor ownership")
struct DescriptorOwnershipTests {
    @Test("OwnedDescriptor closes exactly once: on close(), or when its owner goes away, never after release()")
    func ownedDescriptorClosesOnce() throws {
        func isOpen(_ descriptor: Int32) -> Bool { fcntl(descriptor, F_GETFD) != -1 }
        var pipeEnds: [Int32] = [0, 0]
        try #require(pipe(&pipeEnds) == 0)
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        do {
            let owned = OwnedDescriptor(readEnd)
            let number = owned.rawValue
            #expect(isOpen(number))
        }
        #expect(!isOpen(readEnd), "deinit did not close")
        let released = OwnedDescriptor(writeEnd).release()
        #expect(isOpen(released), "release() must leave the descriptor open for its new owner")
        OwnedDescriptor(released).close()
        #expect(!isOpen(writeEnd))
    }

    @Test("WebSockets, HTTP upgrades, refused connects and server restarts churn while SQLite and PostgreSQL keep working",
          arguments: Backend.underTest)
    func churn(_ backend: Backend) async throws {
        try await StorageFixture.with(backend) { fixture in
            try await fixture.database.write { db in
                _ = try db.execute("CREATE TABLE churn (id INTEGER PRIMARY KEY, note TEXT NOT NULL)", [])
            }
            let refusedPort = try unusedPort()
            // The server task runs at least three rounds and four seconds; the others churn
            // until it is done (a loaded machine makes rounds slow, not fewer).
            let serverRoundsDone = Locked(false)
            let deadline = ContinuousClock.now + .seconds(4)
            let databaseErrors = Locked<[String]>([])
            let socketErrors = Locked<[String]>([])
            let rounds = Locked(0)

            try await withThrowingTaskGroup(of: Void.self) { group in
                // Databases: many short transactions, and fresh handles (new descriptors) too.
                group.addTask {
                    var id = 0
                    while !serverRoundsDone.current {
                        id += 1
                        let row = id
                        do {
                            try await fixture.database.write { db in
                                _ = try db.execute("INSERT INTO churn (id, note) VALUES (?, ?)", [.integer(Int64(row)), .text("n")])
                            }
                            let count = try await fixture.database.read { db in
                                try db.queryOne("SELECT COUNT(*) AS n FROM churn", [])?.int("n") ?? -1
                            }
                            if count != Int64(row) { databaseErrors.withLock { $0.append("count \(count) after \(row) inserts") } }
                            if row % 20 == 0 {
                                let other = try await fixture.openAnother()
                                _ = try await other.read { db in try db.queryOne("SELECT 1 AS one", []) }
                                await other.close()
                            }
                        } catch {
                            databaseErrors.withLock { $0.append(String(describing: error)) }
                        }
                    }
                }
                // Servers that stop while their WebSockets are still open.
                group.addTask {
                    defer { serverRoundsDone.withLock { $0 = true } }
                    while ContinuousClock.now < deadline || rounds.current < 3 {
                        if ContinuousClock.now > deadline + .seconds(60) { break }
                        do {
                            let server = try WebSocketTestServer()
                            var open: [WebSocketClientConnection] = []
                            for index in 0..<4 {
                                let client = try await WebSocketClient.connect(url: server.url("/ws/echo"), loop: WebSocketTests.loop,
                                                                               timeout: .seconds(60))
                                client.send(text: "hello \(index)")
                                var iterator = client.events.makeAsyncIterator()
                                guard case .text("hello \(index)") = await iterator.next() else {
                                    socketErrors.withLock { $0.append("echo lost") }
                                    break
                                }
                                open.append(client)
                            }
                            await server.hub.shutdown(timeout: .milliseconds(300))
                            await server.server.shutdown(gracePeriod: .seconds(2))
                            rounds.withLock { $0 += 1 }
                            open.removeAll()
                        } catch {
                            socketErrors.withLock { $0.append(String(describing: error)) }
                        }
                    }
                }
                // Sockets whose connect fails (the old double close).
                group.addTask {
                    while !serverRoundsDone.current {
                        _ = try? await offload { _ = try STUNConnection(port: refusedPort, transport: .tcp, timeout: .milliseconds(20)) }
                    }
                }
                try await group.waitForAll()
            }
            #expect(databaseErrors.current.isEmpty, "\(databaseErrors.current.prefix(5))")
            #expect(socketErrors.current.isEmpty, "\(socketErrors.current.prefix(5))")
            #expect(rounds.current >= 3, "only \(rounds.current) server rounds completed")
        }
    }

    /// A loopback port nobody listens on (bound, then released without listening).
    private func unusedPort() throws -> UInt16 {
        try LoopbackPort(listening: false).port
    }
}
