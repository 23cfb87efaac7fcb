import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The run's throw-away PostgreSQL cluster (`scripts/with-postgres` sets
/// `PORTARIA_TEST_POSTGRES_URL`, a superuser on it), driven with psql: databases of their
/// own for tests, statements outside any transaction (CREATE/ALTER/DROP DATABASE), one
/// value read back, or a script left running (a lock held while the test goes on).
/// Tests that need it carry `.requires(.postgres)`.
package enum TestPostgres {
    /// The cluster's URL (its `portaria_test` database), or nil when the run has none.
    package static var url: String? {
        let value = ProcessInfo.processInfo.environment["PORTARIA_TEST_POSTGRES_URL"]
        return value?.isEmpty == false ? value : nil
    }

    /// `url`, for a test that already requires PostgreSQL.
    package static var baseURL: String {
        get throws {
            guard let url else { throw HarnessError("PORTARIA_TEST_POSTGRES_URL is not set (run under scripts/with-postgres)") }
            return url
        }
    }

    package static var psqlPath: String { (ProcessInfo.processInfo.environment["PG_BIN"] ?? "/usr/lib/postgresql/15/bin") + "/psql" }

    /// One database of the cluster, dropped (even with connections open) by `drop()`.
    package struct Database: Sendable {
        package let name: String
        package let url: String
        package let drop: @Sendable () -> Void
    }

    /// A new, empty database on the cluster; nil when the run has no cluster.
    package static func createDatabase(prefix: String = "portaria_e2e") throws -> Database? {
        guard let base = url else { return nil }
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased())"
        try run("CREATE DATABASE \(name)")
        return Database(name: name, url: try self.url(database: name),
                        drop: { _ = try? query(base, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)") })
    }

    /// The cluster's URL with another database name.
    package static func url(database: String) throws -> String {
        guard var components = URLComponents(string: try baseURL) else { throw HarnessError("bad PORTARIA_TEST_POSTGRES_URL") }
        components.path = "/" + database
        guard let url = components.string else { throw HarnessError("bad database name \(database)") }
        return url
    }

    /// Runs `sql` on the cluster's own database (a statement about another database).
    package static func run(_ sql: String) throws {
        _ = try query(try baseURL, sql)
    }

    /// The first column of the first row of `sql` on `url`, as text ("" when none).
    @discardableResult
    package static func query(_ url: String, _ sql: String) throws -> String {
        let psql = try CapturedProcess.start(psqlPath, [url, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql], label: "psql")
        defer { psql.remove() }
        psql.process.waitUntilExit()
        guard psql.process.terminationStatus == 0 else {
            throw HarnessError("psql failed: \(sql.prefix(120))\n\(psql.stderr)")
        }
        return psql.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts psql on `script` (stdin) without waiting for it; end it with `finish`.
    package static func start(_ url: String, _ script: String) throws -> Process {
        let directory = try makeTemporaryDirectory("psql")
        let path = directory.appendingPathComponent("script.sql")
        try Data(script.utf8).write(to: path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: psqlPath)
        process.arguments = [url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", path.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Ends a `start`ed psql (SIGKILL if it still runs) and reaps it: Foundation keeps a
    /// Process that nobody waited for, with its arguments and environment (LeakSanitizer).
    package static func finish(_ process: Process) {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
