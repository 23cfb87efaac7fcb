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
    /// Tables that grow with visits and with time. The rest (companies, units, users,
    /// memberships, gates, settings, signing keys) grow with the buildings served, and
    /// reading one building's rows of them is bounded by that building.
    static let growing: Set<String> = [
        "visits", "visit_attempts", "visit_resolutions", "visit_media", "events", "ring_jobs",
        "idempotency_keys", "push_jobs", "push_attempts", "audit_log", "sessions", "refresh_tokens",
        "otp_codes", "otp_tokens", "rate_limits", "realtime_tickets", "calls", "call_relay",
    ]

    /// Statements allowed to walk a growing table, each with the reason it is bounded.
    static let allowedScans: [(fragment: String, reason: String)] = [
        ("SELECT seq FROM events WHERE created_at >= ? ORDER BY seq LIMIT 1",
         "the event pruner walks the log in commit order and stops at the first event younger than a week: "
         + "what it reads is what it deletes, plus each company's newest event (decision 0055)"),
    ]

    @Test("no statement the visits day runs scans a table that grows with the history")
    func everyStatementSearchesAnIndex() async throws {
        try await VisitsFixture.with(.sqlite) { f in
            try await Self.runOneDay(f)
            let database = try #require(f.database as? SQLiteDatabase)
            let statements = database.statementLog.statements.filter(Self.isQuery).sorted()
            // The day above prepares well over a hundred distinct statements; a log that
            // recorded nothing would make this suite pass vacuously.
            #expect(statements.count > 60, "only \(statements.count) statements recorded")
            var offenders: [String] = []
            for sql in statements {
                // Migrations' copies of a table (`devices_v7`) live only while they run.
                guard let plan = try await Self.planIfTablesExist(database, sql) else { continue }
                for table in Self.scannedTables(plan, aliases: Self.aliases(in: sql)) where Self.growing.contains(table) {
                    if Self.allowedScans.contains(where: { sql.contains($0.fragment) }) { continue }
                    offenders.append("scans \(table): \(sql)\n    plan: \(plan.joined(separator: " | "))")
                }
            }
            #expect(offenders.isEmpty, "\(offenders.count) statements walk a growing table:\n\(offenders.joined(separator: "\n"))")
        }
    }

    @Test("the plan reader sees a full scan, and an index search as none")
    func scanDetection() {
        #expect(Self.scannedTables(["SCAN visits"]) == ["visits"])
        #expect(Self.scannedTables(["SCAN v"], aliases: ["v": "visits"]) == ["visits"])
        #expect(Self.scannedTables(["SEARCH visits USING INDEX visits_unit_created (unit_id=?)"]).isEmpty)
        #expect(Self.scannedTables(["SCAN push_jobs USING INDEX push_jobs_due"]) == ["push_jobs"])
        #expect(Self.scannedTables(["SCAN CONSTANT ROW", "USE TEMP B-TREE FOR ORDER BY"]).isEmpty)
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

    /// Tables a plan reads from start to end: `SCAN t` (with or without an index, which
    /// is still every row) resolved through the statement's aliases.
    static func scannedTables(_ plan: [String], aliases: [String: String] = [:]) -> Set<String> {
        var tables: Set<String> = []
        for line in plan {
            let words = line.split(separator: " ").map(String.init)
            guard words.count >= 2, words[0] == "SCAN", words[1] != "CONSTANT" else { continue }
            tables.insert(aliases[words[1]] ?? words[1])
        }
        return tables
    }
}
