import PortariaCore

/// Every way login, refresh and the SMS codes refuse, as domain cases. `AuthService`
/// throws these; the router renders them (`RenderableError`), and this conformance is the
/// one place that spells each case's wire shape (docs/openapi.yaml). Malformed input is
/// still the generic 400 of `require(_:field:_:)`.
enum AuthError: RenderableError, Equatable {
    /// Wrong password, unknown or disabled user: one answer for all three.
    case invalidCredentials
    /// Unknown, expired, revoked or disabled-user refresh token.
    case invalidRefreshToken
    /// A logout naming a refresh token this server never issued.
    case unknownRefreshToken
    /// A spent refresh token presented again: its session has been revoked.
    case refreshTokenReused
    /// A wrong, expired or exhausted SMS code (or a phone that is no one's).
    case invalidOTPCode
    /// An `otp_token` that is unknown, expired or already exchanged.
    case invalidOTPToken
    case rateLimited(retryAfter: Int)

    var status: Int {
        switch self {
        case .rateLimited: return 429
        default: return 401
        }
    }

    var code: ErrorCode {
        switch self {
        case .invalidCredentials: return .invalidCredentials
        case .invalidRefreshToken, .unknownRefreshToken: return .invalidRefreshToken
        case .refreshTokenReused: return .refreshTokenReused
        case .invalidOTPCode, .invalidOTPToken: return .invalidOTP
        case .rateLimited: return .rateLimited
        }
    }

    var message: String {
        switch self {
        case .invalidCredentials: return "usuário ou senha inválidos"
        case .invalidRefreshToken: return "refresh token is invalid or expired"
        case .unknownRefreshToken: return "refresh token is invalid"
        case .refreshTokenReused: return "refresh token was already used; the session has been revoked"
        case .invalidOTPCode: return "código inválido ou expirado"
        case .invalidOTPToken: return "otp_token is invalid, expired or already used"
        case .rateLimited: return "too many attempts; try again later"
        }
    }

    var details: [String: JSONValue] {
        guard case .rateLimited(let seconds) = self else { return [:] }
        return ["retry_after": .number(Double(HTTPError.retryAfterSeconds(seconds)))]
    }

    var headers: [(String, String)] {
        guard case .rateLimited(let seconds) = self else { return [] }
        return [("Retry-After", String(HTTPError.retryAfterSeconds(seconds)))]
    }
}
