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
            let pushID = UUIDText.random()
            try db.execute("""
                INSERT INTO push_jobs (id, device_id, user_id, kind, platform, token_kind, token, visit_id, message,
                    status, attempts, next_attempt_at, deadline_at, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)
                """, [.text(pushID), .text(deviceID), .text(userID), .text(request.kind.rawValue), .text(platform),
                      .text(tokenKind.rawValue), .text(token), .optional(request.message.visitID), .text(message),
                      .date(max(now, request.notBefore ?? now)), .date(request.deadline), .date(now)])
            jobs.append(EnqueuedPush(pushID: pushID, deviceID: deviceID, userID: userID, platform: platform, tokenKind: tokenKind))
        }
        // Jobs due now go straight to this instance's worker when the caller asked for it
        // (`handOff`): claimed here, sent the moment the transaction commits.
        if !jobs.isEmpty, let handOff = db.transactionValue(HandOffClaim.key, as: HandOffClaim.self) {
            let worker = handOff.worker
            let at = worker.now()
            let claimed = try claim(db, owner: worker.instanceID, leaseUntil: at.addingTimeInterval(worker.configuration.lease),
                                    at: at, limit: jobs.count, ids: jobs.map(\.pushID))
            if !claimed.isEmpty { db.afterCommit { worker.deliverHandedOff(claimed) } }
        }
        // Every instance's worker looks for work at once when this commits, not at its
        // next poll (PostgreSQL; one notification per transaction whatever the job count).
        if !jobs.isEmpty { try db.notifyAtCommit(.push, payload: "") }
        return jobs
    }

    /// From here to the end of the caller's transaction, jobs that `enqueue` writes and
    /// that are due now are claimed for `handOff`'s worker in that same transaction and
    /// handed to it on the committing thread right after COMMIT (decision 0058): no claim
    /// transaction, no poll, no wake-up hop between the gate POST and the provider. Does
    /// nothing when no worker runs on this instance (the jobs stay pending for another).
    static func handOff(_ db: any SQLConnection, to handOff: PushHandOff) {
        guard let worker = handOff.worker, worker.acceptsHandOff else { return }
        db.setTransactionValue(HandOffClaim(worker: worker), forKey: HandOffClaim.key)
    }

    private final class HandOffClaim {
        static let key = "push.handoff"
        let worker: PushWorker
        init(worker: PushWorker) { self.worker = worker }
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

/// This instance's push worker as the transactions that enqueue rings see it (decision
/// 0058): set while the worker runs, empty on an instance that runs none.
public final class PushHandOff: Sendable {
    private let attached = Locked<PushWorker?>(nil)
    public init() {}
    public func attach(_ worker: PushWorker) { attached.withLock { $0 = worker } }
    public func detach() { attached.withLock { $0 = nil } }
    var worker: PushWorker? { attached.current }
}

/// A job as claimed: the row plus the lease that proves it is ours.
struct ClaimedPush: Sendable {
    var push: OutgoingPush
    var deviceID: String
    var userID: String
    var visitID: String?
    var attempt: Int
    /// When the job was enqueued (for a first ring: the gate POST's transaction).
    var createdAt: Date?
}

/// The outbox's state transitions: every write to `push_jobs` and
/// `push_attempts` after the enqueue lives here; the worker decides, the outbox records.
///
///     pending ──claim──▶ sending ──▶ sent | pending (retry scheduled) | failed | expired
///        │                  └── lease runs out ──▶ claimed again (attempts + 1)
///        └── cancelled (a visit answered, a token deactivated)
extension PushOutbox {
    /// Leases up to `limit` due jobs (or the given ones, when due) to `owner` until
    /// `leaseUntil`, counting the attempt and issuing each a fresh ack capability.
    static func claim(_ db: any SQLConnection, owner: String, leaseUntil: Date, at: Date, limit: Int,
                      ids: [String]? = nil) throws -> [ClaimedPush] {
        var sql = """
            SELECT id FROM push_jobs
            WHERE ((status = 'pending' AND next_attempt_at <= ?) OR (status = 'sending' AND lease_until <= ?))
            """
        var parameters: [SQLValue] = [.date(at), .date(at)]
        if let ids {
            sql += " AND id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))"
            parameters += ids.map(SQLValue.text)
        }
        sql += " ORDER BY next_attempt_at LIMIT ?\(db.dialect.skipLocked)"
        parameters.append(.integer(Int64(limit)))
        let due = try db.query(sql, parameters).compactMap { try $0.string("id") }
        guard !due.isEmpty else { return [] }
        let list = Array(repeating: "?", count: due.count).joined(separator: ", ")
        try db.execute("""
            UPDATE push_jobs SET status = 'sending', lease_owner = ?, lease_until = ?, attempts = attempts + 1
            WHERE id IN (\(list))
            """, [.text(owner), .date(leaseUntil)] + due.map(SQLValue.text))
        let rows = try db.query("SELECT * FROM push_jobs WHERE id IN (\(list))", due.map(SQLValue.text))
        // Every attempt's payload carries a fresh ack capability; the job keeps only its
        // hash. Rendering happens after this transaction, maybe on another instance after
        // a lease ran out, so the raw token cannot be re-read later: a new one per attempt,
        // all of them valid for this push (decision 0016).
        var ackTokens: [String: String] = [:]
        for row in rows {
            guard let id = try row.string("id") else { continue }
            let token = Crypto.opaqueToken()
            let hashes = PushReceipts.appendingAckHash(Crypto.tokenHash(token), to: try row.string("ack_token_hashes"))
            try db.execute("UPDATE push_jobs SET ack_token_hashes = ? WHERE id = ?", .text(hashes), .text(id))
            ackTokens[id] = token
        }
        return try rows.compactMap { row -> ClaimedPush? in
            guard let id = try row.string("id"), let kind = try row.string("kind").flatMap(PushKind.init(rawValue:)),
                  let platform = try row.string("platform"), let token = try row.string("token"),
                  let tokenKind = try row.string("token_kind").flatMap(OutgoingPush.TokenKind.init(rawValue:)),
                  let messageText = try row.string("message"),
                  let message = try? JSONCoding.decoder().decode(PushMessage.self, from: Data(messageText.utf8)),
                  let deadline = try row.date("deadline_at"), let deviceID = try row.string("device_id"),
                  let userID = try row.string("user_id") else { return nil }
            let attempt = Int(try row.int("attempts") ?? 1)
            return ClaimedPush(push: OutgoingPush(pushID: id, kind: kind, platform: platform, tokenKind: tokenKind,
                                                  token: token, message: message, deadline: deadline, attempt: attempt,
                                                  ackToken: ackTokens[id]),
                               deviceID: deviceID, userID: userID, visitID: try row.string("visit_id"), attempt: attempt,
                               createdAt: try row.date("created_at"))
        }
    }

    /// Ends the leases of jobs left `sending` by workers that are gone (SQLite: the file
    /// belongs to this process, so such a worker died with a previous one): they are
    /// claimed again at once instead of when their lease runs out. The attempt count is
    /// kept, so the dead worker's late outcome — if it ever comes — is still refused.
    static func releaseLeases(_ db: any SQLConnection, keeping live: Set<String>, at: Date) throws -> Int {
        let kept = Array(live)
        let clause = kept.isEmpty ? "" : " AND lease_owner NOT IN (\(Array(repeating: "?", count: kept.count).joined(separator: ", ")))"
        return try db.execute("UPDATE push_jobs SET lease_until = ? WHERE status = 'sending' AND lease_until > ?" + clause,
                              [.date(at), .date(at)] + kept.map(SQLValue.text))
    }

    /// PostgreSQL: the owners of live leases that no backend names any more — neither a
    /// pool connection (`portaria/<uuid>`) nor the listener (`portaria/<uuid>/listener`,
    /// nor either with a pooler's suffix): instances that are gone, or that lost every
    /// connection at once (a database restart), which is why the worker waits for an owner
    /// to stay gone (`GoneInstances`) before `releaseLeases(ofGone:)` (decision 0058).
    /// `owner` (the caller) is never judged; nor is an owner without the `InstanceName`
    /// prefix (an older version, or a URL with its own `application_name`).
    /// SQLite: none (`releaseLeases(keeping:)` at start covers it).
    static func instancesGone(_ db: any SQLConnection, except owner: String, at: Date) throws -> Set<String> {
        guard db.dialect.isSharedByInstances else { return [] }
        let rows = try db.query("""
            SELECT DISTINCT lease_owner FROM push_jobs
            WHERE status = 'sending' AND lease_until > ? AND lease_owner <> ? AND lease_owner LIKE ?
              AND \(Self.noBackendNamesOwner)
            """, [.date(at), .text(owner), .text(InstanceName.prefix + "%")])
        return Set(try rows.compactMap { try $0.string("lease_owner") })
    }

    /// Ends the leases of `owners`' jobs, each owner checked gone once more in the same
    /// statement, so they are claimed again now instead of when their lease runs out.
    static func releaseLeases(_ db: any SQLConnection, ofGone owners: [String], at: Date) throws -> Int {
        guard db.dialect.isSharedByInstances, !owners.isEmpty else { return 0 }
        return try db.execute("""
            UPDATE push_jobs SET lease_until = ?
            WHERE status = 'sending' AND lease_until > ?
              AND lease_owner IN (\(Array(repeating: "?", count: owners.count).joined(separator: ", ")))
              AND \(Self.noBackendNamesOwner)
            """, [.date(at), .date(at)] + owners.map(SQLValue.text))
    }

    /// No backend's `application_name` starts with the job's owner (`portaria/<uuid>` is
    /// the pool's name and the start of the listener's and of a pooler's suffixed one).
    private static let noBackendNamesOwner = """
        NOT EXISTS (SELECT 1 FROM pg_stat_activity AS backend
                    WHERE left(backend.application_name, length(push_jobs.lease_owner)) = push_jobs.lease_owner)
        """

    /// Makes the given pending jobs due now (`push-test` sends at once).
    static func makeDue(_ db: any SQLConnection, ids: [String], at: Date) throws {
        guard !ids.isEmpty else { return }
        try db.execute("UPDATE push_jobs SET next_attempt_at = ? WHERE status = 'pending' AND id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))",
                       [.date(at)] + ids.map(SQLValue.text))
    }

    /// Whether `owner` still holds the lease of this attempt (and locks the row until the
    /// transaction ends): a job whose lease ran out belongs to whoever claimed it again.
    static func holdsLease(_ db: any SQLConnection, pushID: String, owner: String, attempt: Int) throws -> Bool {
        let row = try db.queryOne("SELECT status FROM push_jobs WHERE id = ? AND lease_owner = ? AND attempts = ?\(db.dialect.forUpdate)",
                                  .text(pushID), .text(owner), .integer(Int64(attempt)))
        return try row?.string("status") == "sending"
    }

    /// The provider accepted the push.
    static func markSent(_ db: any SQLConnection, pushID: String, providerID: String?, at: Date) throws {
        try db.execute("""
            UPDATE push_jobs SET status = 'sent', sent_at = ?, provider_id = ?, lease_owner = NULL, lease_until = NULL, last_error = NULL
            WHERE id = ?
            """, .date(at), .optional(providerID), .text(pushID))
    }

    /// Back to pending, due at `next`.
    static func scheduleRetry(_ db: any SQLConnection, pushID: String, at next: Date, error: String?) throws {
        try db.execute("""
            UPDATE push_jobs SET status = 'pending', next_attempt_at = ?, lease_owner = NULL, lease_until = NULL, last_error = ?
            WHERE id = ?
            """, .date(next), .optional(error), .text(pushID))
    }

    /// How a job ends without being sent.
    enum Ending: String {
        case failed
        /// Dropped at its deadline, never sent late.
        case expired
    }

    /// The job ends unsent: failed, or expired at its deadline.
    static func finish(_ db: any SQLConnection, pushID: String, as ending: Ending, error: String?) throws {
        try db.execute("UPDATE push_jobs SET status = ?, lease_owner = NULL, lease_until = NULL, last_error = ? WHERE id = ?",
                       .text(ending.rawValue), .optional(error), .text(pushID))
    }

    /// Cancels the device's unsent jobs for a token a provider refused.
    static func cancelPending(_ db: any SQLConnection, deviceID: String, token: String, reason: String) throws {
        try db.execute("""
            UPDATE push_jobs SET status = 'cancelled', last_error = ?
            WHERE device_id = ? AND token = ? AND status = 'pending'
            """, .text(reason), .text(deviceID), .text(token))
    }

    /// Records the receipt of a job (the first one only: the caller checked `acked_at`).
    static func markAcked(_ db: any SQLConnection, pushID: String, at: Date) throws {
        try db.execute("UPDATE push_jobs SET acked_at = ? WHERE id = ?", .date(at), .text(pushID))
    }

    /// One row of `push_attempts`: what one attempt's provider (or deadline) answered.
    static func recordAttempt(_ db: any SQLConnection, _ attempt: PushAttempt, durationMs: Int64, instance: String) throws {
        try db.execute("""
            INSERT INTO push_attempts (id, push_id, device_id, attempt, at, provider, outcome, http_status, reason, duration_ms, instance)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(UUIDText.random()), .text(attempt.pushID), .text(attempt.deviceID),
                  .integer(Int64(attempt.attempt)), .date(attempt.at), .text(attempt.provider), .text(attempt.outcome),
                  attempt.httpStatus.map { .integer(Int64($0)) } ?? .null, .optional(attempt.reason),
                  .integer(durationMs), .text(instance)])
    }
}
