import Foundation
import PortariaServer
import Testing

/// The plumbing the storage suites build on: a temporary SQLite file, and on PostgreSQL
/// (`scripts/with-postgres`, `PORTARIA_TEST_POSTGRES_URL`) a database of its own per suite.
@Suite struct TestDatabaseTests {
    static let postgresURL = ProcessInfo.processInfo.environment["PORTARIA_TEST_POSTGRES_URL"]

    @Test func sqliteInATemporaryFileMigratesAndAnswers() async throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("portaria-test-\(UUID().uuidString).db").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let database = try await DatabaseFactory.open(url: "sqlite://" + path)
        try await Migrator().migrate(database)
        try await database.ping()
        #expect(try await Migrator().appliedVersions(database) == Schema.migrations.map(\.version))
        await database.close()
    }

    @Test(.enabled(if: postgresURL != nil, "PostgreSQL runs under scripts/with-postgres (make test)"))
    func postgresSuiteCreatesMigratesAndDropsItsOwnDatabase() async throws {
        let url = try #require(Self.postgresURL)
        let admin = try await PostgresDatabase(url: url, poolSize: 1)
        let name = "portaria_suite_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        _ = try await admin.read { try $0.execute("CREATE DATABASE \(name)", []) }

        let base = url[..<(url.lastIndex(of: "/") ?? url.endIndex)]
        let database = try await DatabaseFactory.open(url: "\(base)/\(name)")
        let applied = try await Migrator().migrate(database)
        #expect(applied == Schema.migrations.map(\.version))
        #expect(try await Migrator().migrate(database).isEmpty)
        try await database.ping()
        await database.close()

        _ = try await admin.read { try $0.execute("DROP DATABASE \(name)", []) }
        await admin.close()
    }
}
