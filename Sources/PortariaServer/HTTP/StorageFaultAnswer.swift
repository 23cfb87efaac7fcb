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
            return fault(503, .databaseUnavailable, "the database is unavailable; retry shortly", retryAfter: unavailableRetryAfter)
        case .full:
            return fault(507, .insufficientStorage, "the server's storage is full; retry later", retryAfter: fullRetryAfter)
        case .conflict:
            return fault(503, .serviceUnavailable, "the server is busy; retry shortly", retryAfter: conflictRetryAfter)
        case .uniqueViolation, .foreignKeyViolation, .checkViolation, .failed:
            return nil
        }
    }

    private static func fault(_ status: Int, _ code: ErrorCode, _ message: String, retryAfter: Int) -> HTTPError {
        HTTPError(status: status, code: code, message: message, details: ["retry_after": .number(Double(retryAfter))],
                  headers: [("Retry-After", String(retryAfter))])
    }
}
