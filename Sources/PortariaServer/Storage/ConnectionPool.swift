import Dispatch
import PortariaCore

/// A fixed set of blocking connections lent out one caller at a time. Callers that find
/// none free wait without blocking a thread; the blocking work itself runs on a
/// dedicated Dispatch queue, never on Swift's cooperative pool.
final class ConnectionPool<Connection: AnyObject>: @unchecked Sendable {
    private struct State {
        var free: [Connection]
        var waiters: [CheckedContinuation<UncheckedBox<Connection>, any Error>] = []
        var closed = false
    }

    private let state: Locked<State>
    private let queue: DispatchQueue
    let size: Int

    init(connections: [Connection], label: String) {
        state = Locked(State(free: connections))
        size = connections.count
        queue = DispatchQueue(label: label, attributes: .concurrent)
    }

    func withConnection<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let box = try await acquire()
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
