import Foundation
import PortariaCore

/// A user's standing in one company: what `/v1/me` shows and what every endpoint checks.
public struct CompanyMembership: Sendable, Equatable {
    public var company: CompanySummary
    public var directPermissions: [String]
    public var sectors: [SectorGrant]
    public var units: [UnitSummary]

    public var effectivePermissions: Set<String> {
        Permissions.effective(user: directPermissions, sectors: sectors.map(\.permissions))
    }
}

/// A user row as authentication needs it.
public struct UserRecord: Sendable, Equatable {
    public var id: String
    public var username: String
    public var name: String
    public var phone: String?
    public var passwordHash: String?
    public var master: Bool
    public var driver: Bool
    public var disabled: Bool

    init(_ row: SQLRow) throws {
        let required = row.required
        id = try required.string("id")
        username = try required.string("username")
        name = try required.string("name")
        phone = try row.string("phone")
        passwordHash = try row.string("password_hash")
        master = try required.bool("master")
        driver = try required.bool("driver")
        disabled = try required.bool("disabled")
    }
}

/// Users, companies and memberships, on either database.
public struct AccountStore: Sendable {
    public let database: any SQLDatabase

    public init(database: any SQLDatabase) { self.database = database }

    static let userColumnNames = ["id", "username", "name", "phone", "password_hash", "master", "driver", "disabled"]
    static let userColumns = userColumnNames.joined(separator: ", ")
    /// The same columns of a joined `users` table named `alias`.
    static func userColumns(of alias: String) -> String { userColumnNames.map { alias + "." + $0 }.joined(separator: ", ") }

    public func user(username: String) async throws -> UserRecord? {
        try await database.read { db in
            try db.queryOne("SELECT \(Self.userColumns) FROM users WHERE username = ?", .text(username)).map(UserRecord.init)
        }
    }

    public func user(id: String) async throws -> UserRecord? {
        try await database.read { db in
            try db.queryOne("SELECT \(Self.userColumns) FROM users WHERE id = ?", .text(id)).map(UserRecord.init)
        }
    }

    public func user(phone: String) async throws -> UserRecord? {
        try await database.read { db in
            try db.queryOne("SELECT \(Self.userColumns) FROM users WHERE phone = ?", .text(phone)).map(UserRecord.init)
        }
    }

    /// The enabled residents of a unit, by name.
    static func residents(_ db: any SQLConnection, unitID: UnitID) throws -> [PersonRef] {
        try db.query("""
            SELECT DISTINCT us.id, us.name FROM membership_units mu JOIN users us ON us.id = mu.user_id
            WHERE mu.unit_id = ? AND us.disabled = 0 ORDER BY us.name, us.id
            """, .id(unitID)).map { PersonRef(id: try $0.required.string("id"), name: try $0.required.string("name")) }
    }

    /// People by id with their display names; a user deleted since is named "".
    static func people(_ db: any SQLConnection, ids: [String]) throws -> [PersonRef] {
        guard !ids.isEmpty else { return [] }
        var names: [String: String] = [:]
        for row in try db.query("SELECT id, name FROM users WHERE id IN (" + ids.map { _ in "?" }.joined(separator: ", ") + ")",
                                ids.map(SQLValue.text)) {
            names[try row.required.string("id")] = try row.string("name")
        }
        return ids.map { PersonRef(id: $0, name: names[$0] ?? "") }
    }

    /// Every company of the user with direct and sector grants: the login body's `companies`.
    public func companyGrants(userID: String) async throws -> [CompanyGrant] {
        try await database.read { db in try Self.memberships(db, userID: userID, companyID: nil) }
            .map { CompanyGrant(id: $0.company.id, name: $0.company.name, permissions: $0.directPermissions, sectors: $0.sectors) }
    }

    /// The user's membership in one company, or nil when they don't belong to it.
    public func membership(userID: String, companyID: String) async throws -> CompanyMembership? {
        try await database.read { db in try Self.memberships(db, userID: userID, companyID: companyID).first }
    }

    /// Ids of the companies the user belongs to.
    public func companyIDs(userID: String) async throws -> [String] {
        try await database.read { db in try Self.companyIDs(db, userID: userID) }
    }

    static func companyIDs(_ db: any SQLConnection, userID: String) throws -> [String] {
        try db.query("SELECT company_id FROM memberships WHERE user_id = ? ORDER BY company_id", .text(userID))
            .compactMap { try $0.string("company_id") }
    }

    static func memberships(_ db: any SQLConnection, userID: String, companyID: String?) throws -> [CompanyMembership] {
        var sql = """
            SELECT c.id, c.name, c.timezone FROM memberships m JOIN companies c ON c.id = m.company_id
            WHERE m.user_id = ?
            """
        var parameters: [SQLValue] = [.text(userID)]
        if let companyID {
            sql += " AND m.company_id = ?"
            parameters.append(.text(companyID))
        }
        sql += " ORDER BY c.name, c.id"
        return try db.query(sql, parameters).map { row in
            let company = CompanySummary(id: try row.required.string("id"), name: try row.required.string("name"), timeZone: try row.string("timezone"))
            let direct = try db.query("""
                SELECT permission FROM membership_permissions WHERE user_id = ? AND company_id = ? ORDER BY permission
                """, .text(userID), .text(company.id)).compactMap { try $0.string("permission") }
            let sectorRows = try db.query("""
                SELECT s.id, s.name FROM membership_sectors ms JOIN sectors s ON s.id = ms.sector_id
                WHERE ms.user_id = ? AND ms.company_id = ? ORDER BY s.name
                """, .text(userID), .text(company.id))
            let sectors = try sectorRows.map { sector in
                let id = try sector.required.string("id")
                let permissions = try db.query("SELECT permission FROM sector_permissions WHERE sector_id = ? ORDER BY permission",
                                               .text(id)).compactMap { try $0.string("permission") }
                return SectorGrant(id: id, name: try sector.required.string("name"), permissions: permissions)
            }
            let units = try db.query("""
                SELECT u.id, u.label FROM membership_units mu JOIN units u ON u.id = mu.unit_id
                WHERE mu.user_id = ? AND mu.company_id = ? ORDER BY u.label
                """, .text(userID), .text(company.id)).map {
                UnitSummary(id: try $0.required.string("id"), label: try $0.required.string("label"))
            }
            return CompanyMembership(company: company, directPermissions: direct, sectors: sectors, units: units)
        }
    }
}
