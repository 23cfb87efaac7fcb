import Foundation
import PortariaCore

/// Server-side secrets that every instance must share, kept in the database: the JWT
/// signing keys, the pepper OTP codes are hashed with and the VAPID key. Created on first
/// start.
///
/// `serve` always stores them wrapped (AES-256-GCM) with the key of `SecretsKeyFile`
/// (`--secrets-key-file`, or the one made in the data directory); plaintext ones found at
/// start (a database from before) are wrapped then, in the same transaction. A database
/// whose secrets are wrapped does not start without its key (decisions 0013, 0065).
public struct ServiceSecrets: Sendable {
    public let jwt: JWTCodec
    public let otpPepper: [UInt8]
    /// Secrets wrapped at this start (plaintext rows found with a key given).
    public var wrappedAtStart = 0
    /// Whether the database holds the secrets in plaintext.
    public var plaintext = true
    /// The key the secrets are wrapped with (nil only for `loadOrCreate` without one).
    public var key: SecretsKey?

    /// What `serve` and `admin` do: reads the key (`--secrets-key-file`, or the data
    /// directory's, made now when the database holds no wrapped secret yet), loads the
    /// secrets, wraps plaintext ones, and says so. Problems become one-line startup errors.
    public static func open(_ database: any SQLDatabase, keyFile: String?, dataDirectory: String, log: Log) async throws -> ServiceSecrets {
        do {
            let file = try SecretsKeyFile(keyFile: keyFile, dataDirectory: dataDirectory)
            if file.existing != nil, SecretFile.isShared(file.path) {
                log.warning("the secrets key file is readable by other users; chmod 600 it", ["file": .string(file.path)])
            }
            let secrets = try await loadOrCreate(database, key: file.existing, creating: file.existing == nil ? file : nil)
            if secrets.wrappedAtStart > 0, let sqlite = database as? SQLiteDatabase {
                // The plaintext versions are still in the WAL's older frames.
                try await sqlite.checkpointAndTruncate()
            }
            if file.existing == nil {
                log.info("created the secrets key file; keep it with every instance and back it up apart from the database",
                         ["file": .string(file.path)])
            }
            if secrets.wrappedAtStart > 0 {
                log.info("wrapped the database's plaintext secrets with the secrets key file",
                         ["count": .number(Double(secrets.wrappedAtStart)), "file": .string(file.path)])
            }
            return secrets
        } catch let error as SecretsError {
            throw ServerStartError(error.description)
        }
    }

    /// Loads the secrets (creating them on a new database), wrapping plaintext ones with
    /// `key`. With `creating`, `key` is nil and a new key is made: written to that file,
    /// under the database's lock, only when no stored secret is wrapped yet (else the
    /// secrets belong to a key that is not here, and this throws).
    public static func loadOrCreate(_ database: any SQLDatabase, key: SecretsKey? = nil, creating: SecretsKeyFile? = nil,
                                    now: Date = Date()) async throws -> ServiceSecrets {
        try await database.write { db in
            // Two instances starting together must not each mint a different first key.
            try db.lock(.serviceSecrets)
            var key = key
            if let creating, key == nil {
                // Secrets wrapped by a key that is not here: refuse rather than mint anew.
                if try Self.anyWrapped(db) { throw SecretsError(creating.missingMessage) }
                let fresh = try SecretsKey(bytes: Crypto.randomBytes(32))
                // On disk before anything is wrapped with it, and before the commit.
                try creating.create(fresh)
                key = fresh
            }
            return try Self.loadOrCreate(db, key: key, now: now)
        }
    }

    /// Whether any stored secret is wrapped.
    static func anyWrapped(_ db: any SQLConnection) throws -> Bool {
        let rows = try db.query("SELECT secret AS value FROM signing_keys UNION ALL SELECT value FROM service_state WHERE key IN ('otp_pepper', 'vapid_private_key')", [])
        return try rows.contains { SecretsKey.isWrapped(try $0.string("value") ?? "") }
    }

    /// The body of `loadOrCreate`, inside its transaction and lock.
    static func loadOrCreate(_ db: any SQLConnection, key: SecretsKey?, now: Date) throws -> ServiceSecrets {
        do {
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
            // The VAPID key (made later in the start, by `VAPIDKeys.load`) when a database from
            // before holds it in plaintext.
            if let key, let storedVAPID = try db.queryOne("SELECT value FROM service_state WHERE key = 'vapid_private_key'", [])?
                .string("value"), !SecretsKey.isWrapped(storedVAPID) {
                let bytes = try Self.reveal(storedVAPID, context: VAPIDKeys.context, key: nil)
                try db.execute("UPDATE service_state SET value = ?, updated_at = ? WHERE key = 'vapid_private_key'",
                               .text(key.seal(bytes, context: VAPIDKeys.context)), .date(now))
                wrapped += 1
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
            secrets.key = key
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
                throw SecretsError("the database's secrets are wrapped: start with their secrets key file (--secrets-key-file or PORTARIA_SECRETS_KEY_FILE)")
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
