import Foundation
import PortariaCore

/// Backoff between attempts: exponential with jitter, never sooner than the provider asked.
public struct PushRetryPolicy: Sendable {
    public var base: TimeInterval = 1
    public var cap: TimeInterval = 300
    public var maxAttempts = 8
    /// Fraction of the delay drawn at random ("equal jitter"): spreads retries of many
    /// devices that failed together (one APNs hiccup) instead of hammering in lockstep.
    public var jitter: Double = 0.5

    public init(base: TimeInterval = 1, cap: TimeInterval = 300, maxAttempts: Int = 8, jitter: Double = 0.5) {
        self.base = base
        self.cap = cap
        self.maxAttempts = maxAttempts
        self.jitter = jitter
    }

    public func delay(afterAttempt attempt: Int, retryAfter: TimeInterval?) -> TimeInterval {
        let exponential = min(cap, base * pow(2, Double(max(0, attempt - 1))))
        let jittered = exponential * (1 - jitter) + Double.random(in: 0...(exponential * jitter))
        return max(jittered, retryAfter ?? 0)
    }
}

/// Wakes a sleeping loop early; a wake with nobody waiting is remembered once.
final class WakeSignal: Sendable {
    private let state = Locked<(pending: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    func wait(timeout: Duration) async {
        let timer = Task { [weak self] in
            // Cancelled when something else woke the waiter first: then it must not signal.
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.signal()
        }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }
}

/// Delivers outbox jobs. Every instance runs one; they share the work through the
/// database: jobs are claimed with a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL, the
/// single writer on SQLite), so two instances never hold the same job, and a job whose
/// worker died (`kill -9`) is claimed again when its lease runs out.
///
/// Delivery is at-least-once only across a crash between the provider's answer and its
/// recording; the push id travels as `apns-id` and in the payload so the app drops a duplicate.
public final class PushWorker: Sendable {
    public struct Configuration: Sendable {
        /// Pushes in flight at once from this instance.
        public var concurrency = 64
        /// A claimed job's lease; must exceed the providers' request timeout (10 s) so a live
        /// worker's job is never claimed by another.
        public var lease: TimeInterval = 60
        /// How often due jobs are looked for when nothing wakes the loop (SQLite: jobs whose
        /// wake was lost; PostgreSQL, where NOTIFY wakes every instance's worker for new jobs
        /// and retries wake their own: a safety net, see `notifiedPollInterval`).
        public var pollInterval: Duration = .milliseconds(250)
        /// The poll when enqueues anywhere wake the worker (PostgreSQL `portaria_push`): it
        /// only catches a lost notification or a dead worker's expired lease.
        public static let notifiedPollInterval: Duration = .seconds(2)
        public var retry = PushRetryPolicy()
        public init() {}
    }

    public let database: any SQLDatabase
    public let providers: PushProviders
    public let configuration: Configuration
    /// Identifies this worker in leases and attempt records.
    public let instanceID: String
    let sink: (any PushEventSink)?
    let log: Log
    let now: @Sendable () -> Date
    private let wakeSignal = WakeSignal()
    private let inFlight = Locked(0)
    private let loop = Locked<Task<Void, Never>?>(nil)
    private let stopping = Locked(false)

    public init(database: any SQLDatabase, providers: PushProviders, configuration: Configuration = .init(),
                instanceID: String = UUID().uuidString.lowercased(), sink: (any PushEventSink)? = nil,
                log: Log = .shared, now: @escaping @Sendable () -> Date = { Date() }) {
        self.database = database
        self.providers = providers
        self.configuration = configuration
        self.instanceID = instanceID
        self.sink = sink
        self.log = log
        self.now = now
    }

    /// Starts the delivery loop.
    public func start() {
        loop.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await self.run() }
        }
    }

    /// Looks for work now (call after committing an enqueue on this instance).
    public func wake() { wakeSignal.signal() }

    /// Looks for work once `seconds` have passed.
    private func wake(after seconds: TimeInterval) {
        let delay = Duration.milliseconds(Int64(max(0, min(seconds, 3600)) * 1000) + 1)
        Task { [wakeSignal] in
            try? await Task.sleep(for: delay)
            wakeSignal.signal()
        }
    }

    /// Stops claiming and waits for the pushes in flight.
    public func stop() async {
        stopping.withLock { $0 = true }
        wakeSignal.signal()
        let task = loop.withLock { task -> Task<Void, Never>? in defer { task = nil }; return task }
        await task?.value
        while inFlight.current > 0 { try? await Task.sleep(for: .milliseconds(10)) }
    }

    private func run() async {
        while !stopping.current {
            let free = configuration.concurrency - inFlight.current
            var claimed: [ClaimedJob] = []
            if free > 0 {
                do { claimed = try await claim(limit: free) } catch {
                    log.error("push outbox claim failed", ["error": .string("\(error)")])
                }
            }
            for job in claimed {
                inFlight.withLock { $0 += 1 }
                Task { [self] in
                    _ = await self.deliver(job)
                    self.inFlight.withLock { $0 -= 1 }
                    self.wakeSignal.signal()
                }
            }
            // A full batch likely means more is due: go again at once.
            if claimed.isEmpty || claimed.count < free { await wakeSignal.wait(timeout: configuration.pollInterval) }
        }
    }

    /// A job as claimed: the row plus the lease that proves it is ours.
    struct ClaimedJob: Sendable {
        var push: OutgoingPush
        var deviceID: String
        var userID: String
        var visitID: String?
        var attempt: Int
    }

    /// Claims up to `limit` due jobs (or the given ones), leasing them to this worker.
    func claim(limit: Int, ids: [String]? = nil) async throws -> [ClaimedJob] {
        let at = now()
        let lease = configuration.lease
        let owner = instanceID
        // Not durable: the claim is half of the gate POST → ring path's disk waits, and a
        // lost claim only makes the job pending again (sent again, de-duplicated by
        // `push_id` as after any crash between sending and recording).
        return try await database.writeNotDurable { db in
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
                """, [.text(owner), .date(at.addingTimeInterval(lease))] + due.map(SQLValue.text))
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
            return try rows.compactMap { row -> ClaimedJob? in
                guard let id = try row.string("id"), let kind = try row.string("kind").flatMap(PushKind.init(rawValue:)),
                      let platform = try row.string("platform"), let token = try row.string("token"),
                      let tokenKind = try row.string("token_kind").flatMap(OutgoingPush.TokenKind.init(rawValue:)),
                      let messageText = try row.string("message"),
                      let message = try? JSONCoding.decoder().decode(PushMessage.self, from: Data(messageText.utf8)),
                      let deadline = try row.date("deadline_at"), let deviceID = try row.string("device_id"),
                      let userID = try row.string("user_id") else { return nil }
                let attempt = Int(try row.int("attempts") ?? 1)
                return ClaimedJob(push: OutgoingPush(pushID: id, kind: kind, platform: platform, tokenKind: tokenKind,
                                                     token: token, message: message, deadline: deadline, attempt: attempt,
                                                     ackToken: ackTokens[id]),
                                  deviceID: deviceID, userID: userID, visitID: try row.string("visit_id"), attempt: attempt)
            }
        }
    }

    /// Claims the given jobs at once (due or not) and delivers them; for `push-test`.
    public func deliverNow(_ pushIDs: [String]) async throws -> [(pushID: String, provider: String, result: PushResult)] {
        guard !pushIDs.isEmpty else { return [] }
        let at = now()
        _ = try await database.write { db in
            try db.execute("UPDATE push_jobs SET next_attempt_at = ? WHERE status = 'pending' AND id IN (\(Array(repeating: "?", count: pushIDs.count).joined(separator: ", ")))",
                           [.date(at)] + pushIDs.map(SQLValue.text))
        }
        var results: [(String, String, PushResult)] = []
        for job in try await claim(limit: pushIDs.count, ids: pushIDs) {
            let (provider, result) = await deliver(job)
            results.append((job.push.pushID, provider, result))
        }
        return results
    }

    /// Sends one claimed job and records the outcome.
    @discardableResult
    func deliver(_ job: ClaimedJob) async -> (String, PushResult) {
        let provider = providers.provider(for: job.push.platform)
        let started = now()
        let result: PushResult
        if job.push.deadline <= started {
            // Never ring late: a visitor who gave up must not make a phone ring.
            result = PushResult(outcome: .failed, reason: "deadline passed before sending")
            await record(job, provider: provider.name, result: result, expired: true, started: started)
        } else {
            result = await provider.send(job.push)
            await record(job, provider: provider.name, result: result, expired: false, started: started)
        }
        return (provider.name, result)
    }

    private func record(_ job: ClaimedJob, provider: String, result: PushResult, expired: Bool, started: Date) async {
        let at = now()
        let owner = instanceID
        let retry = configuration.retry
        let sink = sink
        let log = log
        do {
            let retryAt = try await database.write { db -> Date? in
                // Only the lease holder records: a job whose lease ran out belongs to whoever reclaimed it.
                let mine = try db.queryOne("SELECT status FROM push_jobs WHERE id = ? AND lease_owner = ? AND attempts = ?\(db.dialect.forUpdate)",
                                           .text(job.push.pushID), .text(owner), .integer(Int64(job.attempt)))
                guard try mine?.string("status") == "sending" else { return nil }
                var outcome = expired ? "expired" : result.outcome.rawValue
                var nextAttempt: Date?
                let error = result.reason.map { reason in [reason, result.detail].compactMap { $0 }.joined(separator: ": ") }
                switch (expired, result.outcome) {
                case (true, _):
                    try db.execute("UPDATE push_jobs SET status = 'expired', lease_owner = NULL, lease_until = NULL, last_error = ? WHERE id = ?",
                                   .optional(error), .text(job.push.pushID))
                case (false, .accepted):
                    try db.execute("""
                        UPDATE push_jobs SET status = 'sent', sent_at = ?, provider_id = ?, lease_owner = NULL, lease_until = NULL, last_error = NULL
                        WHERE id = ?
                        """, .date(at), .optional(result.providerID), .text(job.push.pushID))
                    try db.execute("UPDATE devices SET last_push_at = ?, last_success_at = ?, consecutive_failures = 0 WHERE id = ?",
                                   .date(at), .date(at), .text(job.deviceID))
                case (false, .retry):
                    let delay = retry.delay(afterAttempt: job.attempt, retryAfter: result.retryAfter)
                    let next = at.addingTimeInterval(delay)
                    if job.attempt < retry.maxAttempts && next < job.push.deadline {
                        nextAttempt = next
                        try db.execute("""
                            UPDATE push_jobs SET status = 'pending', next_attempt_at = ?, lease_owner = NULL, lease_until = NULL, last_error = ?
                            WHERE id = ?
                            """, .date(next), .optional(error), .text(job.push.pushID))
                    } else {
                        // The next try would land after the deadline (or we tried enough): drop it.
                        outcome = next >= job.push.deadline ? "expired" : "failed"
                        try db.execute("UPDATE push_jobs SET status = ?, lease_owner = NULL, lease_until = NULL, last_error = ? WHERE id = ?",
                                       .text(outcome == "expired" ? "expired" : "failed"), .optional(error), .text(job.push.pushID))
                    }
                    try Self.countFailure(db, deviceID: job.deviceID, error: error, at: at)
                case (false, .tokenInvalid):
                    try db.execute("UPDATE push_jobs SET status = 'failed', lease_owner = NULL, lease_until = NULL, last_error = ? WHERE id = ?",
                                   .optional(error), .text(job.push.pushID))
                    // Deactivate the token — only if the device still has it (the app may
                    // have registered a fresh one while this push was in flight).
                    let column = job.push.tokenKind == .voip ? "voip_token" : "push_token"
                    try db.execute("UPDATE devices SET \(column)_status = 'unregistered' WHERE id = ? AND \(column) = ?",
                                   .text(job.deviceID), .text(job.push.token))
                    try db.execute("""
                        UPDATE push_jobs SET status = 'cancelled', last_error = 'token deactivated'
                        WHERE device_id = ? AND token = ? AND status = 'pending'
                        """, .text(job.deviceID), .text(job.push.token))
                    try Self.countFailure(db, deviceID: job.deviceID, error: error, at: at)
                case (false, .failed):
                    try db.execute("UPDATE push_jobs SET status = 'failed', lease_owner = NULL, lease_until = NULL, last_error = ? WHERE id = ?",
                                   .optional(error), .text(job.push.pushID))
                    try Self.countFailure(db, deviceID: job.deviceID, error: error, at: at)
                }
                try db.execute("""
                    INSERT INTO push_attempts (id, push_id, device_id, attempt, at, provider, outcome, http_status, reason, duration_ms, instance)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.text(UUID().uuidString.lowercased()), .text(job.push.pushID), .text(job.deviceID),
                          .integer(Int64(job.attempt)), .date(at), .text(provider), .text(outcome),
                          result.httpStatus.map { .integer(Int64($0)) } ?? .null, .optional(error),
                          .integer(Int64((at.timeIntervalSince(started) * 1000).rounded())), .text(owner)])
                if let sink {
                    let attempt = PushAttempt(pushID: job.push.pushID, visitID: job.visitID, userID: job.userID, deviceID: job.deviceID,
                                              kind: job.push.kind, platform: job.push.platform, provider: provider,
                                              attempt: job.attempt, at: at, outcome: outcome, httpStatus: result.httpStatus,
                                              reason: error, nextAttemptAt: nextAttempt)
                    do { try sink.pushAttempted(attempt, in: db) } catch {
                        log.error("push event sink failed", ["push_id": .string(job.push.pushID), "error": .string("\(error)")])
                    }
                }
                return nextAttempt
            }
            // The poll may be long (PostgreSQL: NOTIFY wakes the worker for new jobs), so a
            // retry this worker scheduled wakes it when it falls due.
            if let retryAt { wake(after: retryAt.timeIntervalSince(at)) }
        } catch {
            // The lease will run out and another pass will retry the job.
            log.error("recording a push attempt failed", ["push_id": .string(job.push.pushID), "error": .string("\(error)")])
        }
        let level: Log.Level = result.outcome == .accepted ? .info : .warning
        log.write(level, "push attempt", ["push_id": .string(job.push.pushID), "kind": .string(job.push.kind.rawValue),
                                          "provider": .string(provider), "attempt": .number(Double(job.attempt)),
                                          "outcome": .string(expired ? "expired" : result.outcome.rawValue),
                                          "status": result.httpStatus.map { .number(Double($0)) } ?? .null,
                                          "reason": result.reason.map(JSONValue.string) ?? .null])
    }

    private static func countFailure(_ db: any SQLConnection, deviceID: String, error: String?, at: Date) throws {
        try db.execute("UPDATE devices SET consecutive_failures = consecutive_failures + 1, last_error = ?, last_error_at = ?, last_push_at = ? WHERE id = ?",
                       .optional(error), .date(at), .date(at), .text(deviceID))
    }
}
