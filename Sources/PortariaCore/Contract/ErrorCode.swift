/// A stable, machine-readable error code of the API (`UPPER_SNAKE`).
///
/// A struct over string constants rather than an enum so that a client built against an
/// older contract still decodes codes it has never seen.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    // Transport and input
    public static let invalidRequest = ErrorCode("INVALID_REQUEST")
    public static let notFound = ErrorCode("NOT_FOUND")
    public static let methodNotAllowed = ErrorCode("METHOD_NOT_ALLOWED")
    public static let payloadTooLarge = ErrorCode("PAYLOAD_TOO_LARGE")
    public static let unsupportedMediaType = ErrorCode("UNSUPPORTED_MEDIA_TYPE")
    public static let rateLimited = ErrorCode("RATE_LIMITED")
    public static let internalError = ErrorCode("INTERNAL_ERROR")
    /// 503: the server cannot take the request now (overloaded, a concurrent writer held
    /// the database too long); retry after `Retry-After`.
    public static let serviceUnavailable = ErrorCode("SERVICE_UNAVAILABLE")
    /// 503: the database cannot be reached, is restarting or refuses writes; nothing was
    /// changed, retry after `Retry-After` as after a lost connection.
    public static let databaseUnavailable = ErrorCode("DATABASE_UNAVAILABLE")
    /// 507: the disk holding the database or the media files is full; nothing was
    /// changed, retry after `Retry-After`.
    public static let insufficientStorage = ErrorCode("INSUFFICIENT_STORAGE")
    /// A route this build cannot serve (WebSockets on a platform without the event loop).
    public static let notImplemented = ErrorCode("NOT_IMPLEMENTED")

    // Authentication and authorization
    public static let unauthorized = ErrorCode("UNAUTHORIZED")
    public static let forbidden = ErrorCode("FORBIDDEN")
    public static let invalidCredentials = ErrorCode("INVALID_CREDENTIALS")
    public static let invalidOTP = ErrorCode("INVALID_OTP")
    public static let refreshTokenReused = ErrorCode("REFRESH_TOKEN_REUSED")
    public static let invalidRefreshToken = ErrorCode("INVALID_REFRESH_TOKEN")
    public static let companyRequired = ErrorCode("COMPANY_REQUIRED")

    // Visits
    public static let idempotencyKeyRequired = ErrorCode("IDEMPOTENCY_KEY_REQUIRED")
    public static let idempotencyKeyMismatch = ErrorCode("IDEMPOTENCY_KEY_MISMATCH")
    public static let requestInProgress = ErrorCode("REQUEST_IN_PROGRESS")
    public static let visitAlreadyResolved = ErrorCode("VISIT_ALREADY_RESOLVED")
    /// Another resident picked up first (answer, decline).
    public static let visitAlreadyAnswered = ErrorCode("VISIT_ALREADY_ANSWERED")
    /// The visit was cancelled by the visitor or expired: nothing can be decided any more.
    public static let visitClosed = ErrorCode("VISIT_CLOSED")
    /// Answer or decline of a visit that no longer rings.
    public static let visitNotRinging = ErrorCode("VISIT_NOT_RINGING")
    /// The visit was answered or resolved: its photo and voice message no longer change.
    public static let visitMediaFrozen = ErrorCode("VISIT_MEDIA_FROZEN")
    /// The building's visitors stored their daily allowance of photos and voice messages.
    public static let mediaQuotaExceeded = ErrorCode("MEDIA_QUOTA_EXCEEDED")

    // Devices
    /// The user has as many devices as allowed and none of them is stale.
    public static let deviceLimitReached = ErrorCode("DEVICE_LIMIT_REACHED")

    // Calls
    /// Relay (TURN) credentials for a visitor exist only while a call is live.
    public static let callNotActive = ErrorCode("CALL_NOT_ACTIVE")
}
