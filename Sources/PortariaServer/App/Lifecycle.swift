import Foundation
import PortariaCore

/// One part of a running server that starts and stops: a background loop, the HTTP
/// server, the database. `stop` returns only once the component has finished — its
/// tasks awaited, not merely cancelled — so the component stopped after it can rely on
/// nobody using what it is about to close.
struct LifecycleComponent: Sendable {
    let name: String
    let start: @Sendable () async throws -> Void
    let stop: @Sendable () async -> Void

    init(_ name: String, start: @escaping @Sendable () async throws -> Void = {},
         stop: @escaping @Sendable () async -> Void = {}) {
        self.name = name
        self.start = start
        self.stop = stop
    }
}

/// The one owner of a server's start and stop order (decision 0029): components start
/// in the order given and stop in the reverse order, each stop awaited before the next
/// begins. A start that fails stops, in reverse, the components already started and
/// rethrows. A shutdown requested while starting waits for the start to finish, then
/// stops everything it started; every later shutdown waits for the first.
///
/// Every stop is logged with its duration, and one still running after `slowStop` is
/// logged by name while it goes on — a shutdown that hangs says where.
actor Lifecycle {
    let components: [LifecycleComponent]
    let log: Log
    let slowStop: Duration
    /// How many of `components`, from the first, are running.
    private var running = 0
    private var starting: Task<Void, any Error>?
    private var stopping: Task<Void, Never>?

    init(_ components: [LifecycleComponent], log: Log, slowStop: Duration = .seconds(5)) {
        self.components = components
        self.log = log
        self.slowStop = slowStop
    }

    /// Starts every component in order (once; a second call waits for the first).
    func start() async throws {
        if starting == nil, stopping == nil { starting = Task { try await self.startAll() } }
        try await starting?.value
    }

    /// Stops the running components in reverse order, awaiting each.
    func shutdown() async {
        if stopping == nil {
            let start = starting
            stopping = Task {
                _ = try? await start?.value
                await self.stopAll()
            }
        }
        await stopping?.value
    }

    private func startAll() async throws {
        for component in components {
            do {
                try await component.start()
            } catch {
                log.error("component failed to start", ["component": .string(component.name),
                                                        "error": .string(String(describing: error))])
                await stopAll()
                throw error
            }
            running += 1
        }
    }

    private func stopAll() async {
        while running > 0 {
            running -= 1
            await stop(components[running])
        }
    }

    private func stop(_ component: LifecycleComponent) async {
        let clock = ContinuousClock()
        let began = clock.now
        let name = component.name
        let log = log
        let slowStop = slowStop
        let watchdog = Task {
            try await Task.sleep(for: slowStop)
            log.warning("component is slow to stop", ["component": .string(name),
                                                       "waited_ms": .number(Double(slowStop.components.seconds * 1000))])
        }
        await component.stop()
        watchdog.cancel()
        let elapsed = clock.now - began
        log.debug("component stopped", ["component": .string(name),
                                         "ms": .number(Double(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000))])
    }
}

/// The one task of a background loop: started once, and stopped by cancelling it and
/// awaiting its end, so the owner's `stop()` returns only when the loop has finished.
final class BackgroundTask: Sendable {
    private let task = Locked<Task<Void, Never>?>(nil)

    init() {}

    /// Runs `body` in a new task unless one is running already.
    func start(priority: TaskPriority? = nil, _ body: @escaping @Sendable () async -> Void) {
        task.withLock { current in
            guard current == nil else { return }
            current = Task.detached(priority: priority, operation: body)
        }
    }

    /// Cancels the task and waits for it to return.
    func stop() async {
        let running = task.withLock { current -> Task<Void, Never>? in
            defer { current = nil }
            current?.cancel()
            return current
        }
        await running?.value
    }
}

/// Work a request starts and does not wait for (an SMS sent after the answer), tracked so
/// shutdown can wait for it before the database closes. After `drain()` new work is
/// dropped: nothing may start on a closing database.
final class TrackedTasks: Sendable {
    private let state = Locked<(open: Bool, running: [UUID: Task<Void, Never>])>((true, [:]))

    init() {}

    func run(_ body: @escaping @Sendable () async -> Void) {
        let id = UUID()
        state.withLock { state in
            guard state.open else { return }
            // Inserted under the lock the task's own removal takes: it cannot remove
            // itself before it is there.
            state.running[id] = Task { [state = self.state] in
                await body()
                _ = state.withLock { $0.running.removeValue(forKey: id) }
            }
        }
    }

    /// Refuses new work and waits for what is running.
    func drain() async {
        let running = state.withLock { state -> [Task<Void, Never>] in
            state.open = false
            return Array(state.running.values)
        }
        for task in running { await task.value }
    }
}
