import CSQLite
import Foundation
import PortariaCore

/// Owns one `sqlite3*` handle and its prepared statements. Used by one thread at a time.
final class SQLiteConnection: SQLConnection {
    let dialect = SQLDialect.sqlite
    let transactionHooks = TransactionHooks()
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    private let statementLog: SQLStatementLog?

    init(path: String, readOnly: Bool, statementLog: SQLStatementLog? = nil) throws {
        self.statementLog = statementLog
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE))
            | SQLITE_OPEN_NOMUTEX
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        self.handle = handle
        guard code == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            throw StorageError.unavailable("sqlite \(path): \(message)")
        }
        sqlite3_extended_result_codes(handle, 1)
        _ = sqlite3_busy_timeout(handle, 5000)
        try execute("PRAGMA foreign_keys = ON", [])
    }

    /// Rows changed by this connection since it opened (`StorageFaultWatch.watchingWrite`).
    var totalChanges: Int64 { sqlite3_total_changes64(handle) }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Every SQLite return code goes through here.
    fileprivate func check(_ code: Int32, _ sql: String) throws {
        guard code != SQLITE_OK && code != SQLITE_ROW && code != SQLITE_DONE else { return }
        let message = String(cString: sqlite3_errmsg(handle))
        switch code & 0xFF {
        case SQLITE_CONSTRAINT:
            switch code {
            case portaria_sqlite_constraint_unique, portaria_sqlite_constraint_primarykey: throw StorageError.uniqueViolation(message)
            case portaria_sqlite_constraint_foreignkey: throw StorageError.foreignKeyViolation(message)
            case portaria_sqlite_constraint_check: throw StorageError.checkViolation(message)
            default: throw StorageError.failed(message)
            }
        case SQLITE_BUSY, SQLITE_LOCKED: throw StorageError.conflict(message)
        case SQLITE_FULL: throw StorageError.full(message)
        case SQLITE_IOERR:
            // A write that found no room fails as an I/O error (the WAL could not grow);
            // the errno behind it tells a full disk or quota from a failing one.
            let systemError = sqlite3_system_errno(handle)
            if systemError == ENOSPC || systemError == EDQUOT { throw StorageError.full(message) }
            throw StorageError.unavailable(message)
        case SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_CORRUPT, SQLITE_NOTADB:
            throw StorageError.unavailable(message)
        default: throw StorageError.failed("\(message) [\(sql.prefix(80))]")
        }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            return statement
        }
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil), sql)
        guard let statement else { throw StorageError.failed("empty statement") }
        statements[sql] = statement
        statementLog?.note(sql)
        return statement
    }

    private func bind(_ parameters: [SQLValue], to statement: OpaquePointer, _ sql: String) throws {
        guard Int(sqlite3_bind_parameter_count(statement)) == parameters.count else {
            throw StorageError.failed("statement expects \(sqlite3_bind_parameter_count(statement)) parameters, got \(parameters.count)")
        }
        for (offset, value) in parameters.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .null: try check(sqlite3_bind_null(statement, index), sql)
            case .integer(let number): try check(sqlite3_bind_int64(statement, index, number), sql)
            case .real(let number): try check(sqlite3_bind_double(statement, index, number), sql)
            case .text(let text):
                var text = text
                let code = text.withUTF8 { buffer in
                    buffer.withMemoryRebound(to: CChar.self) {
                        portaria_sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count))
                    }
                }
                try check(code, sql)
            }
        }
    }

    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int {
        let statement = try prepare(sql)
        defer { sqlite3_reset(statement) }
        try bind(parameters, to: statement, sql)
        var code = sqlite3_step(statement)
        while code == SQLITE_ROW { code = sqlite3_step(statement) }
        try check(code, sql)
        return Int(sqlite3_changes(handle))
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [SQLRow] {
        let statement = try prepare(sql)
        defer { sqlite3_reset(statement) }
        try bind(parameters, to: statement, sql)
        let count = Int(sqlite3_column_count(statement))
        let columns = (0..<count).map { String(cString: sqlite3_column_name(statement, Int32($0))) }
        var rows: [SQLRow] = []
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else { try check(code, sql); break }
            var values: [SQLValue] = []
            values.reserveCapacity(count)
            for column in 0..<Int32(count) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_NULL: values.append(.null)
                default:
                    let bytes = sqlite3_column_text(statement, column)
                    values.append(bytes.map { .text(String(cString: $0)) } ?? .null)
                }
            }
            rows.append(SQLRow(columns: columns, values: values))
        }
        return rows
    }

    /// Copies this database, page by page, into `destination` with SQLite's online backup
    /// API: a consistent snapshot while a server keeps writing (a step that meets the
    /// writer's lock waits and goes on; a write meanwhile restarts the copy, which SQLite
    /// does by itself).
    func backup(into destination: SQLiteConnection) throws {
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw StorageError.failed("backup: \(String(cString: sqlite3_errmsg(destination.handle)))")
        }
        var code: Int32
        repeat {
            code = sqlite3_backup_step(backup, 256)
            if code == SQLITE_BUSY || code == SQLITE_LOCKED { usleep(20_000) }
        } while code == SQLITE_OK || code == SQLITE_BUSY || code == SQLITE_LOCKED
        let finished = sqlite3_backup_finish(backup)
        try destination.check(code == SQLITE_DONE ? finished : code, "backup")
    }

    /// Statements that must not go through the cache (transaction control, pragmas with results).
    func run(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &error)
        // sqlite3_errmsg still holds the same message; check(_:_:) maps the code to its kind
        // (a file that is not a database is `.unavailable`, not a generic failure).
        if let error { sqlite3_free(error) }
        try check(code, sql)
    }
}
