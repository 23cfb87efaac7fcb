import Foundation
import PortariaCore

/// A push provider's `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date, as
/// seconds from `now`, at least 0 and at most `limit`.
enum RetryAfter {
    /// Six hours, the longest window a push has (`VisitPushes.noticeLifetime`): a longer
    /// wait expires the push just as this one does, and the value stays one that dates and
    /// `Int` hold.
    static let limit: TimeInterval = 6 * 3600

    static func parse(_ value: String, now: Date = Date()) -> TimeInterval? {
        guard let seconds = RetryAfterHeader.seconds(value, now: now), seconds.isFinite else { return nil }
        return min(max(0, seconds), limit)
    }
}
