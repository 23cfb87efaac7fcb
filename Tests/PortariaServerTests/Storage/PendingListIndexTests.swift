import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

/// The pendências list must not read a unit's whole history: SQLite's plan for the exact
/// query `VisitService.list` runs searches a partial index of unanswered visits
/// (migration 8), for a resident (units) and for an operator (company), never the
/// (unit|company, created_at) indexes that walk the whole history.
@Suite("Pending list index")
struct PendingListIndexTests {
    static func plan(_ database: any SQLDatabase, _ sql: String, _ parameters: [SQLValue]) async throws -> String {
        try await database.read { db in
            try db.query("EXPLAIN QUERY PLAN " + sql, parameters).compactMap { try $0.string("detail") }.joined(separator: " | ")
        }
    }

    @Test("resident and operator pending lists search the unanswered-only indexes")
    func pendingUsesPartialIndexes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-pending-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try await DatabaseFactory.open(url: "sqlite://" + directory.appendingPathComponent("p.db").path)
        try await Migrator().migrate(database)
        defer { Task { await database.close() } }

        let base = VisitStore.select + " WHERE v.company_id = ?"
        let order = " ORDER BY v.created_at DESC, v.id DESC LIMIT ?"
        let resident = try await Self.plan(database, base + " AND v.unit_id IN (?) AND v.status = 'unanswered'" + order,
                                           [.text("c"), .text("u"), .integer(21)])
        // Either partial index is bounded by the pending visits; the full ones are not.
        #expect(resident.contains("_unanswered") && !resident.contains("_created"), "plan: \(resident)")
        let operatorPlan = try await Self.plan(database, base + " AND v.status = 'unanswered'" + order, [.text("c"), .integer(21)])
        #expect(operatorPlan.contains("visits_company_unanswered"), "plan: \(operatorPlan)")
    }
}
