import Foundation

/// When to try again after a failure that may go away (no network, 5xx, 429): exponential
/// backoff with "equal jitter", never sooner than the server's `Retry-After`.
///
/// Equal jitter (half the step fixed, half random) rather than full jitter: a phone that
/// just lost its network should not retry at 0 ms by chance, and a thousand phones that
/// lost the same cell tower should not retry in step either.
public struct RetryPolicy: Sendable, Equatable {
    /// The step before the second attempt.
    public var initialDelay: TimeInterval
    public var multiplier: Double
    /// The largest step (before jitter).
    public var maximumDelay: TimeInterval
    /// A `Retry-After` longer than this is capped: a decision the user took must not
    /// wait an hour because a proxy said so.
    public var maximumRetryAfter: TimeInterval

    public init(initialDelay: TimeInterval = 1, multiplier: Double = 2, maximumDelay: TimeInterval = 60,
                maximumRetryAfter: TimeInterval = 300) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// The resolve queue's policy: 1 s, 2 s, 4 s … up to a minute between tries.
    public static let standard = RetryPolicy()

    /// The step after `failures` failed attempts (1 for the first failure), before jitter.
    public func step(afterFailures failures: Int) -> TimeInterval {
        guard failures > 1 else { return min(initialDelay, maximumDelay) }
        // Capped exponent: 2^64 is not a delay anyone waits for, and it would overflow.
        let exponent = Double(min(failures - 1, 62))
        return min(maximumDelay, initialDelay * pow(multiplier, exponent))
    }

    /// The wait before the next attempt.
    /// - Parameters:
    ///   - failures: failed attempts so far (≥ 1).
    ///   - retryAfter: the server's `Retry-After`, in seconds, if it sent one.
    ///   - random: a number in `0..<1` (injected, so tests are deterministic).
    public func delay(afterFailures failures: Int, retryAfter: TimeInterval? = nil, random: Double) -> TimeInterval {
        let step = step(afterFailures: failures)
        let jittered = step / 2 + step / 2 * min(max(random, 0), 1)
        guard let retryAfter, retryAfter.isFinite, retryAfter > 0 else { return jittered }
        return max(jittered, min(retryAfter, maximumRetryAfter))
    }
}

/// The `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
public enum RetryAfterHeader {
    /// Seconds to wait from `now`; nil when the value is neither form.
    public static func seconds(_ value: String, now: Date) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return TimeInterval(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: trimmed).map { max(0, $0.timeIntervalSince(now)) }
    }
}
