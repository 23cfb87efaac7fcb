import PortariaCore

/// The distinct SQL texts a SQLite database has prepared since it opened: what the query
/// plan tests read to check that every statement the server runs searches an index
/// instead of walking a table that grows with the building's history.
///
/// A statement is noted when a connection prepares it for the first time (its statement
/// cache misses), so the hot path never touches the log. The texts are the ones the
/// statement caches already hold; the log keeps at most `capacity` of them, which the
/// server's fixed set of statements stays far below.
public final class SQLStatementLog: Sendable {
    public static let capacity = 4096
    private let seen = Locked<Set<String>>([])

    public init() {}

    /// Every distinct statement prepared so far, up to `capacity`.
    public var statements: Set<String> { seen.current }

    func note(_ sql: String) {
        seen.withLock { seen in
            if seen.count < Self.capacity { seen.insert(sql) }
        }
    }
}
