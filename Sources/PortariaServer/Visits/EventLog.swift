import Foundation
import PortariaCore

/// One committed row of the `events` table.
public struct EventRecord: Sendable, Equatable {
    public var seq: Int64
    public var companyID: String
    public var visitID: String?
    public var unitID: String?
    public var type: String
    public var data: JSONValue
    public var createdAt: Date

    /// The visit event this row records; nil for a type this build does not know.
    public var visitEventType: VisitEventType? { VisitEventType(rawValue: type) }
}

/// An event about to be written in the current transaction.
struct PendingEvent: Sendable {
    var type: VisitEventType
    var data: [String: JSONValue]
}

/// Writes and reads the `events` table.
enum EventLog {
    /// Appends events inside the caller's transaction and returns them with their `seq`.
    ///
    /// On PostgreSQL an identity value is taken when the row is inserted but becomes
    /// visible at commit, so two transactions could commit their events out of `seq`
    /// order and a reader resuming "after seq N" would skip one. A transaction-scoped
    /// advisory lock per company, taken just before the insert (the last work of every
    /// visit transaction), makes `seq` order equal commit order within a company, which
    /// is the scope replay reads. SQLite has a single writer and needs none.
    static func append(_ db: any SQLConnection, companyID: String, visitID: VisitID?, unitID: UnitID?,
                       events: [PendingEvent], at: Date) throws -> [EventRecord] {
        guard !events.isEmpty else { return [] }
        try db.lock(.eventLog(companyID: companyID))
        // Delivered to every instance's listener at commit (and never if it rolls
        // back): the realtime feed of each instance then reads this company forward.
        try db.notifyAtCommit(.events, payload: companyID)
        let records = try events.map { event in
            let data = JSONValue.object(event.data)
            let row = try db.queryOne("""
                INSERT INTO events (company_id, visit_id, unit_id, type, data, created_at)
                VALUES (?, ?, ?, ?, ?, ?) RETURNING seq
                """, .text(companyID), .optional(visitID?.rawValue), .optional(unitID?.rawValue), .text(event.type.rawValue),
                     .text(data.jsonText), .date(at))
            return EventRecord(seq: try row?.int("seq") ?? 0, companyID: companyID, visitID: visitID?.rawValue, unitID: unitID?.rawValue,
                               type: event.type.rawValue, data: data, createdAt: at)
        }
        // The pushes these events call for, in the same transaction.
        try VisitPushes.enqueue(db, for: records, at: at)
        return records
    }

    /// Events of a company after `seq`, oldest first (the realtime replay will use this).
    static func since(_ db: any SQLConnection, companyID: String, seq: Int64, limit: Int = 500) throws -> [EventRecord] {
        try db.query("""
            SELECT seq, company_id, visit_id, unit_id, type, data, created_at FROM events
            WHERE company_id = ? AND seq > ? ORDER BY seq LIMIT ?
            """, .text(companyID), .integer(seq), .integer(Int64(limit))).map(record)
    }

    /// Events of one visit, oldest first.
    static func forVisit(_ db: any SQLConnection, visitID: String) throws -> [EventRecord] {
        try db.query("""
            SELECT seq, company_id, visit_id, unit_id, type, data, created_at FROM events
            WHERE visit_id = ? ORDER BY seq
            """, .text(visitID)).map(record)
    }

    static func record(_ row: SQLRow) throws -> EventRecord {
        let required = row.required
        let text = try required.string("data")
        let data = (try? JSONCoding.decoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .object([:])
        return EventRecord(seq: try required.int("seq"), companyID: try required.string("company_id"),
                           visitID: try row.string("visit_id"), unitID: try row.string("unit_id"),
                           type: try required.string("type"), data: data, createdAt: try required.date("created_at"))
    }}
