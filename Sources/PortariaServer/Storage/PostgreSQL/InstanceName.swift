import Foundation

/// The name a `portaria serve` process gives every PostgreSQL connection it opens
/// (`application_name`: `portaria/<uuid>` for the pool, `portaria/<uuid>/listener` for the
/// LISTEN connection), and under which its push worker leases jobs (decision 0058).
///
/// A backend lives exactly as long as its client's socket: when a process dies (`kill -9`,
/// an OOM kill, a crash) the kernel closes its sockets and PostgreSQL ends its backends at
/// once. So "no backend carries this name" means "this instance is gone", and the jobs it
/// left `sending` can go out now instead of when their lease (60 s) runs out — the first
/// ring of a visit whose instance died right after the gate POST, for one. Any one
/// connection keeps the name alive: the listener alone behind a transaction-pooling
/// PgBouncer (which lends pool backends to whoever runs a transaction), the pool alone
/// while the listener reconnects.
///
/// Only names of this shape are ever judged: an instance whose URL sets its own
/// `application_name` (an operator's choice) or a build that does not name its connections
/// leases under a bare id, and its jobs wait for their lease to run out.
public struct InstanceName: Sendable, Equatable, CustomStringConvertible {
    public static let prefix = "portaria/"
    public let rawValue: String

    /// A fresh name for this process.
    public init() { rawValue = Self.prefix + UUID().uuidString.lowercased() }

    public var description: String { rawValue }

    /// The LISTEN connection's `application_name` (an operator tells it apart in
    /// `pg_stat_activity`; it still names this instance).
    public var listenerName: String { rawValue + "/listener" }

    /// `url` with this name as its `application_name`, or nil when the URL is not a
    /// PostgreSQL one or already names its application (then the process has no name the
    /// others can see, and must not lease under one).
    public func naming(_ url: String) -> String? {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://"), !url.contains("application_name=") else { return nil }
        return url + (url.contains("?") ? "&" : "?") + "application_name=" + rawValue
    }
}

/// Which instances have been seen without a connection, and since when. An instance is
/// taken for gone only once it stays unseen for `grace`: a live instance loses every
/// connection at once when the database restarts or fails over (its pool reconnects at its
/// next query, its listener within a second), and its in-flight pushes must not be sent a
/// second time meanwhile. A pure value, owned by the push worker's loop (decision 0058).
struct GoneInstances: Sendable {
    static let grace: Duration = .seconds(5)
    private(set) var unseenSince: [String: ContinuousClock.Instant] = [:]
    let grace: Duration

    init(grace: Duration = Self.grace) { self.grace = grace }

    /// Records that `unseen` are the owners no connection names at `now`; returns those
    /// unseen for at least `grace`, sorted. An owner seen again starts over.
    mutating func observe(_ unseen: Set<String>, at now: ContinuousClock.Instant) -> [String] {
        unseenSince = unseenSince.filter { unseen.contains($0.key) }
        for owner in unseen where unseenSince[owner] == nil { unseenSince[owner] = now }
        return unseenSince.filter { now - $0.value >= grace }.map(\.key).sorted()
    }
}
