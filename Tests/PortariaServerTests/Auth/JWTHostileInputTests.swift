import Foundation
import Testing
@testable import PortariaServer

/// Claims at the edges of Int64, signed with a real key (as a key holder, or a leaked
/// retired key, could write them): verification answers, it never traps. The old
/// `exp + leeway` overflowed for exp near Int64.max.
@Suite("JWT claims at the edges of Int64")
struct JWTHostileInputTests {
    let key = SigningKey(id: "k1", secret: Array("0123456789abcdef0123456789abcdef".utf8))
    var codec: JWTCodec { JWTCodec(keys: [key], currentKeyID: "k1") }
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A token over `payload` (raw JSON text), correctly signed with `key`.
    func signed(_ payload: String) -> String {
        let head = Base64URL.encode(Array(#"{"alg":"HS256","kid":"k1","typ":"JWT"}"#.utf8))
        let body = Base64URL.encode(Array(payload.utf8))
        return "\(head).\(body).\(Base64URL.encode(Crypto.hmacSHA256(key: key.secret, data: Array("\(head).\(body)".utf8))))"
    }

    func payload(iat: String, exp: String) -> String {
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","jti":"j","iat":\#(iat),"exp":\#(exp)}"#
    }

    func outcome(_ token: String) -> Result<AccessClaims, TokenError> {
        Result { () throws(TokenError) in try codec.verify(token, now: now) }
    }

    @Test("exp and iat at Int64.max and Int64.min are compared without overflow")
    func extremes() throws {
        let max = String(Int64.max), min = String(Int64.min)
        #expect(try outcome(signed(payload(iat: "1800000000", exp: max))).get().exp == Int64.max)
        #expect(outcome(signed(payload(iat: "1800000000", exp: min))) == .failure(.expired))
        #expect(outcome(signed(payload(iat: max, exp: max))) == .failure(.notYetValid))
        #expect(try outcome(signed(payload(iat: min, exp: "1800000900"))).get().iat == Int64.min)
    }

    @Test("the verified-token cache re-checks expiry without overflow")
    func cache() throws {
        let cache = VerifiedTokenCache(capacity: 4)
        let forever = signed(payload(iat: "1800000000", exp: String(Int64.max)))
        _ = try cache.verify(forever, with: codec, now: now)
        _ = try cache.verify(forever, with: codec, now: now.addingTimeInterval(1e9))
        let expired = signed(payload(iat: "1800000000", exp: "1800000100"))
        _ = try cache.verify(expired, with: codec, now: now)
        #expect(throws: TokenError.expired) { try cache.verify(expired, with: codec, now: now.addingTimeInterval(1_000)) }
    }

    @Test("numbers that do not fit an Int64 are malformed, not truncated", arguments: [
        "9223372036854775808", "-9223372036854775809", "1e300", "1.5", "\"1800000900\"", "null", "1e19",
    ])
    func outOfRange(exp: String) {
        #expect(outcome(signed(payload(iat: "1800000000", exp: exp))) == .failure(.malformed))
    }
}
