import Foundation
import PortariaCore

/// Follows whether one store (the database, the media directory) is failing, so the
/// operator reads one line when a fault starts and one when it ends — not one per
/// request while requests are answered 503/507.
///
/// Every operation of the store reports its outcome and whether it wrote: a fault
/// (`StorageError.unavailable` or `.full`) opens an episode unless one is open; a success
/// at least `quietPeriod` after the last failure closes it, saying how long it lasted and
/// how many operations failed meanwhile. The quiet period keeps one fault one episode:
/// after a PostgreSQL restart each pooled connection fails once before it reconnects,
/// between other connections' successes. An episode a write opened closes only on a
/// write's success: on a full disk SQLite still reads, and a read-only PostgreSQL
/// answers reads.
public final class StorageFaultWatch: Sendable {
    /// What the watched store is called in the log lines ("database", "media directory").
    public let store: String
    private let log: Log
    private struct Episode {
        var kind: String
        var openedByWrite: Bool
        var since: ContinuousClock.Instant
        var lastFailure: ContinuousClock.Instant
        var failures: Int
    }
    private let episode = Locked<Episode?>(nil)

    private let quietPeriod: Duration

    public init(store: String, quietPeriod: Duration = .seconds(1), log: Log = .shared) {
        self.store = store
        self.quietPeriod = quietPeriod
        self.log = log
    }

    /// Whether a fault is open: an operation failed and none succeeded since.
    public var isFailing: Bool { episode.withLock { $0 != nil } }

    /// The kind of the open fault (`unavailable`, `full`), nil when none is.
    public var currentFault: String? { episode.withLock { $0?.kind } }

    /// Runs one operation of the store and reports its outcome; errors other than faults
    /// (constraints, bugs) say nothing about the store's health and are ignored.
    public func watching<T>(write: Bool, _ operation: () async throws -> T) async throws -> T {
        do {
            let value = try await operation()
            succeeded(write: write)
            return value
        } catch let error as StorageError {
            failed(error, write: write)
            throw error
        }
    }

    /// A write whose operation says whether it changed anything: on SQLite a transaction
    /// that wrote nothing commits even on a full disk, so only one that did ends a fault
    /// a write opened (an idle push worker's empty claim every 250 ms would otherwise end
    /// and reopen it at once).
    public func watchingWrite<T>(_ operation: () async throws -> (value: T, wrote: Bool)) async throws -> T {
        do {
            let (value, wrote) = try await operation()
            succeeded(write: wrote)
            return value
        } catch let error as StorageError {
            failed(error, write: true)
            throw error
        }
    }

    /// The synchronous `watching` (a file written on the caller's thread).
    public func watchingNow<T>(write: Bool, _ operation: () throws -> T) throws -> T {
        do {
            let value = try operation()
            succeeded(write: write)
            return value
        } catch let error as StorageError {
            failed(error, write: write)
            throw error
        }
    }

    public func succeeded(write: Bool) {
        // The common case, no fault open, takes one uncontended lock.
        let ended = episode.withLock { open -> Episode? in
            guard let episode = open, write || !episode.openedByWrite,
                  ContinuousClock.now - episode.lastFailure >= quietPeriod else { return nil }
            open = nil
            return episode
        }
        guard let ended else { return }
        let elapsed = ContinuousClock.now - ended.since
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        log.warning("\(store) recovered: requests are served again", [
            "store": .string(store), "fault": .string(ended.kind),
            "lasted_s": .number((seconds * 10).rounded() / 10), "failed_operations": .number(Double(ended.failures)),
        ])
    }

    public func failed(_ error: StorageError, write: Bool) {
        let kind: String
        switch error {
        case .unavailable: kind = "unavailable"
        case .full: kind = "full"
        default: return
        }
        let started = episode.withLock { open -> Bool in
            let now = ContinuousClock.now
            if open != nil {
                open!.failures += 1
                open!.lastFailure = now
                return false
            }
            open = Episode(kind: kind, openedByWrite: write, since: now, lastFailure: now, failures: 1)
            return true
        }
        guard started else { return }
        let answer = kind == "full" ? "507 INSUFFICIENT_STORAGE" : "503 DATABASE_UNAVAILABLE"
        log.error("\(store) \(kind == "full" ? "is full" : "is unavailable"): answering \(answer) until it recovers", [
            "store": .string(store), "fault": .string(kind), "error": .string(error.description),
        ])
    }
}
