import Foundation
@testable import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension SecuritySuites {
    @Suite("Shutdown with a handler still running")
    struct ShutdownWithRunningHandlerTests {
        /// A request whose handler waits on a PostgreSQL lock held past the 10 s grace period:
        /// libmicrohttpd aborts the process if it is stopped with that connection suspended,
        /// and resuming it after the stop would touch freed memory. Shutdown must wait for it.
        @Test("SIGTERM while a handler is blocked past the 10 s grace: the handler is awaited, its client gets the answer, the process exits 0",
              .requires(.postgres))
        func handlerOutlivingTheGraceIsAwaited() async throws {
            let database = try #require(try TestPostgres.createDatabase())
            defer { database.drop() }
            let server = try await TestServer.start(["--demo", "--database", database.url])
            defer { server.discard() }
            let locker = try TestPostgres.start(database.url, """
                BEGIN;
                LOCK TABLE gates IN ACCESS EXCLUSIVE MODE;
                SELECT pg_sleep(13);
                COMMIT;
                """)
            defer { TestPostgres.finish(locker) }
            let locked = await eventually(within: .seconds(10)) {
                (try? TestPostgres.query(database.url, """
                    SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                    WHERE c.relname = 'gates' AND l.mode = 'AccessExclusiveLock' AND l.granted
                    """)) == "1"
            }
            try #require(locked)
            let answer = Task { try await server.request("GET", "/v1/gates/demo-gate", timeout: .seconds(40)) }
            // The handler is blocked once the server's query waits on the lock.
            let waiting = await eventually(within: .seconds(10)) {
                (try? TestPostgres.query(database.url,
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")) == "1"
            }
            try #require(waiting, "the gate request never waited on the lock")
            let stopping = ContinuousClock.now
            server.signal(SIGTERM)
            let response = try await answer.value
            #expect(response.status == 200, "\(response.status) \(response.text)")
            let exited = await waitForExit(server.process, within: .seconds(45))
            #expect(exited)
            #expect(server.process.terminationReason == .exit && server.process.terminationStatus == 0,
                    "exit \(server.process.terminationReason.rawValue)/\(server.process.terminationStatus):\n\(server.log.suffix(2000))")
            #expect(ContinuousClock.now - stopping > .seconds(10), "the lock should have outlasted the grace period")
        }
    }
}
