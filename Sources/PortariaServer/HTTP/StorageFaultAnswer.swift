import PortariaCore

/// How a request stopped by a storage fault is answered: 503 (the database cannot be
/// reached, is restarting or read-only, or a concurrent writer held it too long) or 507
/// (no room left), each with `Retry-After`, so clients retry as after a lost connection.
/// Nil for storage errors that are not faults of the moment (they stay 500s).
enum StorageFaultAnswer {
    /// Seconds a client waits before retrying: a database restart takes seconds; a full
    /// disk needs someone to free space.
    static let unavailableRetryAfter = 2
    static let fullRetryAfter = 10
    static let conflictRetryAfter = 1

    static func answer(for error: StorageError) -> HTTPError? {
        switch error {
        case .unavailable:
            return .tryAgain(status: 503, code: .databaseUnavailable, message: "the database is unavailable; retry shortly", retryAfter: unavailableRetryAfter)
        case .full:
            return .tryAgain(status: 507, code: .insufficientStorage, message: "the server's storage is full; retry later", retryAfter: fullRetryAfter)
        case .conflict:
            return .tryAgain(status: 503, code: .serviceUnavailable, message: "the server is busy; retry shortly", retryAfter: conflictRetryAfter)
        case .uniqueViolation, .foreignKeyViolation, .checkViolation, .failed:
            return nil
        }
    }
}
