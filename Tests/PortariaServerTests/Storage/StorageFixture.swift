import Foundation
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// The storage backends the contract runs on.
enum Backend: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }

    /// The backends a parameterised test runs on: both where the run has PostgreSQL
    /// (`scripts/with-postgres`), SQLite alone otherwise — except in a strict run (CI),
    /// where a missing cluster fails the PostgreSQL cases instead of dropping them.
    static var underTest: [Backend] { casesAvailable(allCases) { $0 == .postgres ? .postgres : nil } }
}

extension TestPostgres {
    /// Runs a statement outside any transaction on the cluster's database (CREATE/DROP
    /// DATABASE) through the server's own libpq connection.
    static func administer(_ sql: String) async throws {
        let conninfo = PostgresDatabase.withDefaults(try baseURL)
        try await offload {
            let connection = try PostgresConnection(conninfo: conninfo)
            try connection.simple(sql)
        }
    }
}

/// A fresh, empty database of one backend, removed afterwards.
final class StorageFixture: Sendable {
    let backend: Backend
    /// What `DatabaseFactory.open(url:)` takes to open another handle on the same database.
    let url: String
    let database: any SQLDatabase
    private let cleanup: @Sendable () async -> Void

    private init(backend: Backend, url: String, database: any SQLDatabase, cleanup: @escaping @Sendable () async -> Void) {
        self.backend = backend
        self.url = url
        self.database = database
        self.cleanup = cleanup
    }

    var dialect: SQLDialect { database.dialect }

    /// Another independent handle (own connections) on the same database, as a second
    /// server instance would have.
    func openAnother() async throws -> any SQLDatabase {
        try await DatabaseFactory.open(url: url)
    }

    static func make(_ backend: Backend) async throws -> StorageFixture {
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("portaria-storage-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let url = "sqlite://" + directory.appendingPathComponent("test.db").path
            let database = try await DatabaseFactory.open(url: url)
            return StorageFixture(backend: backend, url: url, database: database) {
                await database.close()
                try? FileManager.default.removeItem(at: directory)
            }
        case .postgres:
            let name = "portaria_test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20))"
            try await TestPostgres.administer("CREATE DATABASE \(name)")
            let url = try TestPostgres.url(database: name)
            do {
                let database = try await DatabaseFactory.open(url: url)
                return StorageFixture(backend: backend, url: url, database: database) {
                    await database.close()
                    try? await TestPostgres.administer("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
                }
            } catch {
                try? await TestPostgres.administer("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
                throw error
            }
        }
    }

    /// Gives `body` a fresh database and always removes it.
    static func with(_ backend: Backend, _ body: (StorageFixture) async throws -> Void) async throws {
        let fixture = try await make(backend)
        do {
            try await body(fixture)
        } catch {
            await fixture.cleanup()
            throw error
        }
        await fixture.cleanup()
    }
}

extension StorageError {
    /// The case without its message, for assertions.
    enum Kind: Sendable { case uniqueViolation, foreignKeyViolation, checkViolation, unavailable, full, conflict, failed }

    var kind: Kind {
        switch self {
        case .uniqueViolation: .uniqueViolation
        case .foreignKeyViolation: .foreignKeyViolation
        case .checkViolation: .checkViolation
        case .unavailable: .unavailable
        case .full: .full
        case .conflict: .conflict
        case .failed: .failed
        }
    }
}

/// Expects `body` to throw a `StorageError` of `kind`; records an issue otherwise.
func expectStorageError<T>(_ kind: StorageError.Kind, sourceLocation: SourceLocation = #_sourceLocation,
                           _ body: () async throws -> T) async {
    do {
        _ = try await body()
        Issue.record("expected StorageError.\(kind), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as StorageError {
        #expect(error.kind == kind, "got \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected StorageError.\(kind), got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    }
}
