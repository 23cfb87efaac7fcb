import Foundation
import PortariaCore

/// An HS256 signing key with its id (`kid`). Several may be active during rotation.
public struct SigningKey: Sendable {
    public let id: String
    public let secret: [UInt8]
    public init(id: String, secret: [UInt8]) {
        self.id = id
        self.secret = secret
    }
}

/// The claims of a Portaria access token.
public struct AccessClaims: Codable, Sendable, Equatable {
    public var iss: String
    public var aud: String
    public var sub: String
    /// The refresh-token family (session) this access token belongs to; revoking the
    /// session revokes its access tokens at once.
    public var sid: String
    public var iat: Int64
    public var exp: Int64
    public var jti: String

    /// The claims of an access token this server issues: its own issuer and audience,
    /// valid for `lifetime` seconds from `issuedAt`.
    public static func issued(to userID: String, session sessionID: String, at issuedAt: Date, lifetime: TimeInterval,
                              jti: String) -> AccessClaims {
        let iat = Int64(issuedAt.timeIntervalSince1970)
        return AccessClaims(iss: JWTCodec.issuer, aud: JWTCodec.audience, sub: userID, sid: sessionID,
                            iat: iat, exp: iat + Int64(lifetime), jti: jti)
    }
}

/// Why a token was refused. All become the same 401 for the caller; the reason is for logs and tests.
public enum TokenError: Error, Equatable, Sendable {
    case malformed, unsupportedAlgorithm, unknownKey, badSignature, expired, notYetValid, wrongIssuer, wrongAudience
}

/// HS256 JWTs (RFC 7519) under RFC 8725's rules: one algorithm allowed (the header's
/// `alg` is checked against it, never trusted to choose), `kid` selects the key, and
/// `exp`, `iss`, `aud` are always verified.
public struct JWTCodec: Sendable {
    public static let issuer = "portaria"
    public static let audience = "portaria-api"
    public let keys: [SigningKey]
    /// New tokens are signed with this key; the others only verify.
    public let currentKeyID: String
    /// Allowed clock skew between instances.
    public var leeway: Int64 = 30

    public init(keys: [SigningKey], currentKeyID: String) {
        precondition(keys.contains { $0.id == currentKeyID }, "current key must be in the key set")
        self.keys = keys
        self.currentKeyID = currentKeyID
    }

    public func sign(_ claims: AccessClaims) -> String {
        let key = keys.first { $0.id == currentKeyID }!
        let header = #"{"alg":"HS256","kid":"\#(key.id)","typ":"JWT"}"#
        let payload = (try? JSONEncoder().encode(claims)) ?? Data()
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload))
        let signature = Crypto.hmacSHA256(key: key.secret, data: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    public func verify(_ token: String, now: Date = Date()) throws(TokenError) -> AccessClaims {
        guard token.utf8.count <= 4096 else { throw .malformed }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        // The header and claims are read by `JWTJSON`, not `JSONDecoder` (decision 0044):
        // flat objects of strings and integers, anything else malformed.
        guard parts.count == 3,
              let headerBytes = Base64URL.decode(parts[0]),
              let header = JWTJSON.header(headerBytes) else { throw .malformed }
        guard header.alg == "HS256" else { throw .unsupportedAlgorithm }
        guard let kid = header.kid, let key = keys.first(where: { $0.id == kid }) else { throw .unknownKey }
        guard let signature = Base64URL.decode(parts[2]) else { throw .malformed }
        let expected = Crypto.hmacSHA256(key: key.secret, data: Array("\(parts[0]).\(parts[1])".utf8))
        guard Crypto.constantTimeEquals(signature, expected) else { throw .badSignature }
        guard let payloadBytes = Base64URL.decode(parts[1]),
              let claims = JWTJSON.claims(payloadBytes) else { throw .malformed }
        let seconds = Int64(now.timeIntervalSince1970)
        guard claims.iss == Self.issuer else { throw .wrongIssuer }
        guard claims.aud == Self.audience else { throw .wrongAudience }
        guard !isExpired(claims, at: seconds) else { throw .expired }
        // `seconds ± leeway` cannot overflow (the clock is ours); `exp`/`iat ± leeway`
        // could (they are the token's), so the leeway goes on our side of each comparison.
        guard claims.iat <= seconds + leeway else { throw .notYetValid }
        return claims
    }

    /// Whether `claims` expired (with the leeway) at `seconds` since 1970.
    func isExpired(_ claims: AccessClaims, at seconds: Int64) -> Bool {
        claims.exp <= seconds - leeway
    }
}

/// Tokens whose signature already verified, so a phone's requests during the token's 15
/// minutes pay the HMAC and JSON decoding once (≈ 0.1 ms each on this machine, measured by
/// `portaria-bench tokens`). Keyed by the exact token text: a different byte is a
/// different key and goes through full verification. Expiry is re-checked on every use,
/// and the session check (logout, reuse) still runs per request in `Authenticator`.
final class VerifiedTokenCache: Sendable {
    private let entries = Locked<[String: AccessClaims]>([:])
    let capacity: Int

    init(capacity: Int = 20_000) { self.capacity = capacity }

    func verify(_ token: String, with codec: JWTCodec, now: Date) throws(TokenError) -> AccessClaims {
        if let claims = entries.withLock({ $0[token] }) {
            guard !codec.isExpired(claims, at: Int64(now.timeIntervalSince1970)) else {
                entries.withLock { _ = $0.removeValue(forKey: token) }
                throw .expired
            }
            return claims
        }
        let claims = try codec.verify(token, now: now)
        entries.withLock { entries in
            // Crude but bounded: when full, start over (every entry is at most 15 min old
            // anyway, and a miss only costs one verification).
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = claims
        }
        return claims
    }
}
