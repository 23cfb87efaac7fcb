import CLibPQ
import Foundation
import PortariaCore

/// PostgreSQL through libpq: a pool of connections, statements prepared once per
/// connection, every write in a transaction. Several `portaria serve` instances may share
/// one database.
public final class PostgresDatabase: SQLDatabase {
    public let dialect = SQLDialect.postgres
    private let pool: ConnectionPool<PostgresConnection>
    let conninfo: String
    /// Logs where a fault (server unreachable, restarting, read-only) starts and ends.
    public let faults: StorageFaultWatch
    public var faultWatch: StorageFaultWatch? { faults }

    public init(url: String, poolSize: Int = 8, log: Log = .shared) async throws {
        conninfo = Self.withDefaults(url)
        let info = conninfo
        // Connecting blocks; do it off the cooperative pool.
        let connections: [PostgresConnection] = try await BlockingQueues(label: "portaria.postgres.connect", count: 1).run {
            let first = try PostgresConnection(conninfo: info)
            return UncheckedBox([first] + (try (1..<max(1, poolSize)).map { _ in try PostgresConnection(conninfo: info) }))
        }.value
        faults = StorageFaultWatch(store: "database", log: log)
        // Every connection stuck for this long means the database is not answering: the
        // waiting request is answered 503 rather than held until the client gives up.
        pool = ConnectionPool(connections: connections, label: "portaria.postgres", waitLimit: .seconds(30))
    }

    /// Adds a connect timeout unless the URL sets one, so an unreachable server is an
    /// error within seconds instead of a hang.
    static func withDefaults(_ url: String) -> String {
        guard !url.contains("connect_timeout=") else { return url }
        return url + (url.contains("?") ? "&" : "?") + "connect_timeout=5"
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await faults.watching(write: false) { try await pool.withConnection { connection in
            try Self.once(more: connection) { try body(connection) }
        } }
    }

    public func readSnapshot<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await faults.watching(write: false) { try await pool.withConnection { connection in
            try Self.once(more: connection) {
                // REPEATABLE READ: every statement sees the snapshot taken by the first one.
                try connection.simple("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                defer { try? connection.simple("COMMIT") }
                return try body(connection)
            }
        } }
    }

    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await faults.watching(write: true) { try await pool.withConnection { connection in
            try Self.once(more: connection) {
                try inTransaction(begin: "BEGIN", on: connection, execute: connection.simple) { try body(connection) }
            }
        } }
    }

    @discardableResult
    public func writeNotDurable<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await faults.watching(write: true) { try await pool.withConnection { connection in
            try Self.once(more: connection) {
                try inTransaction(begin: "BEGIN", on: connection, execute: connection.simple) {
                    // Transaction-scoped: the pooled connection is back to the default after COMMIT.
                    try connection.simple("SET LOCAL synchronous_commit = off")
                    return try body(connection)
                }
            }
        } }
    }

    /// Runs `work` on `connection`, and once more if the connection was found dead on its
    /// very first statement and reconnected: the server ended it while it sat in the pool
    /// (a restart, a failover, an administrator's terminate). Nothing had run, so running
    /// again is safe — and without it each pooled connection would cost a request a 503 after
    /// every restart. A failure after any statement succeeded (a lost COMMIT, whose
    /// outcome is unknown) is never run again.
    static func once<T>(more connection: PostgresConnection, _ work: () throws -> T) throws -> T {
        connection.resetIfBroken()
        let (statements, reconnections) = (connection.succeededStatements, connection.reconnections)
        do {
            return try work()
        } catch StorageError.unavailable(let detail)
                    where connection.succeededStatements == statements && connection.reconnections > reconnections
                    && connection.isHealthy {
            _ = detail
            return try work()
        }
    }

    public func ping() async throws {
        _ = try await read { try $0.query("SELECT 1 AS ok", []) }
    }

    public func close() async {
        _ = pool.close()
    }
}
