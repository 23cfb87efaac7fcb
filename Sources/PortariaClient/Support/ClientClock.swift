import Foundation
import PortariaCore

/// Time as the client core sees it: injected, so retry schedules, ring deadlines and
/// reconnect backoff are deterministic in tests.
public protocol ClientClock: Sendable {
    func now() -> Date
    /// Waits `seconds`; throws `CancellationError` when the task is cancelled.
    func sleep(for seconds: TimeInterval) async throws
}

/// The wall clock and `Task.sleep`.
public struct SystemClock: ClientClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(for seconds: TimeInterval) async throws {
        guard seconds > 0 else { return try Task.checkCancellation() }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400) * 1_000_000_000))
    }
}

/// A clock whose time moves only when something sleeps on it (or `advance` is called):
/// a test runs a schedule of minutes in microseconds and can read every wait.
public final class VirtualClock: ClientClock {
    private let state: Locked<(now: Date, sleeps: [TimeInterval])>

    public init(start: Date = Date(timeIntervalSince1970: 1_796_000_000)) {
        state = Locked((start, []))
    }

    public func now() -> Date { state.withLock { $0.now } }

    public func sleep(for seconds: TimeInterval) async throws {
        try Task.checkCancellation()
        state.withLock {
            $0.sleeps.append(seconds)
            $0.now = $0.now.addingTimeInterval(max(0, seconds))
        }
    }

    public func advance(by seconds: TimeInterval) { state.withLock { $0.now = $0.now.addingTimeInterval(seconds) } }

    /// Every `sleep` so far, in order.
    public var sleeps: [TimeInterval] { state.withLock { $0.sleeps } }
}

/// Numbers in `0..<1` for jitter, injected for the same reason as the clock.
public struct RandomSource: Sendable {
    public var next: @Sendable () -> Double
    public init(_ next: @escaping @Sendable () -> Double) { self.next = next }
    public static let system = RandomSource { Double.random(in: 0..<1) }
    public static func constant(_ value: Double) -> RandomSource { RandomSource { value } }
}
