import Foundation

/// A value guarded by a lock, for state touched from C callback threads where an actor
/// hop is not possible (libmicrohttpd, the WebSocket event loop). Sendable only when its
/// value is: `current` and `withLock` hand the value (or parts of it) to the calling
/// thread. A type that keeps a non-Sendable value in one is `@unchecked Sendable` itself
/// and says why beside the conformance (`ConnectionPool`).
public final class Locked<Value> {
    private var value: Value
    private let lock = NSLock()

    public init(_ value: Value) { self.value = value }

    @discardableResult
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    public var current: Value { withLock { $0 } }
}

// Unchecked: every access to `value` holds `lock`, and the value itself may cross threads.
extension Locked: @unchecked Sendable where Value: Sendable {}
