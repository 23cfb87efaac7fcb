import Foundation
import PortariaCore

/// Whether sessions are still live: not revoked, not expired, their user not disabled.
/// The one place that rule is written; the request path (`Authenticator`), tickets
/// (`RealtimeRoutes`) and the realtime feed's periodic sweep all ask here.
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
        try db.queryOne("""
            SELECT \(AccountStore.userColumns(of: "u")) FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ? AND s.user_id = ? AND \(Self.live)
            """, .text(sessionID), .text(userID), .date(now)).map(UserRecord.init)
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
}
