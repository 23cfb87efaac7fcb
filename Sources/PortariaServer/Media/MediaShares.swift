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
    let addressBucket: String
    let visitBucket: String
    let addressKiB: Int
    let visitKiB: Int
    let visitWindow: TimeInterval

    static let floorBytes = MediaSniffer.maxPhotoBytes + MediaSniffer.maxVoiceUploadBytes
    static let day: TimeInterval = 86_400

    init(quotaBytes: Int, configuration: VisitsConfiguration, address: String, visitID: String) {
        addressBucket = "media-kib:address:" + address
        visitBucket = "media-kib:visit:" + visitID
        addressKiB = Self.kib(max(quotaBytes / max(configuration.mediaAddressShareDivisor, 1), Self.floorBytes))
        visitKiB = Self.kib(max(quotaBytes / max(configuration.mediaVisitShareDivisor, 1), Self.floorBytes))
        visitWindow = configuration.visitLifetime
    }

    /// Bytes as whole kibibytes, rounded up (an upload of 1 byte costs 1 KiB).
    static func kib(_ bytes: Int) -> Int { bytes / 1024 + (bytes % 1024 == 0 ? 0 : 1) }

    /// Refuses with reads only when `size` more bytes would pass either share.
    func check(_ limiter: RateLimiter, adding size: Int, now: Date) async throws {
        let cost = Self.kib(size)
        let address = try await limiter.peek(addressBucket, window: Self.day, now: now)
        if address.count + cost > addressKiB { throw VisitError.mediaShareSpent(.address, retryAfter: address.retryAfter) }
        let visit = try await limiter.peek(visitBucket, window: visitWindow, now: now)
        if visit.count + cost > visitKiB { throw VisitError.mediaShareSpent(.visit, retryAfter: visit.retryAfter) }
    }

    /// Counts `size` bytes in the upload's transaction; over a share, throws (the whole
    /// upload rolls back, its file is removed).
    func count(_ db: any SQLConnection, adding size: Int, now: Date) throws {
        let cost = Self.kib(size)
        let address = try RateLimiter.hit(db, addressBucket, window: Self.day, now: now, amount: cost)
        if address.count > addressKiB { throw VisitError.mediaShareSpent(.address, retryAfter: address.retryAfter) }
        let visit = try RateLimiter.hit(db, visitBucket, window: visitWindow, now: now, amount: cost)
        if visit.count > visitKiB { throw VisitError.mediaShareSpent(.visit, retryAfter: visit.retryAfter) }
    }
}
