import Foundation
import PortariaCore

/// LGPD retention: photos, voice messages and visitor locations older than
/// `--retention-days` are deleted; idempotency keys after 48 h; ended rate-limit windows;
/// realtime events after 7 days and finished push jobs (with their attempts) after 30 —
/// both bounded by the retention days too (decision 0055); sessions (with their refresh
/// tokens) 30 days after they expired, SMS codes and their tokens a day after (decision
/// 0055). Logs what it deleted.
public actor RetentionJob {
    let database: any SQLDatabase
    let clock: any TimeSource
    let media: MediaStore
    let days: Int
    /// The audit trail's own retention (`--audit-retention-days`, decision 0091).
    let auditDays: Int
    let log: Log
    private let loop = BackgroundTask()

    public struct Report: Sendable, Equatable {
        public var photos = 0
        public var voiceMessages = 0
        public var locations = 0
        public var idempotencyKeys = 0
        public var rateLimitWindows = 0
        public var events = 0
        public var pushJobs = 0
        public var pushAttempts = 0
        public var sessions = 0
        public var refreshTokens = 0
        public var otpCodes = 0
        public var otpTokens = 0
        public var auditRows = 0
    }

    /// Rows deleted per transaction for the tables that grow with every visit: a first
    /// sweep over a year of history must not hold the write lock for minutes.
    static let batchSize = 1000

    init(database: any SQLDatabase, clock: any TimeSource, dataDirectory: String, days: Int, auditDays: Int = 730,
         log: Log = .shared) {
        self.database = database
        self.clock = clock
        self.media = MediaStore(root: dataDirectory)
        self.days = days
        self.auditDays = auditDays
        self.log = log
    }

    /// One sweep. Rows go first, in one transaction; files after the commit (a crash in
    /// between leaves an orphan file, never a row pointing at nothing).
    @discardableResult
    public func run() async throws -> Report {
        let now = clock.now()
        let cutoff = now.addingTimeInterval(-Double(days) * 86_400)
        let keyCutoff = now.addingTimeInterval(-IdempotencyStore.retention)
        let (swept, paths) = try await database.write { db -> (Report, [String]) in
            var report = Report()
            let rows = try db.query("SELECT id, kind, path FROM visit_media WHERE created_at < ?", .date(cutoff))
            for row in rows {
                if try row.string("kind") == MediaKind.photo.rawValue { report.photos += 1 } else { report.voiceMessages += 1 }
            }
            try db.execute("DELETE FROM visit_media WHERE created_at < ?", .date(cutoff))
            report.locations = try db.execute("""
                UPDATE visits SET location_lat = NULL, location_lon = NULL, location_accuracy_m = NULL
                WHERE created_at < ? AND (location_lat IS NOT NULL OR location_lon IS NOT NULL OR location_accuracy_m IS NOT NULL)
                """, .date(cutoff))
            report.idempotencyKeys = try db.execute("DELETE FROM idempotency_keys WHERE created_at < ?", .date(keyCutoff))
            // Ended rate-limit windows: one row per address that ever knocked, so without
            // this the table grows with every guesser.
            report.rateLimitWindows = try RateLimiter.prune(db, now: now)
            (report.otpCodes, report.otpTokens) = try OTPStore.prune(db, expiredBefore: now.addingTimeInterval(-OTPStore.keptAfterExpiry))
            return (report, try rows.compactMap { try $0.string("path") })
        }
        for path in paths { media.remove(path) }
        var report = swept
        (report.events, report.pushJobs, report.pushAttempts) = try await pruneLogs(now: now)
        (report.sessions, report.refreshTokens) = try await pruneSessions(now: now)
        let auditCutoff = now.addingTimeInterval(-Double(auditDays) * 86_400)
        report.auditRows = try await inBatches { db, limit in [try AuditLog.prune(db, before: auditCutoff, batch: limit)] }[0]
        log.info("retention sweep", ["retention_days": .number(Double(days)), "photos_deleted": .number(Double(report.photos)),
                                     "voice_messages_deleted": .number(Double(report.voiceMessages)),
                                     "locations_deleted": .number(Double(report.locations)),
                                     "idempotency_keys_deleted": .number(Double(report.idempotencyKeys)),
                                     "rate_limit_windows_deleted": .number(Double(report.rateLimitWindows)),
                                     "events_deleted": .number(Double(report.events)),
                                     "push_jobs_deleted": .number(Double(report.pushJobs)),
                                     "push_attempts_deleted": .number(Double(report.pushAttempts)),
                                     "sessions_deleted": .number(Double(report.sessions)),
                                     "refresh_tokens_deleted": .number(Double(report.refreshTokens)),
                                     "otp_codes_deleted": .number(Double(report.otpCodes)),
                                     "otp_tokens_deleted": .number(Double(report.otpTokens)),
                                     "audit_rows_deleted": .number(Double(report.auditRows))])
        return report
    }

    /// The event log and the push outbox, in batches of `batchSize` rows, each batch its
    /// own transaction.
    private func pruneLogs(now: Date) async throws -> (events: Int, pushJobs: Int, pushAttempts: Int) {
        let retention = Double(days) * 86_400
        let eventCutoff = now.addingTimeInterval(-min(EventLog.keptFor, retention))
        let pushCutoff = now.addingTimeInterval(-min(PushOutbox.keptFor, retention))
        let events = try await inBatches { db, limit in [try EventLog.prune(db, before: eventCutoff, limit: limit)] }
        let push = try await inBatches { db, limit in
            let deleted = try PushOutbox.prune(db, before: pushCutoff, limit: limit)
            return [deleted.jobs, deleted.attempts]
        }
        return (events[0], push[0], push[1])
    }

    /// Ended sessions and their refresh tokens, in batches like the logs. Not bounded by
    /// the retention days: a session holds no visitor data, and deleting a live one would
    /// log its user out.
    private func pruneSessions(now: Date) async throws -> (sessions: Int, refreshTokens: Int) {
        let cutoff = now.addingTimeInterval(-SessionStore.keptAfterEnd)
        let deleted = try await inBatches { db, limit in
            let deleted = try SessionStore.prune(db, endedBefore: cutoff, limit: limit)
            return [deleted.sessions, deleted.refreshTokens]
        }
        return (deleted[0], deleted[1])
    }

    /// Runs `deleteBatch` with a limit of `batchSize` rows, one transaction each, until a
    /// batch deletes fewer than that (nothing older is left) or the sweep is cancelled.
    /// `deleteBatch` returns its counts, the limited one first; the sums are returned.
    private func inBatches(_ deleteBatch: @escaping @Sendable (any SQLConnection, Int) throws -> [Int]) async throws -> [Int] {
        let limit = Self.batchSize
        var totals: [Int] = []
        while true {
            let counts = try await database.write { db in try deleteBatch(db, limit) }
            totals = totals.isEmpty ? counts : zip(totals, counts).map(+)
            if (counts.first ?? 0) < limit || Task.isCancelled { return totals }
        }
    }

    /// Sweeps now and then every `interval`.
    public func start(interval: Duration = .seconds(3600)) {
        loop.start { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                do { try await self.run() } catch {
                    self.log.warning("retention sweep failed", ["error": .string("\(error)")])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// Ends the loop and waits for a sweep in progress to finish.
    public func stop() async { await loop.stop() }
}
