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
    /// `value` as it reads back once stored with `.date` (whole milliseconds, rounded). An
    /// answer built from the clock and later re-read from its row must name the same
    /// instant: a receipt at 14:32:05.9996 answered "14:32:05" and, re-read, "14:32:06".
    public static func storedPrecision(_ value: Date) -> Date {
        Date(timeIntervalSince1970: Double(Int64((value.timeIntervalSince1970 * 1000).rounded())) / 1000)
    }
    public static func optional(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(nilLiteral: ()) { self = .null }
}

/// One result row. Accessors convert, since PostgreSQL answers in text format.
///
/// Strict on purpose: a name the statement did not return throws
/// `RowDecodingError.unknownColumn` (a typo in a store is an error, never a silent NULL),
/// and `required` reads a `NOT NULL` column, throwing `.unexpectedNull` where the
/// optional accessors would answer nil. Use the optional accessors for nullable columns
/// only (decision 0030).
public struct SQLRow: Sendable {
    public let columns: [String]
    public let values: [SQLValue]

    /// The value of `name`, NULL included; throws for a column the statement did not return.
    public func value(_ name: String) throws -> SQLValue {
        guard let index = columns.firstIndex(of: name) else { throw RowDecodingError.unknownColumn(name, columns: columns) }
        return values[index]
    }

    public func string(_ name: String) throws -> String? { try value(name).asText }
    public func int(_ name: String) throws -> Int64? { try value(name).asInteger }
    public func double(_ name: String) throws -> Double? { try value(name).asReal }
    public func bool(_ name: String) throws -> Bool? { try value(name).asBool }
    public func date(_ name: String) throws -> Date? { try value(name).asDate }

    /// Reads of `NOT NULL` columns: the same conversions, a NULL (or a value that does not
    /// convert) throws instead of answering nil.
    public var required: Required { Required(row: self) }

    public struct Required: Sendable {
        let row: SQLRow

        public func string(_ name: String) throws -> String { try read(name, \.asText) }
        public func int(_ name: String) throws -> Int64 { try read(name, \.asInteger) }
        public func double(_ name: String) throws -> Double { try read(name, \.asReal) }
        public func bool(_ name: String) throws -> Bool { try read(name, \.asBool) }
        public func date(_ name: String) throws -> Date { try read(name, \.asDate) }
        /// An id column: a value that cannot be an id (`Identifier`'s rule) throws like a NULL.
        public func id<Kind>(_ name: String) throws -> Identifier<Kind> {
            guard let id = try row.value(name).asText.flatMap(Identifier<Kind>.init(rawValue:)) else {
                throw RowDecodingError.unexpectedNull(name)
            }
            return id
        }

        private func read<T>(_ name: String, _ convert: KeyPath<SQLValue, T?>) throws -> T {
            guard let value = try row.value(name)[keyPath: convert] else { throw RowDecodingError.unexpectedNull(name) }
            return value
        }
    }
}

extension SQLValue {
    /// A typed id as its text.
    static func id<Kind>(_ id: Identifier<Kind>) -> SQLValue { .text(id.rawValue) }

    /// The conversions the row accessors share (nil for NULL or a text that does not parse).
    var asText: String? { converted(text: { $0 }, integer: { String($0) }, real: { String($0) }) }

    var asInteger: Int64? {
        // Truncated like a C cast, but nil instead of a trap for NaN or a real out of range.
        converted(text: { Int64($0) }, integer: { $0 }, real: { Int64(exactly: $0.rounded(.towardZero)) })
    }

    var asReal: Double? { converted(text: { Double($0) }, integer: { Double($0) }, real: { $0 }) }

    /// Booleans are integers 0/1; PostgreSQL's text format may also answer t/true.
    var asBool: Bool? {
        converted(text: { $0 == "1" || $0 == "t" || $0 == "true" }, integer: { $0 != 0 }, real: { $0 != 0 })
    }

    /// One conversion per storage class; NULL is always nil.
    @inline(__always)
    private func converted<Value>(text: (String) -> Value?, integer: (Int64) -> Value?, real: (Double) -> Value?) -> Value? {
        switch self {
        case .text(let value): return text(value)
        case .integer(let value): return integer(value)
        case .real(let value): return real(value)
        case .null: return nil
        }
    }

    /// Timestamps are integer milliseconds since the epoch.
    var asDate: Date? { asInteger.map { Date(timeIntervalSince1970: Double($0) / 1000) } }
}

/// A row that does not have what a store reads from it: a bug in the store (a column
/// name its statement does not return) or data that breaks the schema's promise (NULL
/// in a `NOT NULL` column). Not a `StorageError`: nothing a caller should handle by kind.
public enum RowDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownColumn(String, columns: [String])
    case unexpectedNull(String)
    /// A text column holding a value no case of its type names.
    case unknownValue(String, value: String)

    public var description: String {
        switch self {
        case .unknownColumn(let name, let columns):
            return "no column \(name) in this row (it has \(columns.joined(separator: ", ")))"
        case .unexpectedNull(let name): return "column \(name) is NULL or not of the expected type"
        case .unknownValue(let name, let value): return "column \(name) holds \(value.prefix(40)), which no case names"
        }
    }
}

/// The two SQL dialects. Statements are written once with `?` placeholders; what differs
/// is asked of the dialect, or done by a named operation of `SQLConnection` below, instead
/// of branching in every store (decision 0002).
public enum SQLDialect: String, Sendable {
    case sqlite, postgres

    /// Row locking for read-modify-write inside a write transaction. SQLite has a single
    /// writer, so its write transactions are already serial and need none.
    public var forUpdate: String { self == .postgres ? " FOR UPDATE" : "" }
    public var skipLocked: String { self == .postgres ? " FOR UPDATE SKIP LOCKED" : "" }

    /// Whether write transactions run one at a time (SQLite: one writer connection), so a
    /// read-check-write inside one transaction cannot interleave with another.
    public var hasSingleWriter: Bool { self == .sqlite }

    /// Whether other server processes may share the database (PostgreSQL). With SQLite the
    /// server holds the file's lock: whatever the database holds was written by this
    /// process or a previous one, never by a live neighbour.
    public var isSharedByInstances: Bool { self == .postgres }
}

/// A lock held until the end of the current write transaction, serialising the
/// transactions that take the same one. Named here so that no store invents a number.
public enum TransactionLock: Sendable, Equatable {
    /// Schema migrations (concurrent `CREATE TABLE IF NOT EXISTS` can collide in
    /// PostgreSQL's catalog).
    case migrations
    /// Creating the first signing key and the OTP pepper.
    case serviceSecrets
    /// Appending to one company's event log, so `seq` order is commit order.
    case eventLog(companyID: String)

    /// The 64-bit key `pg_advisory_xact_lock` takes. The fixed keys keep the numbers the
    /// schema has always used, so old and new instances exclude each other during a rollout.
    var advisoryKey: Int64 {
        switch self {
        case .migrations: return 7_246_100
        case .serviceSecrets: return 7_246_101
        case .eventLog(let companyID): return Self.stableKey("events:" + companyID)
        }
    }

    /// FNV-1a over the name, 63 bits (Swift's `hashValue` is seeded per process and would
    /// differ between instances).
    static func stableKey(_ name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash & 0x7fff_ffff_ffff_ffff)
    }
}

/// A channel on which a committed transaction tells the other instances something.
public enum NotificationChannel: String, Sendable {
    /// Payload: a company id whose event log grew.
    case events = "portaria_events"
    /// Payload: a video-call message between instances (`CallRelayMessage`, decision 0056).
    case calls = "portaria_calls"
    /// Payload: empty; push jobs were enqueued, so every instance's worker looks for work.
    case push = "portaria_push"
    /// Payload: a session ended or a user's access changed (`AuthChange`, decision 0043);
    /// every instance forgets what its `SessionCache` holds for it.
    case auth = "portaria_auth"
}

/// A connection handed to a read or write closure. Synchronous on purpose: the closure
/// runs on a storage thread, so a transaction never spans an `await`.
public protocol SQLConnection {
    var dialect: SQLDialect { get }
    /// Runs a statement; returns the number of rows changed.
    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int
    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [SQLRow]
    /// The current write transaction's end-of-transaction work (see `lastWork`, `afterCommit`).
    var transactionHooks: TransactionHooks { get }
}

extension SQLConnection {
    /// Takes `lock` until this write transaction ends. SQLite: nothing to do, its write
    /// transactions are already serial.
    public func lock(_ lock: TransactionLock) throws {
        guard !dialect.hasSingleWriter else { return }
        _ = try query("SELECT pg_advisory_xact_lock(?) AS locked", [.integer(lock.advisoryKey)])
    }

    /// The state kept under `key` until this write transaction ends: made by `make` the
    /// first time, when `run` is registered to run on it as the transaction's last work,
    /// just before COMMIT (still inside the transaction: a throw rolls it back). For what
    /// must happen as late as possible — taking a lock that serialises transactions.
    func lastWork<State: AnyObject>(_ key: String, make: () -> State,
                                    run: @escaping (State, any SQLConnection) throws -> Void) -> State {
        transactionHooks.state(key, make: make, run: run)
    }

    /// A value that lives until this write transaction ends (commit or rollback): how one
    /// part of a transaction tells a later part something without threading a parameter
    /// through every store in between.
    func transactionValue<Value: AnyObject>(_ key: String, as type: Value.Type = Value.self) -> Value? {
        transactionHooks.value(forKey: key) as? Value
    }

    func setTransactionValue(_ value: AnyObject?, forKey key: String) {
        transactionHooks.setValue(value, forKey: key)
    }

    /// Runs `action` right after this write transaction commits, on the thread that
    /// committed it (never if it rolls back). Must not block or touch the database.
    func afterCommit(_ action: @escaping () -> Void) {
        transactionHooks.addAfterCommit(action)
    }

    /// Tells every instance listening on `channel`, when (and only if) this transaction
    /// commits. SQLite: nothing to send, no other instance exists (the in-process
    /// `EventBus` carries the news).
    public func notifyAtCommit(_ channel: NotificationChannel, payload: String) throws {
        guard dialect.isSharedByInstances else { return }
        _ = try query("SELECT pg_notify(?, ?) AS notified", [.text(channel.rawValue), .text(payload)])
    }

    /// `lock(_:)` then `notifyAtCommit(_:payload:)` in one statement (one round trip fewer
    /// while the lock is held). The notification waits for COMMIT either way.
    public func lock(_ lock: TransactionLock, thenNotifyAtCommit channel: NotificationChannel, payload: String) throws {
        guard !dialect.hasSingleWriter, dialect.isSharedByInstances else {
            try self.lock(lock)
            try notifyAtCommit(channel, payload: payload)
            return
        }
        _ = try query("SELECT pg_advisory_xact_lock(?) AS locked, pg_notify(?, ?) AS notified",
                      [.integer(lock.advisoryKey), .text(channel.rawValue), .text(payload)])
    }

    /// Whether values this connection overwrites or deletes are zeroed on disk (SQLite's
    /// `secure_delete`) instead of left in free pages. PostgreSQL keeps old row versions
    /// until VACUUM whatever is asked here (docs/ops.md says what to run).
    public func zeroFreedSpace(_ on: Bool) throws {
        guard dialect == .sqlite else { return }
        try execute(on ? "PRAGMA secure_delete = ON" : "PRAGMA secure_delete = OFF", [])
    }

    @discardableResult
    public func execute(_ sql: String, _ parameters: SQLValue...) throws -> Int { try execute(sql, parameters) }
    public func query(_ sql: String, _ parameters: SQLValue...) throws -> [SQLRow] { try query(sql, parameters) }
    public func queryOne(_ sql: String, _ parameters: [SQLValue]) throws -> SQLRow? { try query(sql, parameters).first }
    public func queryOne(_ sql: String, _ parameters: SQLValue...) throws -> SQLRow? { try query(sql, parameters).first }
}

/// A database: SQLite (embedded, one instance) or PostgreSQL (shared by instances).
///
/// Isolation: a `write` is one transaction (SQLite: `BEGIN IMMEDIATE`, serial; PostgreSQL:
/// READ COMMITTED, so read-modify-write takes row locks with `dialect.forUpdate`). A `read`
/// sees committed data, but how much of it at once differs: on SQLite the whole closure
/// reads one snapshot (it runs in a read transaction); on PostgreSQL each statement sees
/// what was committed when *it* started, so two queries may disagree. A read of several
/// statements that must agree (a visit and its timeline) uses `readSnapshot`.
public protocol SQLDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Runs `body` on a connection that sees committed data (per statement on PostgreSQL).
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// Runs `body` on one consistent snapshot of committed data, on either backend.
    func readSnapshot<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// Runs `body` in a transaction, committed when it returns and rolled back when it throws.
    @discardableResult
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// A `write` whose commit does not wait for the disk (SQLite `synchronous = NORMAL` in
    /// WAL mode, PostgreSQL `synchronous_commit = off`): visible and consistent at once, and
    /// it survives a process crash, but an OS crash or power cut (SQLite) or a database
    /// server crash (PostgreSQL) may undo it. Only for writes whose loss is harmless — a
    /// push claim, which then falls back to pending and is sent again (decision 0005's
    /// at-least-once).
    @discardableResult
    func writeNotDurable<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// Succeeds when the database answers a trivial query.
    func ping() async throws
    func close() async
    /// Where this database's faults are followed (nil for stores that do not watch).
    var faultWatch: StorageFaultWatch? { get }
}

extension SQLDatabase {
    public var faultWatch: StorageFaultWatch? { nil }
}

/// Storage failures that callers handle by kind rather than by message.
public enum StorageError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A unique or primary key constraint refused the row.
    case uniqueViolation(String)
    case foreignKeyViolation(String)
    case checkViolation(String)
    /// The database could not be reached or opened, is restarting, or refuses writes
    /// (read-only): a fault of the moment, answered 503 (`StorageFaultAnswer`).
    case unavailable(String)
    /// The disk (or quota) holding the database or the media files is full: answered 507.
    case full(String)
    /// A concurrent transaction won (PostgreSQL serialization failure or deadlock); retry.
    case conflict(String)
    case failed(String)

    public var description: String {
        switch self {
        case .uniqueViolation(let detail): return "unique constraint violated: \(detail)"
        case .foreignKeyViolation(let detail): return "foreign key violated: \(detail)"
        case .checkViolation(let detail): return "check constraint violated: \(detail)"
        case .unavailable(let detail): return "database unavailable: \(detail)"
        case .full(let detail): return "storage full: \(detail)"
        case .conflict(let detail): return "concurrent update conflict: \(detail)"
        case .failed(let detail): return "database error: \(detail)"
        }
    }
}

/// `begin`, then `body`, then the connection's last work (`SQLConnection.lastWork`), then
/// COMMIT, then its after-commit actions; ROLLBACK (best effort, and no after-commit
/// action) when `body`, the last work or the commit throws. The write transaction of
/// both backends; `execute` runs one statement.
func inTransaction<T>(begin: String, on connection: any SQLConnection, execute: (String) throws -> Void,
                      _ body: () throws -> T) throws -> T {
    let hooks = connection.transactionHooks
    hooks.reset()
    try execute(begin)
    do {
        let value = try body()
        try hooks.runLastWork(on: connection)
        try execute("COMMIT")
        hooks.runAfterCommit()
        return value
    } catch {
        hooks.reset()
        try? execute("ROLLBACK")
        throw error
    }
}

/// What one write transaction keeps for its end: work that must be its last (run inside
/// it, just before COMMIT, in the order first registered) and actions for once it has
/// committed (run on the storage thread right after COMMIT, before the connection serves
/// anyone else). Owned by one connection, used by the thread running its transaction.
public final class TransactionHooks {
    private var lastWork: [(key: String, state: AnyObject, run: (AnyObject, any SQLConnection) throws -> Void)] = []
    private var afterCommit: [() -> Void] = []
    private var values: [String: AnyObject] = [:]

    init() {}

    func reset() {
        lastWork.removeAll()
        afterCommit.removeAll()
        values.removeAll()
    }

    func value(forKey key: String) -> AnyObject? { values[key] }
    func setValue(_ value: AnyObject?, forKey key: String) { values[key] = value }

    func state<State: AnyObject>(_ key: String, make: () -> State,
                                 run: @escaping (State, any SQLConnection) throws -> Void) -> State {
        if let entry = lastWork.first(where: { $0.key == key }), let state = entry.state as? State { return state }
        let state = make()
        lastWork.append((key, state, { state, connection in try run(state as! State, connection) }))
        return state
    }

    func addAfterCommit(_ action: @escaping () -> Void) { afterCommit.append(action) }

    func runLastWork(on connection: any SQLConnection) throws {
        // Work may register more work (for another key): run until none is left.
        var index = 0
        while index < lastWork.count {
            let entry = lastWork[index]
            try entry.run(entry.state, connection)
            index += 1
        }
    }

    func runAfterCommit() {
        let actions = afterCommit
        reset()
        for action in actions { action() }
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
