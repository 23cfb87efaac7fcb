import PortariaCore

/// Every way login, refresh and the SMS codes refuse, as domain cases. `AuthService`
/// throws these; the router renders them (`RenderableError`), and this conformance is the
/// one place that spells each case's wire shape (docs/openapi.yaml). Other malformed input
/// is still the generic 400 of `require(_:field:_:)`.
enum AuthError: TabulatedError, Equatable {
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
    /// A phone number that is no phone number; the message says what is expected.
    case invalidPhone(String)

    var answer: ErrorAnswer {
        switch self {
        case .invalidCredentials: return ErrorAnswer(401, .invalidCredentials, "usuário ou senha inválidos")
        case .invalidRefreshToken: return ErrorAnswer(401, .invalidRefreshToken, "refresh token is invalid or expired")
        case .unknownRefreshToken: return ErrorAnswer(401, .invalidRefreshToken, "refresh token is invalid")
        case .refreshTokenReused:
            return ErrorAnswer(401, .refreshTokenReused, "refresh token was already used; the session has been revoked")
        case .invalidOTPCode: return ErrorAnswer(401, .invalidOTP, "código inválido ou expirado")
        case .invalidOTPToken: return ErrorAnswer(401, .invalidOTP, "otp_token is invalid, expired or already used")
        case .rateLimited: return ErrorAnswer(429, .rateLimited, "too many attempts; try again later")
        case .invalidPhone(let message): return ErrorAnswer(400, .invalidRequest, message)
        }
    }

    var details: [String: JSONValue] {
        switch self {
        case .rateLimited(let seconds): return ["retry_after": .number(Double(HTTPError.retryAfterSeconds(seconds)))]
        case .invalidPhone: return ["field": .string("phone")]
        default: return [:]
        }
    }

    var headers: [(String, String)] {
        guard case .rateLimited(let seconds) = self else { return [] }
        return [("Retry-After", String(HTTPError.retryAfterSeconds(seconds)))]
    }
}
