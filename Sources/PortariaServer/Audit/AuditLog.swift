import Foundation
import PortariaCore

/// One fact of the audit trail: who (user and role), did what, to which object, from
/// which device and address, when. Written in the transaction of the change it records,
/// so a committed decision always has its row (decision 0091).
public struct AuditEntry: Sendable, Equatable {
    /// The company the fact belongs to; nil for facts about a person rather than a company
    /// (logins, devices), which the admins of every company the person belongs to see.
    public var companyID: String?
    public var actorUserID: String?
    /// `resident`, `operator`, `admin` (the caller's profile in the company), `cli` (`portaria
    /// admin` on the database) or `anonymous` (a failed login).
    public var actorRole: String
    /// `visit.resolve`, `visit.answer`, `visit.decline`, `auth.login`, `auth.login_failed`,
    /// `auth.logout`, `account.password_set`, `device.register`, `device.remove`, `admin.<action>`.
    public var action: String
    public var objectType: String?
    public var objectID: String?
    /// The person the fact is about when it is not the actor (a password set by the CLI,
    /// a failed login to an existing account).
    public var subjectUserID: String?
    /// The device the actor used (a device id or installation id), when known.
    public var device: String?
    public var address: String?
    /// Small facts of the action (`{"action":"authorize","via":"app"}`), never secrets.
    public var detail: [String: JSONValue]
    public var at: Date

    public init(companyID: String? = nil, actorUserID: String?, actorRole: String, action: String,
                objectType: String? = nil, objectID: String? = nil, subjectUserID: String? = nil,
                device: String? = nil, address: String? = nil, detail: [String: JSONValue] = [:], at: Date) {
        (self.companyID, self.actorUserID, self.actorRole, self.action) = (companyID, actorUserID, actorRole, action)
        (self.objectType, self.objectID, self.subjectUserID) = (objectType, objectID, subjectUserID)
        (self.device, self.address, self.detail, self.at) = (device, address, detail, at)
    }

    /// The entry as the API and `portaria admin audit --json` show it.
    public func json(id: Int64) -> JSONValue {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return .object([
            "id": .string(String(id)), "at": .string(Timestamp.format(at)), "company_id": text(companyID),
            "actor_user_id": text(actorUserID), "actor_role": .string(actorRole), "action": .string(action),
            "object_type": text(objectType), "object_id": text(objectID), "subject_user_id": text(subjectUserID),
            "device": text(device), "address": text(address), "detail": .object(detail),
        ])
    }
}

/// The audit trail's SQL: append, list, prune, pseudonymize. Rows are never updated
/// except by `pseudonymize` (LGPD erasure), never deleted except by `prune` (retention).
public enum AuditLog {
    public struct Record: Sendable {
        public var id: Int64
        public var entry: AuditEntry
        public var json: JSONValue { entry.json(id: id) }
    }

    public static func append(_ db: any SQLConnection, _ entry: AuditEntry) throws {
        func text(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
        try db.execute("""
            INSERT INTO audit_log (at, company_id, actor_user_id, actor_role, action, object_type, object_id,
                                   subject_user_id, device, address, detail)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.date(entry.at), text(entry.companyID), text(entry.actorUserID), .text(entry.actorRole), .text(entry.action),
                  text(entry.objectType), text(entry.objectID), text(entry.subjectUserID),
                  text(entry.device.map { String($0.prefix(128)) }), text(entry.address.map { String($0.prefix(64)) }),
                  .text(JSONValue.object(entry.detail).jsonText)])
    }

    /// A company's trail, newest first, `limit` rows after the cursor (an id), within
    /// [since, until). A company's trail is its own rows plus the person-level rows
    /// (logins, devices) of its members.
    public static func list(_ db: any SQLConnection, companyID: String?, since: Date?, until: Date?,
                            before cursor: Int64?, limit: Int) throws -> [Record] {
        var sql = "SELECT * FROM audit_log WHERE 1 = 1"
        var parameters: [SQLValue] = []
        if let companyID {
            sql += """
                 AND (company_id = ? OR (company_id IS NULL AND (
                    actor_user_id IN (SELECT user_id FROM memberships WHERE company_id = ?)
                    OR subject_user_id IN (SELECT user_id FROM memberships WHERE company_id = ?))))
                """
            parameters += [.text(companyID), .text(companyID), .text(companyID)]
        }
        if let since { sql += " AND at >= ?"; parameters.append(.date(since)) }
        if let until { sql += " AND at < ?"; parameters.append(.date(until)) }
        if let cursor { sql += " AND id < ?"; parameters.append(.integer(cursor)) }
        sql += " ORDER BY id DESC LIMIT ?"
        parameters.append(.integer(Int64(limit)))
        return try db.query(sql, parameters).map(record)
    }

    /// Every row where the person is the actor or the subject (LGPD export).
    public static func about(_ db: any SQLConnection, userID: String) throws -> [Record] {
        try db.query("SELECT * FROM audit_log WHERE actor_user_id = ? OR subject_user_id = ? ORDER BY id",
                     [.text(userID), .text(userID)]).map(record)
    }

    /// LGPD erasure: the facts stay, the person goes. Their id becomes `pseudonym` (the
    /// same for all their rows, so the trail still tells one actor from another) as actor,
    /// subject and inside details (a ring order), and the device and address of the rows
    /// they acted in are cleared. Returns the changes made (a row may count more than once).
    @discardableResult
    public static func pseudonymize(_ db: any SQLConnection, userID: String, pseudonym: String) throws -> Int {
        let acted = try db.execute("UPDATE audit_log SET actor_user_id = ?, device = NULL, address = NULL WHERE actor_user_id = ?",
                                   [.text(pseudonym), .text(userID)])
        let about = try db.execute("UPDATE audit_log SET subject_user_id = ? WHERE subject_user_id = ?",
                                   [.text(pseudonym), .text(userID)])
        // Details that list people (a ring order, a membership change) name them by id.
        // Ids are UUIDs (hex and dashes): nothing in one is a LIKE wildcard.
        var named = 0
        if !userID.isEmpty, userID.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || $0 == "-" }) {
            named = try db.execute("UPDATE audit_log SET detail = REPLACE(detail, ?, ?) WHERE detail LIKE ?",
                                   [.text(userID), .text(pseudonym), .text("%" + userID + "%")])
        }
        return acted + about + named
    }

    /// Deletes rows older than `before`, at most `batch` (the retention sweep loops).
    public static func prune(_ db: any SQLConnection, before: Date, batch: Int) throws -> Int {
        try db.execute("DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ? ORDER BY at LIMIT ?)",
                       [.date(before), .integer(Int64(batch))])
    }

    static func record(_ row: SQLRow) throws -> Record {
        let detail: [String: JSONValue]
        if let text = try row.string("detail"), case .object(let object)? = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(text.utf8)) {
            detail = object
        } else {
            detail = [:]
        }
        return Record(id: try row.required.int("id"), entry: AuditEntry(
            companyID: try row.string("company_id"), actorUserID: try row.string("actor_user_id"),
            actorRole: try row.required.string("actor_role"), action: try row.required.string("action"),
            objectType: try row.string("object_type"), objectID: try row.string("object_id"),
            subjectUserID: try row.string("subject_user_id"), device: try row.string("device"),
            address: try row.string("address"), detail: detail, at: try row.required.date("at")))
    }

    /// The role a caller acts in, as the trail records it.
    static func role(_ caller: Caller) -> String { Profile.decide(permissions: caller.permissions).rawValue }

    /// An entry for an authenticated caller's action in its company.
    static func entry(_ caller: Caller, _ action: String, objectType: String?, objectID: String?,
                      device: String? = nil, detail: [String: JSONValue] = [:], at: Date) -> AuditEntry {
        AuditEntry(companyID: caller.companyID, actorUserID: caller.user.id, actorRole: role(caller), action: action,
                   objectType: objectType, objectID: objectID, device: device, address: caller.address, detail: detail, at: at)
    }
}
