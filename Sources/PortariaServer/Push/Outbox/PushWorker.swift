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
    private let retryWakes = Locked<[UUID: Task<Void, Never>]>([:])

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

    /// Workers running in this process, by instance id: on SQLite the only live ones.
    private static let running = Locked<Set<String>>([])

    /// Starts the delivery loop.
    public func start() {
        Self.running.withLock { _ = $0.insert(instanceID) }
        loop.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in
                await self.releaseDeadLeases()
                await self.run()
            }
        }
    }

    /// SQLite: jobs a previous process claimed and never finished (killed mid-send, or
    /// right after a gate POST handed them over) go out now, not a lease later.
    private func releaseDeadLeases() async {
        guard !database.dialect.isSharedByInstances else { return }
        let live = Self.running.current
        let at = now()
        do {
            let released = try await database.write { db in try PushOutbox.releaseLeases(db, keeping: live, at: at) }
            if released > 0 { log.info("released push leases of a previous process", ["count": .number(Double(released))]) }
        } catch {
            log.error("releasing push leases failed", ["error": .string("\(error)")])
        }
    }

    /// How often, at most, a worker on PostgreSQL looks for jobs of instances that are gone
    /// (a wake-up per gate POST anywhere must not mean a query per gate POST).
    static let orphanCheckInterval: Duration = .seconds(1)

    /// PostgreSQL: jobs left `sending` by an instance that is gone — no connection has
    /// carried its name for `GoneInstances.grace` — go out now, not a lease later (decision
    /// 0058). Only a worker leasing under an `InstanceName` looks: its own connections
    /// carry that name, so it takes part in the rule it applies to others.
    private func releaseOrphanedLeases(_ gone: inout GoneInstances) async {
        guard database.dialect.isSharedByInstances, instanceID.hasPrefix(InstanceName.prefix) else { return }
        let owner = instanceID
        let at = now()
        do {
            let missing = try await database.read { db in try PushOutbox.instancesGone(db, except: owner, at: at) }
            let owners = gone.observe(missing, at: ContinuousClock.now)
            guard !owners.isEmpty else { return }
            let released = try await database.write { db in try PushOutbox.releaseLeases(db, ofGone: owners, at: at) }
            if released > 0 {
                log.info("released push leases of an instance that is gone",
                         ["count": .number(Double(released)), "instances": .array(owners.map(JSONValue.string))])
            }
        } catch {
            log.error("releasing push leases failed", ["error": .string("\(error)")])
        }
    }

    /// Whether jobs may be handed to this worker (it runs and is not stopping).
    var acceptsHandOff: Bool { loop.current != nil && !stopping.current }

    /// Sends jobs claimed for this worker by the transaction that enqueued them; called
    /// on the thread that committed it, right after COMMIT (`PushOutbox.handOff`). Must
    /// not block: each job becomes a task at once. A worker already stopping leaves them
    /// claimed; their lease runs out and they are claimed again (here after a restart on
    /// SQLite, at once).
    func deliverHandedOff(_ jobs: [ClaimedJob]) {
        let admitted = stopping.withLock { stopping -> Bool in
            guard !stopping else { return false }
            // Counted under the stopping lock: `stop()` then waits for these too.
            inFlight.withLock { $0 += jobs.count }
            return true
        }
        guard admitted else { return }
        for job in jobs {
            // The request leaves from here (decision 0131): no task hop before the HTTP/2
            // client has it; the task only waits for the answer and records it.
            let delivery = begin(job)
            Task { [self] in
                _ = await self.complete(job, delivery)
                self.inFlight.withLock { $0 -= 1 }
                self.wakeSignal.signal()
            }
        }
    }

    /// Looks for work now (call after committing an enqueue on this instance).
    public func wake() { wakeSignal.signal() }

    /// Looks for work once `seconds` have passed. Tracked, so `stop()` cancels the ones
    /// still sleeping (a retry scheduled an hour out must not outlive the worker).
    private func wake(after seconds: TimeInterval) {
        let delay = Duration.milliseconds(Int64(max(0, min(seconds, 3600)) * 1000) + 1)
        let id = UUID()
        retryWakes.withLock { wakes in
            guard !stopping.current else { return }
            // Inserted under the lock its own removal takes: it cannot remove itself first.
            wakes[id] = Task { [wakeSignal, retryWakes] in
                if (try? await Task.sleep(for: delay)) != nil { wakeSignal.signal() }
                _ = retryWakes.withLock { $0.removeValue(forKey: id) }
            }
        }
    }

    /// Retry wake-ups still sleeping (for tests: how many `stop()` must cancel).
    var pendingRetryWakes: Int { retryWakes.current.count }

    /// Stops claiming and waits for the pushes in flight.
    public func stop() async {
        stopping.withLock { $0 = true }
        Self.running.withLock { _ = $0.remove(instanceID) }
        wakeSignal.signal()
        let task = loop.withLock { task -> Task<Void, Never>? in defer { task = nil }; return task }
        await task?.value
        while inFlight.current > 0 { try? await Task.sleep(for: .milliseconds(10)) }
        // Deliveries above may have scheduled retries: cancelled now, after the last one.
        let wakes = retryWakes.withLock { wakes -> [Task<Void, Never>] in defer { wakes = [:] }; return Array(wakes.values) }
        for wake in wakes { wake.cancel() }
        for wake in wakes { await wake.value }
    }

    private func run() async {
        var orphansLookedAt = ContinuousClock.now - Self.orphanCheckInterval
        var gone = GoneInstances()
        while !stopping.current {
            if ContinuousClock.now - orphansLookedAt >= Self.orphanCheckInterval {
                orphansLookedAt = ContinuousClock.now
                await releaseOrphanedLeases(&gone)
            }
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

    typealias ClaimedJob = ClaimedPush

    /// Claims up to `limit` due jobs (or the given ones), leasing them to this worker.
    func claim(limit: Int, ids: [String]? = nil) async throws -> [ClaimedJob] {
        let at = now()
        let leaseUntil = at.addingTimeInterval(configuration.lease)
        let owner = instanceID
        // Not durable: the claim is half of the gate POST → ring path's disk waits, and a
        // lost claim only makes the job pending again (sent again, de-duplicated by
        // `push_id` as after any crash between sending and recording).
        return try await database.writeNotDurable { db in
            try PushOutbox.claim(db, owner: owner, leaseUntil: leaseUntil, at: at, limit: limit, ids: ids)
        }
    }

    /// Claims the given jobs at once (due or not) and delivers them; for `push-test`.
    public func deliverNow(_ pushIDs: [String]) async throws -> [(pushID: String, provider: String, result: PushResult)] {
        guard !pushIDs.isEmpty else { return [] }
        let at = now()
        try await database.write { db in try PushOutbox.makeDue(db, ids: pushIDs, at: at) }
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
        await complete(job, begin(job))
    }

    /// A job `begin` looked at: put on its way (`sending`), or too late to send (nil).
    struct Delivery: Sendable {
        let provider: String
        let started: Date
        let sending: StartedPush?
    }

    /// Starts sending one claimed job without suspending (the provider's `start`).
    func begin(_ job: ClaimedJob) -> Delivery {
        let provider = providers.provider(for: job.push.platform)
        let started = now()
        // Never ring late: a visitor who gave up must not make a phone ring.
        guard job.push.deadline > started else { return Delivery(provider: provider.name, started: started, sending: nil) }
        if job.push.kind == .visitRing, job.attempt == 1, let created = job.createdAt {
            let seconds = started.timeIntervalSince(created)
            if seconds >= 0 && seconds < 3600 { ServerMetrics.shared.ringPush.observe(seconds) }
        }
        return Delivery(provider: provider.name, started: started, sending: provider.start(job.push))
    }

    /// Waits for the outcome of a job `begin` started and records it.
    func complete(_ job: ClaimedJob, _ delivery: Delivery) async -> (String, PushResult) {
        guard let sending = delivery.sending else {
            let result = PushResult(outcome: .failed, reason: "deadline passed before sending")
            await record(job, provider: delivery.provider, result: result, expired: true, started: delivery.started)
            return (delivery.provider, result)
        }
        let result = await sending.result()
        await record(job, provider: delivery.provider, result: result, expired: false, started: delivery.started)
        return (delivery.provider, result)
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
                let pushID = job.push.pushID
                guard try PushOutbox.holdsLease(db, pushID: pushID, owner: owner, attempt: job.attempt) else { return nil }
                var outcome = expired ? "expired" : result.outcome.rawValue
                var nextAttempt: Date?
                let error = result.reason.map { reason in [reason, result.detail].compactMap { $0 }.joined(separator: ": ") }
                switch (expired, result.outcome) {
                case (true, _):
                    try PushOutbox.finish(db, pushID: pushID, as: .expired, error: error)
                case (false, .accepted):
                    try PushOutbox.markSent(db, pushID: pushID, providerID: result.providerID, at: at)
                    try DeviceStore.pushAccepted(db, deviceID: job.deviceID, at: at)
                case (false, .retry):
                    let delay = retry.delay(afterAttempt: job.attempt, retryAfter: result.retryAfter)
                    let next = at.addingTimeInterval(delay)
                    if job.attempt < retry.maxAttempts && next < job.push.deadline {
                        nextAttempt = next
                        try PushOutbox.scheduleRetry(db, pushID: pushID, at: next, error: error)
                    } else {
                        // The next try would land after the deadline (or we tried enough): drop it.
                        let ending: PushOutbox.Ending = next >= job.push.deadline ? .expired : .failed
                        outcome = ending.rawValue
                        try PushOutbox.finish(db, pushID: pushID, as: ending, error: error)
                    }
                    try DeviceStore.pushFailed(db, deviceID: job.deviceID, error: error, at: at)
                case (false, .tokenInvalid):
                    try PushOutbox.finish(db, pushID: pushID, as: .failed, error: error)
                    try DeviceStore.deactivate(db, deviceID: job.deviceID, token: job.push.token, kind: job.push.tokenKind)
                    try PushOutbox.cancelPending(db, deviceID: job.deviceID, token: job.push.token, reason: "token deactivated")
                    try DeviceStore.pushFailed(db, deviceID: job.deviceID, error: error, at: at)
                case (false, .failed):
                    try PushOutbox.finish(db, pushID: pushID, as: .failed, error: error)
                    try DeviceStore.pushFailed(db, deviceID: job.deviceID, error: error, at: at)
                }
                let attempt = PushAttempt(pushID: pushID, visitID: job.visitID, userID: job.userID, deviceID: job.deviceID,
                                          kind: job.push.kind, platform: job.push.platform, provider: provider,
                                          attempt: job.attempt, at: at, outcome: outcome, httpStatus: result.httpStatus,
                                          reason: error, nextAttemptAt: nextAttempt)
                try PushOutbox.recordAttempt(db, attempt, durationMs: Int64((at.timeIntervalSince(started) * 1000).rounded()),
                                             instance: owner)
                if let sink {
                    do { try sink.pushAttempted(attempt, in: db) } catch {
                        log.error("push event sink failed", ["push_id": .string(pushID), "error": .string("\(error)")])
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
        ServerMetrics.shared.pushAttempted(provider: provider, outcome: expired ? "expired" : result.outcome.rawValue,
                                           reason: result.reason)
        let level: Log.Level = result.outcome == .accepted ? .info : .warning
        log.write(level, "push attempt", ["push_id": .string(job.push.pushID), "kind": .string(job.push.kind.rawValue),
                                          "provider": .string(provider), "attempt": .number(Double(job.attempt)),
                                          "outcome": .string(expired ? "expired" : result.outcome.rawValue),
                                          "status": result.httpStatus.map { .number(Double($0)) } ?? .null,
                                          "reason": result.reason.map(JSONValue.string) ?? .null])
    }
}
