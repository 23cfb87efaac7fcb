import Foundation
import PortariaTestSupport
import Testing

/// `/readyz` on PostgreSQL follows the cross-instance listener (the LISTEN connection that
/// brings other instances' events, call messages, push wake-ups and session changes): an
/// instance whose listener is down would miss them, so a load balancer must take it out
/// while `/healthz` (liveness) stays 200 — restarting it would not help.
///
/// The listener reconnects within a second, so the test holds it down: the database stops
/// accepting new connections (`ALLOW_CONNECTIONS false`) and only the listener's backend is
/// terminated. The pool's eight connections were opened at start and stay, so the database
/// itself still answers; the listener's reconnect attempts fail until connections are
/// allowed again.
@Suite("Readiness follows the PostgreSQL listener", .serialized)
struct ListenerReadinessTests {
    struct Readiness {
        var status: Int
        var retryAfter: String?
        var state: String?
        var checks: [String: String]
    }

    static func readiness(_ server: TestServer) async throws -> Readiness {
        let response = try await server.request("GET", "/readyz")
        let body = try response.json()
        return Readiness(status: response.status, retryAfter: response.header("retry-after"),
                         state: body["status"] as? String, checks: body["checks"] as? [String: String] ?? [:])
    }

    static func lines(_ log: String, containing fragment: String) -> Int {
        log.split(separator: "\n").filter { $0.contains(fragment) }.count
    }

    @Test("the listener's connection lost and kept down: /readyz 503 listener disconnected (database ok), /healthz 200; back to 200 once it reconnects",
          .requires(.postgres))
    func listenerDownMeansNotReady() async throws {
        let database = try #require(try TestPostgres.createDatabase())
        defer { database.drop() }
        let name = database.name
        let server = try await TestServer.start(["--database", database.url])
        defer {
            try? TestPostgres.run("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS true")
            Task { [server] in await server.stop() }
        }
        // The listener connects on its own thread, maybe after /healthz first answered.
        #expect(await eventually(within: .seconds(30)) { (try? await Self.readiness(server))?.status == 200 },
                "/readyz never answered 200:\n\(server.log.suffix(3000))")
        let ready = try await Self.readiness(server)
        #expect(ready.checks == ["database": "ok", "migrations": "ok", "listener": "ok", "writes": "ok"], "\(ready.checks)")
        #expect(ready.state == "ready")

        // New connections refused, then the listener's backend (and only it) ended.
        try TestPostgres.run("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS false")
        let terminated = try TestPostgres.query(TestPostgres.baseURL, """
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = '\(name)' AND application_name LIKE 'portaria/%/listener'
            """)
        #expect(terminated == "1", "listener backends terminated: \(terminated)")
        let attemptsBefore = Self.lines(server.log, containing: "postgres listener: reconnecting")

        #expect(await eventually(within: .seconds(30)) { (try? await Self.readiness(server))?.status == 503 },
                "/readyz still answers 200 with the listener down:\n\(server.log.suffix(3000))")
        // Kept down: two more failed reconnects, and /readyz says the same after each.
        for attempt in 1...2 {
            #expect(await eventually(within: .seconds(30), every: .milliseconds(100)) {
                Self.lines(server.log, containing: "postgres listener: reconnecting") >= attemptsBefore + attempt + 1
            }, "the listener did not try to reconnect:\n\(server.log.suffix(3000))")
            let down = try await Self.readiness(server)
            #expect(down.status == 503)
            #expect(down.state == "not_ready")
            #expect(down.checks == ["database": "ok", "migrations": "ok", "listener": "disconnected", "writes": "ok"], "\(down.checks)")
            #expect(down.retryAfter.flatMap(Int.init).map { $0 >= 1 } == true, "Retry-After: \(down.retryAfter ?? "none")")
            let health = try await server.request("GET", "/healthz")
            #expect(health.status == 200, "/healthz is liveness and the database answers: \(health.status)")
            #expect(try health.json()["status"] as? String == "ok")
        }

        try TestPostgres.run("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS true")
        #expect(await eventually(within: .seconds(30), every: .milliseconds(100)) {
            (try? await Self.readiness(server))?.status == 200
        }, "/readyz stays 503 after the listener could reconnect:\n\(server.log.suffix(3000))")
        let back = try await Self.readiness(server)
        #expect(back.checks["listener"] == "ok", "\(back.checks)")
        let listeners = try TestPostgres.query(TestPostgres.baseURL, """
            SELECT count(*) FROM pg_stat_activity WHERE datname = '\(name)' AND application_name LIKE 'portaria/%/listener'
            """)
        #expect(listeners == "1")
        #expect(try await server.request("GET", "/healthz").status == 200)
    }
}
