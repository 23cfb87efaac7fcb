import Foundation
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// One behaviour every `SQLDatabase` must have, checked against a fresh database.
struct ContractCheck: Sendable, CustomTestStringConvertible {
    let name: String
    let run: @Sendable (StorageFixture) async throws -> Void
    init(_ name: String, _ run: @escaping @Sendable (StorageFixture) async throws -> Void) {
        self.name = name
        self.run = run
    }
    var testDescription: String { name }
}

/// The storage contract (the same contract runs on SQLite and PostgreSQL: docs/decisions/0002).
/// Written once here; `StorageContractTests` runs it on each backend.
enum StorageContract {
    static let checks: [ContractCheck] = [
        ContractCheck("migrations apply once and are idempotent", migrationsAreIdempotent),
        ContractCheck("new migrations apply on top of old ones", migrationsApplyIncrementally),
        ContractCheck("concurrent migrators do not fail", concurrentMigrators),
        ContractCheck("a failing migration leaves nothing behind", failingMigrationRollsBack),
        ContractCheck("every SQLValue kind round-trips", valuesRoundTrip),
        ContractCheck("bools and dates round-trip through the row accessors", boolsAndDates),
        ContractCheck("a column the statement did not return throws; required reads throw on NULL", strictRows),
        ContractCheck("bound parameters are never SQL", parametersAreNeverSQL),
        ContractCheck("? inside string literals is not a placeholder", questionMarkInLiterals),
        ContractCheck("a wrong parameter count throws", wrongParameterCount),
        ContractCheck("unique violations are .uniqueViolation", uniqueViolation),
        ContractCheck("foreign key violations are .foreignKeyViolation", foreignKeyViolation),
        ContractCheck("a throwing write rolls back everything", throwingWriteRollsBack),
        ContractCheck("a not-durable write commits, rolls back, and leaves later writes durable", notDurableWrite),
        ContractCheck("concurrent read-modify-write transactions lose no update", concurrentCounter),
        ContractCheck("reads see committed data only", readsSeeCommittedDataOnly),
        ContractCheck("a snapshot read does not see a commit made while it runs", snapshotReadIsOneSnapshot),
        ContractCheck("ping answers; a closed database is .unavailable", pingAndClose),
    ] + AuditStorageContract.checks

    // MARK: Migrations

    static func migrationsAreIdempotent(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        let migrator = Migrator()
        let expected = Schema.migrations.map(\.version).sorted()
        #expect(try await migrator.migrate(database) == expected)
        #expect(try await migrator.migrate(database) == [])
        #expect(try await migrator.appliedVersions(database) == expected)
        let rows = try await database.read { try $0.query("SELECT version, name FROM schema_migrations ORDER BY version", []) }
        #expect(try rows.compactMap { try $0.int("version") }.map(Int.init) == expected)
        #expect(try rows.map { try $0.string("name") } == Schema.migrations.sorted { $0.version < $1.version }.map(\.name))
        // The schema is really there.
        _ = try await database.write { try $0.execute("INSERT INTO service_state (key, value, updated_at) VALUES (?, ?, ?)", "k", "v", .date(Date())) }
        #expect(try await database.read { try $0.queryOne("SELECT value FROM service_state WHERE key = ?", "k")?.string("value") } == "v")
    }

    static func migrationsApplyIncrementally(_ fixture: StorageFixture) async throws {
        let first = Migration(version: 1, name: "one", statements: [.init("CREATE TABLE t_one (id INTEGER PRIMARY KEY)")])
        let second = Migration(version: 2, name: "two", statements: [
            .init("CREATE TABLE t_two (id INTEGER PRIMARY KEY, note TEXT)"),
            .init("INSERT INTO t_two (id, note) VALUES (1, 'seeded')"),
        ])
        #expect(try await Migrator(migrations: [first]).migrate(fixture.database) == [1])
        #expect(try await Migrator(migrations: [second, first]).migrate(fixture.database) == [2])
        #expect(try await Migrator(migrations: [first, second]).migrate(fixture.database) == [])
        #expect(try await Migrator(migrations: [first, second]).appliedVersions(fixture.database) == [1, 2])
        let notes = try await fixture.database.read { try $0.query("SELECT note FROM t_two", []) }
        #expect(try notes.map { try $0.string("note") } == ["seeded"], "a migration's statements ran more than once")
    }

    static func concurrentMigrators(_ fixture: StorageFixture) async throws {
        let instances = 4
        var handles: [any SQLDatabase] = []
        for _ in 0..<instances { handles.append(try await fixture.openAnother()) }
        defer { for handle in handles { Task { await handle.close() } } }
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for handle in handles { group.addTask { try await Migrator().migrate(handle) } }
            return try await group.reduce(into: [Int]()) { $0 += $1 }
        }
        let expected = Schema.migrations.map(\.version).sorted()
        #expect(applied.sorted() == expected, "each migration must be applied by exactly one instance")
        let count = try await fixture.database.read {
            try $0.queryOne("SELECT COUNT(*) AS n FROM schema_migrations", [])?.int("n")
        }
        #expect(count == Int64(expected.count))
    }

    static func failingMigrationRollsBack(_ fixture: StorageFixture) async throws {
        let broken = Migration(version: 1, name: "broken", statements: [
            .init("CREATE TABLE half_done (id INTEGER PRIMARY KEY)"),
            .init("THIS IS NOT SQL"),
        ])
        await #expect(throws: StorageError.self) { try await Migrator(migrations: [broken]).migrate(fixture.database) }
        #expect(try await Migrator(migrations: [broken]).appliedVersions(fixture.database) == [])
        // The first statement was rolled back with the migration, so a fixed one can run.
        let fixed = Migration(version: 1, name: "fixed", statements: [.init("CREATE TABLE half_done (id INTEGER PRIMARY KEY)")])
        #expect(try await Migrator(migrations: [fixed]).migrate(fixture.database) == [1])
    }

    // MARK: Values

    static func valuesRoundTrip(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write {
            try $0.execute("CREATE TABLE round_trip (id INTEGER PRIMARY KEY, i BIGINT, r DOUBLE PRECISION, t TEXT)", [])
        }
        let integers: [Int64] = [0, 1, -1, 42, Int64(Int32.max) + 1, -9_007_199_254_740_993, .max, .min]
        let reals: [Double] = [0, 0.1, -2.5, 1e300, -1e-300, .pi, 123_456_789.123_456_79, .greatestFiniteMagnitude,
                               .leastNonzeroMagnitude, -.leastNormalMagnitude]
        let texts: [String] = [
            "", " ", "plain ascii", "ação coração João", "😀👍🏽👨‍👩‍👧🇧🇷", "中文 日本語 한국어", "e\u{301} vs é",
            "quote ' and '' and \" and \\", "tab\tnewline\ncarriage\r", "percent %s %d $1 ? ?? :name @p",
            "\u{1}\u{1F}\u{7F}", "line separator \u{2028}", String(repeating: "long é ", count: 20_000),
        ]
        var rows: [[SQLValue]] = []
        let count = max(integers.count, reals.count, texts.count)
        for index in 0..<count {
            rows.append([
                .integer(Int64(index)),
                index < integers.count ? .integer(integers[index]) : .null,
                index < reals.count ? .real(reals[index]) : .null,
                index < texts.count ? .text(texts[index]) : .null,
            ])
        }
        rows.append([.integer(Int64(count)), .null, .null, .null])
        let written = rows
        _ = try await database.write { connection in
            for row in written { try connection.execute("INSERT INTO round_trip (id, i, r, t) VALUES (?, ?, ?, ?)", row) }
        }
        let read = try await database.read { try $0.query("SELECT id, i, r, t FROM round_trip ORDER BY id", []) }
        try #require(read.count == rows.count)
        for (row, expected) in zip(read, rows) {
            #expect(row.columns == ["id", "i", "r", "t"])
            #expect(try row.value("i") == expected[1], "integer row \(expected[0])")
            #expect(try row.value("r") == expected[2], "real row \(expected[0])")
            #expect(try row.value("t") == expected[3], "text row \(expected[0])")
        }
        // A bound value compares equal to the stored one (no transcoding on the way in).
        for text in texts {
            let found = try await database.read { try $0.queryOne("SELECT id FROM round_trip WHERE t = ?", .text(text)) }
            #expect(found != nil, "lookup by \(text.prefix(30).debugDescription)")
        }
        let extreme = try await database.read { try $0.queryOne("SELECT id FROM round_trip WHERE i = ?", .integer(.min)) }
        #expect(try extreme?.int("id") == 7)
    }

    static func boolsAndDates(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write { try $0.execute("CREATE TABLE flags (id INTEGER PRIMARY KEY, on_off INTEGER NOT NULL, at BIGINT)", []) }
        let past = Date(timeIntervalSince1970: -1_234_567_890.123)
        let future = Date(timeIntervalSince1970: 4_102_444_800.999)
        _ = try await database.write {
            try $0.execute("INSERT INTO flags (id, on_off, at) VALUES (?, ?, ?)", 1, .bool(true), .date(past))
            try $0.execute("INSERT INTO flags (id, on_off, at) VALUES (?, ?, ?)", 2, .bool(false), .date(future))
            try $0.execute("INSERT INTO flags (id, on_off, at) VALUES (?, ?, ?)", 3, .bool(false), .null)
        }
        let rows = try await database.read { try $0.query("SELECT id, on_off, at FROM flags ORDER BY id", []) }
        #expect(try rows.map { try $0.bool("on_off") } == [true, false, false])
        // Stored as exact integer milliseconds; read back to within float precision.
        #expect(try rows.map { try $0.int("at") } == [-1_234_567_890_123, 4_102_444_800_999, nil])
        #expect(abs(try #require(try rows[0].date("at")).timeIntervalSince(past)) < 1e-6)
        #expect(abs(try #require(try rows[1].date("at")).timeIntervalSince(future)) < 1e-6)
        #expect(try rows[2].date("at") == nil)
        #expect(try rows[2].value("at") == .null)
    }

    static func parametersAreNeverSQL(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write { try $0.execute("CREATE TABLE victims (id INTEGER PRIMARY KEY, name TEXT NOT NULL)", []) }
        let hostile = [
            "'); DROP TABLE victims;--",
            "' OR '1'='1",
            "1; DELETE FROM victims",
            "\"; DROP TABLE victims; --",
            "$1",
            "?",
            "Robert'); DROP TABLE Students;-- ",
        ]
        _ = try await database.write { connection in
            for (index, name) in hostile.enumerated() {
                try connection.execute("INSERT INTO victims (id, name) VALUES (?, ?)", .integer(Int64(index)), .text(name))
            }
        }
        let stored = try await database.read { try $0.query("SELECT name FROM victims ORDER BY id", []) }
        #expect(try stored.map { try $0.string("name") } == hostile)
        let injected = try await database.read { try $0.query("SELECT id FROM victims WHERE name = ?", "' OR '1'='1") }
        #expect(injected.count == 1, "the comparison must be against the literal text")
        let none = try await database.read { try $0.query("SELECT id FROM victims WHERE name = ?", "x' OR 'a'='a") }
        #expect(none.isEmpty)
    }

    static func strictRows(_ fixture: StorageFixture) async throws {
        let row = try #require(try await fixture.database.read {
            try $0.queryOne("SELECT ? AS present, ? AS absent, ? AS flag", .text("x"), .null, .integer(1))
        })
        #expect(try row.string("present") == "x")
        #expect(try row.required.string("present") == "x")
        #expect(try row.required.bool("flag"))
        // NULL: nil from the optional accessor, an error from the required one.
        #expect(try row.string("absent") == nil)
        #expect(throws: RowDecodingError.unexpectedNull("absent")) { try row.required.string("absent") }
        // A name the statement did not return is a typo, never a NULL.
        #expect(throws: RowDecodingError.unknownColumn("presnet", columns: ["present", "absent", "flag"])) { try row.string("presnet") }
        #expect(throws: RowDecodingError.self) { try row.required.date("created_at") }
    }

    static func questionMarkInLiterals(_ fixture: StorageFixture) async throws {
        let row = try await fixture.database.read {
            try $0.queryOne("SELECT 'why?' AS a, 'it''s ?' AS b, ? AS c, '??' AS \"d?\"", .text("bound"))
        }
        #expect(try row?.string("a") == "why?")
        #expect(try row?.string("b") == "it's ?")
        #expect(try row?.string("c") == "bound")
        #expect(try row?.string("d?") == "??")
        _ = try await fixture.database.write {
            try $0.execute("CREATE TABLE qm (id INTEGER PRIMARY KEY, note TEXT)", [])
            try $0.execute("INSERT INTO qm (id, note) VALUES (?, 'literal ?') ", 1)
            try $0.execute("INSERT INTO qm (id, note) VALUES (?, ?)", 2, "bound ?")
        }
        let notes = try await fixture.database.read { try $0.query("SELECT note FROM qm WHERE note <> '?' ORDER BY id", []) }
        #expect(try notes.map { try $0.string("note") } == ["literal ?", "bound ?"])
    }

    static func wrongParameterCount(_ fixture: StorageFixture) async throws {
        _ = try await fixture.database.write { try $0.execute("CREATE TABLE pc (a INTEGER, b INTEGER)", []) }
        await #expect(throws: StorageError.self) {
            _ = try await fixture.database.write { try $0.execute("INSERT INTO pc (a, b) VALUES (?, ?)", 1) }
        }
        // The same statement with the right count still works afterwards (statement caches stay sane).
        _ = try await fixture.database.write { try $0.execute("INSERT INTO pc (a, b) VALUES (?, ?)", 1, 2) }
        await #expect(throws: StorageError.self) {
            _ = try await fixture.database.write { try $0.execute("INSERT INTO pc (a, b) VALUES (?, ?)", 1, 2, 3) }
        }
        #expect(try await fixture.database.read { try $0.query("SELECT a FROM pc", []) }.count == 1)
    }

    // MARK: Constraints

    static func uniqueViolation(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write {
            try $0.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE)", [])
            try $0.execute("INSERT INTO people (id, email) VALUES (?, ?)", 1, "a@example.com")
        }
        await expectStorageError(.uniqueViolation) { try await database.write { try $0.execute("INSERT INTO people (id, email) VALUES (?, ?)", 1, "b@example.com") } }
        await expectStorageError(.uniqueViolation) { try await database.write { try $0.execute("INSERT INTO people (id, email) VALUES (?, ?)", 2, "a@example.com") } }
        #expect(try await database.read { try $0.query("SELECT id FROM people", []) }.count == 1)
    }

    static func foreignKeyViolation(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write {
            try $0.execute("CREATE TABLE parents (id INTEGER PRIMARY KEY)", [])
            try $0.execute("CREATE TABLE children (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parents(id))", [])
            try $0.execute("INSERT INTO parents (id) VALUES (1)", [])
            try $0.execute("INSERT INTO children (id, parent_id) VALUES (1, 1)", [])
        }
        await expectStorageError(.foreignKeyViolation) { try await database.write { try $0.execute("INSERT INTO children (id, parent_id) VALUES (?, ?)", 2, 99) } }
        await expectStorageError(.foreignKeyViolation) { try await database.write { try $0.execute("DELETE FROM parents WHERE id = ?", 1) } }
        let counts = try await database.read { connection in
            (try connection.query("SELECT id FROM parents", []).count, try connection.query("SELECT id FROM children", []).count)
        }
        #expect(counts == (1, 1))
    }

    // MARK: Transactions

    struct Abort: Error, Equatable {}

    static func notDurableWrite(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write { try $0.execute("CREATE TABLE claims (id INTEGER PRIMARY KEY, owner TEXT)", []) }
        _ = try await database.writeNotDurable { try $0.execute("INSERT INTO claims (id, owner) VALUES (1, 'a')", []) }
        await #expect(throws: Abort.self) {
            _ = try await database.writeNotDurable { connection in
                try connection.execute("INSERT INTO claims (id, owner) VALUES (2, 'b')", [])
                throw Abort()
            }
        }
        let rows = try await database.read { try $0.query("SELECT id FROM claims ORDER BY id", []) }
        #expect(try rows.map { try $0.int("id") } == [1])
        // The relaxed setting is the one transaction's: the next ordinary write is back to
        // the server's (SQLite: synchronous FULL = 2; PostgreSQL: the cluster's default —
        // `off` in the tests' throw-away cluster, `on` in production).
        @Sendable func durability(_ connection: any SQLConnection) throws -> String? {
            switch connection.dialect {
            case .sqlite: return try connection.queryOne("PRAGMA synchronous", []).flatMap { try $0.int("synchronous") }.map { "\($0)" }
            case .postgres: return try connection.queryOne("SHOW synchronous_commit", [])?.string("synchronous_commit")
            }
        }
        let before = try await database.write { try durability($0) }
        let during = try await database.writeNotDurable { try durability($0) }
        let after = try await database.write { try durability($0) }
        #expect(during == (database.dialect == .sqlite ? "1" : "off"))
        #expect(before == after && before == (database.dialect == .sqlite ? "2" : before))
    }

    static func throwingWriteRollsBack(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write { try $0.execute("CREATE TABLE ledger (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)", []) }
        _ = try await database.write { try $0.execute("INSERT INTO ledger (id, amount) VALUES (1, 100)", []) }
        await #expect(throws: Abort.self) {
            _ = try await database.write { connection in
                try connection.execute("INSERT INTO ledger (id, amount) VALUES (2, 5)", [])
                try connection.execute("UPDATE ledger SET amount = amount - 50 WHERE id = 1", [])
                try connection.execute("CREATE TABLE scratch (id INTEGER)", [])
                throw Abort()
            }
        }
        // A storage error thrown mid-transaction rolls back the earlier statements as well.
        await #expect(throws: StorageError.self) {
            _ = try await database.write { connection in
                try connection.execute("INSERT INTO ledger (id, amount) VALUES (3, 7)", [])
                try connection.execute("INSERT INTO ledger (id, amount) VALUES (1, 1)", [])
            }
        }
        let rows = try await database.read { try $0.query("SELECT id, amount FROM ledger ORDER BY id", []) }
        #expect(try rows.map { [try $0.int("id"), try $0.int("amount")] } == [[1, 100]])
        // The rolled-back CREATE TABLE is gone too (both backends have transactional DDL),
        // and the connection is usable again.
        _ = try await database.write { try $0.execute("CREATE TABLE scratch (id INTEGER)", []) }
    }

    static func concurrentCounter(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write {
            try $0.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL)", [])
            try $0.execute("INSERT INTO counters (name, value) VALUES ('hits', 0)", [])
        }
        let tasks = 50
        let forUpdate = fixture.dialect.forUpdate
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    _ = try await database.write { connection in
                        let current = try connection.queryOne("SELECT value FROM counters WHERE name = ?\(forUpdate)", "hits")?.int("value")
                        guard let current else { throw StorageError.failed("counter row missing") }
                        try connection.execute("UPDATE counters SET value = ? WHERE name = ?", .integer(current + 1), "hits")
                    }
                }
            }
            try await group.waitForAll()
        }
        let total = try await database.read { try $0.queryOne("SELECT value FROM counters WHERE name = 'hits'", [])?.int("value") }
        #expect(total == Int64(tasks))
    }

    /// `readSnapshot` gives one snapshot on both backends (a plain `read` on PostgreSQL
    /// sees, per statement, what committed before that statement: this check fails there).
    static func snapshotReadIsOneSnapshot(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write { try $0.execute("CREATE TABLE snapshot_rows (id INTEGER PRIMARY KEY)", []) }
        _ = try await database.write { try $0.execute("INSERT INTO snapshot_rows (id) VALUES (1)", []) }
        let firstReadDone = DispatchSemaphore(value: 0)
        let committed = DispatchSemaphore(value: 0)
        let writer = Task {
            let started = try await offload { firstReadDone.wait(timeout: .now() + 10) == .success }
            guard started else { throw StorageError.failed("the snapshot read never started") }
            _ = try await database.write { try $0.execute("INSERT INTO snapshot_rows (id) VALUES (2)", []) }
            committed.signal()
        }
        let (before, after) = try await database.readSnapshot { db -> (Int, Int) in
            let before = try db.query("SELECT id FROM snapshot_rows", []).count
            firstReadDone.signal()
            // Wait for the other transaction's commit inside this read.
            guard committed.wait(timeout: .now() + 10) == .success else { throw StorageError.failed("the write never committed") }
            return (before, try db.query("SELECT id FROM snapshot_rows", []).count)
        }
        try await writer.value
        #expect(before == 1)
        #expect(after == before, "a snapshot read saw a row committed after it started")
        #expect(try await database.read { try $0.query("SELECT id FROM snapshot_rows", []) }.count == 2)
    }

    static func readsSeeCommittedDataOnly(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        _ = try await database.write { try $0.execute("CREATE TABLE inbox (id INTEGER PRIMARY KEY)", []) }
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let writer = Task {
            _ = try await database.write { connection in
                try connection.execute("INSERT INTO inbox (id) VALUES (1)", [])
                inside.signal()
                // Hold the transaction open until the reader has looked.
                guard release.wait(timeout: .now() + 10) == .success else { throw StorageError.failed("test timed out") }
                try connection.execute("INSERT INTO inbox (id) VALUES (2)", [])
            }
        }
        let entered = try await offload { inside.wait(timeout: .now() + 10) == .success }
        try #require(entered, "the write transaction never started")
        let during = try await database.read { try $0.query("SELECT id FROM inbox", []) }
        release.signal()
        try await writer.value
        #expect(during.isEmpty, "a read saw rows of an uncommitted transaction")
        let after = try await database.read { try $0.query("SELECT id FROM inbox ORDER BY id", []) }
        #expect(try after.compactMap { try $0.int("id") } == [1, 2])

        // A rolled-back transaction is never seen.
        await #expect(throws: Abort.self) {
            _ = try await database.write { connection in
                try connection.execute("INSERT INTO inbox (id) VALUES (3)", [])
                throw Abort()
            }
        }
        #expect(try await database.read { try $0.query("SELECT id FROM inbox", []) }.count == 2)
    }

    static func pingAndClose(_ fixture: StorageFixture) async throws {
        try await fixture.database.ping()
        let other = try await fixture.openAnother()
        try await other.ping()
        await other.close()
        await expectStorageError(.unavailable) { try await other.ping() }
        await expectStorageError(.unavailable) { try await other.write { try $0.execute("SELECT 1", []) } }
        // Closing one handle leaves the others working.
        try await fixture.database.ping()
    }
}
