import Foundation
import PortariaCore

/// A device row as the server uses it: what its owner sees, plus the tokens and the
/// delivery record (never sent to clients as they are). `record.platform` and the other
/// members of the view read through to it.
@dynamicMemberLookup
public struct DeviceRecord: Sendable, Equatable {
    /// `GET /v1/devices`' view of it.
    public var view: DeviceView
    public var userID: String
    public var pushToken: String?
    public var voipToken: String?
    /// As stored: nil on Android and web rows (`register` writes `missing` for an iPhone
    /// without one); the view shows it for iOS only, `missing` where an older row has none.
    public var storedVoIPTokenStatus: String?
    public var lastSuccessAt: Date?
    public var consecutiveFailures: Int
    public var lastError: String?
    public var lastErrorAt: Date?

    public subscript<Value>(dynamicMember member: KeyPath<DeviceView, Value>) -> Value { view[keyPath: member] }

    /// Required reads where the column is `NOT NULL` (Schema.swift, devices).
    init(_ row: SQLRow) throws {
        let required = row.required
        let platform = try required.string("platform")
        let capabilities = DeviceCapabilities(notificationsEnabled: try row.bool("notifications_enabled"),
                                              fullScreenIntentAllowed: try row.bool("full_screen_intent_allowed"),
                                              ignoringBatteryOptimizations: try row.bool("ignoring_battery_optimizations"),
                                              manufacturer: try row.string("manufacturer"), osVersion: try row.string("os_version"))
        storedVoIPTokenStatus = try row.string("voip_token_status")
        // Only an iPhone has a VoIP token to report (without one it cannot ring with the app closed).
        let voipTokenStatus = platform == "ios" ? (storedVoIPTokenStatus ?? "missing") : nil
        view = DeviceView(id: try required.string("id"), installationID: try required.string("installation_id"), platform: platform,
                          pushTokenStatus: try required.string("push_token_status"), voipTokenStatus: voipTokenStatus,
                          appVersion: try row.string("app_version"), deviceName: try row.string("device_name"),
                          locale: try row.string("locale"), capabilities: capabilities,
                          createdAt: try required.date("created_at"), updatedAt: try required.date("updated_at"),
                          tokenRefreshedAt: try required.date("token_refreshed_at"),
                          lastPushAt: try row.date("last_push_at"), lastAckAt: try row.date("last_ack_at"))
        userID = try required.string("user_id")
        pushToken = try row.string("push_token")
        voipToken = try row.string("voip_token")
        lastSuccessAt = try row.date("last_success_at")
        consecutiveFailures = Int(try required.int("consecutive_failures"))
        lastError = try row.string("last_error")
        lastErrorAt = try row.date("last_error_at")
    }
}

/// The device registry: one row per (user, app installation).
public struct DeviceStore: Sendable {
    public let database: any SQLDatabase
    public var now: @Sendable () -> Date = { Date() }
    /// Devices one user may register (decision 0013).
    public var maxDevicesPerUser = 10

    public init(database: any SQLDatabase) { self.database = database }

    /// Registers or renews. Returns the device and whether it was created.
    ///
    /// - The (user, installation id) pair is the key: the same install re-registering (new
    ///   token, new capabilities) updates its row. The installation id is the app's own
    ///   choice, so another user sending the same id gets a row of their own and never
    ///   takes this one over.
    /// - A token is unique to one install: when it shows up on another row (an app
    ///   reinstalled, a phone handed to someone else) it is taken off the old row, which
    ///   must never ring for the wrong person.
    /// - A user has at most `maxDevicesPerUser` rows: a new one replaces the user's oldest
    ///   device whose push token is no longer active (moved, unregistered); with none, 409
    ///   `DEVICE_LIMIT_REACHED`.
    /// `audit`: the trail's entry for a new installation (its object id filled in here),
    /// written in the registering transaction; renewals are not audited.
    public func register(userID: String, _ registration: DeviceRegistration,
                         audit: AuditEntry? = nil) async throws -> (DeviceRecord, created: Bool) {
        let at = now()
        let registration = registration
        let cap = maxDevicesPerUser
        let body: @Sendable (any SQLConnection) throws -> (DeviceRecord, Bool) = { db in
            let existing = try db.queryOne("SELECT * FROM devices WHERE user_id = ? AND installation_id = ?\(db.dialect.forUpdate)",
                                           .text(userID), .text(registration.installationID)).map(DeviceRecord.init)
            if existing == nil {
                let count = try db.queryOne("SELECT COUNT(*) AS n FROM devices WHERE user_id = ?", .text(userID))?.int("n") ?? 0
                if count >= Int64(cap) {
                    guard let stale = try db.queryOne("""
                        SELECT id FROM devices WHERE user_id = ? AND push_token_status <> 'active'
                        ORDER BY updated_at, id LIMIT 1
                        """, .text(userID))?.string("id") else {
                        throw DeviceError.limitReached(cap)
                    }
                    try db.execute("DELETE FROM devices WHERE id = ?", .text(stale))
                }
            }
            let id = existing?.id ?? UUID().uuidString.lowercased()
            // An iOS renewal that omits `voip_token` (an older app renewing its alert token
            // alone) keeps the VoIP token the installation has, with its status: treating
            // the omission as "none" silently stopped the iPhone ringing (decision 0014).
            // A dead VoIP token is still retired by APNs' answer, not by the app.
            var registration = registration
            var keptVoIPStatus: String?
            if registration.platform == "ios", registration.voipToken == nil, let existing, existing.platform == "ios",
               let kept = existing.voipToken {
                registration.voipToken = kept
                keptVoIPStatus = existing.storedVoIPTokenStatus
            }
            // Take the tokens off any other row first (the unique indexes demand it).
            try db.execute("UPDATE devices SET push_token = NULL, push_token_status = 'moved', updated_at = ? WHERE push_token = ? AND id <> ?",
                           .date(at), .text(registration.pushToken), .text(id))
            if let voip = registration.voipToken {
                try db.execute("UPDATE devices SET voip_token = NULL, voip_token_status = 'moved', updated_at = ? WHERE voip_token = ? AND id <> ?",
                               .date(at), .text(voip), .text(id))
            }
            let caps = registration.capabilities ?? DeviceCapabilities()
            func optionalBool(_ value: Bool?) -> SQLValue { value.map(SQLValue.bool) ?? .null }
            let voipStatus: SQLValue = keptVoIPStatus.map(SQLValue.text)
                ?? (registration.voipToken != nil ? "active" : (registration.platform == "ios" ? "missing" : .null))
            if let existing {
                // A new token starts with a clean record; the same token keeps its history.
                let tokenChanged = existing.pushToken != registration.pushToken || existing.voipToken != registration.voipToken
                try db.execute("""
                    UPDATE devices SET user_id = ?, platform = ?, push_token = ?, push_token_status = 'active',
                        voip_token = ?, voip_token_status = ?, app_version = ?, device_name = ?, locale = ?,
                        notifications_enabled = ?, full_screen_intent_allowed = ?, ignoring_battery_optimizations = ?,
                        manufacturer = ?, os_version = ?, updated_at = ?, token_refreshed_at = ?,
                        consecutive_failures = CASE WHEN ? = 1 THEN 0 ELSE consecutive_failures END
                    WHERE id = ?
                    """, [.text(userID), .text(registration.platform), .text(registration.pushToken),
                          .optional(registration.voipToken), voipStatus, .optional(registration.appVersion),
                          .optional(registration.deviceName), .optional(registration.locale),
                          optionalBool(caps.notificationsEnabled), optionalBool(caps.fullScreenIntentAllowed),
                          optionalBool(caps.ignoringBatteryOptimizations), .optional(caps.manufacturer), .optional(caps.osVersion),
                          .date(at), .date(at), .bool(tokenChanged), .text(id)])
            } else {
                try db.execute("""
                    INSERT INTO devices (id, user_id, installation_id, platform, push_token, push_token_status, voip_token,
                        voip_token_status, app_version, device_name, locale, notifications_enabled, full_screen_intent_allowed,
                        ignoring_battery_optimizations, manufacturer, os_version, created_at, updated_at, token_refreshed_at)
                    VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.text(id), .text(userID), .text(registration.installationID), .text(registration.platform),
                          .text(registration.pushToken), .optional(registration.voipToken), voipStatus,
                          .optional(registration.appVersion), .optional(registration.deviceName), .optional(registration.locale),
                          optionalBool(caps.notificationsEnabled), optionalBool(caps.fullScreenIntentAllowed),
                          optionalBool(caps.ignoringBatteryOptimizations), .optional(caps.manufacturer), .optional(caps.osVersion),
                          .date(at), .date(at), .date(at)])
            }
            let row = try db.queryOne("SELECT * FROM devices WHERE id = ?", .text(id))
            guard let row else { throw StorageError.failed("device \(id) vanished") }
            if existing == nil, var audit {
                audit.objectID = id
                audit.device = registration.installationID
                try AuditLog.append(db, audit)
            }
            return (try DeviceRecord(row), existing == nil)
        }
        do {
            return try await database.write(body)
        } catch let error as StorageError {
            // Two first registrations of one install racing on PostgreSQL: the loser retries as an update.
            switch error {
            case .uniqueViolation, .conflict: return try await database.write(body)
            default: throw error
            }
        }
    }

    public func devices(userID: String) async throws -> [DeviceRecord] {
        try await database.read { db in
            try db.query("SELECT * FROM devices WHERE user_id = ? ORDER BY created_at, id", .text(userID)).map(DeviceRecord.init)
        }
    }

    public func device(id: String) async throws -> DeviceRecord? {
        try await database.read { db in try db.queryOne("SELECT * FROM devices WHERE id = ?", .text(id)).map(DeviceRecord.init) }
    }

    /// Deletes the caller's own device; returns false when there is none of theirs with that id.
    public func delete(id: DeviceID, userID: String, audit: AuditEntry? = nil) async throws -> Bool {
        try await database.write { db in
            let installation = try db.queryOne("SELECT installation_id FROM devices WHERE id = ? AND user_id = ?",
                                               .id(id), .text(userID))?.string("installation_id")
            guard try db.execute("DELETE FROM devices WHERE id = ? AND user_id = ?", .id(id), .text(userID)) == 1 else { return false }
            if var audit {
                audit.device = installation
                try AuditLog.append(db, audit)
            }
            return true
        }
    }
}

/// Push health, written by the push worker in the transaction that records an attempt.
extension DeviceStore {
    /// A provider accepted a push to the device.
    static func pushAccepted(_ db: any SQLConnection, deviceID: String, at: Date) throws {
        try db.execute("UPDATE devices SET last_push_at = ?, last_success_at = ?, consecutive_failures = 0 WHERE id = ?",
                       .date(at), .date(at), .text(deviceID))
    }

    /// A push to the device failed (or will be retried).
    static func pushFailed(_ db: any SQLConnection, deviceID: String, error: String?, at: Date) throws {
        try db.execute("UPDATE devices SET consecutive_failures = consecutive_failures + 1, last_error = ?, last_error_at = ?, last_push_at = ? WHERE id = ?",
                       .optional(error), .date(at), .date(at), .text(deviceID))
    }

    /// A provider refused the token: deactivated — only if the device still has it (the
    /// app may have registered a fresh one while the push was in flight).
    static func deactivate(_ db: any SQLConnection, deviceID: String, token: String, kind: OutgoingPush.TokenKind) throws {
        let column = kind == .voip ? "voip_token" : "push_token"
        try db.execute("UPDATE devices SET \(column)_status = 'unregistered' WHERE id = ? AND \(column) = ?",
                       .text(deviceID), .text(token))
    }
}
