import Foundation
import PortariaCore

/// What `Authenticator.caller` read for one session and one `X-Company-Id`: the live
/// session's user, the user's companies (when no company was named) and the membership.
struct CallerFacts: Sendable {
    var user: UserRecord
    var companies: [String]?
    var membership: CompanyMembership?
    /// The session's own end; a cached entry never outlives it.
    var sessionExpiresAt: Date
}

/// The bearer check's answers, kept in memory so an authenticated request does not read
/// the session and the membership again (decision 0043). Exact because every write that
/// can change an answer says so:
///
/// - on this instance, at once: `AuthService` forgets the session it ended before it
///   answers (logout, refresh-token reuse);
/// - on PostgreSQL, to every instance: the writing transaction sends `NOTIFY portaria_auth`
///   (`AuthChanges.record`), and the listener forgets the session or user named. While the
///   listener has no connection the cache is *off* (emptied, every request reads), since
///   notifications sent meanwhile are lost; it comes back on once `LISTEN` runs again;
/// - on SQLite, where the other writer is `portaria admin` in another process: the same
///   writes change `service_state.auth_generation` in their transaction, and every lookup
///   first asks SQLite whether anything committed since the last lookup
///   (`PRAGMA data_version`, no read-pool hop) and, if the generation moved, empties the
///   cache.
///
/// A fill races with an invalidation through a generation counter: the counter is taken
/// before the database read and the entry is stored only if no invalidation happened
/// since, so a read that saw the old rows cannot store them after they were forgotten.
///
/// Bounded: at `capacity` entries the cache starts over (a miss costs one read). Entries
/// also expire after `lifetime`, which bounds what a write made outside portaria (a
/// manual `UPDATE users SET disabled = 1`) can miss.
final class SessionCache: Sendable {
    struct Key: Hashable, Sendable {
        var sessionID: String
        /// `X-Company-Id` as the request sent it (trimmed, lowercased), nil without one.
        var company: String?
    }

    private struct Entry: Sendable {
        var facts: CallerFacts
        var storedAt: Date
    }

    private struct State: Sendable {
        var entries: [Key: Entry] = [:]
        /// Moves at every invalidation; a fill stores only under the value it started with.
        var generation: UInt64 = 0
        /// Whether invalidations can reach this cache now (PostgreSQL: a listener is
        /// connected). Off, nothing is served and nothing stored.
        var armed: Bool
    }

    let capacity: Int
    let lifetime: TimeInterval
    private let state: Locked<State>
    private let watcher: SQLiteAuthWatcher?
    /// PostgreSQL: returns once every `portaria_auth` notification committed before the
    /// call was applied (`PostgresListener.barrier`), false when it cannot know.
    private let barrier = Locked<(@Sendable () async -> Bool)?>(nil)

    /// - Parameters:
    ///   - armed: whether invalidations already reach the cache (SQLite: yes; PostgreSQL:
    ///     not until the listener reports its first connection).
    ///   - watcher: SQLite's check for writes by other processes.
    init(capacity: Int = 20_000, lifetime: TimeInterval = 60, armed: Bool, watcher: SQLiteAuthWatcher? = nil) {
        self.capacity = capacity
        self.lifetime = lifetime
        self.state = Locked(State(armed: armed && capacity > 0))
        self.watcher = watcher
    }

    /// A disabled cache: every request reads (the A/B's "before", `--session-cache-entries 0`).
    static let disabled = SessionCache(capacity: 0, armed: false)

    /// Makes every lookup wait for `barrier` first (PostgreSQL; set once, at wiring).
    func waitForNotifications(with barrier: @escaping @Sendable () async -> Bool) {
        self.barrier.withLock { $0 = barrier }
    }

    /// The cached facts for `key` if still usable at `now`, and otherwise the ticket under
    /// which a fresh read may be stored (nil: do not store).
    ///
    /// First, every invalidation committed before this call is applied: SQLite's watcher
    /// looks at the file; on PostgreSQL the listener's barrier makes sure every
    /// notification committed before now has arrived (a NOTIFY alone is delivered some
    /// time after its commit, and a request sent to B right after a logout on A answered
    /// often won that race in the end-to-end test).
    func lookup(_ key: Key, userID: String, now: Date) async -> (facts: CallerFacts?, ticket: UInt64?) {
        guard capacity > 0 else { return (nil, nil) }
        if let barrier = barrier.current {
            guard state.withLock({ $0.armed }), await barrier() else { return (nil, nil) }
        }
        let check = watcher?.check() ?? .unchanged
        return state.withLock { state in
            guard state.armed else { return (nil, nil) }
            switch check {
            case .unchanged: break
            case .changed:
                state.entries.removeAll(keepingCapacity: true)
                state.generation &+= 1
            case .failed:
                state.entries.removeAll(keepingCapacity: true)
                state.generation &+= 1
                return (nil, nil)
            }
            if let entry = state.entries[key] {
                // The token's subject must be the session's user (a forged pairing never
                // gets here: the claims are signed, but the check costs nothing).
                if entry.facts.user.id == userID, entry.facts.sessionExpiresAt > now,
                   now.timeIntervalSince(entry.storedAt) < lifetime {
                    return (entry.facts, nil)
                }
                state.entries.removeValue(forKey: key)
            }
            return (nil, state.generation)
        }
    }

    /// Stores what a read under `ticket` found, unless something was invalidated since.
    func store(_ facts: CallerFacts, for key: Key, ticket: UInt64, now: Date) {
        state.withLock { state in
            guard state.armed, state.generation == ticket else { return }
            if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[key] = Entry(facts: facts, storedAt: now)
        }
    }

    func forget(session sessionID: String) {
        state.withLock { state in
            state.generation &+= 1
            state.entries = state.entries.filter { $0.key.sessionID != sessionID }
        }
    }

    func forget(user userID: String) {
        state.withLock { state in
            state.generation &+= 1
            state.entries = state.entries.filter { $0.value.facts.user.id != userID }
        }
    }

    func forgetAll() {
        state.withLock { state in
            state.generation &+= 1
            state.entries.removeAll(keepingCapacity: true)
        }
    }

    /// Invalidations can (true) or can no longer (false) reach this cache: the PostgreSQL
    /// listener connected, or lost its connection. Either way what is cached is dropped.
    func setArmed(_ armed: Bool) {
        state.withLock { state in
            state.generation &+= 1
            state.entries.removeAll(keepingCapacity: true)
            state.armed = armed && capacity > 0
        }
    }

    /// A `portaria_auth` notification's payload (`AuthChange.payload`).
    func apply(notification payload: String) {
        switch AuthChange(payload: payload) {
        case .session(let id): forget(session: id)
        case .user(let id): forget(user: id)
        case nil: forgetAll()
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}

/// A write that can change who may call the API: one session ended, or something about
/// one user (password, memberships, permissions).
enum AuthChange: Sendable, Equatable {
    case session(String)
    case user(String)

    /// `s:<session id>` or `u:<user id>`; anything else means "forget everything".
    var payload: String {
        switch self {
        case .session(let id): return "s:" + id
        case .user(let id): return "u:" + id
        }
    }

    init?(payload: String) {
        if payload.hasPrefix("s:") {
            self = .session(String(payload.dropFirst(2)))
        } else if payload.hasPrefix("u:") {
            self = .user(String(payload.dropFirst(2)))
        } else {
            return nil
        }
    }

    /// Called inside the writing transaction: every instance's `SessionCache` learns of it
    /// when (and only if) the transaction commits. PostgreSQL: `NOTIFY portaria_auth`.
    /// SQLite: a new `service_state.auth_generation`, which the one server sees at its next
    /// lookup (`SQLiteAuthWatcher`) even when the writer is `portaria admin` in another
    /// process.
    static func record(_ change: AuthChange, in db: any SQLConnection) throws {
        if db.dialect.isSharedByInstances {
            try db.notifyAtCommit(.auth, payload: change.payload)
        } else {
            try db.execute("""
                INSERT INTO service_state (key, value, updated_at) VALUES ('auth_generation', ?, ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                """, .text(UUID().uuidString), .date(Date()))
        }
    }
}

/// SQLite's side of `SessionCache`: whether `service_state.auth_generation` changed since
/// the last check. `PRAGMA data_version` on a connection of its own changes whenever any
/// other connection (this process's writer, or `portaria admin`) committed, and costs a
/// look at the WAL index — microseconds, on the request's thread, no hop to the read pool;
/// only then is the generation row read.
final class SQLiteAuthWatcher: @unchecked Sendable {
    // Unchecked: `connection`, `dataVersion` and `generation` are used under `lock` only.
    private let connection: SQLiteConnection
    private let lock = NSLock()
    private var dataVersion: Int64?
    private var generation: String?

    enum Check: Sendable { case unchanged, changed, failed }

    init(path: String) throws {
        connection = try SQLiteConnection(path: path, readOnly: true)
        _ = check()
    }

    func check() -> Check {
        lock.lock()
        defer { lock.unlock() }
        do {
            let version = try connection.queryOne("PRAGMA data_version", [])?.int("data_version")
            if version != nil, version == dataVersion { return .unchanged }
            dataVersion = version
            let current = try connection.queryOne("SELECT value FROM service_state WHERE key = 'auth_generation'", [])?.string("value")
            defer { generation = current }
            return current == generation ? .unchanged : .changed
        } catch {
            dataVersion = nil
            return .failed
        }
    }
}
