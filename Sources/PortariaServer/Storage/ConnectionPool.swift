import Dispatch
import PortariaCore

/// Serial Dispatch queues for blocking work (database calls, argon2, libcurl).
///
/// Why serial queues: on Linux, libdispatch sizes the pool behind the global and custom
/// *concurrent* queues to the number of cores and cannot see a thread blocked in
/// `poll`/`recv`, so two slow calls there (a PostgreSQL connect timing out, an argon2
/// hash) stall every other blocking call of the process. Serial queues target the
/// overcommit root queue, which gets a thread whenever work is pending.
final class BlockingQueues: Sendable {
    private let queues: [DispatchQueue]
    private let next = Locked(0)

    init(label: String, count: Int) {
        queues = (0..<max(1, count)).map { DispatchQueue(label: "\(label).\($0)") }
    }

    /// The queues, for callers that pin work to one (a connection to its own queue).
    subscript(index: Int) -> DispatchQueue { queues[index % queues.count] }

    /// Runs `work` on the next queue, round-robin.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let queue = queues[next.withLock { value -> Int in defer { value += 1 }; return value % queues.count }]
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}

/// A fixed set of blocking connections lent out one caller at a time. Callers that find
/// none free queue their work without blocking a thread; the blocking work runs on the
/// connection's own serial queue (see `BlockingQueues`), never on Swift's cooperative pool.
///
/// Queued work, not queued callers: when a connection comes back, the next waiting job
/// runs on that connection's queue straight away. Handing the connection to the waiting
/// *task* instead (resume it, let it reach the cooperative pool, let it dispatch its work)
/// left the connection idle for one or two thread wake-ups per transaction — on the
/// single SQLite writer, under load, that gap was most of the time between two commits.
final class ConnectionPool<Connection: AnyObject>: @unchecked Sendable {
    // Unchecked: connections are not Sendable; each is lent to one job at a time, handed
    // over under `state`'s lock and used only on its own serial queue.
    /// A caller's work, bound to its continuation: `run` on a lent connection, or `fail`.
    private struct Job {
        let id: UInt64
        let run: @Sendable (Connection) -> Void
        let fail: @Sendable (any Error) -> Void
    }

    private struct State {
        var free: [Connection]
        var waiting: [Job] = []
        var closed = false
        var nextJobID: UInt64 = 0
    }

    private let state: Locked<State>
    /// One serial queue per connection, found by identity.
    private let queues: [ObjectIdentifier: DispatchQueue]
    let size: Int
    /// How long work may wait for a free connection before it fails as `.unavailable`
    /// (answered 503): with every connection stuck (a PostgreSQL that stopped answering,
    /// a lock held elsewhere), callers get "try again" instead of piling up. Nil: no limit.
    let waitLimit: Duration?

    init(connections: [Connection], label: String, waitLimit: Duration? = nil) {
        self.waitLimit = waitLimit
        state = Locked(State(free: connections))
        size = connections.count
        let blocking = BlockingQueues(label: label, count: connections.count)
        queues = Dictionary(uniqueKeysWithValues: connections.enumerated().map { (ObjectIdentifier($1), blocking[$0]) })
    }

    func withConnection<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let (job, ready) = state.withLock { state -> (Job, Result<Connection, any Error>?) in
                state.nextJobID &+= 1
                let job = Job(id: state.nextJobID,
                              run: { connection in
                                  let result = Result { try body(connection) }
                                  if case .failure(let error) = result { ServerMetrics.shared.databaseFailed(error) }
                                  continuation.resume(with: result)
                              },
                              fail: { error in continuation.resume(throwing: error) })
                if state.closed { return (job, .failure(StorageError.unavailable("database closed"))) }
                if let connection = state.free.popLast() { return (job, .success(connection)) }
                state.waiting.append(job)
                return (job, nil)
            }
            switch ready {
            case .success(let connection): start(job, on: connection)
            case .failure(let error): job.fail(error)
            case nil: if let waitLimit { expire(job.id, after: waitLimit) }
            }
        }
    }

    /// Fails the job `id` if it is still waiting for a connection after `limit`.
    private func expire(_ id: UInt64, after limit: Duration) {
        let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
            let expired = self.state.withLock { state -> Job? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index)
            }
            expired?.fail(StorageError.unavailable("no database connection became free within \(limit)"))
        }
    }

    /// Runs `job` on the connection's queue, then the next waiting job (or frees it).
    private func start(_ job: Job, on connection: Connection) {
        let lent = UncheckedBox((job, connection))
        queues[ObjectIdentifier(connection)]!.async {
            let (job, connection) = lent.value
            job.run(connection)
            self.release(connection)
        }
    }

    private func release(_ connection: Connection) {
        let next = state.withLock { state -> Job? in
            if !state.waiting.isEmpty { return state.waiting.removeFirst() }
            state.free.append(connection)
            return nil
        }
        if let next { start(next, on: connection) }
    }

    /// Refuses new work; connections are dropped once they are back.
    func close() -> [Connection] {
        let (free, waiting) = state.withLock { state in
            state.closed = true
            defer { state.free = []; state.waiting = [] }
            return (state.free, state.waiting)
        }
        for job in waiting { job.fail(StorageError.unavailable("database closed")) }
        return free
    }
}

/// Moves a non-Sendable reference across a Dispatch hop whose exclusivity the caller
/// guarantees (here: a connection lent to exactly one job).
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
