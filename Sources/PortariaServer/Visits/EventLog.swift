import Foundation
import PortariaCore

/// One committed row of the `events` table.
public struct EventRecord: Sendable, Equatable {
    /// The event's place in its company's log. An event appended in a transaction gets it
    /// when that transaction's last work inserts the row (`EventLog.append`): read it after
    /// the commit, never inside the transaction (0 until then).
    public var seq: Int64 {
        get { sequence.value }
        set { sequence = EventSequence(newValue) }
    }
    private var sequence: EventSequence
    public var companyID: String
    public var visitID: String?
    public var unitID: String?
    /// What happened; nil only for a row whose type this build does not know (written by
    /// a newer build sharing the database).
    public var visitEventType: VisitEventType?
    /// The type as the row spells it, which the realtime feed relays as written (so an
    /// instance on an older build passes a newer type through untouched).
    public var type: String
    /// The event's data as written: `VisitEventData`'s members and any detail beside them
    /// (`ring_mode`, `notify_user_ids`), relayed to subscribers filtered, never rewritten.
    public var data: JSONValue
    public var createdAt: Date

    public init(seq: Int64, companyID: String, visitID: String?, unitID: String?, type: VisitEventType, data: JSONValue, createdAt: Date) {
        self.init(sequence: EventSequence(seq), companyID: companyID, visitID: visitID, unitID: unitID, typeName: type.rawValue,
                  data: data, createdAt: createdAt)
    }

    init(sequence: EventSequence, companyID: String, visitID: String?, unitID: String?, typeName: String, data: JSONValue,
         createdAt: Date) {
        self.sequence = sequence
        self.companyID = companyID
        self.visitID = visitID
        self.unitID = unitID
        self.visitEventType = VisitEventType(rawValue: typeName)
        self.type = typeName
        self.data = data
        self.createdAt = createdAt
    }

    /// Fills in the `seq` the insert returned, for every copy of this record.
    fileprivate func assignSeq(_ value: Int64) { sequence.assign(value) }

    /// The data read as the contract's `VisitEventData`; nil when it names no visit.
    public var visitData: VisitEventData? {
        guard let text = try? JSONCoding.encoder().encode(data) else { return nil }
        return try? JSONCoding.decoder().decode(VisitEventData.self, from: text)
    }
}

/// An event about to be written in the current transaction.
struct PendingEvent: Sendable {
    var type: VisitEventType
    var data: [String: JSONValue]
}

/// A record's `seq`, shared by the copies of the record so that the insert at the end of
/// the transaction can fill it in (`EventLog.append`).
final class EventSequence: Sendable, Equatable {
    private let assigned: Locked<Int64>
    init(_ value: Int64) { assigned = Locked(value) }
    var value: Int64 { assigned.current }
    func assign(_ value: Int64) { assigned.withLock { $0 = value } }
    static func == (lhs: EventSequence, rhs: EventSequence) -> Bool { lhs.value == rhs.value }
}

/// Writes and reads the `events` table.
enum EventLog {
    /// Appends events to the caller's transaction; returns them, their `seq` assigned at
    /// the end of the transaction.
    ///
    /// On PostgreSQL an identity value is taken when the row is inserted but becomes
    /// visible at commit, so two transactions could commit their events out of `seq`
    /// order and a reader resuming "after seq N" would skip one. A transaction-scoped
    /// advisory lock per company makes `seq` order equal commit order within a company,
    /// which is the scope replay reads. The lock serialises the company's transactions
    /// from where it is taken until COMMIT, so it is taken as late as possible: the rows
    /// are inserted, under the lock, as the transaction's last work (`lastWork`), not
    /// here — so a gate POST's ring plan, pushes and answer do not run while every other
    /// visit of the building waits (decision 0047). SQLite has a single writer: the lock
    /// is a no-op there, and the same deferred insert keeps one code path.
    ///
    /// The bus's listeners (`EventBus.listen`) get the records in this same transaction,
    /// before COMMIT — the push outbox writes its jobs there (decision 0100).
    static func append(_ db: any SQLConnection, companyID: String, visitID: VisitID?, unitID: UnitID?,
                       events: [PendingEvent], at: Date, bus: EventBus) throws -> [EventRecord] {
        guard !events.isEmpty else { return [] }
        let batch = db.lastWork("events:" + companyID, make: { EventBatch(companyID: companyID) }) { batch, db in
            try batch.insert(db)
        }
        let records = events.map { event in
            EventRecord(sequence: EventSequence(0), companyID: companyID, visitID: visitID?.rawValue, unitID: unitID?.rawValue,
                        typeName: event.type.rawValue, data: JSONValue.object(event.data), createdAt: at)
        }
        batch.records += records
        // What other capabilities write about these events, in the same transaction
        // (they need no `seq`).
        try bus.appended(records, in: db, at: at)
        return records
    }

    /// One company's events of one transaction, inserted together as its last work.
    final class EventBatch {
        let companyID: String
        var records: [EventRecord] = []
        init(companyID: String) { self.companyID = companyID }

        func insert(_ db: any SQLConnection) throws {
            guard !records.isEmpty else { return }
            // The notice is delivered to every instance's listener at commit (and never if
            // it rolls back): the realtime feed of each instance then reads this company
            // forward. Under the lock: this statement, the insert, COMMIT.
            try db.lock(.eventLog(companyID: companyID), thenNotifyAtCommit: .events, payload: companyID)
            // One statement per 500 events (under every engine's parameter limit). Rows
            // take their `seq` in the order they are listed, whatever order RETURNING
            // answers in: the ascending values, in order.
            for start in stride(from: 0, to: records.count, by: 500) {
                let chunk = records[start..<min(start + 500, records.count)]
                let values = chunk.map { _ in "(?, ?, ?, ?, ?, ?)" }.joined(separator: ", ")
                let rows = try db.query("""
                    INSERT INTO events (company_id, visit_id, unit_id, type, data, created_at) VALUES \(values) RETURNING seq
                    """, chunk.flatMap { record -> [SQLValue] in
                        [.text(companyID), .optional(record.visitID), .optional(record.unitID), .text(record.type),
                         .text(record.data.jsonText), .date(record.createdAt)]
                    })
                let seqs = try rows.map { try $0.required.int("seq") }.sorted()
                guard seqs.count == chunk.count else {
                    throw StorageError.failed("events insert answered \(seqs.count) of \(chunk.count) rows")
                }
                for (record, seq) in zip(chunk, seqs) { record.assignSeq(seq) }
            }
        }
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
        return EventRecord(sequence: EventSequence(try required.int("seq")), companyID: try required.string("company_id"),
                           visitID: try row.string("visit_id"), unitID: try row.string("unit_id"),
                           typeName: try required.string("type"), data: data, createdAt: try required.date("created_at"))
    }}
