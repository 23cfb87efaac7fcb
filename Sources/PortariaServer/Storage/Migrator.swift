import Foundation
import PortariaCore

/// One versioned schema change. Statements are written in the SQL both databases accept;
/// where they differ, `postgres` carries the PostgreSQL spelling.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    public let statements: [Statement]

    public struct Statement: Sendable {
        public let sql: String
        public let postgres: String?
        public init(_ sql: String, postgres: String? = nil) {
            self.sql = sql
            self.postgres = postgres
        }
        func text(for dialect: SQLDialect) -> String { dialect == .postgres ? (postgres ?? sql) : sql }

        /// A table whose key is an integer the database assigns: the one column the two
        /// dialects spell differently, passed to `create` as its definition.
        static func table(autoincrementing key: String, _ create: (String) -> String) -> Statement {
            Statement(create("\(key) INTEGER PRIMARY KEY AUTOINCREMENT"),
                      postgres: create("\(key) BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"))
        }
    }
}

/// Applies migrations in order, each in its own transaction, recording them in
/// `schema_migrations`. Safe to run from several instances at once on PostgreSQL (an
/// advisory lock serializes them) and idempotent.
public struct Migrator: Sendable {
    public let migrations: [Migration]

    public init(migrations: [Migration] = Schema.migrations) {
        precondition(Set(migrations.map(\.version)).count == migrations.count, "duplicate migration versions")
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Returns the versions it applied.
    @discardableResult
    public func migrate(_ database: any SQLDatabase) async throws -> [Int] {
        _ = try await database.write { connection in
            // Concurrent CREATE TABLE IF NOT EXISTS can still collide in PostgreSQL's
            // catalog (unique violation on pg_type); the same lock serializes it.
            try connection.lock(.migrations)
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at BIGINT NOT NULL)
                """, [])
        }
        var applied: [Int] = []
        for migration in migrations {
            let didApply = try await database.write { connection -> Bool in
                // Serializes concurrent migrators; released at commit.
                try connection.lock(.migrations)
                let done = try connection.queryOne("SELECT version FROM schema_migrations WHERE version = ?",
                                                   .integer(Int64(migration.version)))
                guard done == nil else { return false }
                for statement in migration.statements {
                    try connection.execute(statement.text(for: connection.dialect), [])
                }
                try connection.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                                       .integer(Int64(migration.version)), .text(migration.name), .date(Date()))
                return true
            }
            if didApply { applied.append(migration.version) }
        }
        return applied
    }

    public func appliedVersions(_ database: any SQLDatabase) async throws -> [Int] {
        try await database.read { connection in
            try connection.query("SELECT version FROM schema_migrations ORDER BY version", []).compactMap { try $0.int("version").map(Int.init) }
        }
    }
}
