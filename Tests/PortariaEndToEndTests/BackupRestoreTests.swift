import Foundation
import PortariaCore
import Testing

/// `portaria admin backup --to FILE` on a running server's SQLite database, restored into
/// a fresh server: the same visits, and the sessions from before still work.
@Suite("Backup and restore end to end")
struct BackupRestoreTests {
    @Test("a backup taken while the server runs restores into a fresh server that serves the same visits and sessions")
    func backupRestores() async throws {
        let original = try await TestServer.start(["--demo"])
        defer { Task { [original] in await original.stop() } }
        let (visit, _) = try await RealtimeTests.ring(original)
        let login = try await original.postJSON("/v1/auth/login", #"{"username":"maria","password":"demo1234"}"#)
        try #require(login.status == 200)
        let body = try login.json()
        let jwt = try #require(body["jwt_token"] as? String)
        let refresh = try #require(body["refresh_token"] as? String)
        let companies = try #require(body["companies"] as? [[String: Any]])
        let company = try #require(companies.first { $0["name"] as? String == "Residencial Demo" }?["id"] as? String)

        let restored = try makeTemporaryDirectory("restored")
        let backupPath = restored.appendingPathComponent("portaria.db").path
        let database = "sqlite://" + original.directory.appendingPathComponent("portaria.db").path
        let backup = try await runPortaria(["admin", "backup", "--database", database, "--to", backupPath])
        #expect(backup.status == 0, "\(backup.stderr)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: backupPath)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "the backup is readable by others: \(String(mode, radix: 8))")
        // Never over an existing file.
        let again = try await runPortaria(["admin", "backup", "--database", database, "--to", backupPath])
        #expect(again.status != 0)
        #expect(again.stderr.split(separator: "\n").count == 1, "\(again.stderr)")
        // The original keeps serving while and after it is copied.
        #expect(try await original.request("GET", "/v1/gates/demo-gate").status == 200)

        // The data directory's files (a key file that wraps the stored secrets, when there
        // is one) travel with the database; media are not needed for this check.
        let data = original.directory.appendingPathComponent("data")
        let restoredData = restored.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: restoredData, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        for name in (try? FileManager.default.contentsOfDirectory(atPath: data.path)) ?? [] {
            var isDirectory: ObjCBool = false
            let path = data.appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            try FileManager.default.copyItem(atPath: path, toPath: restoredData.appendingPathComponent(name).path)
        }
        await original.stop()

        let fresh = try await TestServer.start([], directory: restored)
        defer { Task { [fresh] in await fresh.stop() } }
        let read = try await fresh.request("GET", "/v1/visits/\(visit)",
                                           headers: [("Authorization", "Bearer \(jwt)"), ("X-Company-Id", company)])
        #expect(read.status == 200, "the JWT from before, on the restored server: \(read.status) \(read.text)")
        #expect((try? read.json()["id"] as? String) == visit)
        let renewed = try await fresh.postJSON("/v1/auth/refresh", #"{"refresh_token":"\#(refresh)"}"#)
        #expect(renewed.status == 200, "the refresh token from before: \(renewed.status) \(renewed.text)")
    }

    @Test("backup of a PostgreSQL database is refused with one line that points to pg_dump")
    func postgresPointsToPgDump() async throws {
        let result = try await runPortaria(["admin", "backup", "--database", "postgres://127.0.0.1:1/x", "--to", "/tmp/never.db"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("pg_dump"), "\(result.stderr)")
        #expect(result.stderrLines.count == 1)
        #expect(!FileManager.default.fileExists(atPath: "/tmp/never.db"))
    }
}
