import Foundation
import PortariaCore

/// Sessions and their refresh tokens: every statement on `sessions` and
/// `refresh_tokens`, and whether a session is still live — not revoked, not expired, its
/// user not disabled. The one place that rule is written; the request path
/// (`Authenticator`), tickets (`RealtimeRoutes`) and the realtime feed's periodic sweep
/// all ask here. Refresh tokens are stored as hashes; `AuthService` hashes.
struct SessionStore: Sendable {
    let database: any SQLDatabase

    /// The condition on `sessions s JOIN users u` that makes a session live at `?`.
    private static let live = "s.revoked_at IS NULL AND s.expires_at > ? AND u.disabled = 0"

    /// The user of session `sessionID` if the session belongs to `userID` and is live.
    func liveUser(sessionID: String, userID: String, at now: Date) async throws -> UserRecord? {
        try await database.read { db in try Self.liveUser(db, sessionID: sessionID, userID: userID, at: now) }
    }

    /// The same inside a read the caller already holds (`Authenticator.caller`).
    static func liveUser(_ db: any SQLConnection, sessionID: String, userID: String, at now: Date) throws -> UserRecord? {
        try liveUserAndExpiry(db, sessionID: sessionID, userID: userID, at: now)?.user
    }

    /// The live session's user and when the session ends (what `SessionCache` may not outlive).
    static func liveUserAndExpiry(_ db: any SQLConnection, sessionID: String, userID: String, at now: Date) throws
        -> (user: UserRecord, expiresAt: Date)? {
        guard let row = try db.queryOne("""
            SELECT \(AccountStore.userColumns(of: "u")), s.expires_at AS session_expires_at FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ? AND s.user_id = ? AND \(Self.live)
            """, .text(sessionID), .text(userID), .date(now)) else { return nil }
        return (try UserRecord(row), try row.required.date("session_expires_at"))
    }

    func isLive(sessionID: String, at now: Date) async throws -> Bool {
        try await !liveSessionIDs(among: [sessionID], at: now).isEmpty
    }

    /// The live ones among `sessionIDs`, asked 200 at a time (a bounded statement).
    func liveSessionIDs(among sessionIDs: [String], at now: Date) async throws -> Set<String> {
        var live = Set<String>()
        for start in stride(from: 0, to: sessionIDs.count, by: 200) {
            let chunk = Array(sessionIDs[start..<min(start + 200, sessionIDs.count)])
            let placeholders = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            let found = try await database.read { db in
                try db.query("""
                    SELECT s.id FROM sessions s JOIN users u ON u.id = s.user_id
                    WHERE s.id IN (\(placeholders)) AND \(Self.live)
                    """, chunk.map(SQLValue.text) + [.date(now)]).map { try $0.required.string("id") }
            }
            live.formUnion(found)
        }
        return live
    }

    // MARK: Starting, rotating and ending sessions

    /// A new session (refresh-token family) for `userID` with its first refresh token.
    /// `audit`: the login's entry, committed with the session.
    func start(sessionID: String, userID: String, refreshTokenHash: String, at: Date, lifetime: TimeInterval,
               audit: AuditEntry? = nil) async throws {
        try await database.write { db in
            try db.execute("INSERT INTO sessions (id, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                           .text(sessionID), .text(userID), .date(at), .date(at.addingTimeInterval(lifetime)))
            try db.execute("INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)",
                           .text(refreshTokenHash), .text(sessionID), .date(at))
            if let audit { try AuditLog.append(db, audit) }
        }
    }

    enum Rotation: Sendable, Equatable {
        case rotated(userID: String, sessionID: String)
        /// The token was spent already: its session is now revoked.
        case reused(sessionID: String)
        case invalid
    }

    /// Spends the refresh token `presented` and stores `next` in its place (RFC 9700
    /// §4.14.2), in one commit. A spent token presented again revokes its session.
    func rotate(presented: String, next: String, at: Date) async throws -> Rotation {
        try await database.write { db -> Rotation in
            guard let row = try db.queryOne("""
                SELECT r.session_id, r.spent_at, s.user_id, s.expires_at, s.revoked_at, u.disabled
                FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id JOIN users u ON u.id = s.user_id
                WHERE r.token_hash = ?\(db.dialect.forUpdate)
                """, .text(presented)) else { return .invalid }
            let sessionID = try row.required.string("session_id")
            let userID = try row.required.string("user_id")
            if try row.int("revoked_at") != nil || (try row.required.date("expires_at")) <= at || (try row.required.bool("disabled")) {
                return .invalid
            }
            // Marking spent only if still unspent makes two racing refreshes of one token
            // count as reuse for the loser.
            let claimed = try db.execute("UPDATE refresh_tokens SET spent_at = ? WHERE token_hash = ? AND spent_at IS NULL",
                                         .date(at), .text(presented))
            if try row.int("spent_at") != nil || claimed == 0 {
                try db.execute("UPDATE sessions SET revoked_at = ?, revoked_reason = 'refresh_token_reused' WHERE id = ? AND revoked_at IS NULL",
                               .date(at), .text(sessionID))
                try AuthChange.record(.session(sessionID), in: db)
                return .reused(sessionID: sessionID)
            }
            try db.execute("INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)",
                           .text(next), .text(sessionID), .date(at))
            return .rotated(userID: userID, sessionID: sessionID)
        }
    }

    /// `audit`: the logout's entry (its actor filled in from the session), written only
    /// when this call ended a live session.
    func revoke(sessionID: String, reason: String, at: Date, audit: AuditEntry? = nil) async throws {
        try await database.write { db in
            let ended = try db.execute("UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL",
                                       .date(at), .text(reason), .text(sessionID))
            try AuthChange.record(.session(sessionID), in: db)
            if ended > 0, var audit,
               let userID = try db.queryOne("SELECT user_id FROM sessions WHERE id = ?", .text(sessionID))?.string("user_id") {
                audit.actorUserID = userID
                try AuditLog.append(db, audit)
            }
        }
    }

    /// The session a refresh token belongs to (spent or not).
    func sessionID(forRefreshTokenHash hash: String) async throws -> String? {
        try await database.read { db in
            try db.queryOne("SELECT session_id FROM refresh_tokens WHERE token_hash = ?", .text(hash))?.required.string("session_id")
        }
    }
}
