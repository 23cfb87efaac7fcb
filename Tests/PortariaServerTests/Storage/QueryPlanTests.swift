import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

/// A building in its tenth year has a million visits and their attempts, resolutions and
/// audit rows: a statement that walks one of those tables costs a thousand times what it
/// cost on the first day. This suite runs a building's whole day through the real visits
/// capability on SQLite (gate POSTs, lists and their pages, details, media, resolves,
/// answers, the visitor's page, ring steps, expiry, the push queue and the retention sweep),
/// then asks SQLite for the plan of every statement the server prepared meanwhile.
///
/// SQLite plans without statistics (the server never runs ANALYZE), so the plan is the
/// same on an empty file as on a million rows: what is checked here holds at any size.
@Suite("Query plans at any size")
struct QueryPlanTests {
    /// Tables that grow with visits and with time. The rest grow with the buildings served
    /// (companies, units, users, memberships, gates, settings, signing keys: reading one
    /// building's rows is bounded by that building) or hold only what is open now
    /// (`ring_jobs`: a row per visit still ringing).
    static let growing: Set<String> = [
        "visits", "visit_attempts", "visit_resolutions", "visit_media", "events",
        "idempotency_keys", "push_jobs", "push_attempts", "audit_log", "sessions", "refresh_tokens",
        "otp_codes", "otp_tokens", "rate_limits", "realtime_tickets", "calls", "call_relay",
    ]

    /// Statements allowed to walk a growing table, each with the reason it is bounded.
    static let allowedWalks: [(fragment: String, reason: String)] = [
        ("SELECT seq FROM events WHERE created_at >= ? ORDER BY seq LIMIT 1",
         "the event pruner walks the log in commit order and stops at the first event younger than a week: "
         + "what it reads is what it deletes, plus each company's newest event (decision 0055)"),
        ("WHERE seq < ? AND created_at < ?", "the event pruner's batch, below the same boundary"),
    ] + [
        "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ?",
        "DELETE FROM idempotency_keys WHERE created_at < ?",
        "DELETE FROM otp_codes WHERE expires_at < ?",
        "DELETE FROM otp_tokens WHERE expires_at < ?",
        "DELETE FROM rate_limits WHERE expires_at < ?",
        "DELETE FROM visit_media WHERE created_at < ?",
        "SELECT id, kind, path FROM visit_media WHERE created_at < ?",
        "SELECT id FROM sessions WHERE expires_at < ? ORDER BY expires_at LIMIT ?",
    ].map { ($0, "the retention sweep reads the rows below its cutoff, which are the rows it deletes") }

    @Test("no statement the visits day runs scans a table that grows with the history")
    func everyStatementSearchesAnIndex() async throws {
        try await VisitsFixture.with(.sqlite) { f in
            try await Self.runOneDay(f)
            let database = try #require(f.database as? SQLiteDatabase)
            let statements = database.statementLog.statements.filter(Self.isQuery).sorted()
            // The day above prepares well over a hundred distinct statements; a log that
            // recorded nothing would make this suite pass vacuously.
            #expect(statements.count > 60, "only \(statements.count) statements recorded")
            let partial = try await Self.partialIndexes(database)
            var offenders: [String] = []
            for sql in statements {
                // Migrations' copies of a table (`devices_v7`) live only while they run.
                guard let plan = try await Self.planIfTablesExist(database, sql) else { continue }
                let walked = Self.walkedTables(plan, aliases: Self.aliases(in: sql), partialIndexes: partial)
                for table in walked where Self.growing.contains(table) {
                    if Self.allowedWalks.contains(where: { sql.contains($0.fragment) }) { continue }
                    offenders.append("walks \(table): \(sql)\n    plan: \(plan.joined(separator: " | "))")
                }
            }
            #expect(offenders.isEmpty, "\(offenders.count) statements walk a growing table:\n\(offenders.joined(separator: "\n"))")
        }
    }

    @Test("the plan reader sees full scans and open ranges, and searches by key or in a partial index as bounded")
    func walkDetection() {
        #expect(Self.walkedTables(["SCAN visits"]) == ["visits"])
        #expect(Self.walkedTables(["SCAN v"], aliases: ["v": "visits"]) == ["visits"])
        #expect(Self.walkedTables(["SEARCH visits USING INDEX visits_unit_created (unit_id=?)"]).isEmpty)
        #expect(Self.walkedTables(["SEARCH v USING INDEX visits_unit_created (unit_id=? AND created_at<?)"]).isEmpty)
        #expect(Self.walkedTables(["SCAN push_jobs USING INDEX push_jobs_due"]) == ["push_jobs"])
        #expect(Self.walkedTables(["SCAN CONSTANT ROW", "USE TEMP B-TREE FOR ORDER BY"]).isEmpty)
        // Everything that ever expired is below "now": a range open at one end is a walk.
        #expect(Self.walkedTables(["SEARCH visits USING INDEX visits_expires (expires_at<?)"]) == ["visits"])
        #expect(Self.walkedTables(["SEARCH visits USING INDEX visits_open_expires (expires_at<?)"],
                                  partialIndexes: ["visits_open_expires"]).isEmpty)
        #expect(Self.walkedTables(["SEARCH audit_log USING INTEGER PRIMARY KEY (rowid=?)"]).isEmpty)
        #expect(Self.aliases(in: "SELECT * FROM visits v JOIN units AS u ON u.id = v.unit_id WHERE 1") == ["v": "visits", "u": "units"])
        #expect(Self.aliases(in: "SELECT id FROM push_jobs WHERE status = ?").isEmpty)
    }

    // MARK: The day

    private static func runOneDay(_ f: VisitsFixture) async throws {
        let delivery = try await f.ring(kind: .delivery, name: "Entregador", carrier: "Mercado Livre")
        let guest = try await f.ring(location: #"{"lat":-23.5617,"lon":-46.6560,"accuracy_m":10}"#)
        let declined = try await f.ring("B-201", name: "Vendedor")
        let cancelled = try await f.ring(name: "Desistente")
        #expect(await f.call("POST", "/v1/visitor/visit/photo", bearer: guest.token, bytes: MediaSamples.jpeg()).status == 200)
        #expect(await f.call("POST", "/v1/visitor/visit/voice_message", bearer: guest.token, bytes: MediaSamples.ogg(seconds: 2)).status == 200)
        #expect(await f.call("GET", "/v1/visitor/visit", bearer: guest.token).status == 200)
        #expect(await f.call("POST", "/v1/visitor/visit/cancel", bearer: cancelled.token).status == 200)

        for path in ["/v1/visits", "/v1/visits?status=pending", "/v1/visits?status=history", "/v1/visits?limit=1"] {
            let reply = await f.call("GET", path, as: "maria", company: f.demo)
            #expect(reply.status == 200, "\(path): \(reply.status)")
            if let cursor = reply.json["next_cursor"]?.stringValue {
                #expect(await f.call("GET", path + (path.contains("?") ? "&" : "?") + "cursor=\(cursor)", as: "maria", company: f.demo).status == 200)
            }
        }
        #expect(await f.call("GET", "/v1/visits?status=pending", as: "portaria").status == 200)
        #expect(await f.call("GET", "/v1/visits/\(guest.id)", as: "maria", company: f.demo).status == 200)
        #expect(await f.call("GET", "/v1/visits/\(guest.id)/photo", as: "maria", company: f.demo).status == 200)
        #expect(await f.call("GET", "/v1/visits/\(guest.id)/voice_message", as: "maria", company: f.demo).status == 200)

        #expect(await f.call("POST", "/v1/visits/\(guest.id)/answer", as: "maria", company: f.demo,
                              headers: ["Idempotency-Key": UUID().uuidString], json: "{}").status == 200)
        #expect(await f.resolve(guest.id, as: "maria").status == 200)
        let key = UUID().uuidString
        #expect(await f.resolve(delivery.id, as: "maria", key: key).status == 200)
        #expect(await f.resolve(delivery.id, as: "maria", key: key).status == 200, "a replayed key answers from the store")
        #expect(await f.resolve(delivery.id, as: "joao").status == 409, "the second resident learns who answered")
        #expect(await f.call("POST", "/v1/visits/\(declined.id)/decline", as: "ana",
                              headers: ["Idempotency-Key": UUID().uuidString], json: "{}").status == 200)

        // Ring steps and expiry for what is still ringing, then the push queue as a worker reads it.
        _ = try await f.ring("A-102", name: "Sem resposta")
        for _ in 0..<8 { await f.advance(60) }
        let now = f.clock.now()
        try await f.database.write { db in
            let claimed = try PushOutbox.claim(db, owner: "plan-test", leaseUntil: now.addingTimeInterval(30), at: now, limit: 10)
            for push in claimed.prefix(2) { try PushOutbox.markSent(db, pushID: push.push.pushID, providerID: nil, at: now) }
            _ = try PushOutbox.releaseLeases(db, keeping: ["plan-test"], at: now)
        }
        // Keep the residents' sessions live on the sweep's clock, through another handle
        // so that this statement of the test's own is not in the server's log.
        let other = try await f.storage.openAnother()
        let kept = f.clock.now().addingTimeInterval(400 * 86_400)
        try await other.write { db in try db.execute("UPDATE sessions SET expires_at = ?", .date(kept)) }
        await other.close()
        f.clock.advance(by: 120 * 86_400)
        _ = try await f.module.retention.run()
    }

    // MARK: Reading plans

    /// Statements whose plan matters: reads and writes of rows, not schema or pragmas.
    static func isQuery(_ sql: String) -> Bool {
        let head = sql.drop { $0.isWhitespace }.prefix(7).uppercased()
        return ["SELECT", "UPDATE", "DELETE", "INSERT", "WITH"].contains { head.hasPrefix($0) }
    }

    static func planIfTablesExist(_ database: SQLiteDatabase, _ sql: String) async throws -> [String]? {
        do { return try await plan(database, sql) } catch let error as StorageError where "\(error)".contains("no such table") {
            return nil
        }
    }

    static func plan(_ database: SQLiteDatabase, _ sql: String) async throws -> [String] {
        // Unbound parameters are NULL for EXPLAIN; the plan does not depend on their values.
        let parameters = [SQLValue](repeating: .null, count: sql.filter { $0 == "?" }.count)
        return try await database.read { db in
            try db.query("EXPLAIN QUERY PLAN " + sql, parameters).compactMap { try $0.string("detail") }
        }
    }

    /// `FROM table alias` and `JOIN table AS alias` of a statement: plans name the alias.
    static func aliases(in sql: String) -> [String: String] {
        let keywords: Set<String> = ["WHERE", "JOIN", "LEFT", "INNER", "CROSS", "ON", "ORDER", "GROUP", "LIMIT", "SET",
                                     "USING", "INDEXED", "NOT", "UNION", "EXCEPT", "RETURNING", "VALUES", "AS"]
        let words = sql.split(whereSeparator: { $0.isWhitespace || $0 == "," || $0 == "(" || $0 == ")" }).map(String.init)
        var aliases: [String: String] = [:]
        for (index, word) in words.enumerated() where ["FROM", "JOIN"].contains(word.uppercased()) && index + 2 < words.count {
            var next = index + 2
            if words[next].uppercased() == "AS", next + 1 < words.count { next += 1 }
            let alias = words[next]
            guard !keywords.contains(alias.uppercased()), alias.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { continue }
            aliases[alias] = words[index + 1]
        }
        return aliases
    }

    /// Tables a plan may read without a bound that holds as history grows, resolved
    /// through the statement's aliases: `SCAN t` (with or without an index, still every
    /// row), and a `SEARCH` of a full index constrained only by a range (`expires_at<?`:
    /// every row that ever expired lies below now). A search with an equality on the
    /// index's first column, or in a partial index (which holds only the open rows), is
    /// bounded.
    static func walkedTables(_ plan: [String], aliases: [String: String] = [:], partialIndexes: Set<String> = []) -> Set<String> {
        var tables: Set<String> = []
        for line in plan {
            let words = line.split(separator: " ").map(String.init)
            guard words.count >= 2, words[1] != "CONSTANT" else { continue }
            let table = aliases[words[1]] ?? words[1]
            if words[0] == "SCAN" { tables.insert(table); continue }
            guard words[0] == "SEARCH", let open = line.firstIndex(of: "("), line.hasSuffix(")") else { continue }
            let index = words.firstIndex(of: "INDEX").flatMap { $0 + 1 < words.count ? words[$0 + 1] : nil }
            if let index, partialIndexes.contains(index) { continue }
            let constraints = line[line.index(after: open)..<line.index(before: line.endIndex)].components(separatedBy: " AND ")
            let hasEquality = constraints.contains { constraint in
                guard let equals = constraint.firstIndex(of: "="), equals > constraint.startIndex else { return false }
                return !"<>!".contains(constraint[constraint.index(before: equals)])
            }
            if !hasEquality { tables.insert(table) }
        }
        return tables
    }

    /// Indexes with a WHERE clause: they hold only the rows that clause admits.
    static func partialIndexes(_ database: SQLiteDatabase) async throws -> Set<String> {
        try await database.read { db in
            Set(try db.query("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '%WHERE%'", [])
                .compactMap { try $0.string("name") })
        }
    }
}
