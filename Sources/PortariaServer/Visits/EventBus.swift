import Foundation
import PortariaCore

/// The in-process event bus: committed events, in commit order per publisher, to every
/// subscriber. Fed after commit with the rows the transaction wrote to `events`; the push
/// worker and (on SQLite) the realtime feed subscribe here; across instances the feed reads
/// the log after a NOTIFY.
public final class EventBus: Sendable {
    private let subscribers = Locked<[UUID: AsyncStream<EventRecord>.Continuation]>([:])

    public init() {}

    /// A stream of every event published from now on.
    public func subscribe() -> AsyncStream<EventRecord> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<EventRecord>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { _ = $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    /// Delivers committed events to every subscriber.
    public func publish(_ events: [EventRecord]) {
        guard !events.isEmpty else { return }
        let targets = subscribers.withLock { Array($0.values) }
        for continuation in targets {
            for event in events { continuation.yield(event) }
        }
    }
}
