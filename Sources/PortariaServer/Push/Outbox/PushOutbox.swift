import Foundation
import PortariaCore

/// What an event asks to push: to whom, why, with what, and until when it matters.
public struct PushRequest: Sendable, Equatable {
    public var userIDs: [String]
    public var kind: PushKind
    public var message: PushMessage
    /// Never delivered after this (a ring's deadline; a delivery's answer window).
    public var deadline: Date
    /// Not sent before this (the next resident of a sequential ring order).
    public var notBefore: Date?
    /// App installations to leave out (the device that answered keeps its call).
    public var excludedInstallations: Set<String> = []

    public init(userIDs: [String], kind: PushKind, message: PushMessage, deadline: Date, notBefore: Date? = nil) {
        self.userIDs = userIDs
        self.kind = kind
        self.message = message
        self.deadline = deadline
        self.notBefore = notBefore
    }

    public init(userID: String, kind: PushKind, message: PushMessage, deadline: Date, notBefore: Date? = nil) {
        self.init(userIDs: [userID], kind: kind, message: message, deadline: deadline, notBefore: notBefore)
    }
}

/// One job the outbox holds: a push to one device.
public struct EnqueuedPush: Sendable, Equatable {
    public var pushID: String
    public var deviceID: String
    public var userID: String
    public var platform: String
    public var tokenKind: OutgoingPush.TokenKind
}

/// The durable push outbox. Jobs are written inside the caller's transaction, so a visit
/// and the pushes it causes commit (or roll back) together; workers deliver them later.
public enum PushOutbox {
    /// Expands `request` to one job per device that can receive it, inside `db`'s transaction.
    ///
    /// iOS rings go to the PushKit token (only a VoIP push rings like a call); an iPhone
    /// without an active one is rung by a time-sensitive alert on its push token instead
    /// of nothing (push health keeps flagging `voip_token_missing`). Every other push uses
    /// the device's push token (a web device's is its push subscription). Devices whose
    /// token a provider refused are skipped. Returns the jobs written.
    @discardableResult
    public static func enqueue(_ db: any SQLConnection, _ request: PushRequest, now: Date = Date()) throws -> [EnqueuedPush] {
        guard !request.userIDs.isEmpty else { return [] }
        let message = String(decoding: try JSONCoding.encoder().encode(request.message), as: UTF8.self)
        let placeholders = Array(repeating: "?", count: request.userIDs.count).joined(separator: ", ")
        let devices = try db.query("""
            SELECT id, installation_id, user_id, platform, push_token, push_token_status, voip_token, voip_token_status
            FROM devices WHERE user_id IN (\(placeholders)) ORDER BY user_id, created_at, id
            """, request.userIDs.map(SQLValue.text))
        var jobs: [EnqueuedPush] = []
        for device in devices {
            guard let deviceID = try device.string("id"), let userID = try device.string("user_id"),
                  let platform = try device.string("platform") else { continue }
            if let installation = try device.string("installation_id"), request.excludedInstallations.contains(installation) { continue }
            let tokenKind: OutgoingPush.TokenKind
            let token: String?
            let hasActiveVoIPToken = try device.string("voip_token_status") == "active" && device.string("voip_token") != nil
            switch (platform, request.kind) {
            case ("ios", .visitRing) where hasActiveVoIPToken:
                tokenKind = .voip
                token = try device.string("voip_token")
            case ("ios", _), ("android", _):
                tokenKind = .push
                token = try device.string("push_token_status") == "active" ? device.string("push_token") : nil
            case ("web", _):
                // Only a browser push subscription can be sent to; web rows from before
                // Web Push hold an opaque token and get nothing.
                tokenKind = .push
                token = try device.string("push_token_status") == "active"
                    ? device.string("push_token").flatMap { WebPushSubscriptionRules.fromStoredToken($0) != nil ? $0 : nil } : nil
            default:
                continue
            }
            guard let token else { continue }
            let pushID = UUID().uuidString.lowercased()
            try db.execute("""
                INSERT INTO push_jobs (id, device_id, user_id, kind, platform, token_kind, token, visit_id, message,
                    status, attempts, next_attempt_at, deadline_at, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)
                """, [.text(pushID), .text(deviceID), .text(userID), .text(request.kind.rawValue), .text(platform),
                      .text(tokenKind.rawValue), .text(token), .optional(request.message.visitID), .text(message),
                      .date(max(now, request.notBefore ?? now)), .date(request.deadline), .date(now)])
            jobs.append(EnqueuedPush(pushID: pushID, deviceID: deviceID, userID: userID, platform: platform, tokenKind: tokenKind))
        }
        // Every instance's worker looks for work at once when this commits, not at its
        // next poll (PostgreSQL; one notification per transaction whatever the job count).
        if !jobs.isEmpty { try db.notifyAtCommit(.push, payload: "") }
        return jobs
    }

    /// Cancels jobs of a visit that have not been sent yet (the visit was answered): a
    /// queued ring for the next resident must not go out after someone authorized.
    @discardableResult
    public static func cancelPending(_ db: any SQLConnection, visitID: String, kinds: [PushKind] = [.visitRing], reason: String) throws -> Int {
        let placeholders = Array(repeating: "?", count: kinds.count).joined(separator: ", ")
        return try db.execute("""
            UPDATE push_jobs SET status = 'cancelled', last_error = ? WHERE visit_id = ? AND status = 'pending' AND kind IN (\(placeholders))
            """, [.text(reason), .text(visitID)] + kinds.map { .text($0.rawValue) })
    }
}

/// One delivery attempt, as the visit timeline wants it.
public struct PushAttempt: Sendable, Equatable {
    public var pushID: String
    public var visitID: String?
    public var userID: String
    public var deviceID: String
    public var kind: PushKind
    public var platform: String
    /// `apns`, `fcm` or `log`.
    public var provider: String
    public var attempt: Int
    public var at: Date
    /// `accepted`, `token_invalid`, `retry`, `failed`, or `expired` (dropped at its deadline, never sent late).
    public var outcome: String
    public var httpStatus: Int?
    public var reason: String?
    /// When the next attempt is scheduled, if any.
    public var nextAttemptAt: Date?
}

/// Told about every attempt, inside the transaction that records it, so a listener (the
/// visit timeline) can write its own rows atomically with the outbox's.
public protocol PushEventSink: Sendable {
    /// Must not block or await. A thrown error is logged; the attempt is recorded regardless
    /// (rolling the outbox back would resend a push the provider already accepted).
    func pushAttempted(_ attempt: PushAttempt, in db: any SQLConnection) throws
}
