import Foundation
import PortariaCore

/// Server-side secrets that every instance must share, kept in the database: the JWT
/// signing keys and the pepper OTP codes are hashed with. Created on first start.
public struct ServiceSecrets: Sendable {
    public let jwt: JWTCodec
    public let otpPepper: [UInt8]

    public static func loadOrCreate(_ database: any SQLDatabase, now: Date = Date()) async throws -> ServiceSecrets {
        try await database.write { db in
            if db.dialect == .postgres {
                // Two instances starting together must not each mint a different first key.
                _ = try db.query("SELECT pg_advisory_xact_lock(7246101) AS locked", [])
            }
            let existing = try db.queryOne("SELECT COUNT(*) AS n FROM signing_keys WHERE retired_at IS NULL", [])?.int("n") ?? 0
            if existing == 0 {
                try db.execute("INSERT INTO signing_keys (id, secret, created_at) VALUES (?, ?, ?)",
                               .text(Self.newKeyID(now)), .text(Base64URL.encode(Crypto.randomBytes(32))), .date(now))
            }
            try db.execute("""
                INSERT INTO service_state (key, value, updated_at) VALUES ('otp_pepper', ?, ?)
                ON CONFLICT (key) DO NOTHING
                """, .text(Base64URL.encode(Crypto.randomBytes(32))), .date(now))
            let keys = try db.query("SELECT id, secret FROM signing_keys WHERE retired_at IS NULL ORDER BY created_at DESC, id DESC", [])
                .compactMap { row -> SigningKey? in
                    guard let id = row.string("id"), let secret = row.string("secret").flatMap(Base64URL.decode) else { return nil }
                    return SigningKey(id: id, secret: secret)
                }
            let pepper = try db.queryOne("SELECT value FROM service_state WHERE key = 'otp_pepper'", [])?
                .string("value").flatMap(Base64URL.decode) ?? []
            return ServiceSecrets(jwt: JWTCodec(keys: keys, currentKeyID: keys[0].id), otpPepper: pepper)
        }
    }

    static func newKeyID(_ now: Date) -> String {
        "k" + String(Int64(now.timeIntervalSince1970)) + "-" + Base64URL.encode(Crypto.randomBytes(4))
    }

    /// Adds a new current key; older keys keep verifying until retired.
    public static func rotate(_ database: any SQLDatabase, now: Date = Date()) async throws -> String {
        let id = newKeyID(now)
        try await database.write { db in
            try db.execute("INSERT INTO signing_keys (id, secret, created_at) VALUES (?, ?, ?)",
                           .text(id), .text(Base64URL.encode(Crypto.randomBytes(32))), .date(now.addingTimeInterval(0.001)))
        }
        return id
    }
}
