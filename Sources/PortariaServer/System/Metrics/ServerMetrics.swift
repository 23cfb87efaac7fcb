import Foundation
import PortariaCore

/// What `portaria serve` counts for Prometheus (`--metrics-listen`, docs/ops.md).
///
/// One set per process, like the log (`Log.shared`): the instruments sit on paths that
/// are far apart (libmicrohttpd's completion callback, the push worker, the storage
/// queues, the realtime feed) and a process serves one database. Label names are fixed
/// here; recording is a lock and a hash lookup, with no allocation of its own.
public final class ServerMetrics: Sendable {
    public static let shared = ServerMetrics()

    public let registry = MetricsRegistry()
    /// `portaria_http_requests_total{method,route,status}`: every answered request, by the
    /// route template that matched (`-` when none did), never by raw path.
    public let httpRequests: CounterFamily
    /// `portaria_http_request_duration_seconds{method,route}`: headers in → answer handed over.
    public let httpDuration: HistogramFamily
    /// `portaria_push_sends_total{provider,outcome,reason}`: every push attempt's outcome.
    public let pushSends: CounterFamily
    /// `portaria_push_queue_depth` and `…_oldest_age_seconds`: jobs pending or being sent,
    /// read from the outbox at each scrape.
    public let pushQueueDepth: GaugeFamily
    public let pushQueueOldestAge: GaugeFamily
    /// `portaria_ring_push_seconds`: from the gate POST's transaction (the ring job's
    /// creation) to a first-attempt ring push being handed to its provider.
    public let ringPush: HistogramFamily
    /// `portaria_realtime_sockets`: realtime WebSockets joined to the feed now.
    public let realtimeSockets: GaugeFamily
    /// `portaria_database_errors_total{kind}`: storage failures by `StorageError` kind.
    public let databaseErrors: CounterFamily
    /// `portaria_database_up`: whether the database answered a ping at the last scrape.
    public let databaseUp: GaugeFamily

    /// Request durations: a hot response takes well under a millisecond, an upload or a
    /// slow database several seconds.
    static let requestBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// Time to ring: milliseconds when healthy (decision 0048), seconds when the outbox is stuck.
    static let ringBounds: [Double] = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    public init() {
        httpRequests = registry.counter("portaria_http_requests_total", help: "HTTP requests answered, by route template and status.",
                                        labels: ["method", "route", "status"])
        httpDuration = registry.histogram("portaria_http_request_duration_seconds",
                                          help: "Time from a request's headers to its answer, by route template.",
                                          labels: ["method", "route"], bounds: Self.requestBounds)
        pushSends = registry.counter("portaria_push_sends_total", help: "Push attempts by provider, outcome and provider reason.",
                                     labels: ["provider", "outcome", "reason"], maxSeries: 200)
        pushQueueDepth = registry.gauge("portaria_push_queue_depth", help: "Push jobs pending or being sent (read at scrape).")
        pushQueueOldestAge = registry.gauge("portaria_push_queue_oldest_age_seconds",
                                            help: "Age of the oldest push job pending or being sent; 0 when none (read at scrape).")
        ringPush = registry.histogram("portaria_ring_push_seconds",
                                      help: "Time from a gate POST's ring job to its first attempt being handed to the push provider.",
                                      bounds: Self.ringBounds)
        realtimeSockets = registry.gauge("portaria_realtime_sockets", help: "Realtime WebSockets joined to the event feed.")
        databaseErrors = registry.counter("portaria_database_errors_total", help: "Database operations that failed, by kind.",
                                          labels: ["kind"])
        databaseUp = registry.gauge("portaria_database_up", help: "1 when the database answered a ping at this scrape, else 0.")
    }

    /// Status codes as label values, made once: formatting one per request cost more than
    /// the counting.
    private static let statusLabels: [String] = (0...599).map { String($0) }

    /// One answered request (libmicrohttpd's completion callback).
    func requestCompleted(method: String, route: String, status: Int, seconds: Double) {
        let label = Self.statusLabels.indices.contains(status) ? Self.statusLabels[status] : String(status)
        httpRequests.increment(MetricLabels(method, route, label))
        httpDuration.observe(seconds, MetricLabels(method, route))
    }

    /// One push attempt's outcome. The reason is a provider's token (`BadDeviceToken`,
    /// `UNREGISTERED`, `transport`); anything that does not look like one is `other`.
    func pushAttempted(provider: String, outcome: String, reason: String?) {
        let label: String
        if outcome == "accepted" { label = "" } else if let reason, Self.isToken(reason) { label = reason } else { label = "other" }
        pushSends.increment(MetricLabels(provider, outcome, label))
    }

    /// A storage failure (counted where every database call runs: `ConnectionPool`).
    func databaseFailed(_ error: any Error) {
        let kind: String
        switch error as? StorageError {
        case .uniqueViolation: kind = "unique_violation"
        case .foreignKeyViolation: kind = "foreign_key_violation"
        case .checkViolation: kind = "check_violation"
        case .unavailable: kind = "unavailable"
        case .full: kind = "full"
        case .conflict: kind = "conflict"
        case .failed: kind = "failed"
        case nil: return // a caller's own error thrown inside a transaction, not the database's
        }
        databaseErrors.increment(MetricLabels(kind))
    }

    private static func isToken(_ text: String) -> Bool {
        text.utf8.count <= 48 && !text.isEmpty && text.unicodeScalars.allSatisfy { scalar in
            (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || (scalar >= "0" && scalar <= "9")
                || scalar == "_" || scalar == "-" || scalar == " " || scalar == "."
        }
    }

    /// Reads the scrape-time gauges (the outbox, a ping) and renders every family.
    func scrape(database: any SQLDatabase, now: Date = Date()) async -> String {
        do {
            try await database.ping()
            databaseUp.set(1)
            let (depth, oldest) = try await database.read { db -> (Int64, Date?) in
                // Served by the `push_jobs_due (status, next_attempt_at)` index; the rows
                // read are the queue itself, small unless delivery is stuck.
                let row = try db.queryOne("""
                    SELECT COUNT(*) AS depth, MIN(created_at) AS oldest FROM push_jobs
                    WHERE status IN ('pending', 'sending')
                    """, [])
                return (try row?.int("depth") ?? 0, try row?.date("oldest"))
            }
            pushQueueDepth.set(Double(depth))
            pushQueueOldestAge.set(oldest.map { max(0, now.timeIntervalSince($0)) } ?? 0)
        } catch {
            databaseUp.set(0)
        }
        return registry.render()
    }
}
