import Foundation

// fuzz/jwt: JWTCodec.verify (and the verified-token cache) on arbitrary token text.
// A random signature almost never verifies, so each input is also re-signed with the
// real key: the claims' JSON and numbers (exp, iat) are then reached as a key holder
// (or a leaked old key) could reach them. Properties, not only survival: a token is
// accepted only under the key that signed it (the same key ids with other secrets, or a
// signature made with another secret, are refused), and accepted claims signed again
// verify to the same claims.

let fuzzCodec = JWTCodec(keys: [SigningKey(id: "k1", secret: Array("fuzz-signing-key-one-0123456789".utf8)),
                                SigningKey(id: "k2", secret: Array("fuzz-signing-key-two-0123456789".utf8))],
                         currentKeyID: "k1")
/// The same key ids with other secrets: what an attacker who guessed the ids holds.
let fuzzWrongCodec = JWTCodec(keys: [SigningKey(id: "k1", secret: Array("not-the-signing-key-one-01234567".utf8)),
                                     SigningKey(id: "k2", secret: Array("not-the-signing-key-two-01234567".utf8))],
                              currentKeyID: "k1")
let fuzzCache = VerifiedTokenCache(capacity: 64)

/// Accepted claims: only under the right key, and they survive being signed again.
func checkAccepted(_ token: String, _ claims: AccessClaims) {
    invariant((try? fuzzWrongCodec.verify(token, now: fuzzNow)) == nil, "accepted under the wrong secret: \(token)")
    invariant((try? fuzzCodec.verify(fuzzCodec.sign(claims), now: fuzzNow)) == claims, "claims changed by signing again: \(claims)")
}
let fuzzNow = Date(timeIntervalSince1970: 1_800_000_000)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWT(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)
    if let claims = try? fuzzCodec.verify(text, now: fuzzNow) { checkAccepted(text, claims) }

    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    if parts.count >= 2 {
        let signingInput = parts[0] + "." + parts[1]
        let signature = Crypto.hmacSHA256(key: fuzzCodec.keys[0].secret, data: Array(signingInput.utf8))
        let token = signingInput + "." + Base64URL.encode(signature)
        if let claims = try? fuzzCache.verify(token, with: fuzzCodec, now: fuzzNow) {
            // Accepted claims were checked: issuer, audience, not expired.
            invariant(claims.iss == JWTCodec.issuer && claims.aud == JWTCodec.audience, "claims accepted: \(claims)")
            invariant(claims.exp > Int64(fuzzNow.timeIntervalSince1970) - fuzzCodec.leeway, "expired claims accepted: \(claims)")
            checkAccepted(token, claims)
            // The cache answers as the codec does.
            invariant((try? fuzzCodec.verify(token, now: fuzzNow)) == claims, "cache and codec disagree: \(token)")
            _ = try? fuzzCache.verify(token, with: fuzzCodec, now: fuzzNow.addingTimeInterval(86_400 * 365))
        }
        // The same signing input signed with a secret the server does not hold is refused.
        let forged = Crypto.hmacSHA256(key: fuzzWrongCodec.keys[0].secret, data: Array(signingInput.utf8))
        let forgedToken = signingInput + "." + Base64URL.encode(forged)
        invariant((try? fuzzCodec.verify(String(forgedToken), now: fuzzNow)) == nil, "forged signature accepted: \(forgedToken)")
    }

    // Base64url: whatever decodes re-encodes to a string that decodes to the same bytes.
    if let decoded = Base64URL.decode(text) {
        invariant(Base64URL.decode(Base64URL.encode(decoded)) == decoded, "base64url round trip")
    }
    return 0
}
