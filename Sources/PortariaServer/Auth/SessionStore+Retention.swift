import Foundation

/// Pruning ended sessions (decision 0055). A session row and its refresh tokens are read
/// only while the session could still be used (a refresh, the bearer check, reuse
/// detection); once it has expired, a presented token answers 401 whether the row is there
/// or not. A month past its end keeps the row for support questions ("why was I logged
/// out?", `revoked_reason`); after that it is only growth — one session per login, one
/// refresh token per access-token renewal.
extension SessionStore {
    /// How long a session is kept after it expired (a revoked session expires on its
    /// original date too, so it is kept at most 30 days past that).
    static let keptAfterEnd: TimeInterval = 30 * 86_400

    /// Deletes up to `limit` sessions that expired before `cutoff`, with their refresh
    /// tokens, in `db`'s transaction. Returns (sessions, refresh tokens) deleted; fewer
    /// sessions than `limit` means nothing older is left.
    static func prune(_ db: any SQLConnection, endedBefore cutoff: Date, limit: Int) throws -> (sessions: Int, refreshTokens: Int) {
        let rows = try db.query("SELECT id FROM sessions WHERE expires_at < ? ORDER BY expires_at LIMIT ?",
                                .date(cutoff), .integer(Int64(limit)))
        let ids = try rows.map { SQLValue.text(try $0.required.string("id")) }
        guard !ids.isEmpty else { return (0, 0) }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
        // Tokens first and by name, rather than through ON DELETE CASCADE: the count is
        // what the sweep reports.
        let tokens = try db.execute("DELETE FROM refresh_tokens WHERE session_id IN (\(placeholders))", ids)
        let sessions = try db.execute("DELETE FROM sessions WHERE id IN (\(placeholders))", ids)
        return (sessions, tokens)
    }
}
