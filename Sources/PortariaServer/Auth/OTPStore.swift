import Foundation
import PortariaCore

/// The SMS codes (`otp_codes`) and the one-use tokens a verified code is exchanged for
/// (`otp_tokens`): every statement on those tables. Codes and tokens are stored as
/// hashes only; `AuthService` hashes what it hands out.
struct OTPStore: Sendable {
    let database: any SQLDatabase

    /// Stores a new code for `phone`, replacing any earlier unconsumed one.
    func replaceCode(phone: String, codeHash: String, at: Date, lifetime: TimeInterval) async throws {
        try await database.write { db in
            try db.execute("UPDATE otp_codes SET consumed_at = ? WHERE phone = ? AND consumed_at IS NULL", .date(at), .text(phone))
            try db.execute("""
                INSERT INTO otp_codes (id, phone, code_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)
                """, .text(UUID().uuidString.lowercased()), .text(phone), .text(codeHash), .date(at),
                     .date(at.addingTimeInterval(lifetime)))
        }
    }

    /// Checks `presented` against the phone's newest live code, counting the attempt
    /// whatever the outcome, and consumes the code when it matches. The row is locked
    /// for the check, so two parallel guesses each cost an attempt.
    func consumeCode(phone: String, presented: String, at: Date, maxAttempts: Int) async throws -> Bool {
        try await database.write { db -> Bool in
            guard let row = try db.queryOne("""
                SELECT id, code_hash, attempts FROM otp_codes
                WHERE phone = ? AND consumed_at IS NULL AND expires_at > ? AND attempts < ?
                ORDER BY created_at DESC LIMIT 1\(db.dialect.forUpdate)
                """, .text(phone), .date(at), .integer(Int64(maxAttempts))) else { return false }
            let id = try row.required.string("id")
            let stored = try row.required.string("code_hash")
            try db.execute("UPDATE otp_codes SET attempts = attempts + 1 WHERE id = ?", .text(id))
            guard Crypto.constantTimeEquals(Array(stored.utf8), Array(presented.utf8)) else { return false }
            try db.execute("UPDATE otp_codes SET consumed_at = ? WHERE id = ?", .date(at), .text(id))
            return true
        }
    }

    func issueToken(hash: String, userID: String, expiresAt: Date) async throws {
        try await database.write { db in
            try db.execute("INSERT INTO otp_tokens (token_hash, user_id, expires_at) VALUES (?, ?, ?)",
                           .text(hash), .text(userID), .date(expiresAt))
        }
    }

    /// The user of a live, unused token, marking it used; nil for any other token (and
    /// for the loser of two parallel redemptions).
    func redeemToken(hash: String, at: Date) async throws -> String? {
        try await database.write { db -> String? in
            guard let row = try db.queryOne("SELECT user_id FROM otp_tokens WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?\(db.dialect.forUpdate)",
                                            .text(hash), .date(at)) else { return nil }
            let userID = try row.required.string("user_id")
            let claimed = try db.execute("UPDATE otp_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL", .date(at), .text(hash))
            return claimed == 1 ? userID : nil
        }
    }
}
