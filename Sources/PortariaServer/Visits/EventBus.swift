import Foundation
import PortariaCore

/// Work another capability does with visit events inside the transaction that appends
/// them, before its COMMIT: what it writes commits with the events or not at all (the push
/// outbox: no accepted ring is lost across a crash, decision 0100). It must not wait on
/// anything outside the transaction; it may throw, which rolls the whole change back.
public protocol VisitEventListener: Sendable {
    func eventsAppended(_ events: [EventRecord], in db: any SQLConnection, at: Date) throws
}

/// The in-process event bus, in two halves:
///
/// - in the transaction: every `EventLog.append` hands its events to the listeners
///   registered when the application was assembled (`listen(_:)`), before COMMIT, so
///   Visits names none of the capabilities that react to its events;
/// - after commit: committed events, in commit order per publisher, to every subscriber.
///   Fed with the rows the transaction wrote to `events`; the push worker's wake-ups and
///   (on SQLite) the realtime feed subscribe here; across instances the feed reads the
///   log after a NOTIFY.
public final class EventBus: Sendable {
    private let subscribers = Locked<[UUID: AsyncStream<EventRecord>.Continuation]>([:])
    private let listeners = Locked<[any VisitEventListener]>([])

    public init() {}

    /// Registers `listener` for every transaction that appends events from now on.
    /// Called while the application is assembled, before any request is served.
    public func listen(_ listener: any VisitEventListener) {
        listeners.withLock { $0.append(listener) }
    }

    /// Runs the listeners in the caller's transaction, in registration order.
    func appended(_ events: [EventRecord], in db: any SQLConnection, at: Date) throws {
        guard !events.isEmpty else { return }
        for listener in listeners.current { try listener.eventsAppended(events, in: db, at: at) }
    }

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

    /// How many streams are subscribed now (a stream leaves when its reader ends).
    var subscriberCount: Int { subscribers.current.count }

    /// Delivers committed events to every subscriber.
    public func publish(_ events: [EventRecord]) {
        guard !events.isEmpty else { return }
        let targets = subscribers.withLock { Array($0.values) }
        for continuation in targets {
            for event in events { continuation.yield(event) }
        }
    }
}
