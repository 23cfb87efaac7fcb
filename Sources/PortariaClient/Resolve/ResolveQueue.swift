import Foundation
import PortariaCore

/// How a decision ended, as far as the server is concerned. Every case becomes a pt-BR
/// sentence (`ResolveReport.sentence`); none is an HTTP status.
public enum ResolveOutcome: Sendable, Equatable {
    /// The server took this decision (`replayed`: an earlier attempt had already landed
    /// and its answer was lost on the way back).
    case resolved(ResolutionAction, kind: VisitKind, replayed: Bool)
    /// Someone (maybe this same user on another phone, maybe a delivery rule) decided first.
    case alreadyResolved(VisitResolution)
    /// The visit ended without a decision: the visitor gave up, or it expired.
    case closed(VisitStatus, kind: VisitKind?, at: Date?)
    /// The server refused for good; retrying cannot help.
    case refused(ClientText.RefusalReason)
}

/// Where one queued decision stands after an attempt.
public struct ResolveReport: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        /// Terminal: the decision left the queue.
        case finished(ResolveOutcome)
        /// Still queued; it will be sent again (or once the same user logs in).
        case queued(ClientText.QueueReason)
    }

    public var item: QueuedResolution
    public var state: State
    /// What the user reads, in pt-BR and the condominium's time zone.
    public var sentence: String

    public var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    public var outcome: ResolveOutcome? {
        if case .finished(let outcome) = state { return outcome }
        return nil
    }
}

/// The never-silent resolve queue: "uma ação que falha em silêncio é a pior falha
/// possível". A tap becomes a durable `QueuedResolution` (with its `Idempotency-Key`)
/// before anything is sent; attempts repeat with backoff, jitter and `Retry-After` until
/// the server gives a terminal answer; every terminal answer becomes a sentence.
///
/// What is retried: no answer at all, 408/425/429/5xx, `REQUEST_IN_PROGRESS` (our own
/// earlier attempt is still running on the server). What waits without retrying: an
/// ended session (the action stays until the same user logs in again — it is never
/// dropped for an expired token; a 401 first refreshes and resends). What ends it: a 2xx,
/// `VISIT_ALREADY_RESOLVED`, `VISIT_CLOSED`, and refusals that repeating cannot change
/// (403, 404, 400/422).
///
/// Several processes may send the same stored action at once (the app and its
/// notification extension, two `portaria client sync`): the key makes that harmless,
/// the server answers the same decision to both.
public actor ResolveQueue {
    public enum QueueError: Error, Sendable, Equatable {
        /// A tap needs a logged-in user: the decision belongs to someone.
        case notLoggedIn
    }

    private let store: any ResolveQueueStore
    private let http: any AuthorizedHTTP
    private let clock: any ClientClock
    private let random: RandomSource
    private let policy: RetryPolicy
    private let timeZone: @Sendable (String?) async -> TimeZone
    private var inFlight: Set<String> = []

    /// The zone used when the server has not told us the condominium's (see decision 0014).
    public static let defaultTimeZone = TimeZone(identifier: "America/Sao_Paulo") ?? .gmt

    /// - Parameters:
    ///   - timeZone: the condominium's zone for a company id (nil: the selected one).
    public init(store: any ResolveQueueStore, http: any AuthorizedHTTP, clock: any ClientClock = SystemClock(),
                random: RandomSource = .system, policy: RetryPolicy = .standard,
                timeZone: @escaping @Sendable (String?) async -> TimeZone = { _ in ResolveQueue.defaultTimeZone }) {
        self.store = store
        self.http = http
        self.clock = clock
        self.random = random
        self.policy = policy
        self.timeZone = timeZone
    }

    /// Everything still queued, oldest first.
    public func pending() throws -> [QueuedResolution] { try store.all() }

    // MARK: Tap

    /// Records a tap durably and returns it; nothing has been sent yet. The key is made
    /// here, once: every later attempt carries it.
    public func tap(visitID: String, action: ResolutionAction, via: ResolutionChannel = .app,
                    companyID: String?) async throws -> QueuedResolution {
        guard let userID = await http.userID else { throw QueueError.notLoggedIn }
        let item = QueuedResolution(idempotencyKey: UUID().uuidString.lowercased(), visitID: visitID, action: action, via: via,
                                    companyID: companyID, userID: userID, tappedAt: clock.now())
        try store.save(item)
        return item
    }

    /// Tap, then send until a terminal answer or `deadline` (nil: until terminal).
    public func resolve(visitID: String, action: ResolutionAction, via: ResolutionChannel = .app, companyID: String?,
                        until deadline: Date?) async throws -> ResolveReport {
        let item = try await tap(visitID: visitID, action: action, via: via, companyID: companyID)
        return await send(item, until: deadline)
    }

    // MARK: Sending

    /// Sends one queued decision, retrying with backoff until a terminal answer, a reason
    /// to wait for the user (logged out), or `deadline`. The first attempt is immediate.
    public func send(_ item: QueuedResolution, until deadline: Date?) async -> ResolveReport {
        var report = await attempt(item)
        while case .queued(let reason) = report.state, reason == .unreachable || reason == .serverBusy {
            let next = report.item.nextAttemptAt
            if let deadline, next > deadline { return report }
            do {
                try await clock.sleep(for: max(0, next.timeIntervalSince(clock.now())))
            } catch {
                return report   // cancelled: the item stays queued on disk
            }
            report = await attempt(report.item)
        }
        return report
    }

    /// Sends everything queued for the logged-in user (at launch, on a background wake,
    /// `portaria client sync`), each until terminal or `deadline`.
    public func sync(until deadline: Date?) async -> [ResolveReport] {
        let items = (try? store.all()) ?? []
        var reports: [ResolveReport] = []
        for item in items {
            reports.append(await send(item, until: deadline))
        }
        return reports
    }

    /// One attempt; the store reflects its result before this returns.
    public func attempt(_ stored: QueuedResolution) async -> ResolveReport {
        var item = stored
        let zone = await timeZone(item.companyID)
        guard !inFlight.contains(item.idempotencyKey) else {
            // Another task of this process is sending it right now; look again shortly
            // (its answer will have landed, and the store will say so).
            item.nextAttemptAt = clock.now().addingTimeInterval(0.5)
            return queued(item, .serverBusy, zone: zone)
        }
        inFlight.insert(item.idempotencyKey)
        defer { inFlight.remove(item.idempotencyKey) }

        let current = await http.userID
        guard current == item.userID else {
            item.lastProblem = current == nil ? .needsLogin : .otherUser
            try? store.save(item)
            return queued(item, item.lastProblem!, zone: zone)
        }

        item.attempts += 1
        let answer: ClientHTTPResponse
        do {
            answer = try await http.sendAuthorized(request(for: item))
        } catch is SessionManager.SessionError {
            item.lastProblem = .needsLogin
            item.lastDetail = "session ended"
            try? store.save(item)
            return queued(item, .needsLogin, zone: zone)
        } catch {
            return retry(item, .unreachable, detail: String(describing: error), retryAfter: nil, zone: zone)
        }

        switch await classify(answer, item: item) {
        case .terminal(let outcome):
            try? store.remove(idempotencyKey: item.idempotencyKey)
            return ResolveReport(item: item, state: .finished(outcome), sentence: sentence(outcome, item: item, zone: zone))
        case .retry(let reason, let retryAfter):
            return retry(item, reason, detail: "HTTP \(answer.status) \(answer.errorBody?.code.rawValue ?? "")",
                         retryAfter: retryAfter, zone: zone)
        case .waitForLogin:
            item.lastProblem = .needsLogin
            item.lastDetail = "HTTP 401 after a refresh"
            try? store.save(item)
            return queued(item, .needsLogin, zone: zone)
        }
    }

    private func request(for item: QueuedResolution) throws -> ClientHTTPRequest {
        var headers = ["Idempotency-Key": item.idempotencyKey]
        if let companyID = item.companyID { headers["X-Company-Id"] = companyID }
        return try ClientHTTPRequest(APIRoutes.resolveVisit(id: item.visitID), json: ResolveVisitRequest(action: item.action, via: item.via),
                                     headers: headers)
    }

    private func retry(_ stored: QueuedResolution, _ reason: ClientText.QueueReason, detail: String,
                       retryAfter: TimeInterval?, zone: TimeZone) -> ResolveReport {
        var item = stored
        let wait = policy.delay(afterFailures: max(1, item.attempts), retryAfter: retryAfter, random: random.next())
        item.nextAttemptAt = clock.now().addingTimeInterval(wait)
        item.lastProblem = reason
        item.lastDetail = String(detail.prefix(200))
        // If this save fails the previous copy (same key, same decision) is still on disk.
        try? store.save(item)
        return queued(item, reason, zone: zone)
    }

    private func queued(_ item: QueuedResolution, _ reason: ClientText.QueueReason, zone: TimeZone) -> ResolveReport {
        ResolveReport(item: item, state: .queued(reason), sentence: ClientText.queued(item.action, because: reason))
    }

    private func sentence(_ outcome: ResolveOutcome, item: QueuedResolution, zone: TimeZone) -> String {
        switch outcome {
        case .resolved(let action, let kind, _): return ClientText.resolved(action, kind: kind)
        case .alreadyResolved(let resolution): return ClientText.alreadyResolved(resolution, myUserID: item.userID, timeZone: zone)
        case .closed(let status, let kind, let at): return ClientText.closed(status, kind: kind, at: at, timeZone: zone)
        case .refused(let reason): return ClientText.refused(reason)
        }
    }

    // MARK: Reading answers

    private enum Verdict {
        case terminal(ResolveOutcome)
        case retry(ClientText.QueueReason, retryAfter: TimeInterval?)
        case waitForLogin
    }

    private func classify(_ answer: ClientHTTPResponse, item: QueuedResolution) async -> Verdict {
        let retryAfter = answer.header("retry-after").flatMap { RetryAfterHeader.seconds($0, now: clock.now()) }
        if answer.isSuccess {
            let visit = try? JSONCoding.decoder().decode(Visit.self, from: answer.body)
            return .terminal(.resolved(item.action, kind: visit?.kind ?? .visit,
                                       replayed: answer.header("idempotent-replayed") == "true"))
        }
        let error = answer.errorBody
        switch (answer.status, error?.code) {
        case (409, ErrorCode.visitAlreadyResolved?):
            if let resolution = error.flatMap(Self.resolution(in:)) { return .terminal(.alreadyResolved(resolution)) }
            return await fromVisit(item) ?? .terminal(.refused(.invalid))
        case (409, ErrorCode.visitClosed?):
            let status = error?.details["status"]?.stringValue.flatMap(VisitStatus.init(rawValue:)) ?? .cancelled
            // The 409 says what happened, not when: the visit says when.
            if case .terminal(let outcome)? = await fromVisit(item) { return .terminal(outcome) }
            return .terminal(.closed(status, kind: nil, at: nil))
        case (409, ErrorCode.requestInProgress?):
            // Our own earlier attempt (same key) is still running on the server.
            return .retry(.serverBusy, retryAfter: retryAfter ?? 1)
        case (409, _):
            return await fromVisit(item) ?? .terminal(.refused(.invalid))
        case (401, _):
            return .waitForLogin
        case (403, _):
            return .terminal(.refused(.forbidden))
        case (404, _):
            // A 404 with the API's envelope is the server's word; one without it (a
            // proxy, a captive portal) says nothing about the visit.
            return error == nil ? .retry(.serverBusy, retryAfter: retryAfter) : .terminal(.refused(.visitNotFound))
        case (408, _), (425, _), (429, _), (500...599, _):
            return .retry(.serverBusy, retryAfter: retryAfter)
        default:
            return error == nil ? .retry(.serverBusy, retryAfter: retryAfter) : .terminal(.refused(.invalid))
        }
    }

    /// `VISIT_ALREADY_RESOLVED` details: `resolved_by {id, name}`, `resolved_at`, `action`, `via`.
    static func resolution(in error: ErrorBody) -> VisitResolution? {
        guard case .object(let by)? = error.details["resolved_by"],
              let id = by["id"]?.stringValue, let name = by["name"]?.stringValue,
              let at = error.details["resolved_at"]?.stringValue.flatMap(Timestamp.parse),
              let action = error.details["action"]?.stringValue.flatMap(ResolutionAction.init(rawValue:)) else { return nil }
        let via = error.details["via"]?.stringValue.flatMap(ResolutionChannel.init(rawValue:)) ?? (id == PersonRef.automatic.id ? .auto : .app)
        return VisitResolution(action: action, by: PersonRef(id: id, name: name), at: at, via: via)
    }

    /// Reads the visit to say what happened to it; nil when it cannot be read now.
    private func fromVisit(_ item: QueuedResolution) async -> Verdict? {
        var headers: [String: String] = [:]
        if let companyID = item.companyID { headers["X-Company-Id"] = companyID }
        guard let visit = try? await http.send(APIRoutes.visit(id: item.visitID), headers: headers) else { return nil }
        if let resolution = visit.resolution { return .terminal(.alreadyResolved(resolution)) }
        guard visit.status.isTerminal else { return nil }
        return .terminal(.closed(visit.status, kind: visit.kind, at: visit.updatedAt))
    }
}
