import Foundation
import PortariaCore
import PortariaWebSocket

/// Limits of the realtime stream.
public struct RealtimeLimits: Sendable {
    /// Sockets one user may hold at once (phones, tablets, browser tabs).
    public var connectionsPerUser = 10
    /// Sockets one visitor token may hold.
    public var connectionsPerVisit = 4
    /// How far back `?since=` may reach, in company events; older → `resync_required`.
    public var replayWindow = 1000
    /// How often live sockets' sessions are re-checked (logout, reuse detection).
    public var sessionCheckInterval: Duration = .seconds(10)
    /// What one socket may send. Client messages are small (the largest, an SDP offer, is
    /// a few KiB) and rare (a ping every 30 s, a burst of ICE candidates as a call starts):
    /// anything beyond is abuse, and it would otherwise queue in front of every company's
    /// events, since one task serves the whole feed.
    public var maxClientMessageBytes = 64 * 1024
    /// Sustained client messages per second per socket, and the burst above it.
    public var clientMessagesPerSecond = 20.0
    public var clientMessageBurst = 60.0
    /// Messages of one socket waiting for the feed task; more closes the socket (1008).
    public var maxPendingPerSocket = 32
    /// Forward only TURN relay candidates from residents to visitors (set when TURN is
    /// configured; see `CandidatePrivacy`).
    public var residentRelayOnly = false
    public init() {}
}

/// Admission of one socket's messages into the feed: a token bucket plus a bound on the
/// messages still waiting to be handled. Called on the WebSocket loop thread (admit) and
/// the feed task (done), hence the lock.
final class InboundBudget: Sendable {
    private struct State {
        var tokens: Double
        var refilledAt: ContinuousClock.Instant
        var pending = 0
    }
    private let state: Locked<State>
    private let limits: RealtimeLimits

    init(limits: RealtimeLimits, now: ContinuousClock.Instant = .now) {
        self.limits = limits
        state = Locked(State(tokens: limits.clientMessageBurst, refilledAt: now))
    }

    /// Whether one more message may go to the feed now; counts it as pending if so.
    func admit(now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in
            let elapsed = now - state.refilledAt
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            state.tokens = min(limits.clientMessageBurst, state.tokens + max(0, seconds) * limits.clientMessagesPerSecond)
            state.refilledAt = now
            guard state.tokens >= 1, state.pending < limits.maxPendingPerSocket else { return false }
            state.tokens -= 1
            state.pending += 1
            return true
        }
    }

    /// The feed handled one admitted message.
    func done() {
        state.withLock { $0.pending -= 1 }
    }
}

/// Fans committed visit events out to WebSocket subscribers.
///
/// The `events` table is the single source: a commit anywhere (this instance, through the
/// in-process bus; another instance, through PostgreSQL NOTIFY) only *pokes* the feed,
/// which then reads the company's events after the last one it delivered. Because event
/// `seq` order equals commit order within a company (see EventLog), reading forward from
/// the last seq never skips an event, and the same read serves `?since=` replay.
///
/// All state belongs to one task that handles commands in order, so a join (replay) and
/// a poke (live delivery) never interleave and a subscriber never sees an event twice or
/// out of order.
public final class RealtimeFeed: Sendable {
    enum Command: Sendable {
        case join(WebSocketConnection, Subscriber, since: Int64?)
        case leave(WebSocketConnection)
        case poke(companyID: String)
        case pokeAll
        case checkSessions
        case endSession(String)
        case received(WebSocketConnection, String, InboundBudget)
        case call([CallDirective])
        /// A `portaria_calls` notification from another instance (decision 0056).
        case relayed(String)
        /// The calls' last directives before a stop; `done` runs once they are performed.
        case endCalls([CallDirective], done: @Sendable () -> Void)
    }

    private let commands: AsyncStream<Command>.Continuation
    private let tasks = Locked<[Task<Void, Never>]>([])
    let limits: RealtimeLimits

    /// Video calls between the gate page and the device that answered (decision 0009).
    let calls: LiveCallRegistry
    /// Names this process in the calls it owns across instances (decision 0056).
    public let instanceID: String

    private let stream: AsyncStream<Command>
    private let started = Locked(false)
    private let database: any SQLDatabase
    private let hub: WebSocketHub
    private let log: Log
    /// SQLite: sees auth changes committed by any process (`portaria admin set-password`
    /// included), so a delivery first closes the sockets whose session just ended.
    private let authChanges: SQLiteAuthWatcher?

    public convenience init(database: any SQLDatabase, hub: WebSocketHub, limits: RealtimeLimits = .init(), log: Log = .shared,
                            instanceID: String = UUID().uuidString.lowercased()) {
        self.init(database: database, hub: hub, limits: limits, log: log, instanceID: instanceID, authChanges: nil)
    }

    init(database: any SQLDatabase, hub: WebSocketHub, limits: RealtimeLimits = .init(), log: Log = .shared,
         instanceID: String = UUID().uuidString.lowercased(), authChanges: SQLiteAuthWatcher?) {
        self.authChanges = authChanges
        self.limits = limits
        self.instanceID = instanceID
        self.calls = LiveCallRegistry(clock: ContinuousClock(), residentRelayOnly: limits.residentRelayOnly)
        (stream, commands) = AsyncStream<Command>.makeStream()
        self.database = database
        self.hub = hub
        self.log = log
    }

    /// Starts handling commands (those sent before are queued until now), the call
    /// timers and the periodic session check.
    public func start() {
        guard started.withLock({ started in defer { started = true }; return !started }) else { return }
        let (database, hub, calls, limits, log, stream, continuation) = (database, hub, calls, limits, log, stream, commands)
        let (instanceID, authChanges) = (instanceID, authChanges)
        tasks.withLock { tasks in
            let worker = Task {
                let state = FeedState(database: database, hub: hub, calls: calls, limits: limits, log: log, instanceID: instanceID,
                                      authChanges: authChanges)
                // AsyncStream hands out what it buffered even after finish() and cancellation:
                // a stop drops the backlog instead of working through it.
                for await command in stream {
                    if Task.isCancelled { break }
                    await state.handle(command)
                }
            }
            // Call timeouts (negotiation, reconnection grace, maximum length).
            let timers = Task {
                await calls.run(every: .milliseconds(500)) { directives in
                    if !directives.isEmpty { continuation.yield(.call(directives)) }
                }
            }
            let sessions = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: limits.sessionCheckInterval)
                    continuation.yield(.checkSessions)
                }
            }
            tasks += [worker, sessions, timers]
        }
    }

    /// Subscribes the bus of this process: every committed event pokes its company.
    public func follow(_ bus: EventBus) {
        let stream = bus.subscribe()
        let task = Task { [commands] in
            for await event in stream { commands.yield(.poke(companyID: event.companyID)) }
        }
        tasks.withLock { $0.append(task) }
    }

    public func poke(companyID: String) { commands.yield(.poke(companyID: companyID)) }
    /// Closes the sockets of a session that ended on this instance (other instances
    /// notice at their next periodic check).
    public func endSession(_ sessionID: String) { commands.yield(.endSession(sessionID)) }
    /// A session or a user's password changed somewhere (PostgreSQL's `portaria_auth`):
    /// the sessions of live sockets are checked now, before any later event is delivered
    /// (commands run in order), not at the next periodic check.
    public func authChanged() { commands.yield(.checkSessions) }
    /// After a lost cross-instance connection: any company may have missed events.
    public func pokeAll() { commands.yield(.pokeAll) }
    /// A call message from another instance (the `portaria_calls` channel).
    public func relayed(_ payload: String) { commands.yield(.relayed(payload)) }
    func join(_ connection: WebSocketConnection, _ subscriber: Subscriber, since: Int64?) {
        commands.yield(.join(connection, subscriber, since: since))
    }
    func leave(_ connection: WebSocketConnection) { commands.yield(.leave(connection)) }
    /// A client message, already admitted by the socket's `budget` (released when handled).
    func received(_ connection: WebSocketConnection, _ text: String, budget: InboundBudget) {
        commands.yield(.received(connection, text, budget))
    }

    /// Ends the feed and waits for its tasks: the command handled when the stop came
    /// finishes (the rest are dropped), so nothing here writes to a socket or reads the
    /// database after this returns.
    public func stop() async {
        await endCalls()
        commands.finish()
        let running = tasks.withLock { tasks -> [Task<Void, Never>] in
            defer { tasks = [] }
            tasks.forEach { $0.cancel() }
            return tasks
        }
        for task in running { await task.value }
    }

    /// Longest a stop waits for the calls' last frames, timeline rows and ownership
    /// releases: a database that does not answer must not hold the stop.
    static let endCallsTimeout: Duration = .seconds(3)

    /// Ends this instance's calls as the feed's last work (decision 0056): both sides get
    /// `call.ended` (`server_shutdown`) now rather than after their own timeouts — a
    /// participant on another instance through the relay, while the database and the
    /// listener still run (the feed stops first) — the timeline says why, and the `calls`
    /// rows go. The directives run on the feed's task, in order after what is queued.
    private func endCalls() async {
        guard started.current else { return }
        let directives = await calls.closeAll()
        guard !directives.isEmpty else { return }
        let (performed, finish) = AsyncStream<Never>.makeStream()
        commands.yield(.endCalls(directives, done: { finish.finish() }))
        let timeout = Task {
            try? await Task.sleep(for: Self.endCallsTimeout)
            finish.finish()
        }
        for await _ in performed {}
        timeout.cancel()
    }
}

/// The feed's state, touched only by the feed's worker task.
private final class FeedState {
    struct Member {
        let connection: WebSocketConnection
        let subscriber: Subscriber
        var peer: CallPeer? { subscriber.callPeer }
        /// The last seq this socket received (replay or live).
        var lastDelivered: Int64
    }

    struct Company {
        /// The last seq delivered live to this company's sockets.
        var lastSeq: Int64
        var members: [ObjectIdentifier: Member] = [:]
    }

    let database: any SQLDatabase
    let hub: WebSocketHub
    let calls: LiveCallRegistry
    let limits: RealtimeLimits
    let log: Log
    let authChanges: SQLiteAuthWatcher?
    var companies: [String: Company] = [:]
    /// Socket → company, to find a leaving socket.
    var companyOf: [ObjectIdentifier: String] = [:]
    /// Open sockets per user (or per visitor token), for the per-user limit without
    /// scanning every socket on each join.
    var socketsPerKey: [String: Int] = [:]

    // MARK: Calls across instances (PostgreSQL; decision 0056)

    /// Whether other instances may hold a call's other participant.
    let relaysCalls: Bool
    let instanceID: String
    let callStore: CallRelayStore
    /// Open sockets per call participant, so a relayed frame for nobody here costs a lookup.
    var socketsPerPeer: [CallPeer: Int] = [:]
    /// Calls owned here: their company, and the other instances that hold a participant.
    struct OwnedCall {
        var companyID: String
        var remote: [CallPeer: Set<String>] = [:]
    }
    var ownedCalls: [String: OwnedCall] = [:]
    /// Calls another instance owns that a socket here takes part in, by visit.
    var remoteCalls: [String: CallRelayStore.Call] = [:]

    static func limitKey(_ subscriber: Subscriber) -> String {
        if case .visitor(let visitID) = subscriber.role { return "visit:" + visitID }
        return "user:" + (subscriber.userID ?? "")
    }

    init(database: any SQLDatabase, hub: WebSocketHub, calls: LiveCallRegistry, limits: RealtimeLimits, log: Log, instanceID: String,
         authChanges: SQLiteAuthWatcher?) {
        self.authChanges = authChanges
        self.relaysCalls = database.dialect.isSharedByInstances
        self.instanceID = instanceID
        self.callStore = CallRelayStore(database: database)
        self.database = database
        self.hub = hub
        self.calls = calls
        self.limits = limits
        self.log = log
    }

    func handle(_ command: RealtimeFeed.Command) async {
        do {
            switch command {
            case .join(let connection, let subscriber, let since):
                do { try await join(connection, subscriber, since: since) } catch {
                    // Never leave an upgraded socket that will receive nothing: the client
                    // reconnects with `since` and loses nothing.
                    connection.close(code: .tryAgainLater, reason: "try again")
                    throw error
                }
            case .leave(let connection): await leave(connection)
            case .poke(let companyID): try await deliver(companyID: companyID)
            case .pokeAll: for companyID in companies.keys { try await deliver(companyID: companyID) }
            case .checkSessions: try await checkSessions()
            case .endSession(let sessionID): await close(sessions: [sessionID])
            case .received(let connection, let text, let budget):
                defer { budget.done() }
                await received(connection, text)
            case .call(let directives): try await perform(directives)
            case .relayed(let payload): try await relayed(payload)
            case .endCalls(let directives, let done):
                defer { done() }
                try await perform(directives)
            }
        } catch {
            // A database hiccup must not stop the feed; the next poke reads forward again.
            log.error("realtime feed", ["error": .string(String(describing: error))])
        }
    }

    // MARK: Joining and replay

    func join(_ connection: WebSocketConnection, _ subscriber: Subscriber, since: Int64?) async throws {
        let key = ObjectIdentifier(connection)
        let limitKey = Self.limitKey(subscriber)
        let limit = subscriber.userID == nil ? limits.connectionsPerVisit : limits.connectionsPerUser
        if socketsPerKey[limitKey, default: 0] >= limit {
            connection.close(code: .policyViolation, reason: "too many connections")
            return
        }
        let companyID = subscriber.companyID
        if companies[companyID] == nil {
            companies[companyID] = Company(lastSeq: try await latestSeq(companyID))
        }
        var member = Member(connection: connection, subscriber: subscriber, lastDelivered: companies[companyID]!.lastSeq)
        if let since, since > member.lastDelivered {
            // Another instance may already have delivered newer events than this one has
            // heard of: the log, not this instance's memory, says whether `since` exists.
            if since <= (try await latestSeq(companyID)) { member.lastDelivered = since }
        }
        if let since, since != member.lastDelivered {
            let window = limits.replayWindow
            // The events first, then the pruned-through mark: a sweep that commits between
            // the two reads (PostgreSQL reads per statement) then shows as pruned, and the
            // client resyncs instead of missing what was deleted.
            let (missed, prunedThrough) = since < member.lastDelivered ? try await database.read { db in
                (try EventLog.since(db, companyID: companyID, seq: since, limit: window + 1), try EventLog.prunedThrough(db))
            } : ([], 0)
            if since > member.lastDelivered || missed.count > window || since < prunedThrough {
                // Too far back, pruned (decision 0055), or a seq this log never issued: the
                // client reconciles over REST.
                connection.send(text: JSONValue.object(["type": .string("resync_required"),
                                                        "seq": .number(Double(member.lastDelivered))]).jsonText)
            } else {
                for event in missed where subscriber.sees(event) { connection.send(text: subscriber.frame(for: event)) }
                member.lastDelivered = max(member.lastDelivered, missed.last?.seq ?? since)
            }
        }
        companies[companyID]!.members[key] = member
        companyOf[key] = companyID
        socketsPerKey[limitKey, default: 0] += 1
        if let peer = member.peer { socketsPerPeer[peer, default: 0] += 1 }
        // From here every commit reaches this socket. Saying so lets a client (and a test)
        // know when "live" starts instead of guessing with a sleep.
        connection.send(text: JSONValue.object(["type": .string("subscribed"),
                                                "seq": .number(Double(member.lastDelivered))]).jsonText)
        if let peer = member.peer {
            try await perform(await calls.participantJoined(peer))
            if relaysCalls, socketsPerPeer[peer] == 1 { try await announce(peer, companyID: companyID, present: true) }
        }
        // A visit that closed between the ticket check and this join: the replay (if any)
        // is queued, then the visitor's socket closes as it would have at the event.
        if case .visitor(let visitID) = subscriber.role, try await visitIsClosed(visitID) {
            await closeVisitorSockets(visitID: visitID, companyID: companyID)
        }
    }

    func visitIsClosed(_ visitID: String) async throws -> Bool {
        let status = try await database.read { db in
            try db.queryOne("SELECT status FROM visits WHERE id = ?", .text(visitID))?.string("status")
        }
        return status.flatMap(VisitStatus.init(rawValue:))?.isTerminal ?? true
    }

    /// The newest seq the log holds for a company.
    func latestSeq(_ companyID: String) async throws -> Int64 {
        try await database.read { db in
            try db.queryOne("SELECT MAX(seq) AS seq FROM events WHERE company_id = ?", .text(companyID))?.int("seq") ?? 0
        }
    }

    func leave(_ connection: WebSocketConnection) async {
        let key = ObjectIdentifier(connection)
        guard let companyID = companyOf.removeValue(forKey: key) else { return }
        let removed = companies[companyID]?.members.removeValue(forKey: key)
        let peer = removed?.peer
        if let subscriber = removed?.subscriber {
            let limitKey = Self.limitKey(subscriber)
            socketsPerKey[limitKey, default: 1] -= 1
            if socketsPerKey[limitKey] == 0 { socketsPerKey.removeValue(forKey: limitKey) }
            if let peer = subscriber.callPeer {
                socketsPerPeer[peer, default: 1] -= 1
                if socketsPerPeer[peer] == 0 { socketsPerPeer.removeValue(forKey: peer) }
            }
        }
        if companies[companyID]?.members.isEmpty == true { companies.removeValue(forKey: companyID) }
        // The call hears of a participant leaving only when its last socket closed.
        if let peer, sockets(of: peer).isEmpty {
            // Still connected to another instance: the call waits for nothing.
            if !isRemotelyPresent(peer) { try? await perform(await calls.participantLeft(peer)) }
            if relaysCalls { try? await announce(peer, companyID: companyID, present: false) }
        }
    }

    func sockets(of peer: CallPeer) -> [Member] {
        companies.values.flatMap(\.members.values).filter { $0.peer == peer }
    }

    // MARK: Live delivery

    func deliver(companyID: String) async throws {
        guard var company = companies[companyID] else { return }
        // A password set by `portaria admin` (another process) ends sessions without telling
        // this one: before anything reaches a socket, sessions are checked if auth changed.
        if let authChanges, !company.members.isEmpty, authChanges.check() != .unchanged {
            try await checkSessions()
            guard let current = companies[companyID] else { return }
            company = current
        }
        var after = company.lastSeq
        while true {
            let events = try await database.read { [after] db in try EventLog.since(db, companyID: companyID, seq: after, limit: 500) }
            guard !events.isEmpty else { return }
            // A call opens before anyone hears visit.answered: the gate page sends its offer
            // the moment that frame arrives, and found no call (CALL_NOT_FOUND) when the call
            // was opened after the delivery.
            for event in events where event.visitEventType == .answered { await followCallLogged(event) }
            guard var current = companies[companyID] else { return }
            for event in events {
                // Frames differ only for visitors; everyone else shares one text and one hop.
                var shared: [WebSocketConnection] = []
                var sharedFrame: String?
                for (key, member) in current.members where event.seq > member.lastDelivered && member.subscriber.sees(event) {
                    if case .visitor = member.subscriber.role {
                        member.connection.send(text: member.subscriber.frame(for: event))
                    } else {
                        if sharedFrame == nil { sharedFrame = member.subscriber.frame(for: event) }
                        shared.append(member.connection)
                    }
                    current.members[key]?.lastDelivered = event.seq
                }
                if let sharedFrame, !shared.isEmpty { await hub.broadcast(text: sharedFrame, to: shared) }
                current.lastSeq = event.seq
                after = event.seq
            }
            companies[companyID] = current
            // Closing a call follows the delivery: the closing frame goes out first.
            for event in events where event.visitEventType != .answered { await followCallLogged(event) }
            if events.count < 500 { return }
        }
    }

    /// One failed call update must not stop the others (nor the next batch).
    private func followCallLogged(_ event: EventRecord) async {
        do { try await followCall(event) } catch {
            log.error("call update failed", ["visit_id": event.visitID.map(JSONValue.string) ?? .null, "error": .string(String(describing: error))])
        }
    }

    // MARK: Video calls

    /// Opens the call when a device answers and ends it when the visit closes.
    func followCall(_ event: EventRecord) async throws {
        guard let visitID = event.visitID else { return }
        switch event.visitEventType {
        case .answered?:
            guard let userID = event.data["by"]?["id"]?.stringValue else { return }
            let peer = CallPeer.resident(userID: userID, deviceID: event.data["device_id"]?.stringValue ?? "default")
            if relaysCalls, try await !claimCall(visitID: visitID, companyID: event.companyID, resident: peer) { return }
            do {
                try await perform(try await calls.start(visitID: visitID, resident: peer, residentPresent: !sockets(of: peer).isEmpty))
            } catch {
                log.warning("call not started", ["visit_id": .string(visitID), "error": .string(String(describing: error))])
            }
        case .resolved?, .cancelled?, .expired?:
            if relaysCalls, let call = remoteCalls.removeValue(forKey: visitID) {
                try await send(.init(kind: .closed, visitID: visitID, companyID: call.companyID, from: instanceID,
                                     to: call.owner, peer: call.resident))
            }
            try await perform(await calls.close(visitID: visitID))
            await closeVisitorSockets(visitID: visitID, companyID: event.companyID)
        default:
            break
        }
    }

    /// A visitor token follows its visit only while it is open: once the closing frame
    /// is queued (delivery runs before this), the gate page's sockets close normally.
    func closeVisitorSockets(visitID: String, companyID: String) async {
        guard let members = companies[companyID]?.members.values else { return }
        for member in members where member.subscriber.role == .visitor(visitID: visitID) {
            member.connection.close(code: .normal, reason: "visit closed")
            await leave(member.connection)
        }
    }

    func perform(_ directives: [CallDirective]) async throws {
        for directive in directives {
            switch directive {
            case .send(let frame, let peer):
                let data = (try? JSONDecoder().decode(JSONValue.self, from: Data(frame.encodedData()))) ?? .object([:])
                for member in sockets(of: peer) {
                    member.connection.send(text: JSONValue.object([
                        "type": .string(frame.type), "seq": .number(Double(member.lastDelivered)), "data": data,
                    ]).jsonText)
                }
                // Like a socket write, a failed relay loses this frame only: the directives
                // after it (the timeline row) still run.
                if relaysCalls {
                    do { try await relayFrame(frame, data: data, to: peer) } catch {
                        log.error("call frame relay failed", ["type": .string(frame.type), "error": .string(String(describing: error))])
                    }
                }
            case .record(let record):
                // The frames matter more than the timeline row: a failed insert is logged,
                // the remaining directives still run.
                do { try await recordAttempt(record) } catch {
                    log.error("call timeline write failed", ["error": .string(String(describing: error))])
                }
                if relaysCalls, case .ended(let visitID, _, _, _) = record.entry, ownedCalls.removeValue(forKey: visitID) != nil {
                    do { try await callStore.ended(visitID: visitID, owner: instanceID) } catch {
                        log.error("call ownership release failed", ["visit_id": .string(visitID), "error": .string(String(describing: error))])
                    }
                }
            }
        }
    }

    /// Calls land in the visit's attempts timeline.
    func recordAttempt(_ record: CallTimelineRecord) async throws {
        let at = Date()
        switch record.entry {
        case .started(let visitID, let resident):
            guard case .resident(let userID, let deviceID) = resident, let visitID = VisitID(rawValue: visitID) else { return }
            try await database.write { db in
                try VisitStore.insertAttempt(db, visitID: visitID, kind: .callStarted, user: PersonRef(id: userID, name: ""),
                                             deviceID: deviceID, channel: "call", at: at)
            }
        case .connected(let visitID):
            guard let visitID = VisitID(rawValue: visitID) else { return }
            try await database.write { db in
                try VisitStore.insertAttempt(db, visitID: visitID, kind: .callConnected, channel: "call", at: at)
            }
        case .ended(let visitID, let reason, let endedBy, let wasConnected):
            // The reason as `call.ended` spells it (`server_shutdown`), never the Swift case name.
            var detail = reason.rawValue
            if let endedBy { detail += " by \(endedBy.rawValue)" }
            if wasConnected, let length = record.connectedFor { detail += " after \(length.components.seconds)s" }
            guard let visitID = VisitID(rawValue: visitID) else { return }
            let text = detail
            try await database.write { db in
                try VisitStore.insertAttempt(db, visitID: visitID, kind: .callEnded, channel: "call", detail: text, at: at)
            }
        }
    }

    // MARK: Calls across instances (decision 0056)

    /// On PostgreSQL a call's state lives on one instance: the first that holds one of its
    /// participants and claims it in `calls`. Returns whether this instance owns it; if
    /// another does, the participants connected here are announced to it.
    func claimCall(visitID: String, companyID: String, resident: CallPeer) async throws -> Bool {
        let local = [CallPeer.visitor(visitID: visitID), resident].filter { isLocal($0, companyID: companyID) }
        // Any instance following the company may claim, participants here or not: when none
        // holds one at this moment (the gate page reconnecting while the resident answers
        // from a VoIP push, before the app has a socket) the call must still exist, as on
        // SQLite; the first insert wins and participants reach the owner through presence.
        guard let call = try await callStore.claim(visitID: visitID, companyID: companyID, resident: resident,
                                                   instance: instanceID, at: Date()) else { return false }
        if call.owner == instanceID {
            ownedCalls[visitID] = OwnedCall(companyID: companyID)
            // A participant whose socket opened elsewhere before this claim was committed
            // found no call then: its instance hears of it now.
            try await send(.init(kind: .claimed, visitID: visitID, companyID: companyID, from: instanceID, peer: resident))
            return true
        }
        remoteCalls[visitID] = call
        for peer in local where call.isParticipant(peer) {
            try await send(.init(kind: .presence, visitID: visitID, companyID: companyID, from: instanceID,
                                 to: call.owner, peer: peer, present: true))
        }
        return false
    }

    /// Tells the owners of calls `peer` takes part in that its first socket here opened
    /// (looking the calls up: the call may have started before the socket came) or that
    /// its last one closed.
    func announce(_ peer: CallPeer, companyID: String, present: Bool) async throws {
        var known = remoteCalls.values.filter { $0.companyID == companyID && $0.isParticipant(peer) }
        if present {
            for call in try await callStore.calls(of: peer, companyID: companyID, notOwnedBy: instanceID)
            where ownedCalls[call.visitID] == nil && remoteCalls[call.visitID] == nil {
                remoteCalls[call.visitID] = call
                known.append(call)
            }
        }
        for call in known {
            try await send(.init(kind: .presence, visitID: call.visitID, companyID: companyID, from: instanceID,
                                 to: call.owner, peer: peer, present: present))
        }
    }

    func isLocal(_ peer: CallPeer, companyID: String) -> Bool {
        guard socketsPerPeer[peer] != nil else { return false }
        return companies[companyID]?.members.values.contains { $0.peer == peer } ?? false
    }

    /// Whether another instance holds a socket of `peer` in a call owned here.
    func isRemotelyPresent(_ peer: CallPeer) -> Bool {
        ownedCalls.values.contains { $0.remote[peer]?.isEmpty == false }
    }

    /// A frame the registry here addressed to `peer`, for the instances that hold it.
    func relayFrame(_ frame: CallFrame, data: JSONValue, to peer: CallPeer) async throws {
        let ownedCalls = ownedCalls
        guard let visitID = CallRelayRoute.visitID(for: frame, owned: Array(ownedCalls.keys),
                                                    peerIsElsewhere: { ownedCalls[$0]?.remote[peer]?.isEmpty == false }),
              let owned = ownedCalls[visitID] else { return }
        try await send(.init(kind: .frame, visitID: visitID, companyID: owned.companyID, from: instanceID,
                             peer: peer, type: frame.type, data: data.jsonText))
    }

    /// A validated frame from a socket here for a call this instance does not hold: to its
    /// owner if the sender takes part in it, else the same `CALL_NOT_FOUND` as for no call.
    func forward(_ signal: CallSignal, type: String, data: [UInt8], from peer: CallPeer, companyID: String) async throws {
        var call = remoteCalls[signal.visitID]
        if call == nil, let stored = try await callStore.call(visitID: signal.visitID),
           stored.owner != instanceID, stored.companyID == companyID, stored.isParticipant(peer) {
            // The call began before this instance heard of it: say who is here first.
            remoteCalls[signal.visitID] = stored
            call = stored
            try await send(.init(kind: .presence, visitID: stored.visitID, companyID: companyID, from: instanceID,
                                 to: stored.owner, peer: peer, present: true))
        }
        guard let call, call.companyID == companyID, call.isParticipant(peer) else {
            try await perform([.send(.error(CallSession.notFound(signal.type, signal.visitID)), to: peer)])
            return
        }
        try await send(.init(kind: .signal, visitID: call.visitID, companyID: companyID, from: instanceID,
                             to: call.owner, peer: peer, type: type, data: String(decoding: data, as: UTF8.self)))
    }

    func send(_ message: CallRelayMessage) async throws {
        try await callStore.send(message, at: Date())
    }

    /// A notification on `portaria_calls`. What is not for this instance is dropped before
    /// any database read.
    func relayed(_ payload: String) async throws {
        guard let routing = CallRelayMessage.parse(payload), routing.from != instanceID else { return }
        switch routing.kind {
        case .signal, .presence:
            guard routing.to == instanceID, let owned = ownedCalls[routing.visitID], owned.companyID == routing.companyID,
                  let session = await calls.session(of: routing.visitID), session.isParticipant(routing.peer) else { return }
            if routing.kind == .presence {
                try await presence(of: routing.peer, on: routing.from, visitID: routing.visitID, present: routing.present ?? false)
                return
            }
            guard let message = try await whole(routing), let type = message.type, let data = message.data else { return }
            try await perform(await calls.receive(type: type, data: Array(data.utf8), from: routing.peer))
        case .closed:
            // The log, not the message, says whether the visit closed.
            guard routing.to == instanceID, ownedCalls[routing.visitID]?.companyID == routing.companyID,
                  try await visitIsClosed(routing.visitID) else { return }
            try await perform(await calls.close(visitID: routing.visitID))
        case .claimed:
            guard case .resident = routing.peer, ownedCalls[routing.visitID] == nil else { return }
            let call = CallRelayStore.Call(visitID: routing.visitID, companyID: routing.companyID, owner: routing.from, resident: routing.peer)
            for peer in [CallPeer.visitor(visitID: routing.visitID), routing.peer] where isLocal(peer, companyID: routing.companyID) {
                remoteCalls[routing.visitID] = call
                try await send(.init(kind: .presence, visitID: routing.visitID, companyID: routing.companyID, from: instanceID,
                                     to: routing.from, peer: peer, present: true))
            }
        case .frame:
            guard isLocal(routing.peer, companyID: routing.companyID) else { return }
            guard let message = try await whole(routing), let type = message.type, let text = message.data,
                  let data = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(text.utf8)) else { return }
            for member in companies[routing.companyID].map({ Array($0.members.values) }) ?? [] where member.peer == routing.peer {
                member.connection.send(text: JSONValue.object([
                    "type": .string(type), "seq": .number(Double(member.lastDelivered)), "data": data,
                ]).jsonText)
            }
            if type == CallMessageType.ended.rawValue { remoteCalls.removeValue(forKey: routing.visitID) }
        }
    }

    /// The message itself: inline, or fetched from `call_relay` when it was too large.
    func whole(_ routing: CallRelayMessage) async throws -> CallRelayMessage? {
        guard let ref = routing.ref else { return routing }
        guard let message = try await callStore.body(ref),
              message.kind == routing.kind, message.visitID == routing.visitID, message.companyID == routing.companyID,
              message.from == routing.from, message.peer == routing.peer else { return nil }
        return message
    }

    /// A participant's sockets came or went on another instance: the registry hears of it
    /// when the participant is connected nowhere else (or no longer anywhere).
    func presence(of peer: CallPeer, on instance: String, visitID: String, present: Bool) async throws {
        let wasPresent = !sockets(of: peer).isEmpty || isRemotelyPresent(peer)
        if present {
            ownedCalls[visitID]?.remote[peer, default: []].insert(instance)
        } else {
            ownedCalls[visitID]?.remote[peer]?.remove(instance)
        }
        let isPresent = !sockets(of: peer).isEmpty || isRemotelyPresent(peer)
        if isPresent && !wasPresent {
            // A participant back (or connected elsewhere) gets what was queued for it.
            try await perform(await calls.participantJoined(peer))
        } else if wasPresent && !isPresent {
            try await perform(await calls.participantLeft(peer))
        }
    }

    // MARK: Sessions

    /// Closes sockets whose session ended (logout, refresh-token reuse, disabled user).
    func checkSessions() async throws {
        if relaysCalls {
            // Housekeeping must not cost the session check below its turn.
            do { try await callStore.sweep(now: Date()) } catch {
                log.error("call relay sweep failed", ["error": .string(String(describing: error))])
            }
        }
        let sessions = Array(Set(companies.values.flatMap(\.members.values).compactMap(\.subscriber.sessionID)))
        guard !sessions.isEmpty else { return }
        let live = try await SessionStore(database: database).liveSessionIDs(among: sessions, at: Date())
        await close(sessions: Set(sessions).subtracting(live))
        checks += 1
        if checks % 6 == 0 { try await checkScopes() }
        // A missed NOTIFY (a silently dead connection) must not stall delivery for long.
        if database.dialect.isSharedByInstances {
            for companyID in companies.keys { try await deliver(companyID: companyID) }
        }
    }

    /// Session checks since start; every sixth also re-checks what sockets may see.
    var checks = 0

    /// A socket keeps the scope it had when it connected; a resident who moved out, or an
    /// operator whose rights were taken away, must stop receiving within a minute. Sockets
    /// whose scope changed are closed (1008): the client reconnects and gets the new one.
    func checkScopes() async throws {
        let accounts = AccountStore(database: database)
        var groups: [String: (userID: String, companyID: String)] = [:]
        for company in companies.values {
            for member in company.members.values {
                guard let userID = member.subscriber.userID else { continue }
                groups[userID + "|" + member.subscriber.companyID] = (userID, member.subscriber.companyID)
            }
        }
        var changed = Set<String>()
        for (key, group) in groups {
            let membership = try await accounts.membership(userID: group.userID, companyID: group.companyID)
            let current = membership.map { Subscriber(userID: group.userID, sessionID: nil, membership: $0) }
            let stale = companies[group.companyID]?.members.values.contains { member in
                member.subscriber.userID == group.userID
                    && (current == nil || member.subscriber.role != current!.role || member.subscriber.seesPushHealth != current!.seesPushHealth)
            } ?? false
            if stale { changed.insert(key) }
        }
        guard !changed.isEmpty else { return }
        for company in companies.values {
            for member in company.members.values {
                guard let userID = member.subscriber.userID, changed.contains(userID + "|" + member.subscriber.companyID) else { continue }
                member.connection.close(code: .policyViolation, reason: "permissions changed")
                await leave(member.connection)
            }
        }
    }

    func close(sessions ended: Set<String>) async {
        guard !ended.isEmpty else { return }
        for company in companies.values {
            for member in company.members.values where member.subscriber.sessionID.map(ended.contains) == true {
                member.connection.close(code: .policyViolation, reason: "session ended")
                await leave(member.connection)
            }
        }
    }

    // MARK: Messages from clients

    func received(_ connection: WebSocketConnection, _ text: String) async {
        switch RealtimeClientMessage.parse(text) {
        case .invalid:
            connection.send(text: Self.error("INVALID_MESSAGE", "frames are JSON objects with a string \"type\""))
        case .ping:
            connection.send(text: JSONValue.object(["type": .string("pong")]).jsonText)
        case .call(let type, let data):
            let key = ObjectIdentifier(connection)
            guard let companyID = companyOf[key], let peer = companies[companyID]?.members[key]?.peer else {
                connection.send(text: Self.error("CALL_NOT_FOUND", "this socket is not part of a call"))
                return
            }
            let signal: CallSignal
            do { signal = try CallSignal.decode(type: type, data: data, limits: calls.signalLimits) } catch {
                try? await perform([.send(.error(error.error), to: peer)])
                return
            }
            if relaysCalls, await calls.session(of: signal.visitID) == nil {
                try? await forward(signal, type: type, data: data, from: peer, companyID: companyID)
                return
            }
            try? await perform(await calls.handle(signal, from: peer))
        case .unknown(let type):
            connection.send(text: Self.error("UNKNOWN_MESSAGE_TYPE", "unknown message type \(type.prefix(40))"))
        }
    }

    static func error(_ code: String, _ message: String) -> String {
        JSONValue.object(["type": .string("error"), "data": .object(["code": .string(code), "message": .string(message)])]).jsonText
    }
}

/// Which call a frame for a participant travels under to the instances holding that
/// participant's other sockets (decision 0056): the frame's own call — a resident may take
/// part in two calls owned here (two visits at once), and a frame of one must not travel
/// under the other's id. An error frame that names no visit goes with the first owned call
/// (by visit id) in which the participant is connected elsewhere.
enum CallRelayRoute {
    static func visitID(for frame: CallFrame, owned: [String], peerIsElsewhere: (String) -> Bool) -> String? {
        if let visitID = frame.visitID {
            return owned.contains(visitID) && peerIsElsewhere(visitID) ? visitID : nil
        }
        return owned.sorted().first(where: peerIsElsewhere)
    }
}
