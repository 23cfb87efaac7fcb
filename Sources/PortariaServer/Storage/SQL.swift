import Foundation
import PortariaCore

/// A value bound to or read from SQL. Booleans are stored as integers 0/1 and
/// timestamps as integer milliseconds since the epoch, so the same schema and the same
/// statements work on SQLite and PostgreSQL.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    public static func bool(_ value: Bool) -> SQLValue { .integer(value ? 1 : 0) }
    public static func date(_ value: Date) -> SQLValue { .integer(Int64((value.timeIntervalSince1970 * 1000).rounded())) }
    public static func optional(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(nilLiteral: ()) { self = .null }
}

/// One result row. Accessors convert, since PostgreSQL answers in text format.
public struct SQLRow: Sendable {
    public let columns: [String]
    public let values: [SQLValue]

    public init(columns: [String], values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    public subscript(_ name: String) -> SQLValue {
        guard let index = columns.firstIndex(of: name) else { return .null }
        return values[index]
    }

    public func string(_ name: String) -> String? {
        switch self[name] {
        case .text(let value): return value
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .null: return nil
        }
    }

    public func int(_ name: String) -> Int64? {
        switch self[name] {
        case .integer(let value): return value
        case .text(let value): return Int64(value)
        case .real(let value): return Int64(value)
        case .null: return nil
        }
    }

    public func double(_ name: String) -> Double? {
        switch self[name] {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        case .text(let value): return Double(value)
        case .null: return nil
        }
    }

    public func bool(_ name: String) -> Bool? {
        switch self[name] {
        case .integer(let value): return value != 0
        case .text(let value): return value == "1" || value == "t" || value == "true"
        case .real(let value): return value != 0
        case .null: return nil
        }
    }

    public func date(_ name: String) -> Date? {
        int(name).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }
}

/// The two SQL dialects. Statements are written once with `?` placeholders; the few
/// differences are asked of the dialect instead of branching in every repository.
public enum SQLDialect: String, Sendable {
    case sqlite, postgres

    /// Row locking for read-modify-write inside a write transaction. SQLite has a single
    /// writer, so its write transactions are already serial and need none.
    public var forUpdate: String { self == .postgres ? " FOR UPDATE" : "" }
    public var skipLocked: String { self == .postgres ? " FOR UPDATE SKIP LOCKED" : "" }
}

/// A connection handed to a read or write closure. Synchronous on purpose: the closure
/// runs on a storage thread, so a transaction never spans an `await`.
public protocol SQLConnection {
    var dialect: SQLDialect { get }
    /// Runs a statement; returns the number of rows changed.
    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int
    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [SQLRow]
}

extension SQLConnection {
    @discardableResult
    public func execute(_ sql: String, _ parameters: SQLValue...) throws -> Int { try execute(sql, parameters) }
    public func query(_ sql: String, _ parameters: SQLValue...) throws -> [SQLRow] { try query(sql, parameters) }
    public func queryOne(_ sql: String, _ parameters: [SQLValue]) throws -> SQLRow? { try query(sql, parameters).first }
    public func queryOne(_ sql: String, _ parameters: SQLValue...) throws -> SQLRow? { try query(sql, parameters).first }
}

/// A database: SQLite (embedded, one instance) or PostgreSQL (shared by instances).
public protocol SQLDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Runs `body` on a connection that sees committed data.
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// Runs `body` in a transaction, committed when it returns and rolled back when it throws.
    @discardableResult
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// Succeeds when the database answers a trivial query.
    func ping() async throws
    func close() async
}

/// Storage failures that callers handle by kind rather than by message.
public enum StorageError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A unique or primary key constraint refused the row.
    case uniqueViolation(String)
    case foreignKeyViolation(String)
    case checkViolation(String)
    /// The database could not be reached or opened.
    case unavailable(String)
    /// A concurrent transaction won (PostgreSQL serialization failure or deadlock); retry.
    case conflict(String)
    case failed(String)

    public var description: String {
        switch self {
        case .uniqueViolation(let detail): return "unique constraint violated: \(detail)"
        case .foreignKeyViolation(let detail): return "foreign key violated: \(detail)"
        case .checkViolation(let detail): return "check constraint violated: \(detail)"
        case .unavailable(let detail): return "database unavailable: \(detail)"
        case .conflict(let detail): return "concurrent update conflict: \(detail)"
        case .failed(let detail): return "database error: \(detail)"
        }
    }
}

/// Opens the database a `--database` URL names.
public enum DatabaseFactory {
    public static func open(url: String) async throws -> any SQLDatabase {
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return try await PostgresDatabase(url: url)
        }
        if url.hasPrefix("sqlite://") {
            let path = String(url.dropFirst("sqlite://".count))
            guard !path.isEmpty else { throw StorageError.unavailable("sqlite URL has no path: \(url)") }
            return try SQLiteDatabase(path: path)
        }
        throw StorageError.unavailable("--database must start with sqlite:// or postgres://, got \(url.prefix(40))")
    }
}
