import Foundation
import PortariaCore

/// Delivery receipts and the push-health view built on them. A provider's 200 only says
/// the provider took the push; the app's receipt says the phone got it.
public struct PushReceipts: Sendable {
    public let database: any SQLDatabase
    public var now: @Sendable () -> Date = { Date() }
    /// A push accepted this long ago without a receipt counts against its device.
    public var ackGrace: TimeInterval = 120
    /// Manufacturers whose battery management is known to kill push delivery.
    public static let aggressiveManufacturers: Set<String> = ["xiaomi", "redmi", "poco", "samsung", "huawei", "honor",
                                                              "oppo", "vivo", "realme", "oneplus", "meizu", "asus", "motorola"]
    public static let staleTokenDays = 30

    public init(database: any SQLDatabase) { self.database = database }

    /// Records the receipt of `pushID` by its user; idempotent (the first time is kept).
    /// Nil when the push does not exist or is someone else's.
    public func acknowledge(pushID: String, userID: String) async throws -> PushAck? {
        let at = now()
        return try await database.write { db in
            guard let job = try db.queryOne("SELECT device_id, acked_at, visit_id, kind FROM push_jobs WHERE id = ? AND user_id = ?\(db.dialect.forUpdate)",
                                            .text(pushID), .text(userID)) else { return nil }
            if let acked = try job.date("acked_at") { return PushAck(pushID: pushID, ackedAt: acked) }
            try db.execute("UPDATE push_jobs SET acked_at = ? WHERE id = ?", .date(at), .text(pushID))
            if let visitID = try job.string("visit_id") {
                // Receipts, not provider 200s, measure delivery: they join the timeline.
                try VisitStore.insertAttempt(db, visitID: visitID, kind: .pushReceipt, user: PersonRef(id: userID, name: ""),
                                             deviceID: try job.string("device_id"), channel: "push",
                                             detail: "receipt for \(try job.string("kind") ?? "push") \(pushID)", at: at)
            }
            if let device = try job.string("device_id") {
                try db.execute("""
                    UPDATE devices SET last_ack_at = ?, consecutive_failures = 0
                    WHERE id = ? AND (last_ack_at IS NULL OR last_ack_at < ?)
                    """, .date(at), .text(device), .date(at))
            }
            return PushAck(pushID: pushID, ackedAt: at)
        }
    }

    /// Every device of the users of `companyID`, failing first.
    public func health(companyID: String) async throws -> PushHealthReport {
        let at = now()
        let graceLimit = at.addingTimeInterval(-ackGrace)
        let (devices, unacked) = try await database.read { db -> ([SQLRow], [String: Int]) in
            let devices = try db.query("""
                SELECT d.*, u.name AS user_name, u.username AS user_username FROM devices d JOIN users u ON u.id = d.user_id
                WHERE d.user_id IN (SELECT user_id FROM memberships WHERE company_id = ?)
                ORDER BY u.name, d.created_at
                """, .text(companyID))
            // Background pushes (cancellations) are excluded: iOS may legitimately hold them back.
            let counts = try db.query("""
                SELECT j.device_id, COUNT(*) AS n FROM push_jobs j JOIN devices d ON d.id = j.device_id
                WHERE j.status = 'sent' AND j.acked_at IS NULL AND j.sent_at <= ? AND j.kind <> 'ring_cancelled'
                  AND j.sent_at > COALESCE(d.last_ack_at, 0)
                  AND d.user_id IN (SELECT user_id FROM memberships WHERE company_id = ?)
                GROUP BY j.device_id
                """, .date(graceLimit), .text(companyID))
            var unacked: [String: Int] = [:]
            for row in counts { if let id = try row.string("device_id") { unacked[id] = Int(try row.int("n") ?? 0) } }
            return (devices, unacked)
        }
        var entries: [PushHealthDevice] = []
        for row in devices {
            let device = try DeviceRecord(row)
            let unackedCount = unacked[device.id] ?? 0
            let flags = Self.riskFlags(device, now: at)
            let tokenDead: Bool
            switch device.platform {
            case "ios": tokenDead = device.pushTokenStatus != "active" || device.voipTokenStatus != "active"
            default: tokenDead = device.pushTokenStatus != "active"
            }
            let failures = device.consecutiveFailures + unackedCount
            let status = tokenDead || failures > 0 ? "failing" : (device.lastAckAt != nil ? "healthy" : "unverified")
            entries.append(PushHealthDevice(
                deviceID: device.id,
                user: .init(id: device.userID, name: try row.string("user_name") ?? "", username: try row.string("user_username") ?? ""),
                platform: device.platform, deviceName: device.deviceName, manufacturer: device.capabilities.manufacturer,
                osVersion: device.capabilities.osVersion, appVersion: device.appVersion, status: status,
                consecutiveFailures: failures, unackedPushes: unackedCount, lastProviderError: device.lastError,
                lastProviderErrorAt: device.lastErrorAt, lastPushAt: device.lastPushAt, lastAckAt: device.lastAckAt,
                tokenAgeDays: max(0, Int(at.timeIntervalSince(device.tokenRefreshedAt) / 86_400)),
                pushTokenStatus: device.pushTokenStatus,
                voipTokenStatus: device.platform == "ios" ? (device.voipTokenStatus ?? "missing") : nil,
                riskFlags: flags))
        }
        let rank = ["failing": 0, "unverified": 1, "healthy": 2]
        entries.sort { (rank[$0.status] ?? 3, -$0.consecutiveFailures, $0.user.name) < (rank[$1.status] ?? 3, -$1.consecutiveFailures, $1.user.name) }
        return PushHealthReport(generatedAt: at,
                                summary: .init(healthy: entries.count { $0.status == "healthy" },
                                               failing: entries.count { $0.status == "failing" },
                                               unverified: entries.count { $0.status == "unverified" }),
                                devices: entries)
    }

    /// What the app reported that predicts a missed ring.
    static func riskFlags(_ device: DeviceRecord, now: Date) -> [String] {
        var flags: [String] = []
        let caps = device.capabilities
        if caps.notificationsEnabled == false { flags.append("notifications_disabled") }
        if device.platform == "android" {
            if caps.fullScreenIntentAllowed == false { flags.append("full_screen_intent_revoked") }
            if caps.ignoringBatteryOptimizations == false,
               let maker = caps.manufacturer?.lowercased().trimmingCharacters(in: .whitespaces),
               aggressiveManufacturers.contains(where: { maker.hasPrefix($0) }) {
                flags.append("battery_optimization")
            }
        }
        if device.pushTokenStatus == "unregistered" || device.voipTokenStatus == "unregistered" { flags.append("token_unregistered") }
        if device.platform == "ios" && device.voipTokenStatus != "active" && device.voipTokenStatus != "unregistered" {
            flags.append("voip_token_missing")
        }
        if now.timeIntervalSince(device.tokenRefreshedAt) > Double(staleTokenDays) * 86_400 { flags.append("token_stale") }
        return flags
    }
}
