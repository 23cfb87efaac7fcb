import Foundation
import PortariaCore

/// LGPD: everything the database holds about one person (`portaria admin export-user`),
/// and its erasure (`portaria admin erase-user`, decision 0092).
public enum PersonalData {
    /// Columns never exported: secrets and token hashes, not facts about the person.
    static let withheld: Set<String> = ["password_hash", "token_hash", "visitor_token_hash", "ack_token_hashes", "code_hash"]

    /// What a database row says, as JSON; `*_at` columns as timestamps.
    static func json(_ row: SQLRow) -> JSONValue {
        var object: [String: JSONValue] = [:]
        for (column, value) in zip(row.columns, row.values) where !withheld.contains(column) {
            if (column.hasSuffix("_at") || column == "at"), let ms = value.asInteger {
                object[column] = .string(Timestamp.format(Date(timeIntervalSince1970: Double(ms) / 1000)))
                continue
            }
            switch value {
            case .null: object[column] = .null
            case .integer(let number): object[column] = .number(Double(number))
            case .real(let number): object[column] = .number(number)
            case .text(let text): object[column] = .string(text)
            }
        }
        return .object(object)
    }

    /// The person's account, memberships, devices, sessions, the visits they answered or
    /// resolved, their ring-order places and the audit rows about them.
    public static func export(_ database: any SQLDatabase, userID: String) async throws -> JSONValue {
        try await database.read { db in
            func rows(_ sql: String, _ parameters: SQLValue...) throws -> JSONValue {
                .array(try db.query(sql, parameters).map(json))
            }
            let id = SQLValue.text(userID)
            guard let user = try db.queryOne("SELECT * FROM users WHERE id = ?", id) else { return .null }
            return .object([
                "user": json(user),
                "memberships": try rows("""
                    SELECT m.company_id, c.name AS company_name, m.created_at FROM memberships m
                    JOIN companies c ON c.id = m.company_id WHERE m.user_id = ? ORDER BY m.company_id
                    """, id),
                "membership_units": try rows("""
                    SELECT mu.company_id, mu.unit_id, u.label FROM membership_units mu JOIN units u ON u.id = mu.unit_id
                    WHERE mu.user_id = ? ORDER BY mu.company_id, u.label
                    """, id),
                "membership_sectors": try rows("""
                    SELECT ms.company_id, ms.sector_id, s.name FROM membership_sectors ms JOIN sectors s ON s.id = ms.sector_id
                    WHERE ms.user_id = ? ORDER BY ms.company_id, s.name
                    """, id),
                "membership_permissions": try rows("SELECT company_id, permission FROM membership_permissions WHERE user_id = ? ORDER BY company_id, permission", id),
                "ring_order": try rows("SELECT * FROM unit_ring_order WHERE user_id = ?", id),
                "devices": try rows("SELECT * FROM devices WHERE user_id = ? ORDER BY created_at, id", id),
                "sessions": try rows("SELECT id, created_at, expires_at, revoked_at, revoked_reason FROM sessions WHERE user_id = ? ORDER BY created_at", id),
                "visits_answered": try rows("SELECT id AS visit_id, company_id, unit_id, answered_at FROM visits WHERE answered_by = ? ORDER BY answered_at", id),
                "visit_resolutions": try rows("SELECT visit_id, action, via, created_at FROM visit_resolutions WHERE user_id = ? ORDER BY created_at", id),
                "visit_attempts": try rows("SELECT visit_id, kind, device_id, channel, created_at FROM visit_attempts WHERE user_id = ? ORDER BY id", id),
                "push_jobs": try rows("SELECT id, device_id, kind, visit_id, status, created_at, sent_at, acked_at FROM push_jobs WHERE user_id = ? ORDER BY created_at", id),
                "audit": .array(try AuditLog.about(db, userID: userID).map(\.json)),
            ])
        }
    }

    /// What `erase` did.
    public struct Erasure: Sendable {
        public var pseudonym: String
        public var auditRowsPseudonymized: Int
    }

    /// Removes the person: devices, sessions, memberships, ring-order places, codes and
    /// pending pushes are deleted; the account row stays (visits reference it) with its
    /// name, username, phone and password gone and sign-in disabled; the visits they
    /// answered or resolved keep the fact and lose the name; the audit trail keeps every
    /// fact with the person replaced by one random pseudonym. One transaction: all or nothing.
    public static func erase(_ database: any SQLDatabase, userID: String, now: Date = Date()) async throws -> Erasure? {
        let pseudonym = "erased-" + UUID().uuidString.lowercased().prefix(13).replacingOccurrences(of: "-", with: "")
        let removed = "(removido)"
        return try await database.write { db -> Erasure? in
            let id = SQLValue.text(userID)
            guard let user = try db.queryOne("SELECT phone FROM users WHERE id = ?", id) else { return nil }
            if let phone = try user.string("phone") { try db.execute("DELETE FROM otp_codes WHERE phone = ?", .text(phone)) }
            try db.execute("DELETE FROM otp_tokens WHERE user_id = ?", id)
            try db.execute("DELETE FROM refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE user_id = ?)", id)
            try db.execute("DELETE FROM sessions WHERE user_id = ?", id)
            try db.execute("DELETE FROM push_jobs WHERE user_id = ?", id)
            try db.execute("DELETE FROM devices WHERE user_id = ?", id)
            try db.execute("DELETE FROM realtime_tickets WHERE user_id = ?", id)
            try db.execute("DELETE FROM idempotency_keys WHERE user_id = ?", id)
            try db.execute("DELETE FROM unit_ring_order WHERE user_id = ?", id)
            try db.execute("DELETE FROM memberships WHERE user_id = ?", id)
            try db.execute("UPDATE visits SET answered_by = NULL, answered_by_name = ? WHERE answered_by = ?", .text(removed), id)
            try db.execute("UPDATE visit_resolutions SET user_id = NULL, user_name = ? WHERE user_id = ?", .text(removed), id)
            try db.execute("UPDATE visit_attempts SET user_id = NULL, user_name = ? WHERE user_id = ?", .text(removed), id)
            try db.execute("""
                UPDATE users SET username = ?, name = ?, phone = NULL, password_hash = NULL, disabled = 1 WHERE id = ?
                """, .text(pseudonym), .text(removed), id)
            // Cached bearer checks of this user go with the commit (decision 0043).
            try AuthChange.record(.user(userID), in: db)
            let rows = try AuditLog.pseudonymize(db, userID: userID, pseudonym: pseudonym)
            try AuditLog.append(db, AuditEntry(actorUserID: nil, actorRole: "cli", action: "account.erased", objectType: "user",
                                               objectID: pseudonym, subjectUserID: pseudonym, at: now))
            return Erasure(pseudonym: pseudonym, auditRowsPseudonymized: rows)
        }
    }
}
