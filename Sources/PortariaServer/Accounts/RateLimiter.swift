import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Fixed-window counters kept in the database, so every instance sees the same counts.
///
/// Each counted event is a write (on SQLite an fsync'd commit on the single writer), so
/// callers that face the public use `admit`: a bucket that is already full refuses with a
/// read only, and a flood of refused attempts costs no writes. Expired rows are deleted by
/// `prune`, which the retention sweep calls.
public struct RateLimiter: Sendable {
    public let database: any SQLDatabase

    public init(database: any SQLDatabase) { self.database = database }

    public struct Window: Sendable {
        public var count: Int
        /// Seconds until the window resets (for `Retry-After`).
        public var retryAfter: Int
    }

    /// The current count of `bucket` without changing it.
    public func peek(_ bucket: String, window: TimeInterval, now: Date = Date()) async throws -> Window {
        try await database.read { db in
            try Self.peek(db, [(bucket, window)], now: now)[bucket] ?? Window(count: 0, retryAfter: 0)
        }
    }

    /// Counts one event in `bucket` and returns the window after counting it.
    @discardableResult
    public func hit(_ bucket: String, window: TimeInterval, now: Date = Date()) async throws -> Window {
        try await database.write { db in try Self.hit(db, bucket, window: window, now: now) }
    }

    /// Check, then count: a bucket already at `max` is refused without a write (the
    /// answer to a flood must not cost a commit per request); otherwise the event is
    /// counted and allowed while the count stays within `max`.
    public func admit(_ bucket: String, max: Int, window: TimeInterval, now: Date = Date()) async throws -> (allowed: Bool, window: Window) {
        let seen = try await peek(bucket, window: window, now: now)
        if seen.count >= max { return (false, seen) }
        let counted = try await hit(bucket, window: window, now: now)
        return (counted.count <= max, counted)
    }

    /// The same count inside the caller's write transaction (the gate folds it into the
    /// visit's own commit). `amount` counts several at once (media bytes).
    static func hit(_ db: any SQLConnection, _ bucket: String, window: TimeInterval, now: Date, amount: Int = 1) throws -> Window {
        try hit(db, [bucket], window: window, now: now, amount: amount)[bucket] ?? Window(count: amount, retryAfter: Int(window.rounded(.up)))
    }

    /// The current counts of several buckets, each with its own window, in one statement
    /// inside the caller's read: a bucket without a live window answers a count of 0.
    static func peek(_ db: any SQLConnection, _ buckets: [(bucket: String, window: TimeInterval)], now: Date) throws -> [String: Window] {
        guard !buckets.isEmpty else { return [:] }
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        var windows: [String: Window] = [:]
        var lengths: [String: Int64] = [:]
        for (bucket, window) in buckets {
            windows[bucket] = Window(count: 0, retryAfter: 0)
            lengths[bucket] = Int64(window * 1000)
        }
        let list = buckets.map { _ in "?" }.joined(separator: ", ")
        for row in try db.query("SELECT bucket, window_start, count FROM rate_limits WHERE bucket IN (\(list))", buckets.map { .text($0.bucket) }) {
            guard let bucket = try row.string("bucket"), let windowMs = lengths[bucket],
                  let start = try row.int("window_start"), start + windowMs > nowMs else { continue }
            windows[bucket] = Window(count: Int(try row.int("count") ?? 0), retryAfter: Int((start + windowMs - nowMs + 999) / 1000))
        }
        return windows
    }

    /// Counts one event in each of `buckets` (distinct) with one statement inside the
    /// caller's write transaction; the windows after counting, by bucket. The rows are
    /// written in the order given, so transactions that name the same buckets in the same
    /// order lock them in the same order.
    static func hit(_ db: any SQLConnection, _ buckets: [String], window: TimeInterval, now: Date,
                    amount: Int = 1) throws -> [String: Window] {
        guard !buckets.isEmpty else { return [:] }
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        let windowMs = Int64(window * 1000)
        let counted = SQLValue.integer(Int64(amount))
        let values = buckets.map { _ in "(?, ?, ?, ?)" }.joined(separator: ", ")
        var parameters: [SQLValue] = buckets.flatMap { [SQLValue.text($0), .integer(nowMs), counted, .integer(nowMs + windowMs)] }
        parameters += [.integer(windowMs), .integer(nowMs), counted, counted,
                       .integer(windowMs), .integer(nowMs), .integer(nowMs + windowMs),
                       .integer(windowMs), .integer(windowMs), .integer(nowMs), .integer(nowMs)]
        // One statement, so concurrent hits on PostgreSQL cannot lose a count.
        let rows = try db.query("""
            INSERT INTO rate_limits (bucket, window_start, count, expires_at) VALUES \(values)
            ON CONFLICT (bucket) DO UPDATE SET
                count = CASE WHEN rate_limits.window_start + ? <= ? THEN ? ELSE rate_limits.count + ? END,
                expires_at = CASE WHEN rate_limits.window_start + ? <= ? THEN ? ELSE rate_limits.window_start + ? END,
                window_start = CASE WHEN rate_limits.window_start + ? <= ? THEN ? ELSE rate_limits.window_start END
            RETURNING bucket, window_start, count
            """, parameters)
        var windows: [String: Window] = [:]
        for row in rows {
            let start = try row.int("window_start") ?? nowMs
            windows[try row.required.string("bucket")] = Window(count: Int(try row.int("count") ?? Int64(amount)),
                                                                 retryAfter: Int((start + windowMs - nowMs + 999) / 1000))
        }
        return windows
    }

    /// Takes one event back (an attempt counted up front that turned out fine).
    public func undo(_ bucket: String) async throws {
        try await database.write { db in
            _ = try db.execute("UPDATE rate_limits SET count = count - 1 WHERE bucket = ? AND count > 0", .text(bucket))
        }
    }

    /// A successful login's amends, in one commit: `reset` buckets start over, `undo`
    /// buckets take one event back.
    public func forgive(reset: [String], undo: [String]) async throws {
        try await database.write { db in
            for bucket in reset { _ = try db.execute("DELETE FROM rate_limits WHERE bucket = ?", .text(bucket)) }
            for bucket in undo {
                _ = try db.execute("UPDATE rate_limits SET count = count - 1 WHERE bucket = ? AND count > 0", .text(bucket))
            }
        }
    }

    public func reset(_ bucket: String) async throws {
        try await database.write { db in _ = try db.execute("DELETE FROM rate_limits WHERE bucket = ?", .text(bucket)) }
    }

    /// Deletes windows that have ended. Rows written before `expires_at` existed (schema
    /// 6) are kept two days, longer than any window in use.
    @discardableResult
    public static func prune(_ db: any SQLConnection, now: Date) throws -> Int {
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        return try db.execute("""
            DELETE FROM rate_limits WHERE expires_at < ? OR (expires_at IS NULL AND window_start < ?)
            """, .integer(nowMs), .integer(nowMs - 2 * 86_400_000))
    }
}

/// The key of per-address buckets. An IPv6 user gets a whole /64 (often far more) from
/// one provider and can rotate through it freely, so per-address limits count the /64;
/// an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what an IPv6 listener sees of an IPv4
/// peer) counts as its IPv4 address, so the two spellings share one bucket.
public enum AddressKey {
    public static func bucket(_ address: String) -> String {
        var text = address.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("[") && text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        // A zone (`fe80::1%eth0`) names an interface, not another host.
        if let percent = text.firstIndex(of: "%") { text = String(text[..<percent]) }
        guard !text.isEmpty, text.utf8.count <= 64 else { return address }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return format(family: AF_INET, &v4) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return address }
        var bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            var mapped = in_addr()
            withUnsafeMutableBytes(of: &mapped) { $0.copyBytes(from: bytes[12..<16]) }
            return format(family: AF_INET, &mapped)
        }
        for index in 8..<16 { bytes[index] = 0 }
        var prefix = in6_addr()
        withUnsafeMutableBytes(of: &prefix) { $0.copyBytes(from: bytes) }
        return format(family: AF_INET6, &prefix) + "/64"
    }

    private static func format<T>(family: Int32, _ address: inout T) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let written = withUnsafeBytes(of: &address) { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard written != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension HTTPRequest {
    /// The client's address as per-address rate limits count it (`AddressKey`).
    public var limitAddress: String { AddressKey.bucket(clientAddress) }
}
