import PortariaCore

/// The answer to a request handed to `HTTP2Client.start`: fulfilled once by the client's
/// I/O thread, awaited once by whoever finishes the work. It lets a caller that must not
/// suspend (the thread that committed a gate POST, decision 0131) put a request on its
/// way at once and leave the waiting to a task.
public final class PendingResponse: Sendable {
    private enum State: Sendable {
        case waiting(UnsafeContinuation<OutboundResponse, any Error>?)
        case done(Result<OutboundResponse, any Error>)
    }

    private let state = Locked<State>(.waiting(nil))

    init() {}

    /// Stores the answer, or hands it to the waiter; only the first call counts.
    func fulfil(_ result: Result<OutboundResponse, any Error>) {
        let waiter = state.withLock { state -> UnsafeContinuation<OutboundResponse, any Error>?? in
            guard case .waiting(let waiter) = state else { return nil }
            state = .done(result)
            return .some(waiter)
        }
        if case .some(.some(let waiter)) = waiter { waiter.resume(with: result) }
    }

    /// The answer, once it is there. Awaited by one caller only.
    public func value() async throws -> OutboundResponse {
        try await withUnsafeThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<OutboundResponse, any Error>? in
                switch state {
                case .done(let result): return result
                case .waiting: state = .waiting(continuation); return nil
                }
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}
