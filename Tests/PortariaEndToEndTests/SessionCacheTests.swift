import Foundation
import PortariaCore
import PortariaTestSupport
import Testing

/// The bearer check's answers are cached in memory (decision 0043); every write that ends a
/// session or changes a user's access must still take effect on the next request, on this
/// instance and on every other one. Each test warms the cache first (the same bearer
/// answered twice), so an invalidation that does not arrive shows up as a 200.
@Suite("Session cache: invalidation at once", .serialized)
struct SessionCacheTests {
    typealias Security = SecuritySuites.AccountAbuseTests

    struct Signed {
        let access: String
        let refresh: String
        let company: String
    }

    static func signIn(_ server: TestServer, _ username: String) async throws -> Signed {
        let body = try await Security.login(server, username).json()
        return Signed(access: try #require(body["jwt_token"] as? String),
                      refresh: try #require(body["refresh_token"] as? String),
                      company: try #require((body["companies"] as? [[String: Any]])?.first?["id"] as? String))
    }

    /// Two answers of 200: the second one came from the cache (the first filled it).
    static func warm(_ server: TestServer, _ signed: Signed, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for _ in 0..<2 {
            #expect(try await server.get("/v1/me", bearer: signed.access, company: signed.company).status == 200,
                    sourceLocation: sourceLocation)
        }
    }

    static func logout(_ server: TestServer, _ signed: Signed) async throws -> Int {
        try await server.request("POST", "/v1/auth/logout", headers: [("Authorization", "Bearer \(signed.access)")]).status
    }

    static func permissions(_ server: TestServer, _ signed: Signed) async throws -> [String] {
        try await server.get("/v1/me", bearer: signed.access, company: signed.company).json()["permissions"] as? [String] ?? []
    }

    @Test("SQLite: after logout the same bearer is refused on the very next request; refresh-token reuse likewise")
    func logoutAndReuseOnSQLite() async throws {
        try await TestServer.with(["--demo"]) { server in
            let maria = try await Self.signIn(server, "maria")
            try await Self.warm(server, maria)
            #expect(try await Self.logout(server, maria) == 204)
            #expect(try await server.get("/v1/me", bearer: maria.access, company: maria.company).status == 401)

            // Reuse: the first refresh spends the token, the second presents it again and
            // revokes the session; the access token issued with the session stops at once.
            let joao = try await Self.signIn(server, "joao")
            try await Self.warm(server, joao)
            #expect(try await server.postJSON("/v1/auth/refresh", #"{"refresh_token":"\#(joao.refresh)"}"#).status == 200)
            try await Self.warm(server, joao)
            #expect(try await server.postJSON("/v1/auth/refresh", #"{"refresh_token":"\#(joao.refresh)"}"#).status == 401)
            #expect(try await server.get("/v1/me", bearer: joao.access, company: joao.company).status == 401)
        }
    }

    @Test("SQLite: portaria admin in another process (grant, set-password) is seen by the running server on its next request")
    func adminInAnotherProcessOnSQLite() async throws {
        try await TestServer.with(["--demo"]) { server in
            let url = "sqlite://" + server.directory.appendingPathComponent("portaria.db").path
            let ana = try await Self.signIn(server, "ana")
            try await Self.warm(server, ana)
            #expect(!(try await Self.permissions(server, ana)).contains("admin.push_health"))
            let granted = try await runPortaria(["admin", "grant", "--user", "ana", "--company", "Residencial Demo",
                                                 "--permission", "admin.push_health", "--database", url])
            #expect(granted.status == 0, "\(granted.stderr)")
            #expect(try await Self.permissions(server, ana).contains("admin.push_health"), "the grant was not seen")

            let passwordFile = try Security.writeSecret("nova-senha-da-ana")
            defer { try? FileManager.default.removeItem(at: passwordFile.deletingLastPathComponent()) }
            try await Self.warm(server, ana)
            let changed = try await runPortaria(["admin", "set-password", "--user", "ana", "--password-file", passwordFile.path,
                                                 "--database", url])
            #expect(changed.status == 0, "\(changed.stderr)")
            #expect(try await server.get("/v1/me", bearer: ana.access, company: ana.company).status == 401,
                    "the old access token still reads /v1/me after set-password")
        }
    }

    @Test("PostgreSQL, two instances: logout on A and set-password are refused on B at once, and after B's listener reconnects",
          .requires(.postgres))
    func invalidationAcrossInstances() async throws {
        let database = try #require(try TestPostgres.createDatabase())
        defer { database.drop() }
        let a = try await TestServer.start(["--demo", "--database", database.url])
        let b = try await TestServer.start(["--database", database.url])
        do {
            // B's cache is on once its listener runs LISTEN; until then it reads every time,
            // which would make this test pass without any invalidation. Wait for it.
            try await Self.waitForListeners(database.url, count: 2)

            // Logout on A: B's next request refuses the bearer.
            let maria = try await Self.signIn(a, "maria")
            try await Self.warm(b, maria)
            #expect(try await Self.logout(a, maria) == 204)
            #expect(try await b.get("/v1/me", bearer: maria.access, company: maria.company).status == 401,
                    "B still accepts a bearer logged out on A")

            // set-password from a third process: both instances refuse at once.
            let joao = try await Self.signIn(b, "joao")
            try await Self.warm(a, joao)
            try await Self.warm(b, joao)
            let passwordFile = try Security.writeSecret("nova-senha-do-joao")
            defer { try? FileManager.default.removeItem(at: passwordFile.deletingLastPathComponent()) }
            let changed = try await runPortaria(["admin", "set-password", "--user", "joao", "--password-file", passwordFile.path,
                                                 "--database", database.url])
            #expect(changed.status == 0, "\(changed.stderr)")
            #expect(try await a.get("/v1/me", bearer: joao.access, company: joao.company).status == 401)
            #expect(try await b.get("/v1/me", bearer: joao.access, company: joao.company).status == 401)

            // Listeners lose their connections. A session logged out on A while B may not be
            // listening must still be refused by B (B dropped its cache when the connection
            // went, and reads until LISTEN runs again), and so must one logged out after.
            let ana = try await Self.signIn(a, "ana")
            let portaria = try await Self.signIn(a, "portaria")
            try await Self.warm(b, ana)
            try await Self.warm(b, portaria)
            let before = b.log.components(separatedBy: "postgres listener: reconnecting").count
            _ = try TestPostgres.query(database.url, """
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE datname = current_database() AND application_name LIKE 'portaria/%/listener'
                """)
            let noticed = await eventually(within: .seconds(30)) {
                b.log.components(separatedBy: "postgres listener: reconnecting").count > before
            }
            #expect(noticed, "B's listener did not notice its connection ended")
            #expect(try await Self.logout(a, ana) == 204)
            #expect(try await b.get("/v1/me", bearer: ana.access, company: ana.company).status == 401,
                    "B accepts a bearer logged out while its listener was down")

            try await Self.waitForListeners(database.url, count: 2)
            try await Self.warm(b, portaria)
            #expect(try await Self.logout(a, portaria) == 204)
            #expect(try await b.get("/v1/me", bearer: portaria.access, company: portaria.company).status == 401,
                    "B accepts a bearer logged out on A after its listener reconnected\n\(b.log.suffix(3000))")
        } catch {
            await a.stop()
            await b.stop()
            throw error
        }
        await a.stop()
        await b.stop()
    }

    /// Waits until `count` listener connections of this database are up and idle.
    static func waitForListeners(_ url: String, count: Int) async throws {
        let listening = await eventually(within: .seconds(60)) {
            let found = (try? TestPostgres.query(url, """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND application_name LIKE 'portaria/%/listener' AND state = 'idle'
                """)) ?? ""
            return Int(found.trimmingCharacters(in: .whitespacesAndNewlines)) == count
        }
        #expect(listening, "\(count) listeners did not connect")
    }
}
