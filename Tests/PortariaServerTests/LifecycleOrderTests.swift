import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// `Lifecycle` (decision 0029): start in order, stop in reverse with each stop awaited,
/// a failed start undone, and shutdown safe at any moment and more than once.
@Suite("Lifecycle order")
struct LifecycleOrderTests {
    struct Failure: Error {}

    /// Records what happened, in order.
    final class Journal: Sendable {
        private let entries = Locked<[String]>([])
        func note(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.current }
    }

    /// A component whose stop takes a while, so an un-awaited stop would let the next
    /// one begin first.
    static func component(_ name: String, _ journal: Journal, failsToStart: Bool = false,
                          startTakes: Duration = .zero) -> LifecycleComponent {
        LifecycleComponent(name, start: {
            if startTakes > .zero { try await Task.sleep(for: startTakes) }
            if failsToStart { throw Failure() }
            journal.note("start \(name)")
        }, stop: {
            try? await Task.sleep(for: .milliseconds(20))
            journal.note("stop \(name)")
        })
    }

    static let quiet = Log(minimumLevel: .error)

    @Test("components start in order and stop in reverse, each stop finished before the next begins")
    func order() async throws {
        let journal = Journal()
        let lifecycle = Lifecycle(["database", "worker", "server"].map { Self.component($0, journal) }, log: Self.quiet)
        try await lifecycle.start()
        await lifecycle.shutdown()
        #expect(journal.all == ["start database", "start worker", "start server",
                                "stop server", "stop worker", "stop database"])
    }

    @Test("a start that fails stops, in reverse, what had started, and rethrows")
    func failedStart() async throws {
        let journal = Journal()
        let lifecycle = Lifecycle([Self.component("database", journal), Self.component("worker", journal),
                                   Self.component("server", journal, failsToStart: true),
                                   Self.component("feed", journal)], log: Self.quiet)
        await #expect(throws: Failure.self) { try await lifecycle.start() }
        #expect(journal.all == ["start database", "start worker", "stop worker", "stop database"])
        // Nothing is left to stop.
        await lifecycle.shutdown()
        #expect(journal.all.count == 4)
    }

    @Test("a shutdown during start waits for it, then stops everything it started; a second shutdown waits for the first")
    func shutdownWhileStarting() async throws {
        let journal = Journal()
        let lifecycle = Lifecycle([Self.component("database", journal),
                                   Self.component("server", journal, startTakes: .milliseconds(200))], log: Self.quiet)
        let starting = Task { try await lifecycle.start() }
        // The first component has started once its entry is there; the second is sleeping.
        let began = await eventually(within: .seconds(30)) { journal.all == ["start database"] }
        try #require(began)
        async let first: Void = lifecycle.shutdown()
        async let second: Void = lifecycle.shutdown()
        _ = await (first, second)
        try await starting.value
        #expect(journal.all == ["start database", "start server", "stop server", "stop database"])
    }

    /// A reader left waiting on the bus of an application that is gone is a task nobody
    /// can end (LeakSanitizer reports it): readers subscribe when their component starts
    /// and leave when it stops, so building an application and dropping it holds none.
    @Test("the event bus has readers only between an application's start and its shutdown")
    func busReadersFollowTheLifecycle() async throws {
        let path = NSTemporaryDirectory() + "bus-readers-\(UUID().uuidString).db"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.databaseURL = "sqlite://" + path
        configuration.dataDirectory = NSTemporaryDirectory() + "bus-readers-data-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }

        let unstarted = try await Application(configuration: configuration, log: Self.quiet)
        #expect(unstarted.visits.bus.subscriberCount == 0)
        await unstarted.shutdown()

        // A database of its own: the unstarted application's file lock goes with it.
        configuration.databaseURL = "sqlite://" + path + "-started"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + "-started" + suffix) } }
        let application = try await Application(configuration: configuration, log: Self.quiet)
        try await application.start()
        // The realtime feed and the push worker's wake-up each read the bus.
        #expect(application.visits.bus.subscriberCount == 2)
        await application.shutdown()
        #expect(application.visits.bus.subscriberCount == 0)
    }
}
