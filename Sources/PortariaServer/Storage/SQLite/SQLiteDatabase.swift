import CSQLite
import Foundation
import PortariaCore

/// The embedded default: one SQLite file in WAL mode, one writer connection (SQLite
/// allows one writer at a time anyway, so queuing here is cheaper than busy-waiting in
/// SQLite) and a pool of read-only connections that read concurrently with it.
public final class SQLiteDatabase: SQLDatabase {
    public let dialect = SQLDialect.sqlite
    public let path: String
    private let writer: ConnectionPool<SQLiteConnection>
    private let readers: ConnectionPool<SQLiteConnection>
    /// Logs where a fault of this file (disk full, I/O error) starts and ends.
    public let faults: StorageFaultWatch
    public var faultWatch: StorageFaultWatch? { faults }
    /// Every distinct statement the connections have prepared (the query plan tests).
    public let statementLog = SQLStatementLog()

    public init(path: String, readerCount: Int = 4, log: Log = .shared) throws {
        self.path = path
        let faults = StorageFaultWatch(store: "database", log: log)
        self.faults = faults
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty && !FileManager.default.fileExists(atPath: directory) {
            throw StorageError.unavailable("sqlite: directory \(directory) does not exist")
        }
        let writerConnection = try SQLiteConnection(path: path, readOnly: false, statementLog: statementLog)
        // WAL lets readers proceed while the writer commits; FULL makes every commit
        // durable before the HTTP answer leaves (an accepted action survives a power cut,
        // not only a process crash).
        try writerConnection.run("PRAGMA journal_mode = WAL")
        try writerConnection.run("PRAGMA synchronous = FULL")
        writer = ConnectionPool(connections: [writerConnection], label: "portaria.sqlite.writer")
        let statementLog = self.statementLog
        readers = ConnectionPool(connections: try (0..<max(1, readerCount)).map { _ in
            try SQLiteConnection(path: path, readOnly: true, statementLog: statementLog)
        }, label: "portaria.sqlite.readers")
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await faults.watching(write: false) { try await readers.withConnection { connection in
            try connection.run("BEGIN DEFERRED")
            defer { try? connection.run("COMMIT") }
            return try body(connection)
        } }
    }

    /// A `read` is already one snapshot here: each runs in its own read transaction.
    public func readSnapshot<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await read(body)
    }

    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await writing(durable: true, body)
    }

    @discardableResult
    public func writeNotDurable<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await writing(durable: false, body)
    }

    /// A write's value and whether it changed any row (`StorageFaultWatch.watchingWrite`).
    private struct Written<T: Sendable>: Sendable {
        var value: T
        var wrote: Bool
    }

    private func writing<T: Sendable>(durable: Bool, _ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await faults.watchingWrite {
            let written: Written<T> = try await writer.withConnection { connection in
                if !durable {
                    // Outside the transaction, and back to FULL before the writer serves anyone else.
                    try connection.run("PRAGMA synchronous = NORMAL")
                }
                defer { if !durable { try? connection.run("PRAGMA synchronous = FULL") } }
                let before = connection.totalChanges
                let value = try inTransaction(begin: "BEGIN IMMEDIATE", on: connection, execute: connection.run) { try body(connection) }
                return Written(value: value, wrote: connection.totalChanges != before)
            }
            return (value: written.value, wrote: written.wrote)
        }
    }

    /// Copies the WAL into the database file and truncates it: page versions older than
    /// the last commit (a secret as it was before being wrapped) leave the disk.
    public func checkpointAndTruncate() async throws {
        try await writer.withConnection { try $0.run("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    public func ping() async throws {
        _ = try await readers.withConnection { try $0.query("SELECT 1 AS ok", []) }
    }

    public func close() async {
        _ = writer.close()
        _ = readers.close()
    }
}
