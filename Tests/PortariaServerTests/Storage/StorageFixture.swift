import Foundation
@testable import PortariaServer
import Testing

/// The storage backends the contract runs on.
enum Backend: String, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// The throw-away PostgreSQL the test run may use (`scripts/with-postgres` sets
/// `PORTARIA_TEST_POSTGRES_URL`); the tests create and drop their own databases in it.
enum TestPostgres {
    static let url: String? = {
        let value = ProcessInfo.processInfo.environment["PORTARIA_TEST_POSTGRES_URL"]
        guard let value, !value.isEmpty else {
            print("note: PORTARIA_TEST_POSTGRES_URL is not set; the PostgreSQL storage contract is skipped "
                  + "(run under scripts/with-postgres, or export a postgres:// URL of a throw-away cluster)")
            return nil
        }
        return value
    }()

    static var isConfigured: Bool { url != nil }

    /// The same server and credentials with another database name.
    static func url(database: String) throws -> String {
        let base = try #require(url)
        var components = try #require(URLComponents(string: base), "bad PORTARIA_TEST_POSTGRES_URL")
        components.path = "/" + database
        return try #require(components.string)
    }

    /// Runs a statement outside any transaction on the configured database (CREATE/DROP DATABASE).
    static func administer(_ sql: String) async throws {
        let conninfo = PostgresDatabase.withDefaults(try #require(url))
        try await offload {
            let connection = try PostgresConnection(conninfo: conninfo)
            try connection.simple(sql)
        }
    }
}

/// Runs blocking work on a Dispatch thread, keeping Swift's small cooperative pool free.
func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        // A serial queue of its own: on Linux the global concurrent pool has one thread per
        // core and blocking calls there would stall each other (and the code under test).
        DispatchQueue(label: "portaria.tests.offload").async { continuation.resume(with: Result { try body() }) }
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
