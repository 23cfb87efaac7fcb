import Foundation
import PortariaCore

/// Drives ring steps and expiries. Safe on every instance: each step is claimed and
/// performed in one transaction (see `RingEngine.processDue`). Time comes from a
/// `TimeSource`, so tests call `tick()` after moving a manual clock.
public actor RingScheduler {
    let database: any SQLDatabase
    let clock: any TimeSource
    let bus: EventBus
    let log: Log
    private var loop: Task<Void, Never>?
    private var wakeUp: AsyncStream<Void>.Continuation?

    public init(database: any SQLDatabase, clock: any TimeSource, bus: EventBus, log: Log = .shared) {
        self.database = database
        self.clock = clock
        self.bus = bus
        self.log = log
    }

    /// Performs every step and expiry due at `clock.now()`; returns how many it performed.
    @discardableResult
    public func tick() async -> Int {
        var performed = 0
        let bus = bus
        for work in [RingEngine.processDue, RingEngine.expireDue] {
            // Bounded, so one tick never starves the rest of the process.
            for _ in 0..<1000 {
                let now = clock.now()
                do {
                    guard let events = try await database.write({ db in try work(db, now, bus) }) else { break }
                    bus.publish(events)
                    performed += 1
                } catch {
                    log.warning("ring scheduler step failed; retried on the next tick", ["error": .string("\(error)")])
                    break
                }
            }
        }
        return performed
    }

    /// Polls every `interval` (and at once when woken) until `stop()`.
    public func start(interval: Duration = .milliseconds(250)) {
        guard loop == nil else { return }
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        wakeUp = continuation
        loop = Task { [weak self] in
            let ticker = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    continuation.yield()
                }
            }
            defer { ticker.cancel() }
            for await _ in stream {
                guard let self, !Task.isCancelled else { break }
                await self.tick()
            }
        }
    }

    /// Asks the loop to run now (after a decline moved a step forward).
    public func wake() { wakeUp?.yield() }

    /// Ends the loop and waits for a tick in progress to finish (its transaction
    /// committed or rolled back), so nothing here uses the database after this returns.
    public func stop() async {
        let running = loop
        loop?.cancel()
        loop = nil
        wakeUp?.finish()
        wakeUp = nil
        await running?.value
    }
}
