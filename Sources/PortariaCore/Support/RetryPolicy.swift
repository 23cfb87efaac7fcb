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
        return imfFixdate(trimmed).map { max(0, $0.timeIntervalSince(now)) }
    }

    /// RFC 9110 §5.6.7 IMF-fixdate, the HTTP-date senders must use:
    /// `Sun, 06 Nov 1994 08:49:37 GMT`. Read by hand: swift-corelibs-foundation's
    /// DateFormatter leaked 128 bytes per call on some strings (LeakSanitizer: 100 calls,
    /// 12,800 bytes), and a provider or a proxy chooses this string. The day name is not
    /// checked against the date; a leap second reads as :59.
    static func imfFixdate(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
              bytes[16] == 0x20, bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"), bytes[25] == 0x20,
              bytes[26...].elementsEqual("GMT".utf8),
              ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].contains(where: { bytes[0..<3].elementsEqual($0.utf8) }),
              let monthIndex = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
                .firstIndex(where: { bytes[8..<11].elementsEqual($0.utf8) }) else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19),
              let minute = number(20..<22), let second = number(23..<25),
              hour < 24, minute < 60, second <= 60 else { return nil }
        let month = monthIndex + 1
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...lengths[monthIndex]).contains(day) else { return nil }
        // Days since 1970-01-01 from the civil date (H. Hinnant's algorithm); year ≤ 9999.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + min(second, 59)))
    }
}
