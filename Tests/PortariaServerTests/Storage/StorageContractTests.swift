import Foundation
@testable import PortariaServer
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Runs `StorageContract` on every backend. PostgreSQL runs when
/// `PORTARIA_TEST_POSTGRES_URL` names a throw-away cluster and shows as skipped otherwise.
@Suite("Storage contract")
struct StorageContractTests {
    @Test("SQLite", arguments: StorageContract.checks)
    func sqlite(_ check: ContractCheck) async throws {
        try await StorageFixture.with(.sqlite) { try await check.run($0) }
    }

    // Serialized: each case opens a pool (plus four more handles for the concurrent
    // migrators), and a throw-away cluster allows only max_connections (100) clients.
    @Test("PostgreSQL",
          .requires(.postgres),
          .serialized,
          arguments: StorageContract.checks)
    func postgres(_ check: ContractCheck) async throws {
        try await StorageFixture.with(.postgres) { try await check.run($0) }
    }
}

/// Opening a database that is not there fails fast and by kind, on both backends; these
/// need no running PostgreSQL.
@Suite("Storage: opening failures")
struct StorageOpeningTests {
    /// "Gives up" versus "hangs": the open returns its error by itself; the time limit only
    /// ends one that would never return.
    @Test("an unreachable PostgreSQL is .unavailable after its retries, not hanging", .timeLimit(.minutes(2)))
    func unreachablePostgres() async throws {
        await expectStorageError(.unavailable) {
            _ = try await DatabaseFactory.open(url: "postgres://postgres@127.0.0.1:1/portaria")
        }
    }

    @Test("a PostgreSQL server that accepts and never answers is .unavailable after the connect timeout", .timeLimit(.minutes(2)))
    func silentPostgres() async throws {
        // A loopback listener that never speaks: only the connect timeout ends the attempt
        // (no packet leaves this machine).
        let listener = try LoopbackPort(listening: true)
        let port = listener.port
        await expectStorageError(.unavailable) {
            _ = try await DatabaseFactory.open(url: "postgres://postgres@127.0.0.1:\(port)/portaria?connect_timeout=2")
        }
        // Still listening until here (it closes when `listener` goes).
        #expect(listener.port == port)
    }

    @Test("SQLite in a missing directory is .unavailable")
    func sqliteMissingDirectory() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-missing-\(UUID().uuidString)/x/test.db").path
        await expectStorageError(.unavailable) {
            _ = try await DatabaseFactory.open(url: "sqlite://" + path)
        }
        #expect(!FileManager.default.fileExists(atPath: (path as NSString).deletingLastPathComponent))
    }

    @Test("SQLite on a file that is not a database is .unavailable")
    func sqliteNotADatabase() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-notdb-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("garbage.db").path
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: path))
        await expectStorageError(.unavailable) {
            let database = try await DatabaseFactory.open(url: "sqlite://" + path)
            try await Migrator().migrate(database)
        }
    }

    @Test("unknown URL schemes are refused", arguments: ["mysql://x", "sqlite://", "", "postgres"])
    func unknownScheme(_ url: String) async {
        await #expect(throws: StorageError.self) { _ = try await DatabaseFactory.open(url: url) }
    }
}
