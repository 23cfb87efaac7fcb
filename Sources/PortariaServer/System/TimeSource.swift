import Foundation
import PortariaCore

/// The wall clock the visit code reads, injected so tests move time forward instead of
/// sleeping (the ring scheduler's 20 s steps, the 24 h expiry, retention).
public protocol TimeSource: Sendable {
    func now() -> Date
}

/// The real clock.
public struct SystemTimeSource: TimeSource {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that only moves when told to.
public final class ManualTimeSource: TimeSource {
    private let current: Locked<Date>
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = Locked(start) }
    public func now() -> Date { current.current }
    public func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
    public func set(_ date: Date) { current.withLock { $0 = date } }
}
