import Foundation
import PortariaCore

/// One-time tickets for browsers (`POST /v1/realtime/tickets`): valid 30 s, single use,
/// stored hashed and shared by every instance through the database.
struct RealtimeTickets: Sendable {
    let database: any SQLDatabase
    static let lifetime: TimeInterval = 30

    func issue(for subscriber: Subscriber, now: Date = Date()) async throws -> String {
        let ticket = Crypto.opaqueToken()
        let visitID: String? = if case .visitor(let id) = subscriber.role { id } else { nil }
        try await database.write { db in
            // Expired tickets are useless; sweep them as new ones are made.
            try db.execute("DELETE FROM realtime_tickets WHERE expires_at < ?", .date(now.addingTimeInterval(-60)))
            try db.execute("""
                INSERT INTO realtime_tickets (token_hash, user_id, session_id, company_id, visit_id, expires_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """, .text(Crypto.tokenHash(ticket)), .optional(subscriber.userID), .optional(subscriber.sessionID),
                     .text(subscriber.companyID), .optional(visitID), .date(now.addingTimeInterval(Self.lifetime)))
        }
        return ticket
    }

    /// Spends a ticket: the (user, session, company, visit) it was issued for, or nil when
    /// it is unknown, expired or already used.
    func redeem(_ ticket: String, now: Date = Date()) async throws -> (userID: String?, sessionID: String?, companyID: String, visitID: String?)? {
        guard !ticket.isEmpty, ticket.utf8.count <= 200 else { return nil }
        let hash = Crypto.tokenHash(ticket)
        return try await database.write { db in
            let claimed = try db.execute("UPDATE realtime_tickets SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?",
                                         .date(now), .text(hash), .date(now))
            guard claimed == 1, let row = try db.queryOne("SELECT user_id, session_id, company_id, visit_id FROM realtime_tickets WHERE token_hash = ?", .text(hash)),
                  let company = try row.string("company_id") else { return nil }
            return (try row.string("user_id"), try row.string("session_id"), company, try row.string("visit_id"))
        }
    }
}
