import Foundation
import PortariaCore

/// What FCM's answers mean: a send's outcome, and the OAuth token endpoint's grant. Pure,
/// so fuzz/targets/PushResponseTarget.swift compiles it.
enum FCMResponse {
    /// Google asks for at least a minute's pause after QUOTA_EXCEEDED.
    static let quotaBackoff: TimeInterval = 60

    /// The codes that mean the token is dead, with the one status Google answers each with.
    /// Deactivating a token stops a resident's rings, so a code under any other status
    /// (a proxy, a mix-up) is not taken as one.
    static let tokenInvalidStatus: [String: Int] = ["UNREGISTERED": 404, "INVALID_ARGUMENT": 400, "SENDER_ID_MISMATCH": 403]

    /// FCM v1 errors: the specific code is in `error.details[].errorCode`
    /// (`type.googleapis.com/google.firebase.fcm.v1.FcmError`), the generic one in `error.status`.
    static func interpret(status: Int, headers: [String: String], body: [UInt8]) -> PushResult {
        result(status: status, headers: headers, body: body).clippingProviderText()
    }

    private static func result(status: Int, headers: [String: String], body: [UInt8]) -> PushResult {
        let json = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(body))
        if status == 200 { return PushResult(outcome: .accepted, httpStatus: 200, providerID: json?["name"]?.stringValue) }
        var code = json?["error"]?["status"]?.stringValue
        if case .array(let details)? = json?["error"]?["details"] {
            for detail in details { if let specific = detail["errorCode"]?.stringValue { code = specific; break } }
        }
        let reason = code ?? "HTTP \(status)"
        let message = json?["error"]?["message"]?.stringValue
        var retryAfter = headers["retry-after"].flatMap { RetryAfter.parse($0) }
        if tokenInvalidStatus[reason] == status {
            return PushResult(outcome: .tokenInvalid, httpStatus: status, reason: reason, detail: message)
        }
        switch reason {
        case "QUOTA_EXCEEDED":
            retryAfter = max(retryAfter ?? 0, quotaBackoff)
            return PushResult(outcome: .retry, httpStatus: status, reason: reason, retryAfter: retryAfter, detail: message)
        case "UNAVAILABLE", "INTERNAL":
            return PushResult(outcome: .retry, httpStatus: status, reason: reason, retryAfter: retryAfter, detail: message)
        default:
            if status == 429 || status >= 500 {
                return PushResult(outcome: .retry, httpStatus: status, reason: reason, retryAfter: retryAfter, detail: message)
            }
            // THIRD_PARTY_AUTH_ERROR (APNs credentials in Firebase), PERMISSION_DENIED, …: configuration.
            return PushResult(outcome: .failed, httpStatus: status, reason: reason, detail: message)
        }
    }

    /// Whether a 401 says our access token was revoked or expired early (fetch a new one).
    static func unauthenticated(status: Int, body: [UInt8]) -> Bool {
        guard status == 401 else { return false }
        let json = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(body))
        return json?["error"]?["status"]?.stringValue == "UNAUTHENTICATED"
    }

    /// An access token from the OAuth token endpoint, and how long it lives.
    struct Grant: Equatable {
        var token: String
        var lifetime: TimeInterval
    }

    /// Longest token accepted: Google's are a few hundred bytes.
    static let accessTokenLimit = 4096
    /// Longest lifetime believed: Google's tokens live an hour (at most 12 h). A token
    /// that dies earlier is answered 401 UNAUTHENTICATED and fetched again.
    static let lifetimeLimit: TimeInterval = 24 * 3600
    /// When `expires_in` is missing.
    static let defaultLifetime: TimeInterval = 3600

    /// The token endpoint's answer (RFC 6749 §5.1): `access_token` must be a bearer token
    /// (RFC 6750 §2.1 b64token), since it goes into the `authorization` header as it is;
    /// `expires_in` is clamped to 0…`lifetimeLimit`. Otherwise the error to report.
    static func grant(status: Int, body: [UInt8]) -> Result<Grant, OutboundHTTPError> {
        let json = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(body))
        guard status == 200, let token = json?["access_token"]?.stringValue else {
            let error = json?["error"]?.stringValue.map(PushResult.providerText) ?? "HTTP \(status)"
            return .failure(.transport("FCM OAuth token request refused: \(error)"))
        }
        guard isBearerToken(token) else {
            return .failure(.transport("FCM OAuth token endpoint answered an access_token that is not a bearer token (\(token.utf8.count) bytes)"))
        }
        var lifetime = defaultLifetime
        if case .number(let seconds)? = json?["expires_in"] { lifetime = seconds.isNaN ? 0 : min(max(0, seconds), lifetimeLimit) }
        return .success(Grant(token: token, lifetime: lifetime))
    }

    /// RFC 6750 §2.1: `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    static func isBearerToken(_ token: String) -> Bool {
        let bytes = Array(token.utf8)
        guard !bytes.isEmpty, bytes.count <= accessTokenLimit else { return false }
        let body = bytes.prefix { $0 != UInt8(ascii: "=") }
        guard !body.isEmpty, bytes.dropFirst(body.count).allSatisfy({ $0 == UInt8(ascii: "=") }) else { return false }
        return body.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                return true
            default:
                return false
            }
        }
    }
}
