import Foundation
import PortariaCore

/// Server-side secrets that every instance must share, kept in the database: the JWT
/// signing keys and the pepper OTP codes are hashed with. Created on first start.
///
/// With a `SecretsKey` (`--secrets-key-file`) they are stored wrapped (AES-256-GCM), and
/// plaintext ones found at start are wrapped then, in the same transaction; without one
/// they stay as they are — plaintext, with a warning — and a database whose secrets are
/// wrapped refuses to start (decision 0013).
public struct ServiceSecrets: Sendable {
    public let jwt: JWTCodec
    public let otpPepper: [UInt8]
    /// Secrets wrapped at this start (plaintext rows found with a key given).
    public var wrappedAtStart = 0
    /// Whether the database holds the secrets in plaintext.
    public var plaintext = true

    /// What `serve` does: reads the key file (if any), loads the secrets, and says how
    /// they are kept. Problems become one-line startup errors.
    public static func open(_ database: any SQLDatabase, keyFile: String?, log: Log) async throws -> ServiceSecrets {
        do {
            var key: SecretsKey?
            if let keyFile {
                key = try SecretsKey.load(path: keyFile)
                if SecretFile.isShared(keyFile) {
                    log.warning("--secrets-key-file is readable by other users; chmod 600 it", ["file": .string(keyFile)])
                }
            }
            let secrets = try await loadOrCreate(database, key: key)
            if secrets.wrappedAtStart > 0, let sqlite = database as? SQLiteDatabase {
                // The plaintext versions are still in the WAL's older frames.
                try await sqlite.checkpointAndTruncate()
            }
            if secrets.wrappedAtStart > 0 {
                log.info("wrapped the database's plaintext secrets with --secrets-key-file", ["count": .number(Double(secrets.wrappedAtStart))])
            }
            if secrets.plaintext {
                log.warning("JWT signing keys and the OTP pepper are stored in plaintext in the database; start with --secrets-key-file to wrap them")
            }
            return secrets
        } catch let error as SecretsError {
            throw ServerStartError(error.description)
        }
    }

    public static func loadOrCreate(_ database: any SQLDatabase, key: SecretsKey? = nil, now: Date = Date()) async throws -> ServiceSecrets {
        try await database.write { db in
            // Two instances starting together must not each mint a different first key.
            try db.lock(.serviceSecrets)
            let existing = try db.queryOne("SELECT COUNT(*) AS n FROM signing_keys WHERE retired_at IS NULL", [])?.int("n") ?? 0
            if existing == 0 {
                let id = Self.newKeyID(now)
                try db.execute("INSERT INTO signing_keys (id, secret, created_at) VALUES (?, ?, ?)",
                               .text(id), .text(Self.store(Crypto.randomBytes(32), context: "signing_keys:" + id, key: key)), .date(now))
            }
            try db.execute("""
                INSERT INTO service_state (key, value, updated_at) VALUES ('otp_pepper', ?, ?)
                ON CONFLICT (key) DO NOTHING
                """, .text(Self.store(Crypto.randomBytes(32), context: pepperContext, key: key)), .date(now))

            // Every stored secret, wrapped now if a key is given and it is not yet, without
            // leaving the plaintext it replaces in free pages.
            if key != nil { try db.zeroFreedSpace(true) }
            defer { if key != nil { try? db.zeroFreedSpace(false) } }
            var wrapped = 0
            var plaintext = false
            for row in try db.query("SELECT id, secret FROM signing_keys", []) {
                guard let id = try row.string("id"), let secret = try row.string("secret") else { continue }
                if SecretsKey.isWrapped(secret) { continue }
                guard let key else { plaintext = true; continue }
                let bytes = try Self.reveal(secret, context: "signing_keys:" + id, key: nil)
                try db.execute("UPDATE signing_keys SET secret = ? WHERE id = ?", .text(key.seal(bytes, context: "signing_keys:" + id)), .text(id))
                wrapped += 1
            }
            let storedPepper = try db.queryOne("SELECT value FROM service_state WHERE key = 'otp_pepper'", [])?.string("value") ?? ""
            if !SecretsKey.isWrapped(storedPepper) {
                if let key {
                    let bytes = try Self.reveal(storedPepper, context: pepperContext, key: nil)
                    try db.execute("UPDATE service_state SET value = ?, updated_at = ? WHERE key = 'otp_pepper'",
                                   .text(key.seal(bytes, context: pepperContext)), .date(now))
                    wrapped += 1
                } else {
                    plaintext = true
                }
            }

            let keys = try db.query("SELECT id, secret FROM signing_keys WHERE retired_at IS NULL ORDER BY created_at DESC, id DESC", [])
                .map { row -> SigningKey in
                    let id = try row.required.string("id")
                    return SigningKey(id: id, secret: try Self.reveal(try row.required.string("secret"), context: "signing_keys:" + id, key: key))
                }
            let pepper = try Self.reveal(try db.queryOne("SELECT value FROM service_state WHERE key = 'otp_pepper'", [])?
                .string("value") ?? "", context: pepperContext, key: key)
            var secrets = ServiceSecrets(jwt: JWTCodec(keys: keys, currentKeyID: keys[0].id), otpPepper: pepper)
            secrets.wrappedAtStart = wrapped
            secrets.plaintext = plaintext
            return secrets
        }
    }

    static let pepperContext = "service_state:otp_pepper"

    /// How a new secret is stored: wrapped with `key`, or base64url without one.
    static func store(_ bytes: [UInt8], context: String, key: SecretsKey?) -> String {
        key.map { $0.seal(bytes, context: context) } ?? Base64URL.encode(bytes)
    }

    /// The bytes of a stored secret, opening it when wrapped.
    static func reveal(_ stored: String, context: String, key: SecretsKey?) throws -> [UInt8] {
        if SecretsKey.isWrapped(stored) {
            guard let key else {
                throw SecretsError("the database's secrets are wrapped: start with --secrets-key-file (or PORTARIA_SECRETS_KEY_FILE)")
            }
            return try key.open(stored, context: context)
        }
        guard let bytes = Base64URL.decode(stored), !bytes.isEmpty else { throw SecretsError("the stored secret \(context) is malformed") }
        return bytes
    }

    static func newKeyID(_ now: Date) -> String {
        "k" + String(Int64(now.timeIntervalSince1970)) + "-" + Base64URL.encode(Crypto.randomBytes(4))
    }

    /// Adds a new current key; older keys keep verifying until retired. Wrapped with `key`
    /// when given; a database whose keys are wrapped needs it.
    public static func rotate(_ database: any SQLDatabase, key: SecretsKey? = nil, now: Date = Date()) async throws -> String {
        let id = newKeyID(now)
        try await database.write { db in
            let wrapped = try db.query("SELECT secret FROM signing_keys", []).contains { SecretsKey.isWrapped(try $0.required.string("secret")) }
            if wrapped && key == nil {
                throw SecretsError("the database's secrets are wrapped: pass --secrets-key-file (or PORTARIA_SECRETS_KEY_FILE)")
            }
            try db.execute("INSERT INTO signing_keys (id, secret, created_at) VALUES (?, ?, ?)",
                           .text(id), .text(Self.store(Crypto.randomBytes(32), context: "signing_keys:" + id, key: key)),
                           .date(now.addingTimeInterval(0.001)))
        }
        return id
    }
}
