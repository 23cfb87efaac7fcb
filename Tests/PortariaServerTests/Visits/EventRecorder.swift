import Foundation
import PortariaTestSupport
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
        _ = await eventually(within: timeout, every: .milliseconds(2)) { predicate(events.current) }
        return events.current
    }
}
