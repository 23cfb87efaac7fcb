import Foundation
import PortariaCore
@testable import PortariaServer

/// Records what the bus carried, for tests.
final class EventRecorder: Sendable {
    private let events = Locked<[EventRecord]>([])
    private let task: Locked<Task<Void, Never>?> = Locked(nil)

    init(bus: EventBus) {
        let stream = bus.subscribe()
        let events = events
        task.withLock { $0 = Task { for await event in stream { events.withLock { $0.append(event) } } } }
    }

    deinit { task.current?.cancel() }

    var all: [EventRecord] { events.current }

    /// Waits (briefly, in real time: delivery is asynchronous) until `predicate` holds.
    func wait(timeout: Duration = .seconds(5), until predicate: ([EventRecord]) -> Bool) async -> [EventRecord] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let snapshot = events.current
            if predicate(snapshot) { return snapshot }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return events.current
    }
}
