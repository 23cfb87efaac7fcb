import Foundation
import PortariaCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The key that wraps the database's secrets lives beside the database, never in it
/// (decision 0065), against the real binary: what someone holding only a copy of the
/// database (a backup, a dump) can do with it.
extension SecuritySuites {
    @Suite("The secrets key file", .serialized)
    struct SecretsKeyFileTests {
        static func mode(_ path: String) -> mode_t? {
            var status = stat()
            return stat(path, &status) == 0 ? status.st_mode & 0o777 : nil
        }

        /// Every secret the database keeps: signing keys, the OTP pepper, the VAPID key.
        static func storedSecrets(_ databasePath: String) async throws -> [String] {
            try await SQLiteProbe.rows(databasePath, """
                SELECT secret FROM signing_keys UNION ALL
                SELECT value FROM service_state WHERE key IN ('otp_pepper', 'vapid_private_key')
                """).map { $0[0] }
        }

        /// The database file and its WAL, as a copy of them would hold.
        static func databaseBytes(_ databasePath: String) -> Data {
            var stored = Data()
            for suffix in ["", "-wal"] { stored += (try? Data(contentsOf: URL(fileURLWithPath: databasePath + suffix))) ?? Data() }
            return stored
        }

        /// A directory holding `portaria.db` as a server from before kept it: schema
        /// current, a signing key and the OTP pepper stored in plaintext. Returns them.
        static func legacyDatabase() async throws -> (directory: URL, plaintext: [String]) {
            let directory = try makeTemporaryDirectory("legacy")
            let path = directory.appendingPathComponent("portaria.db").path
            let migrated = try await runPortaria(["migrate", "--database", "sqlite://" + path])
            #expect(migrated.status == 0, "\(migrated.stderr)")
            func random() -> String {
                Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
            let (signingKey, pepper) = (random(), random())
            try await SQLiteProbe.execute(path, """
                INSERT INTO signing_keys (id, secret, created_at) VALUES ('k1700000000-old', '\(signingKey)', 1700000000000);
                INSERT INTO service_state (key, value, updated_at) VALUES ('otp_pepper', '\(pepper)', 1700000000000);
                """)
            return (directory, [signingKey, pepper])
        }

        @Test("a default serve makes DATA-DIR/secrets.key (0600) and wraps every secret with it; a copy of the database without that file refuses to start in one line, and with it starts and keeps the sessions")
        func copiedDatabaseNeedsTheKeyFile() async throws {
            let previous = umask(0o022)
            defer { umask(previous) }
            let server = try await TestServer.start(["--demo"])
            defer { server.discard() }
            let login = try await AccountAbuseTests.login(server, "carlos")
            let token = try #require(try login.json()["jwt_token"] as? String)
            #expect(!server.log.contains("stored in plaintext"))
            #expect(await server.stopKeepingFiles())

            let data = server.directory.appendingPathComponent("data")
            let keyPath = data.appendingPathComponent("secrets.key").path
            #expect(Self.mode(keyPath) == 0o600, "secrets.key: \(String(Self.mode(keyPath) ?? 0, radix: 8))")
            #expect(Self.mode(data.path) == 0o700)
            let stored = try await Self.storedSecrets(server.databasePath)
            #expect(stored.count == 3 && stored.allSatisfy { $0.hasPrefix("enc:v1:") }, "a secret is stored in plaintext: \(stored.map { $0.prefix(12) })")

            // Someone holding only the database: no key file where the copy runs.
            let copy = try makeTemporaryDirectory("copied-db")
            defer { try? FileManager.default.removeItem(at: copy) }
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: server.databasePath + suffix) {
                try FileManager.default.copyItem(atPath: server.databasePath + suffix, toPath: copy.appendingPathComponent("portaria.db" + suffix).path)
            }
            let copiedURL = "sqlite://" + copy.appendingPathComponent("portaria.db").path
            let copyData = copy.appendingPathComponent("data")
            let refused = try await runPortaria(["serve", "--port", "0", "--database", copiedURL, "--data-dir", copyData.path], timeout: .seconds(30))
            #expect(refused.status != 0, "a copied database without its key file started")
            #expect(refused.stderrLines.count == 1 && refused.stderr.contains("no key file") && refused.stderr.contains("--secrets-key-file"),
                    "\(refused.stderr.suffix(800))")
            #expect(!FileManager.default.fileExists(atPath: copyData.appendingPathComponent("secrets.key").path),
                    "the refused start made a key file of its own")

            // With the key file beside it (a restore of both), the copy serves the same sessions.
            try FileManager.default.createDirectory(at: copyData, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: keyPath, toPath: copyData.appendingPathComponent("secrets.key").path)
            let restored = try await TestServer.start([], directory: copy)
            let me = try? await restored.get("/v1/me", bearer: token)
            await restored.stop()
            #expect(me?.status == 200, "a session from the original was lost with the key file restored")
        }

        @Test("a database from before, with plaintext secrets, is wrapped on its first default start (no plaintext left in the file); admin rotate-jwt-key finds the same key through --data-dir and refuses without it")
        func plaintextDatabaseIsWrapped() async throws {
            let (directory, plaintext) = try await Self.legacyDatabase()
            let server = try await TestServer.start(["--demo"], directory: directory)
            defer { server.discard() }
            let login = try await AccountAbuseTests.login(server, "carlos")
            #expect(login.status == 200, "\(login.text)")
            let log = server.log
            #expect(await server.stopKeepingFiles())
            #expect(log.contains("wrapped the database's plaintext secrets"), "\(log.suffix(1500))")

            let stored = try await Self.storedSecrets(server.databasePath)
            #expect(stored.count == 3 && stored.allSatisfy { $0.hasPrefix("enc:v1:") }, "\(stored.map { $0.prefix(12) })")
            let bytes = Self.databaseBytes(server.databasePath)
            for secret in plaintext {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "a plaintext secret is still in the database file")
            }

            let url = "sqlite://" + server.databasePath
            let dataDirectory = directory.appendingPathComponent("data").path
            let rotated = try await runPortaria(["admin", "rotate-jwt-key", "--database", url, "--data-dir", dataDirectory])
            #expect(rotated.status == 0, "\(rotated.stderr)")
            let keyless = try await runPortaria(["admin", "rotate-jwt-key", "--database", url])
            #expect(keyless.status != 0 && keyless.stderrLines.count == 1 && keyless.stderr.contains("no key file"), "\(keyless.stderr)")
            let after = try await Self.storedSecrets(server.databasePath)
            #expect(after.count == 4 && after.allSatisfy { $0.hasPrefix("enc:v1:") }, "\(after.map { $0.prefix(12) })")
        }
    }
}

extension SQLiteProbe {
    /// Runs `sql` (several statements) on the database at `path` and commits.
    static func execute(_ databasePath: String, _ sql: String) async throws {
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.executescript(sys.argv[2])
            db.commit()
            db.close()
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, databasePath, sql]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard await waitForExit(process, within: .seconds(20)), process.terminationStatus == 0 else {
            throw HarnessError("sqlite write failed: \(sql.prefix(200))")
        }
    }
}
