import Foundation
import PortariaCore
import PortariaTestSupport
import Testing

/// The audit trail and LGPD export/erasure against the real binary, on SQLite and (when
/// the run has a cluster) PostgreSQL.
@Suite("Audit trail and LGPD")
struct AuditEndToEndTests {
    static var databases: [Bool] { casesAvailable([false, true]) { $0 ? .postgres : nil } }

    /// A `--demo` server on SQLite or a fresh PostgreSQL database; `body` gets the server
    /// and the `--database` URL for `portaria admin`.
    static func withServer(postgres: Bool, _ body: (TestServer, String) async throws -> Void) async throws {
        if postgres {
            let database = try #require(try TestPostgres.createDatabase())
            defer { database.drop() }
            try await TestServer.with(["--demo", "--database", database.url]) { server in try await body(server, database.url) }
        } else {
            try await TestServer.with(["--demo"]) { server in
                try await body(server, "sqlite://" + server.directory.appendingPathComponent("portaria.db").path)
            }
        }
    }

    static func entries(_ response: RawResponse) throws -> [[String: Any]] {
        try #require(try response.json()["entries"] as? [[String: Any]], "\(response.status) \(response.text)")
    }

    /// Maria logs in (after one wrong password), registers a phone, resolves a visit and logs out.
    static func mariasDay(_ server: TestServer) async throws -> (visit: String, mariaID: String) {
        let wrong = try await server.postJSON("/v1/auth/login", #"{"username":"maria","password":"wrong-password"}"#)
        #expect(wrong.status == 401)
        let maria = try await RealtimeTests.login(server, "maria")
        let me = try await server.get("/v1/me", bearer: maria.token, company: maria.companyID)
        let mariaID = try #require((try me.json()["user"] as? [String: Any])?["id"] as? String)
        let device = try await server.post("/v1/devices", json: #"{"installation_id":"audit-phone","platform":"android","push_token":"audit-push"}"#,
                                           bearer: maria.token, company: maria.companyID)
        #expect(device.status == 201)
        let (visit, _) = try await RealtimeTests.ring(server)
        let resolved = try await RealtimeTests.resolve(server, maria, visit: visit, action: "deny")
        #expect(resolved.status == 200, "\(resolved.text)")
        // Her household's ring order, put back as it was: a change the trail records.
        let units = try #require(try await server.request("GET", "/v1/gates/demo-gate").json()["units"] as? [[String: Any]])
        let a101 = try #require(units.first { $0["label"] as? String == "A-101" }?["id"] as? String)
        let current = try await server.get("/v1/units/\(a101)/settings", bearer: maria.token, company: maria.companyID)
        let settings = try #require(try current.json()["settings"])
        let body = String(decoding: try JSONSerialization.data(withJSONObject: settings), as: UTF8.self)
        let put = try await server.request("PUT", "/v1/units/\(a101)/settings", headers: [("Authorization", "Bearer \(maria.token)"),
                                           ("X-Company-Id", maria.companyID), ("Content-Type", "application/json")], body: Array(body.utf8))
        #expect(put.status == 200, "\(put.text)")
        let logout = try await server.request("POST", "/v1/auth/logout", headers: [("Authorization", "Bearer \(maria.token)")])
        #expect(logout.status == 204)
        return (visit, mariaID)
    }

    @Test("a decision, a call, logins, a failed login, a device and a logout are in the company's audit trail, paginated by cursor",
          arguments: databases)
    func trailThroughTheAPIAndTheCLI(postgres: Bool) async throws {
        try await Self.withServer(postgres: postgres) { server, databaseURL in
            let (visit, mariaID) = try await Self.mariasDay(server)
            let admin = try await RealtimeTests.login(server, "admin")
            let response = try await server.get("/v1/admin/audit", bearer: admin.token, company: admin.companyID)
            #expect(response.status == 200)
            let entries = try Self.entries(response)
            func find(_ action: String) -> [String: Any]? { entries.first { $0["action"] as? String == action } }
            let decision = try #require(find("visit.resolve"), "\(entries)")
            #expect(decision["actor_user_id"] as? String == mariaID)
            #expect(decision["actor_role"] as? String == "resident")
            #expect(decision["object_id"] as? String == visit)
            #expect(decision["company_id"] as? String == admin.companyID)
            #expect(decision["address"] as? String == "127.0.0.1")
            #expect((decision["detail"] as? [String: Any])?["action"] as? String == "deny")
            #expect(find("visit.create")?["object_id"] as? String == visit)
            let settings = try #require(find("unit.settings_change"), "\(entries)")
            #expect(settings["actor_user_id"] as? String == mariaID)
            #expect(((settings["detail"] as? [String: Any])?["ring_order"] as? [String])?.count == 2)
            #expect(find("auth.logout")?["actor_user_id"] as? String == mariaID)
            #expect(find("device.register")?["device"] as? String == "audit-phone")
            #expect(find("auth.login_failed")?["subject_user_id"] as? String == mariaID)
            #expect(entries.contains { $0["action"] as? String == "auth.login" && $0["actor_user_id"] as? String == mariaID })
            // Newest first, two at a time: the pages join without a gap or a repeat.
            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await server.get("/v1/admin/audit?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""),
                                                bearer: admin.token, company: admin.companyID)
                seen += try Self.entries(page).compactMap { $0["id"] as? String }
                cursor = try page.json()["next_cursor"] as? String
            } while cursor != nil
            #expect(seen == entries.compactMap { $0["id"] as? String })
            #expect(try await server.get("/v1/admin/audit?cursor=bm9wZQ", bearer: admin.token, company: admin.companyID).status == 400)
            #expect(try await server.get("/v1/admin/audit?since=yesterday", bearer: admin.token, company: admin.companyID).status == 400)

            // Another company's admin view does not include Demo's decision.
            let azul = try await RealtimeTests.login(server, "maria", company: "Condomínio Azul")
            #expect(try await server.get("/v1/admin/audit", bearer: azul.token, company: azul.companyID).status == 403)

            let cli = try await runPortaria(["admin", "audit", "--database", databaseURL, "--company", "Residencial Demo", "--json"])
            #expect(cli.status == 0, "\(cli.stderr)")
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(cli.stdout.utf8)) as? [[String: Any]])
            #expect(rows.contains { $0["action"] as? String == "visit.resolve" && $0["object_id"] as? String == visit })
            let azulRows = try await runPortaria(["admin", "audit", "--database", databaseURL, "--company", "Condomínio Azul", "--json"])
            #expect(!azulRows.stdout.contains(visit), "Azul's trail shows Demo's visit")
            let future = try await runPortaria(["admin", "audit", "--database", databaseURL, "--since", "2999-01-01T00:00:00Z", "--json"])
            #expect(future.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        }
    }

    @Test("export-user prints everything about a person; erase-user removes it and keeps the audit facts under a pseudonym",
          arguments: databases)
    func exportAndErase(postgres: Bool) async throws {
        try await Self.withServer(postgres: postgres) { server, databaseURL in
            let (visit, mariaID) = try await Self.mariasDay(server)
            let exported = try await runPortaria(["admin", "export-user", "--user", "maria", "--database", databaseURL])
            #expect(exported.status == 0, "\(exported.stderr)")
            let export = try #require(try JSONSerialization.jsonObject(with: Data(exported.stdout.utf8)) as? [String: Any])
            let user = try #require(export["user"] as? [String: Any])
            #expect(user["username"] as? String == "maria")
            #expect(user["phone"] as? String == "+5511999990001")
            #expect(user["password_hash"] == nil, "a secret was exported")
            #expect((export["devices"] as? [[String: Any]])?.count == 1)
            #expect((export["visit_resolutions"] as? [[String: Any]])?.first?["visit_id"] as? String == visit)
            #expect((export["memberships"] as? [[String: Any]])?.count == 2)
            #expect(((export["audit"] as? [[String: Any]]) ?? []).contains { $0["action"] as? String == "visit.resolve" })

            let erased = try await runPortaria(["admin", "erase-user", "--user", "maria", "--database", databaseURL, "--json"])
            #expect(erased.status == 0, "\(erased.stderr)")
            let pseudonym = try #require((try JSONSerialization.jsonObject(with: Data(erased.stdout.utf8)) as? [String: Any])?["pseudonym"] as? String)
            #expect(pseudonym.hasPrefix("erased-"))

            let after = try await runPortaria(["admin", "export-user", "--user", mariaID, "--database", databaseURL])
            #expect(!after.stdout.contains("+5511999990001") && !after.stdout.contains("Maria Souza") && !after.stdout.contains("audit-push"),
                    "personal data left: \(after.stdout)")
            let remaining = try #require(try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any])
            #expect((remaining["devices"] as? [Any])?.isEmpty == true)
            #expect((remaining["memberships"] as? [Any])?.isEmpty == true)
            #expect((remaining["audit"] as? [Any])?.isEmpty == true, "audit rows still name the person")

            let login = try await server.postJSON("/v1/auth/login", #"{"username":"maria","password":"demo1234"}"#)
            #expect(login.status == 401)
            let trail = try await runPortaria(["admin", "audit", "--database", databaseURL, "--json"])
            #expect(!trail.stdout.contains(mariaID), "the trail still names the erased person")
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(trail.stdout.utf8)) as? [[String: Any]])
            let decision = try #require(rows.first { $0["action"] as? String == "visit.resolve" })
            #expect(decision["actor_user_id"] as? String == pseudonym)
            #expect(decision["object_id"] as? String == visit)
            #expect(decision["address"] is NSNull)
            let visitView = try await RealtimeTests.login(server, "admin")
            let shown = try await server.get("/v1/visits/\(visit)", bearer: visitView.token, company: visitView.companyID)
            #expect(shown.status == 200)
            #expect(!shown.text.contains("Maria Souza"), "the visit still names the erased person: \(shown.text)")
        }
    }

    @Test("--audit-retention-days prunes audit rows older than it, apart from the visits' retention")
    func retention() async throws {
        var server = try await TestServer.start(["--demo", "--audit-retention-days", "30"])
        let database = server.directory.appendingPathComponent("portaria.db").path
        do {
            _ = try await RealtimeTests.login(server, "maria")
            _ = try await RealtimeTests.login(server, "ana")
            let (visit, _) = try await RealtimeTests.ring(server)
            await server.kill9()
            // Maria's login 40 days ago, Ana's 10: only Maria's is past 30 days.
            let day: Int64 = 86_400_000
            try runSQLite(database, """
                UPDATE audit_log SET at = at - \(40 * day) WHERE action = 'auth.login'
                  AND actor_user_id = (SELECT id FROM users WHERE username = 'maria');
                UPDATE audit_log SET at = at - \(10 * day) WHERE action = 'auth.login'
                  AND actor_user_id = (SELECT id FROM users WHERE username = 'ana');
                """)
            let maria = try runSQLite(database, "SELECT id FROM users WHERE username = 'maria'")
            let ana = try runSQLite(database, "SELECT id FROM users WHERE username = 'ana'")
            server = try await server.restart()
            // The sweep runs at start.
            var rows: [[String: Any]] = []
            let pruned = try await eventually(within: .seconds(30), every: .milliseconds(200)) {
                let trail = try await runPortaria(["admin", "audit", "--database", "sqlite://" + database, "--json"])
                rows = (try? JSONSerialization.jsonObject(with: Data(trail.stdout.utf8)) as? [[String: Any]]) ?? []
                return !rows.isEmpty && !rows.contains { $0["actor_user_id"] as? String == maria }
            }
            #expect(pruned, "maria's 40-day-old login is still there: \(rows)")
            #expect(rows.contains { $0["action"] as? String == "auth.login" && $0["actor_user_id"] as? String == ana })
            #expect(rows.contains { $0["action"] as? String == "visit.create" && $0["object_id"] as? String == visit })
            #expect(server.log.contains(#""audit_rows_deleted":1"#))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
