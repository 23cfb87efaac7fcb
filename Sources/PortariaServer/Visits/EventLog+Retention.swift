import Foundation

/// Pruning the event log (decision 0055). Events exist for the realtime feed: live
/// delivery reads what was committed a moment ago and a reconnect replays at most
/// `RealtimeLimits.replayWindow` events back, so a week of log is far more than either
/// needs; they also carry visitor names, which LGPD says not to keep without a reason.
extension EventLog {
    /// How long events are kept (at most; the retention days bound it too).
    static let keptFor: TimeInterval = 7 * 86_400

    /// `service_state` key: every event with a seq at or below it may have been deleted.
    static let prunedThroughKey = "events_pruned_through"

    /// Deletes up to `limit` events created before `cutoff`, oldest first, in `db`'s
    /// transaction, and raises the pruned-through mark in the same transaction (so a
    /// replay that sees the deletion also sees the mark). Each company's newest event is
    /// kept: the feed starts a company's sockets from its newest seq. Returns how many
    /// were deleted; fewer than `limit` means nothing older is left.
    static func prune(_ db: any SQLConnection, before cutoff: Date, limit: Int) throws -> Int {
        // Walking the primary key from the start stops at the first recent event: seq
        // order is commit order, so the old events are the front of the table and no
        // index on created_at is needed.
        let boundary = try db.queryOne("SELECT seq FROM events WHERE created_at >= ? ORDER BY seq LIMIT 1", .date(cutoff))?.int("seq")
        let rows = try db.query("""
            SELECT seq FROM events e
            WHERE seq < ? AND created_at < ?
              AND seq < (SELECT MAX(seq) FROM events n WHERE n.company_id = e.company_id)
            ORDER BY seq LIMIT ?
            """, .integer(boundary ?? Int64.max), .date(cutoff), .integer(Int64(limit)))
        let seqs = try rows.map { try $0.required.int("seq") }
        guard let highest = seqs.last else { return 0 }
        let placeholders = Array(repeating: "?", count: seqs.count).joined(separator: ",")
        let deleted = try db.execute("DELETE FROM events WHERE seq IN (\(placeholders))", seqs.map(SQLValue.integer))
        try raisePrunedThrough(db, to: highest)
        return deleted
    }

    /// The seq at or below which events may be missing (0: nothing was ever pruned).
    static func prunedThrough(_ db: any SQLConnection) throws -> Int64 {
        guard let value = try db.queryOne("SELECT value FROM service_state WHERE key = ?", .text(prunedThroughKey))?.string("value") else {
            return 0
        }
        return Int64(value) ?? 0
    }

    private static func raisePrunedThrough(_ db: any SQLConnection, to seq: Int64) throws {
        // Two instances may sweep at once: the mark only ever rises (PostgreSQL re-checks
        // the condition after waiting for the other's row lock).
        let now = SQLValue.date(Date())
        try db.execute("INSERT INTO service_state (key, value, updated_at) VALUES (?, '0', ?) ON CONFLICT (key) DO NOTHING",
                       .text(prunedThroughKey), now)
        try db.execute("UPDATE service_state SET value = ?, updated_at = ? WHERE key = ? AND CAST(value AS BIGINT) < ?",
                       .text(String(seq)), now, .text(prunedThroughKey), .integer(seq))
    }
}
