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

    /// How long a payload's `ack_token` acknowledges its push, counted from the job's
    /// creation: an extension woken after a week offline is past any use of the receipt
    /// (decision 0016).
    public var capabilityLifetime: TimeInterval = 7 * 86_400
    /// Refused capability acks one address may make per `refusalWindow`; past that every
    /// capability ack from it is 429 before any lookup (the gate-token rule, 0013).
    public var refusalLimit = 20
    public var refusalWindow: TimeInterval = 600
    /// An `ack_token` body is `{"ack_token":"<43 chars>"}`: anything much longer is not one.
    public static let maxCapabilityBodyBytes = 1024
    /// Hashes kept per job: one per attempt (8 at most) plus lease reclaims.
    static let maxAckHashes = 16

    public init(database: any SQLDatabase) { self.database = database }

    /// The job's hash list with `hash` appended, oldest dropped past `maxAckHashes`.
    static func appendingAckHash(_ hash: String, to stored: String?) -> String {
        let kept = (stored ?? "").split(separator: " ").map(String.init) + [hash]
        return kept.suffix(maxAckHashes).joined(separator: " ")
    }

    /// Whether `token` is well formed: 32 bytes in base64url without padding.
    public static func isWellFormedAckToken(_ token: String) -> Bool {
        token.utf8.count == PushAckRequest.tokenLength && Base64URL.decode(token)?.count == 32
    }

    /// Why a capability acknowledgement was refused.
    public enum CapabilityRefusal: Error, Equatable {
        /// Unknown push, wrong token, another push's token, or an expired capability: one
        /// answer for all (no oracle).
        case notFound
        /// This address was refused too often; seconds until it may try again.
        case rateLimited(retryAfter: Int)
    }

    /// Records the receipt of `pushID` proven by the `ackToken` its payload carried, with no
    /// session (a Notification Service Extension, an Android receiver woken hours later).
    /// The token's hash is compared in constant time with every hash the job holds; an
    /// unknown push, a wrong token, another push's token and a capability older than
    /// `capabilityLifetime` are the same refusal. Refusals count against `address`.
    public func acknowledge(pushID: String, ackToken: String, address: String) async throws -> Result<PushAck, CapabilityRefusal> {
        let at = now()
        let limiter = RateLimiter(database: database)
        let bucket = "push-ack-refused:" + address
        let seen = try await limiter.peek(bucket, window: refusalWindow, now: at)
        if seen.count >= refusalLimit { return .failure(.rateLimited(retryAfter: max(1, seen.retryAfter))) }
        // Hashed before the lookup, whatever the lookup finds, so an unknown push costs
        // the same work as a known one with a wrong token.
        let presented = Crypto.sha256(Array(Crypto.tokenHash(ackToken).utf8))
        let lifetime = capabilityLifetime
        let ack = try await database.write { db -> PushAck? in
            guard pushID.utf8.count <= 64,
                  let job = try db.queryOne("SELECT user_id, created_at, ack_token_hashes FROM push_jobs WHERE id = ?\(db.dialect.forUpdate)",
                                            .text(pushID)),
                  let userID = try job.string("user_id"), let created = try job.date("created_at") else { return nil }
            var matches = false
            for stored in (try job.string("ack_token_hashes") ?? "").split(separator: " ") {
                // Fixed-length digests of both sides, so the comparison takes the same time
                // whatever the stored text looks like.
                matches = Crypto.constantTimeEquals(Crypto.sha256(Array(stored.utf8)), presented) || matches
            }
            guard matches, at < created.addingTimeInterval(lifetime) else { return nil }
            return try Self.record(db, pushID: pushID, userID: userID, at: at, via: "ack_token")
        }
        if let ack { return .success(ack) }
        let counted = try await limiter.hit(bucket, window: refusalWindow, now: at)
        if counted.count > refusalLimit { return .failure(.rateLimited(retryAfter: max(1, counted.retryAfter))) }
        return .failure(.notFound)
    }

    /// Records the receipt of `pushID` by its user; idempotent (the first time is kept).
    /// Nil when the push does not exist or is someone else's.
    public func acknowledge(pushID: String, userID: String) async throws -> PushAck? {
        let at = now()
        return try await database.write { db in try Self.record(db, pushID: pushID, userID: userID, at: at, via: "bearer") }
    }

    /// Marks the job received (the first time only), adds the receipt to the visit's
    /// timeline and the device's health. Both ways of acknowledging end here, so push
    /// health counts them alike.
    static func record(_ db: any SQLConnection, pushID: String, userID: String, at clock: Date, via: String) throws -> PushAck? {
        // The first answer and every repeat (read back from the row) give the same acked_at.
        let at = SQLValue.storedPrecision(clock)
        guard let job = try db.queryOne("SELECT device_id, acked_at, visit_id, kind FROM push_jobs WHERE id = ? AND user_id = ?\(db.dialect.forUpdate)",
                                        .text(pushID), .text(userID)) else { return nil }
        if let acked = try job.date("acked_at") { return PushAck(pushID: pushID, ackedAt: acked) }
        try PushOutbox.markAcked(db, pushID: pushID, at: at)
        if let visitID = try job.string("visit_id").flatMap(VisitID.init(rawValue:)) {
            // Receipts, not provider 200s, measure delivery: they join the timeline.
            try VisitStore.insertAttempt(db, visitID: visitID, kind: .pushReceipt, user: PersonRef(id: userID, name: ""),
                                         deviceID: try job.string("device_id"), channel: "push",
                                         detail: "receipt for \(try job.string("kind") ?? "push") \(pushID) (\(via))", at: at)
        }
        if let device = try job.string("device_id") {
            try db.execute("""
                UPDATE devices SET last_ack_at = ?, consecutive_failures = 0
                WHERE id = ? AND (last_ack_at IS NULL OR last_ack_at < ?)
                """, .date(at), .text(device), .date(at))
        }
        return PushAck(pushID: pushID, ackedAt: at)
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
                voipTokenStatus: device.voipTokenStatus,
                riskFlags: flags))
        }
        let rank = ["failing": 0, "unverified": 1, "healthy": 2]
        entries.sort { (rank[$0.status] ?? 3, -$0.consecutiveFailures, $0.user.name) < (rank[$1.status] ?? 3, -$1.consecutiveFailures, $1.user.name) }
        return PushHealthReport(generatedAt: at, devices: entries)
    }

    /// What the app reported that predicts a missed ring.
    static func riskFlags(_ device: DeviceRecord, now: Date) -> [String] {
        var flags: [String] = []
        let caps = device.capabilities
        if caps.notificationsEnabled == false { flags.append("notifications_disabled") }
        // The web app on an Android phone rings through the browser, which the maker's power
        // saver stops just the same (it reports `os_version` "Android …").
        let androidBrowser = device.platform == "web" && (caps.osVersion ?? "").lowercased().hasPrefix("android")
        if device.platform == "android" || androidBrowser {
            if device.platform == "android", caps.fullScreenIntentAllowed == false { flags.append("full_screen_intent_revoked") }
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
