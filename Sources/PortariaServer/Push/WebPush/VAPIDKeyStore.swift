import Foundation
import PortariaCore

/// The VAPID private key's row in `service_state`, wrapped with the secrets key
/// (`ServiceSecrets`); the key material itself is `VAPIDKeys`' business.
enum VAPIDKeyStore {
    static let stateKey = "vapid_private_key"

    /// Stores `wrapped` unless a key is already kept — two instances starting together
    /// keep the first one's (ON CONFLICT) — and returns the kept value, wrapped.
    static func keepFirst(_ db: any SQLConnection, wrapped: String, at now: Date) throws -> String {
        try db.execute("""
            INSERT INTO service_state (key, value, updated_at) VALUES (?, ?, ?)
            ON CONFLICT (key) DO NOTHING
            """, .text(stateKey), .text(wrapped), .date(now))
        return try db.queryOne("SELECT value FROM service_state WHERE key = ?", .text(stateKey))?.string("value") ?? ""
    }
}
