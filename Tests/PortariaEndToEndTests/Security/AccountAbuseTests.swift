import Foundation
@testable import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension SecuritySuites {
    @Suite("Abuse limits: accounts and devices")
    struct AccountAbuseTests {
        typealias R = RealtimeTests

        static func login(_ server: TestServer, _ username: String, _ password: String = "demo1234", from address: String? = nil) async throws -> RawResponse {
            var headers = [("Content-Type", "application/json")]
            if let address { headers.append(("X-Forwarded-For", address)) }
            return try await server.request("POST", "/v1/auth/login", headers: headers,
                                            body: Array(#"{"username":"\#(username)","password":"\#(password)"}"#.utf8))
        }

        static func writeSecret(_ text: String) throws -> URL {
            let directory = try makeTemporaryDirectory("secret")
            let file = directory.appendingPathComponent("secret")
            try Data((text + "\n").utf8).write(to: file)
            chmod(file.path, 0o600)
            return file
        }

        /// Signs maria in, changes her password with `portaria admin set-password` on
        /// `databaseURL` (after `beforeChange`, e.g. stopping a SQLite server), then checks on
        /// the server `afterChange` gives what her old tokens can still do.
        static func expectSessionsEnded(first: TestServer, databaseURL: String,
                                        beforeChange: (TestServer) async throws -> Void = { _ in },
                                        afterChange: (TestServer) async throws -> TestServer = { $0 }) async throws {
            let login = try await Self.login(first, "maria")
            let body = try login.json()
            let access = try #require(body["jwt_token"] as? String)
            let refresh = try #require(body["refresh_token"] as? String)
            let company = try #require((body["companies"] as? [[String: Any]])?.first?["id"] as? String)
            #expect(try await first.get("/v1/me", bearer: access, company: company).status == 200)

            let passwordFile = try writeSecret("nova-senha-da-maria")
            defer { try? FileManager.default.removeItem(at: passwordFile.deletingLastPathComponent()) }
            try await beforeChange(first)
            let changed = try await runPortaria(["admin", "set-password", "--user", "maria", "--password-file", passwordFile.path,
                                                 "--database", databaseURL])
            #expect(changed.status == 0, "\(changed.stderr)")
            #expect(changed.stdout.contains("1 session(s) ended"), "\(changed.stdout)")
            #expect(!changed.stderr.contains("warning"), "\(changed.stderr)")

            let server = try await afterChange(first)
            let me = try await server.get("/v1/me", bearer: access, company: company)
            #expect(me.status == 401, "the old access token still reads /v1/me")
            let refreshed = try await server.postJSON("/v1/auth/refresh", #"{"refresh_token":"\#(refresh)"}"#)
            #expect(refreshed.status == 401)
            #expect(try await Self.login(server, "maria").status == 401)
            #expect(try await Self.login(server, "maria", "nova-senha-da-maria").status == 200)
        }

        @Test("admin set-password ends the user's sessions at once: the old access and refresh tokens stop working (PostgreSQL, server running)",
              .requires(.postgres))
        func setPasswordEndsSessionsLive() async throws {
            let database = try #require(try TestPostgres.createDatabase())
            defer { database.drop() }
            try await TestServer.with(["--demo", "--database", database.url]) { server in
                try await Self.expectSessionsEnded(first: server, databaseURL: database.url)
            }
        }

        @Test("admin set-password ends the user's sessions (SQLite: set while the server is stopped, checked after restart)")
        func setPasswordEndsSessionsSQLite() async throws {
            let first = try await TestServer.start(["--demo"])
            defer { first.discard() }
            let url = "sqlite://" + first.databasePath
            let second = Locked<TestServer?>(nil)
            do {
                try await Self.expectSessionsEnded(first: first, databaseURL: url, beforeChange: { server in
                    #expect(await server.stopKeepingFiles())
                }, afterChange: { _ in
                    // The same data directory: the database's secrets key lives there.
                    let restarted = try await TestServer.start(["--database", url, "--data-dir", first.directory.appendingPathComponent("data").path])
                    second.withLock { $0 = restarted }
                    return restarted
                })
            } catch {
                await second.current?.stop()
                _ = await first.stopKeepingFiles()
                throw error
            }
            await second.current?.stop()
        }

        @Test("a stranger who knows a username cannot lock its owner out: refused from the guessing address, the right password from another gets in after a step-up pause")
        func noLockoutOfAKnownUsername() async throws {
            try await TestServer.with(["--demo", "--login-limit", "3", "--trusted-proxies", "127.0.0.1"]) { server in
                for attempt in 1...3 {
                    #expect(try await Self.login(server, "joao", "tentativa-\(attempt)", from: "198.51.100.7").status == 401)
                }
                let blocked = try await Self.login(server, "joao", from: "198.51.100.7")
                #expect(blocked.status == 429)
                #expect(Int(blocked.header("retry-after") ?? "") ?? 0 > 0)
                let started = ContinuousClock.now
                let owner = try await Self.login(server, "joao", from: "203.0.113.20")
                #expect(owner.status == 200, "the owner was locked out: \(owner.status) \(owner.text)")
                #expect(ContinuousClock.now - started >= .seconds(1), "an account under attack must be stepped up")
            }
        }

        static func register(_ server: TestServer, _ session: R.Session, installation: String, token: String) async throws -> RawResponse {
            try await server.post("/v1/devices", json: #"{"installation_id":"\#(installation)","platform":"android","push_token":"\#(token)"}"#,
                                  bearer: session.token, company: session.companyID)
        }

        static func devices(_ server: TestServer, _ session: R.Session) async throws -> [[String: Any]] {
            let list = try await server.get("/v1/devices", bearer: session.token, company: session.companyID)
            return try #require(try list.json()["devices"] as? [[String: Any]], "\(list.text)")
        }

        @Test("re-registering another user's installation_id makes a device of one's own; theirs stays")
        func installationIDsArePerUser() async throws {
            try await TestServer.with(["--demo"]) { server in
                let maria = try await R.login(server, "maria")
                let ana = try await R.login(server, "ana")
                #expect(try await Self.register(server, maria, installation: "pixel-da-maria", token: "fcm-maria-1").status == 201)
                let takeover = try await Self.register(server, ana, installation: "pixel-da-maria", token: "fcm-ana-1")
                #expect(takeover.status == 201)
                let marias = try await Self.devices(server, maria)
                #expect(marias.count == 1)
                #expect(marias.first?["installation_id"] as? String == "pixel-da-maria")
                #expect(marias.first?["push_token_status"] as? String == "active")
                #expect(try await Self.devices(server, ana).count == 1)
            }
        }

        @Test("a user may register 10 devices: the 11th is 409 DEVICE_LIMIT_REACHED unless a stale one can make room")
        func devicesPerUserAreCapped() async throws {
            try await TestServer.with(["--demo"]) { server in
                let maria = try await R.login(server, "maria")
                for index in 1...10 {
                    let response = try await Self.register(server, maria, installation: "inst-\(index)", token: "fcm-maria-\(index)")
                    #expect(response.status == 201, "device \(index): \(response.text)")
                }
                let eleventh = try await Self.register(server, maria, installation: "inst-11", token: "fcm-maria-11")
                #expect(eleventh.status == 409)
                #expect(try eleventh.errorEnvelope().code == .deviceLimitReached)
                // Renewing an existing one is always fine.
                #expect(try await Self.register(server, maria, installation: "inst-3", token: "fcm-maria-3b").status == 200)
                // Her first phone's token moves to someone else's install: that row is stale now and makes room.
                let joao = try await R.login(server, "joao")
                #expect(try await Self.register(server, joao, installation: "joao-phone", token: "fcm-maria-1").status == 201)
                #expect(try await Self.register(server, maria, installation: "inst-11", token: "fcm-maria-11").status == 201)
                let installations = Set(try await Self.devices(server, maria).compactMap { $0["installation_id"] as? String })
                #expect(installations.count == 10)
                #expect(!installations.contains("inst-1") && installations.contains("inst-11"))
            }
        }
    }
}
