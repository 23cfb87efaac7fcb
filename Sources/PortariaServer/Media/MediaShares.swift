import Foundation

/// Shares of a building's 24 h media quota (decision 0070). Visitors are anonymous, so
/// without shares a few of them could spend the whole quota and leave every later
/// visitor unable to attach a photo or a recado. One address (IPv6: its /64) may upload
/// `quota / mediaAddressShareDivisor` per 24 h and one visit `quota / mediaVisitShareDivisor`
/// over its life — every accepted upload counts, replacements too — but never less than
/// one photo and one voice message at their largest, so a small quota still serves a
/// visitor. Counted in `rate_limits` (shared by instances) in kibibytes, so even the
/// largest quota fits the counter; refused with 429 and `Retry-After`.
struct MediaShares: Sendable {
    let address: Share
    let visit: Share

    static let floorBytes = MediaSniffer.maxPhotoBytes + MediaSniffer.maxVoiceUploadBytes
    static let day: TimeInterval = 86_400

    init(quotaBytes: Int, configuration: VisitsConfiguration, address: String, visitID: String) {
        func kib(divisor: Int) -> Int { Self.kib(max(quotaBytes / max(divisor, 1), Self.floorBytes)) }
        self.address = Share(scope: .address, bucket: "media-kib:address:" + address,
                             kib: kib(divisor: configuration.mediaAddressShareDivisor), window: Self.day)
        visit = Share(scope: .visit, bucket: "media-kib:visit:" + visitID,
                      kib: kib(divisor: configuration.mediaVisitShareDivisor), window: configuration.visitLifetime)
    }

    /// Bytes as whole kibibytes, rounded up (an upload of 1 byte costs 1 KiB).
    static func kib(_ bytes: Int) -> Int { bytes / 1024 + (bytes % 1024 == 0 ? 0 : 1) }

    /// Refuses with reads only when `size` more bytes would pass either share.
    func check(_ limiter: RateLimiter, adding size: Int, now: Date) async throws {
        let cost = Self.kib(size)
        for share in [address, visit] {
            let used = try await limiter.peek(share.bucket, window: share.window, now: now)
            if used.count + cost > share.kib { throw VisitError.mediaShareSpent(share.scope, retryAfter: used.retryAfter) }
        }
    }

    /// Counts `size` bytes in the upload's transaction; over a share, throws (the whole
    /// upload rolls back, its file is removed).
    func count(_ db: any SQLConnection, adding size: Int, now: Date) throws {
        let cost = Self.kib(size)
        for share in [address, visit] {
            let used = try RateLimiter.hit(db, share.bucket, window: share.window, now: now, amount: cost)
            if used.count > share.kib { throw VisitError.mediaShareSpent(share.scope, retryAfter: used.retryAfter) }
        }
    }

    /// One share: its counter in `rate_limits`, its size and the window it is counted over.
    struct Share: Sendable {
        let scope: MediaShareScope
        let bucket: String
        let kib: Int
        let window: TimeInterval
    }
}
