import Foundation
import Testing
@testable import PortariaServer

@Suite("JWT HS256 (RFC 8725 rules)")
struct JWTTests {
    let key = SigningKey(id: "k1", secret: Array("0123456789abcdef0123456789abcdef".utf8))
    let other = SigningKey(id: "k2", secret: Array("fedcba9876543210fedcba9876543210".utf8))
    var codec: JWTCodec { JWTCodec(keys: [key, other], currentKeyID: "k1") }
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func claims(iss: String = JWTCodec.issuer, aud: String = JWTCodec.audience, iat: Int64? = nil, exp: Int64? = nil) -> AccessClaims {
        let issued = iat ?? Int64(now.timeIntervalSince1970)
        return AccessClaims(iss: iss, aud: aud, sub: "user-1", sid: "session-1", iat: issued, exp: exp ?? issued + 900, jti: "j")
    }

    func forge(header: String, payload: AccessClaims, secret: [UInt8]?) -> String {
        let head = Base64URL.encode(Array(header.utf8))
        let body = Base64URL.encode(Array(try! JSONEncoder().encode(payload)))
        guard let secret else { return "\(head).\(body)." }
        return "\(head).\(body).\(Base64URL.encode(Crypto.hmacSHA256(key: secret, data: Array("\(head).\(body)".utf8))))"
    }

    func rejection(_ token: String) -> TokenError? {
        do { _ = try codec.verify(token, now: now); return nil } catch { return error }
    }

    @Test func roundTrip() throws {
        let token = codec.sign(claims())
        #expect(try codec.verify(token, now: now) == claims())
        #expect(token.split(separator: ".").count == 3)
    }

    @Test func algNoneIsRejected() {
        let token = forge(header: #"{"alg":"none","kid":"k1"}"#, payload: claims(), secret: nil)
        #expect(rejection(token) == .unsupportedAlgorithm)
    }

    @Test func otherAlgorithmsAreRejected() {
        for alg in ["HS512", "RS256", "ES256", "hs256"] {
            let token = forge(header: #"{"alg":"\#(alg)","kid":"k1"}"#, payload: claims(), secret: key.secret)
            #expect(rejection(token) == .unsupportedAlgorithm, "alg \(alg)")
        }
    }

    @Test func badSignatureIsRejected() {
        let token = forge(header: #"{"alg":"HS256","kid":"k1"}"#, payload: claims(), secret: Array("not the key".utf8))
        #expect(rejection(token) == .badSignature)
        // Signed with k2's secret but claiming k1.
        let swapped = forge(header: #"{"alg":"HS256","kid":"k1"}"#, payload: claims(), secret: other.secret)
        #expect(rejection(swapped) == .badSignature)
    }

    @Test func tamperedPayloadIsRejected() {
        let token = codec.sign(claims())
        var parts = token.split(separator: ".").map(String.init)
        var forged = claims()
        forged.sub = "admin"
        parts[1] = Base64URL.encode(Array(try! JSONEncoder().encode(forged)))
        #expect(rejection(parts.joined(separator: ".")) == .badSignature)
    }

    @Test func unknownOrMissingKidIsRejected() {
        #expect(rejection(forge(header: #"{"alg":"HS256","kid":"k9"}"#, payload: claims(), secret: key.secret)) == .unknownKey)
        #expect(rejection(forge(header: #"{"alg":"HS256"}"#, payload: claims(), secret: key.secret)) == .unknownKey)
    }

    @Test func anotherKeyOfTheSetVerifies() throws {
        let token = JWTCodec(keys: [key, other], currentKeyID: "k2").sign(claims())
        #expect(try codec.verify(token, now: now).sub == "user-1")
    }

    @Test func wrongIssuerOrAudienceIsRejected() {
        #expect(rejection(codec.sign(claims(iss: "someone-else"))) == .wrongIssuer)
        #expect(rejection(codec.sign(claims(aud: "another-api"))) == .wrongAudience)
    }

    @Test func expiryIsEnforcedWithSmallLeeway() {
        let past = Int64(now.timeIntervalSince1970) - 3600
        #expect(rejection(codec.sign(claims(iat: past, exp: past + 900))) == .expired)
        // 10 s past exp is inside the 30 s clock-skew leeway; 31 s is not.
        let edge = Int64(now.timeIntervalSince1970)
        #expect(rejection(codec.sign(claims(iat: edge - 900, exp: edge - 10))) == nil)
        #expect(rejection(codec.sign(claims(iat: edge - 900, exp: edge - 31))) == .expired)
        #expect(rejection(codec.sign(claims(iat: edge + 3600, exp: edge + 4500))) == .notYetValid)
    }

    @Test func malformedTokensAreRejected() {
        let valid = codec.sign(claims())
        for token in ["", "abc", "a.b", "a.b.c.d", String(valid.dropLast(10)), valid + "x", "..",
                      String(repeating: "A", count: 5000), valid.replacingOccurrences(of: ".", with: "!")] {
            #expect(rejection(token) != nil, "accepted \(token.prefix(30))")
        }
    }

    @Test func theVerifiedCacheStillRejectsExpiryAndTampering() throws {
        let cache = VerifiedTokenCache(capacity: 2)
        let token = codec.sign(claims())
        #expect(try cache.verify(token, with: codec, now: now).sub == "user-1")
        #expect(try cache.verify(token, with: codec, now: now).sub == "user-1")   // served from the cache
        // Later than exp + leeway: refused although the entry is cached.
        #expect(throws: TokenError.expired) { try cache.verify(token, with: codec, now: now.addingTimeInterval(900 + 31)) }
        // A tampered copy is a different key: full verification, refused.
        var parts = token.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        #expect(throws: TokenError.self) { try cache.verify(parts.joined(separator: "."), with: codec, now: now) }
        // Bounded: more tokens than the capacity still verify.
        for index in 0..<5 {
            var other = claims()
            other.jti = "j\(index)"
            #expect(try cache.verify(codec.sign(other), with: codec, now: now).jti == "j\(index)")
        }
    }
}
