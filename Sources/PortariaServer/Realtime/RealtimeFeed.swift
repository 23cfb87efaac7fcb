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

/// Work that shares the feed's task and hears of its sockets and deliveries. Video calls
/// (`Calls/RealtimeCalls`) are the one in use: calls use the feed, the feed knows nothing
/// of calls. Made with the feed; `start` and `stop` run with the feed's own.
protocol RealtimeCompanion: Sendable {
    /// Starts the companion's own tasks; `enqueue` puts a message on the feed's queue, for
    /// `RealtimeCompanionState.handle` on the feed's task.
    func start(enqueue: @escaping @Sendable (any Sendable) -> Void) -> [Task<Void, Never>]
    /// The companion's last work before the feed stops (the feed still runs commands).
    func stop(enqueue: @escaping @Sendable (any Sendable) -> Void) async
    /// The state the companion keeps on the feed's task, next to the feed's.
    func makeState(feed: FeedState) -> any RealtimeCompanionState
}

/// A companion's state: every method runs on the feed's task, in order with the feed's
/// own commands, so it may read the feed's sockets without a lock.
protocol RealtimeCompanionState: AnyObject {
    /// A socket joined (after its `subscribed` frame) or left (after it was removed).
    func joined(_ member: FeedState.Member) async throws
    func left(_ member: FeedState.Member) async
    /// Around the live delivery of one event to the company's sockets.
    func willDeliver(_ event: EventRecord) async
    func didDeliver(_ event: EventRecord) async
    /// A client's `call.*` frame; `member` is nil for a socket that has not joined.
    func received(type: String, data: [UInt8], on connection: WebSocketConnection, member: FeedState.Member?) async
    /// The periodic session check is about to run (housekeeping).
    func checkingSessions() async
    /// A message the companion put on the feed's queue.
    func handle(_ message: any Sendable) async throws
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
        /// A message of the companion, for its state.
        case companion(any Sendable)
    }

    private let commands: AsyncStream<Command>.Continuation
    private let tasks = Locked<[Task<Void, Never>]>([])
    let limits: RealtimeLimits
    let companion: any RealtimeCompanion

    private let stream: AsyncStream<Command>
    private let started = Locked(false)
    private let followed = Locked<EventBus?>(nil)
    private let database: any SQLDatabase
    private let hub: WebSocketHub
    private let log: Log
    /// SQLite: sees auth changes committed by any process (`portaria admin set-password`
    /// included), so a delivery first closes the sockets whose session just ended.
    private let authChanges: SQLiteAuthWatcher?

    init(database: any SQLDatabase, hub: WebSocketHub, limits: RealtimeLimits = .init(), log: Log = .shared,
         authChanges: SQLiteAuthWatcher?, companion: any RealtimeCompanion) {
        self.authChanges = authChanges
        self.limits = limits
        self.companion = companion
        (stream, commands) = AsyncStream<Command>.makeStream()
        self.database = database
        self.hub = hub
        self.log = log
    }

    /// Starts handling commands (those sent before are queued until now), the
    /// companion's tasks and the periodic session check.
    public func start() {
        guard started.withLock({ started in defer { started = true }; return !started }) else { return }
        let (database, hub, companion, limits, log, stream, continuation) = (database, hub, companion, limits, log, stream, commands)
        let authChanges = authChanges
        tasks.withLock { tasks in
            let worker = Task {
                let state = FeedState(database: database, hub: hub, limits: limits, log: log, authChanges: authChanges)
                state.companion = companion.makeState(feed: state)
                // AsyncStream hands out what it buffered even after finish() and cancellation:
                // a stop drops the backlog instead of working through it.
                for await command in stream {
                    if Task.isCancelled { break }
                    await state.handle(command)
                }
            }
            let sessions = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: limits.sessionCheckInterval)
                    continuation.yield(.checkSessions)
                }
            }
            tasks += [worker, sessions] + companion.start(enqueue: { continuation.yield(.companion($0)) })
            if let events = followed.withLock({ $0 })?.subscribe() {
                tasks.append(Task {
                    for await event in events { continuation.yield(.poke(companyID: event.companyID)) }
                })
            }
        }
    }

    /// Follows the bus of this process from `start()` on: every committed event pokes its
    /// company. Nothing is subscribed before the start, so a feed that is built and never
    /// started holds no task. An event committed before the start needs no poke: no socket
    /// has joined yet, and a join replays from the log.
    public func follow(_ bus: EventBus) {
        followed.withLock { $0 = bus }
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
    /// A message for the companion's state, in order with the feed's commands.
    func enqueue(_ message: any Sendable) { commands.yield(.companion(message)) }
    func join(_ connection: WebSocketConnection, _ subscriber: Subscriber, since: Int64?) {
        commands.yield(.join(connection, subscriber, since: since))
    }
    func leave(_ connection: WebSocketConnection) { commands.yield(.leave(connection)) }
    /// A client message, already admitted by the socket's `budget` (released when handled).
    func received(_ connection: WebSocketConnection, _ text: String, budget: InboundBudget) {
        commands.yield(.received(connection, text, budget))
    }

    /// Ends the feed and waits for its tasks: the companion's last work first, then the
    /// command handled when the stop came finishes (the rest are dropped), so nothing here
    /// writes to a socket or reads the database after this returns.
    public func stop() async {
        if started.current {
            let commands = commands
            await companion.stop(enqueue: { commands.yield(.companion($0)) })
        }
        commands.finish()
        let running = tasks.withLock { tasks -> [Task<Void, Never>] in
            defer { tasks = [] }
            tasks.forEach { $0.cancel() }
            return tasks
        }
        for task in running { await task.value }
    }
}
