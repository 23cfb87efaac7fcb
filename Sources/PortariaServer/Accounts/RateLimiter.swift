import Foundation

/// Fixed-window counters kept in the database, so every instance sees the same counts.
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
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        let windowMs = Int64(window * 1000)
        return try await database.read { db in
            guard let row = try db.queryOne("SELECT window_start, count FROM rate_limits WHERE bucket = ?", .text(bucket)),
                  let start = row.int("window_start"), start + windowMs > nowMs else {
                return Window(count: 0, retryAfter: 0)
            }
            return Window(count: Int(row.int("count") ?? 0), retryAfter: Int((start + windowMs - nowMs + 999) / 1000))
        }
    }

    /// Counts one event in `bucket` and returns the window after counting it.
    @discardableResult
    public func hit(_ bucket: String, window: TimeInterval, now: Date = Date()) async throws -> Window {
        try await database.write { db in try Self.hit(db, bucket, window: window, now: now) }
    }

    /// The same count inside the caller's write transaction (the gate folds it into the
    /// visit's own commit).
    static func hit(_ db: any SQLConnection, _ bucket: String, window: TimeInterval, now: Date) throws -> Window {
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        let windowMs = Int64(window * 1000)
        // One statement, so concurrent hits on PostgreSQL cannot lose a count.
        let row = try db.queryOne("""
            INSERT INTO rate_limits (bucket, window_start, count) VALUES (?, ?, 1)
            ON CONFLICT (bucket) DO UPDATE SET
                count = CASE WHEN rate_limits.window_start + ? <= ? THEN 1 ELSE rate_limits.count + 1 END,
                window_start = CASE WHEN rate_limits.window_start + ? <= ? THEN ? ELSE rate_limits.window_start END
            RETURNING window_start, count
            """, .text(bucket), .integer(nowMs), .integer(windowMs), .integer(nowMs),
                 .integer(windowMs), .integer(nowMs), .integer(nowMs))
        let start = row?.int("window_start") ?? nowMs
        return Window(count: Int(row?.int("count") ?? 1), retryAfter: Int((start + windowMs - nowMs + 999) / 1000))
    }

    /// Takes one event back (an attempt counted up front that turned out fine).
    public func undo(_ bucket: String) async throws {
        try await database.write { db in
            _ = try db.execute("UPDATE rate_limits SET count = count - 1 WHERE bucket = ? AND count > 0", .text(bucket))
        }
    }

    public func reset(_ bucket: String) async throws {
        try await database.write { db in _ = try db.execute("DELETE FROM rate_limits WHERE bucket = ?", .text(bucket)) }
    }
}
