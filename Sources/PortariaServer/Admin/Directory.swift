import Foundation
import PortariaCore

/// Administration of companies, units, gates, users, sectors and memberships: used by
/// `portaria admin …` and by the demo seeder. Every method validates its input and
/// throws `DirectoryError` with a readable message.
public struct Directory: Sendable {
    public let database: any SQLDatabase
    let hasher = PasswordHasher()

    public init(database: any SQLDatabase) { self.database = database }

    public struct DirectoryError: Error, CustomStringConvertible, Sendable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    static func newID() -> String { UUID().uuidString.lowercased() }

    // MARK: Lookups by id or by name

    /// A company by id or exact name.
    public func companyID(_ reference: String) async throws -> String {
        try await lookup("SELECT id FROM companies WHERE id = ? OR name = ? ORDER BY id LIMIT 1",
                         [.text(reference.lowercased()), .text(reference)], missing: "no company '\(reference)'")
    }

    public func userID(_ reference: String) async throws -> String {
        try await lookup("SELECT id FROM users WHERE id = ? OR username = ? LIMIT 1",
                         [.text(reference.lowercased()), .text(reference.lowercased())], missing: "no user '\(reference)'")
    }

    public func unitID(company: String, _ reference: String) async throws -> String {
        try await lookup("SELECT id FROM units WHERE company_id = ? AND (id = ? OR label = ?) LIMIT 1",
                         [.text(company), .text(reference.lowercased()), .text(reference)],
                         missing: "no unit '\(reference)' in that company")
    }

    public func sectorID(company: String, _ reference: String) async throws -> String {
        try await lookup("SELECT id FROM sectors WHERE company_id = ? AND (id = ? OR name = ?) LIMIT 1",
                         [.text(company), .text(reference.lowercased()), .text(reference)],
                         missing: "no sector '\(reference)' in that company")
    }

    /// The `id` a lookup statement finds, or `DirectoryError(missing)`.
    private func lookup(_ sql: String, _ parameters: [SQLValue], missing: String) async throws -> String {
        let row = try await database.read { db in try db.queryOne(sql, parameters) }
        guard let row else { throw DirectoryError(missing) }
        return try row.required.string("id")
    }

    // MARK: Creation

    @discardableResult
    public func createCompany(name: String, gateLat: Double?, gateLon: Double?, radius: Double = 50,
                              timezone: String = "America/Sao_Paulo") async throws -> String {
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 120 else { throw DirectoryError("company name must have 1–120 characters") }
        if let gateLat, !(-90...90).contains(gateLat) { throw DirectoryError("gate latitude must be within -90…90") }
        if let gateLon, !(-180...180).contains(gateLon) { throw DirectoryError("gate longitude must be within -180…180") }
        guard radius > 0 && radius <= 5000 else { throw DirectoryError("gate radius must be within 0…5000 m") }
        guard TimeZone(identifier: timezone) != nil else { throw DirectoryError("unknown timezone '\(timezone)'") }
        let id = Self.newID()
        try await database.write { db in
            try db.execute("""
                INSERT INTO companies (id, name, gate_lat, gate_lon, gate_radius_m, timezone, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                """, .text(id), .text(name), gateLat.map(SQLValue.real) ?? .null, gateLon.map(SQLValue.real) ?? .null,
                     .real(radius), .text(timezone), .date(Date()))
        }
        return id
    }

    @discardableResult
    public func createUnit(company: String, label: String) async throws -> String {
        guard !label.isEmpty, label.count <= 32 else { throw DirectoryError("unit label must have 1–32 characters") }
        let id = Self.newID()
        try await mapping {
            try await database.write { db in
                try db.execute("INSERT INTO units (id, company_id, label, created_at) VALUES (?, ?, ?, ?)",
                               .text(id), .text(company), .text(label), .date(Date()))
            }
        }
        return id
    }

    /// Characters of a token of `Crypto.gateTokenBytes` random bytes in base64url; a chosen
    /// token shorter than this is refused unless `allowGuessable` (the demo's `demo-gate`).
    public static let minimumGateTokenLength = 22

    /// A new gate token: 128 random bits, base64url (22 characters). The token is the
    /// only secret between the QR code on the gate and anyone on the internet.
    public static func randomGateToken() -> String { Base64URL.encode(Crypto.randomBytes(16)) }

    /// Creates a gate. Without `token` it gets a random one (`randomGateToken`); a chosen
    /// token must be at least `minimumGateTokenLength` characters unless `allowGuessable`.
    @discardableResult
    public func createGate(company: String, token: String? = nil, name: String = "Portão principal",
                           allowGuessable: Bool = false) async throws -> (id: String, token: String) {
        let token = token ?? Self.randomGateToken()
        guard token.count >= 4, token.count <= 64, token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw DirectoryError("gate token must be 4–64 characters of letters, digits, '-' or '_'")
        }
        guard allowGuessable || token.count >= Self.minimumGateTokenLength else {
            throw DirectoryError("gate token must be at least \(Self.minimumGateTokenLength) characters (a short one can be guessed); omit --token for a random one")
        }
        let id = Self.newID()
        try await mapping {
            try await database.write { db in
                try db.execute("INSERT INTO gates (id, company_id, token, name, created_at) VALUES (?, ?, ?, ?, ?)",
                               .text(id), .text(company), .text(token), .text(name), .date(Date()))
            }
        }
        return (id, token)
    }

    public static func validUsername(_ username: String) -> Bool {
        (1...64).contains(username.count) && username.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || "._-".contains($0)) }
    }

    @discardableResult
    public func createUser(username: String, name: String, phone: String? = nil, password: String? = nil,
                           master: Bool = false, driver: Bool = false) async throws -> String {
        let username = username.lowercased()
        guard Self.validUsername(username) else { throw DirectoryError("username must be 1–64 characters of a–z, 0–9, '.', '_' or '-'") }
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 120 else { throw DirectoryError("name must have 1–120 characters") }
        var normalizedPhone: String?
        if let phone {
            guard let value = AuthService.normalizePhone(phone) else { throw DirectoryError("phone must be like +5511999990001") }
            normalizedPhone = value
        }
        var hash: String?
        if let password {
            if let problem = PasswordHasher.validate(password) { throw DirectoryError(problem) }
            hash = await hasher.hash(password)
        }
        let id = Self.newID()
        let (phoneValue, hashValue) = (SQLValue.optional(normalizedPhone), SQLValue.optional(hash))
        try await mapping {
            try await database.write { db in
                try db.execute("""
                    INSERT INTO users (id, username, name, phone, password_hash, master, driver, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, .text(id), .text(username), .text(name), phoneValue, hashValue,
                         .bool(master), .bool(driver), .date(Date()))
            }
        }
        return id
    }

    /// Sets a user's password and ends every session they have, in one transaction: a
    /// password is changed because it may be known to someone else, who must not keep a
    /// session opened with it. Access tokens stop at their next request (the session is
    /// checked on each), refresh tokens with their session; live sockets before their next
    /// event (the feed checks sessions when auth changed, decision 0071).
    /// Returns the number of sessions ended.
    @discardableResult
    public func setPassword(user: String, password: String, now: Date = Date()) async throws -> Int {
        if let problem = PasswordHasher.validate(password) { throw DirectoryError(problem) }
        let hash = await hasher.hash(password)
        return try await database.write { db in
            try db.execute("UPDATE users SET password_hash = ? WHERE id = ?", .text(hash), .text(user))
            // Every server's cached bearer checks for this user go with the commit (decision 0043).
            try AuthChange.record(.user(user), in: db)
            return try db.execute("""
                UPDATE sessions SET revoked_at = ?, revoked_reason = 'password_changed' WHERE user_id = ? AND revoked_at IS NULL
                """, .date(now), .text(user))
        }
    }

    @discardableResult
    public func createSector(company: String, name: String, permissions: [String]) async throws -> String {
        guard !name.isEmpty, name.count <= 80 else { throw DirectoryError("sector name must have 1–80 characters") }
        try Self.checkPermissions(permissions)
        let id = Self.newID()
        try await mapping {
            try await database.write { db in
                try db.execute("INSERT INTO sectors (id, company_id, name, created_at) VALUES (?, ?, ?, ?)",
                               .text(id), .text(company), .text(name), .date(Date()))
                for permission in Set(permissions) {
                    try db.execute("INSERT INTO sector_permissions (sector_id, permission) VALUES (?, ?)", .text(id), .text(permission))
                }
            }
        }
        return id
    }

    static func checkPermissions(_ permissions: [String]) throws {
        for permission in permissions where !Permission.isKnown(permission) {
            throw DirectoryError("unknown permission '\(permission)'; known: \(Permission.catalogue.sorted().joined(separator: ", "))")
        }
    }

    /// Adds the user to the company (idempotent), with units, sectors and direct grants.
    public func addMember(user: String, company: String, units: [String] = [], sectors: [String] = [],
                          permissions: [String] = []) async throws {
        try Self.checkPermissions(permissions)
        try await mapping {
            try await database.write { db in
                try db.execute("INSERT INTO memberships (user_id, company_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                               .text(user), .text(company), .date(Date()))
                for unit in units {
                    guard try db.queryOne("SELECT id FROM units WHERE id = ? AND company_id = ?", .text(unit), .text(company)) != nil else {
                        throw DirectoryError("unit does not belong to that company")
                    }
                    try db.execute("INSERT INTO membership_units (user_id, company_id, unit_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                   .text(user), .text(company), .text(unit))
                }
                for sector in sectors {
                    guard try db.queryOne("SELECT id FROM sectors WHERE id = ? AND company_id = ?", .text(sector), .text(company)) != nil else {
                        throw DirectoryError("sector does not belong to that company")
                    }
                    try db.execute("INSERT INTO membership_sectors (user_id, company_id, sector_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                   .text(user), .text(company), .text(sector))
                }
                for permission in Set(permissions) {
                    try db.execute("INSERT INTO membership_permissions (user_id, company_id, permission) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                   .text(user), .text(company), .text(permission))
                }
                try AuthChange.record(.user(user), in: db)
            }
        }
    }

    public func grant(user: String, company: String, permission: String) async throws {
        try Self.checkPermissions([permission])
        try await mapping {
            try await database.write { db in
                guard try db.queryOne("SELECT user_id FROM memberships WHERE user_id = ? AND company_id = ?", .text(user), .text(company)) != nil else {
                    throw DirectoryError("the user is not a member of that company (use add-member first)")
                }
                try db.execute("INSERT INTO membership_permissions (user_id, company_id, permission) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                               .text(user), .text(company), .text(permission))
                try AuthChange.record(.user(user), in: db)
            }
        }
    }

    /// Sets a unit's ring order (users must be members with that unit).
    public func setRingOrder(unit: String, users: [String]) async throws {
        try await mapping {
            try await database.write { db in
                try db.execute("DELETE FROM unit_ring_order WHERE unit_id = ?", .text(unit))
                for (position, user) in users.enumerated() {
                    try db.execute("INSERT INTO unit_ring_order (unit_id, position, user_id) VALUES (?, ?, ?)",
                                   .text(unit), .integer(Int64(position)), .text(user))
                }
            }
        }
    }

    public func setDeliveryRule(unit: String, rule: String) async throws {
        guard ["ask", "ask_then_concierge", "leave_at_concierge"].contains(rule) else {
            throw DirectoryError("delivery rule must be ask, ask_then_concierge or leave_at_concierge")
        }
        try await database.write { db in
            try db.execute("UPDATE units SET delivery_rule = ? WHERE id = ?", .text(rule), .text(unit))
        }
    }

    // MARK: Listing

    public func list(_ kind: String) async throws -> [[String: JSONValue]] {
        let sql: String
        switch kind {
        case "companies": sql = "SELECT id, name, gate_lat, gate_lon, gate_radius_m, timezone FROM companies ORDER BY name"
        case "users": sql = "SELECT id, username, name, phone, master, driver, disabled FROM users ORDER BY username"
        case "units": sql = "SELECT u.id, c.name AS company, u.label, u.delivery_rule, u.ring_mode FROM units u JOIN companies c ON c.id = u.company_id ORDER BY c.name, u.label"
        case "gates": sql = "SELECT g.id, c.name AS company, g.token, g.name FROM gates g JOIN companies c ON c.id = g.company_id ORDER BY c.name, g.token"
        case "sectors": sql = "SELECT s.id, c.name AS company, s.name FROM sectors s JOIN companies c ON c.id = s.company_id ORDER BY c.name, s.name"
        case "memberships": sql = "SELECT u.username, c.name AS company FROM memberships m JOIN users u ON u.id = m.user_id JOIN companies c ON c.id = m.company_id ORDER BY u.username, c.name"
        default: throw DirectoryError("can list companies, users, units, gates, sectors or memberships")
        }
        return try await database.read { db in
            try db.query(sql, []).map { row in
                var object: [String: JSONValue] = [:]
                for (column, value) in zip(row.columns, row.values) {
                    switch value {
                    case .null: object[column] = .null
                    case .integer(let number): object[column] = .number(Double(number))
                    case .real(let number): object[column] = .number(number)
                    case .text(let text): object[column] = .string(text)
                    }
                }
                return object
            }
        }
    }

    /// Turns constraint violations into sentences.
    @discardableResult
    private func mapping<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let error as StorageError {
            switch error {
            case .uniqueViolation: throw DirectoryError("already exists (\(error))")
            case .foreignKeyViolation: throw DirectoryError("refers to something that does not exist")
            case .checkViolation: throw DirectoryError("invalid value (\(error))")
            default: throw error
            }
        }
    }
}
