import CLibPQ
import Foundation
import PortariaCore

/// Owns one `PGconn*` and the statements prepared on it. Used by one thread at a time.
final class PostgresConnection: SQLConnection {
    let dialect = SQLDialect.postgres
    let transactionHooks = TransactionHooks()
    let handle: OpaquePointer
    /// SQL text (with `?`) → name of the statement prepared on this connection.
    private var prepared: [String: String] = [:]

    init(conninfo: String) throws {
        guard let handle = PQconnectdb(conninfo) else { throw StorageError.unavailable("postgres: out of memory") }
        self.handle = handle
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = Self.firstLine(String(cString: PQerrorMessage(handle)))
            // No PQfinish here: `self` is fully initialized, so deinit frees the handle
            // when the throw releases it (finishing it here too was a double free).
            throw StorageError.unavailable("postgres: \(message)")
        }
        // Notices (e.g. "relation already exists, skipping") are not errors; keep them off stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }
    /// Statements that succeeded and reconnections made, since the connection opened:
    /// `PostgresDatabase` tells from them whether a failed job ran nothing before its
    /// connection turned out dead (and may run again on the reconnected one).
    private(set) var succeededStatements = 0
    private(set) var reconnections = 0

    /// Reconnects a connection the server dropped; prepared statements died with it.
    func resetIfBroken() {
        guard PQstatus(handle) != CONNECTION_OK else { return }
        PQreset(handle)
        prepared.removeAll()
        reconnections += 1
    }

    private static func firstLine(_ text: String) -> String {
        text.split(separator: "\n").first.map { String($0).trimmingCharacters(in: .whitespaces) } ?? text
    }

    /// `?` placeholders → `$1, $2, …`, leaving quoted strings and identifiers alone.
    static func numberPlaceholders(_ sql: String) -> String {
        var output = ""
        output.reserveCapacity(sql.count + 16)
        var index = 0
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                output.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                output.append(character)
            } else if character == "?" {
                index += 1
                output += "$\(index)"
            } else {
                output.append(character)
            }
        }
        return output
    }

    /// Every libpq result goes through here: returns it when it succeeded, throws the
    /// matching `StorageError` otherwise (and frees it).
    private func check(_ result: OpaquePointer?, _ sql: String) throws -> OpaquePointer {
        guard let result else {
            resetIfBroken()
            throw StorageError.unavailable("postgres: \(Self.firstLine(String(cString: PQerrorMessage(handle))))")
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
            // A ROLLBACK after a failure ran nothing of the job.
            if sql != "ROLLBACK" { succeededStatements += 1 }
            return result
        }
        let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        let message = Self.firstLine(String(cString: PQresultErrorMessage(result)))
        PQclear(result)
        switch sqlState {
        case "23505": throw StorageError.uniqueViolation(message)
        case "23503": throw StorageError.foreignKeyViolation(message)
        case "23514": throw StorageError.checkViolation(message)
        case "40001", "40P01", "55P03": throw StorageError.conflict(message)
        // disk_full: the server's disk, not the request, is at fault.
        case "53100": throw StorageError.full(message)
        // Connection exceptions, admin shutdown / crash shutdown / cannot connect now
        // (a restart), insufficient resources (too many connections, out of memory) and a
        // read-only transaction (a standby, or default_transaction_read_only during a
        // failover): faults of the moment that a retry outlives.
        case let state where state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") || state == "25006":
            resetIfBroken()
            throw StorageError.unavailable(message)
        default:
            if PQstatus(handle) != CONNECTION_OK {
                resetIfBroken()
                throw StorageError.unavailable(message)
            }
            throw StorageError.failed("\(message) [\(sql.prefix(80))]")
        }
    }

    private func run(_ sql: String, _ parameters: [SQLValue]) throws -> OpaquePointer {
        let name: String
        if let existing = prepared[sql] {
            name = existing
        } else {
            name = "s\(prepared.count + 1)"
            let numbered = Self.numberPlaceholders(sql)
            PQclear(try check(PQprepare(handle, name, numbered, Int32(parameters.count), nil), sql))
            prepared[sql] = name
        }
        let texts: [String?] = parameters.map { value in
            switch value {
            case .null: return nil
            case .integer(let number): return String(number)
            case .real(let number): return String(number)
            case .text(let text): return text
            }
        }
        // Keep C strings alive for the duration of the call.
        let cStrings: [UnsafeMutablePointer<CChar>?] = texts.map { $0.map { strdup($0) } }
        defer { cStrings.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = cStrings.map { $0.map { UnsafePointer($0) } }
        let result = pointers.withUnsafeBufferPointer { buffer in
            PQexecPrepared(handle, name, Int32(buffer.count), buffer.baseAddress, nil, nil, 0)
        }
        return try check(result, sql)
    }

    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> Int {
        let result = try run(sql, parameters)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws -> [SQLRow] {
        let result = try run(sql, parameters)
        defer { PQclear(result) }
        let fieldCount = PQnfields(result)
        let columns = (0..<fieldCount).map { String(cString: PQfname(result, $0)) }
        let types = (0..<fieldCount).map { PQftype(result, $0) }
        var rows: [SQLRow] = []
        rows.reserveCapacity(Int(PQntuples(result)))
        for row in 0..<PQntuples(result) {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(fieldCount))
            for field in 0..<fieldCount {
                if PQgetisnull(result, row, field) == 1 { values.append(.null); continue }
                let text = String(cString: PQgetvalue(result, row, field))
                switch types[Int(field)] {
                case 20, 21, 23: values.append(Int64(text).map(SQLValue.integer) ?? .text(text))
                case 16: values.append(.integer(text == "t" ? 1 : 0))
                case 700, 701, 1700: values.append(Double(text).map(SQLValue.real) ?? .text(text))
                default: values.append(.text(text))
                }
            }
            rows.append(SQLRow(columns: columns, values: values))
        }
        return rows
    }

    /// Transaction control and other statements that take no parameters.
    func simple(_ sql: String) throws {
        PQclear(try check(PQexec(handle, sql), sql))
    }
}
