import Foundation

// fuzz/jwt: JWTCodec.verify (and the verified-token cache) on arbitrary token text.
// A random signature almost never verifies, so each input is also re-signed with the
// real key: the claims' JSON and numbers (exp, iat) are then reached as a key holder
// (or a leaked old key) could reach them.

let fuzzCodec = JWTCodec(keys: [SigningKey(id: "k1", secret: Array("fuzz-signing-key-one-0123456789".utf8)),
                                SigningKey(id: "k2", secret: Array("fuzz-signing-key-two-0123456789".utf8))],
                         currentKeyID: "k1")
let fuzzCache = VerifiedTokenCache(capacity: 64)
let fuzzNow = Date(timeIntervalSince1970: 1_800_000_000)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWT(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)
    _ = try? fuzzCodec.verify(text, now: fuzzNow)

    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    if parts.count >= 2 {
        let signingInput = parts[0] + "." + parts[1]
        let signature = Crypto.hmacSHA256(key: fuzzCodec.keys[0].secret, data: Array(signingInput.utf8))
        let token = signingInput + "." + Base64URL.encode(signature)
        if let claims = try? fuzzCache.verify(token, with: fuzzCodec, now: fuzzNow) {
            // Accepted claims were checked: issuer, audience, not expired.
            invariant(claims.iss == JWTCodec.issuer && claims.aud == JWTCodec.audience, "claims accepted: \(claims)")
            _ = try? fuzzCache.verify(token, with: fuzzCodec, now: fuzzNow.addingTimeInterval(86_400 * 365))
        }
    }

    // Base64url: whatever decodes re-encodes to a string that decodes to the same bytes.
    if let decoded = Base64URL.decode(text) {
        invariant(Base64URL.decode(Base64URL.encode(decoded)) == decoded, "base64url round trip")
    }
    return 0
}
