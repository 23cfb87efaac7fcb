import Foundation

/// Pruning the outbox (decision 0055). A finished job is kept for push health (a device's
/// unacknowledged pushes since its last receipt) and for support questions ("did my phone
/// get the ring on Tuesday?"); a month answers both. Its message holds the visitor's name,
/// so it never outlives the retention days either.
extension PushOutbox {
    /// How long finished jobs and their attempts are kept (at most).
    static let keptFor: TimeInterval = 30 * 86_400

    /// Deletes up to `limit` finished jobs created before `cutoff`, with their attempts
    /// (`ON DELETE CASCADE`), in `db`'s transaction. A job still pending or sending is never
    /// deleted, whatever its age: its deadline ends it first. Returns (jobs, attempts)
    /// deleted; fewer jobs than `limit` means nothing older is left.
    static func prune(_ db: any SQLConnection, before cutoff: Date, limit: Int) throws -> (jobs: Int, attempts: Int) {
        let rows = try db.query("""
            SELECT id FROM push_jobs
            WHERE created_at < ? AND status IN ('sent', 'failed', 'expired', 'cancelled')
            ORDER BY created_at LIMIT ?
            """, .date(cutoff), .integer(Int64(limit)))
        let ids = try rows.map { SQLValue.text(try $0.required.string("id")) }
        guard !ids.isEmpty else { return (0, 0) }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
        let attempts = try db.queryOne("SELECT COUNT(*) AS n FROM push_attempts WHERE push_id IN (\(placeholders))", ids)?.int("n") ?? 0
        let jobs = try db.execute("DELETE FROM push_jobs WHERE id IN (\(placeholders))", ids)
        return (jobs, Int(attempts))
    }
}
