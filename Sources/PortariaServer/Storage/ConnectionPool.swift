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
/// none free wait without blocking a thread; the blocking work runs on the connection's
/// own serial queue (see `BlockingQueues`), never on Swift's cooperative pool.
final class ConnectionPool<Connection: AnyObject>: @unchecked Sendable {
    private struct State {
        var free: [Connection]
        var waiters: [CheckedContinuation<UncheckedBox<Connection>, any Error>] = []
        var closed = false
    }

    private let state: Locked<State>
    /// One serial queue per connection, found by identity.
    private let queues: [ObjectIdentifier: DispatchQueue]
    let size: Int

    init(connections: [Connection], label: String) {
        state = Locked(State(free: connections))
        size = connections.count
        let blocking = BlockingQueues(label: label, count: connections.count)
        queues = Dictionary(uniqueKeysWithValues: connections.enumerated().map { (ObjectIdentifier($1), blocking[$0]) })
    }

    func withConnection<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let box = try await acquire()
        let queue = queues[ObjectIdentifier(box.value)]!
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                let result = Result { try body(box.value) }
                self.release(box.value)
                continuation.resume(with: result)
            }
        }
    }

    private func acquire() async throws -> UncheckedBox<Connection> {
        try await withCheckedThrowingContinuation { continuation in
            let ready: Result<UncheckedBox<Connection>, any Error>? = state.withLock { state in
                if state.closed { return .failure(StorageError.unavailable("database closed")) }
                if let connection = state.free.popLast() { return .success(UncheckedBox(connection)) }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    private func release(_ connection: Connection) {
        let waiter = state.withLock { state -> CheckedContinuation<UncheckedBox<Connection>, any Error>? in
            if !state.waiters.isEmpty { return state.waiters.removeFirst() }
            state.free.append(connection)
            return nil
        }
        waiter?.resume(returning: UncheckedBox(connection))
    }

    /// Refuses new work; connections are dropped once they are back.
    func close() -> [Connection] {
        let (free, waiters) = state.withLock { state in
            state.closed = true
            defer { state.free = []; state.waiters = [] }
            return (state.free, state.waiters)
        }
        for waiter in waiters { waiter.resume(throwing: StorageError.unavailable("database closed")) }
        return free
    }
}

/// Moves a non-Sendable reference across a Dispatch hop whose exclusivity the caller
/// guarantees (here: a connection lent to exactly one job).
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
