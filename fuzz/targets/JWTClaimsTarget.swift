import Foundation

// fuzz/jwt-claims: JWTJSON, the hand-written reader of a token's header and claims
// (decision 0044), on arbitrary bytes — the decoded payload of a token signed with a real
// (or leaked) key. It must never trap, and whatever it accepts JSONDecoder must read
// to the same values: the reader may refuse more than JSONDecoder, never accept something
// different.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWTClaims(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    if let claims = JWTJSON.claims(bytes) {
        let decoded = try? JSONDecoder().decode(AccessClaims.self, from: Data(bytes))
        invariant(decoded == claims, "JWTJSON read \(claims), JSONDecoder \(String(describing: decoded))")
        // And what JWTCodec.sign would write for them reads back the same.
        if let written = try? JSONEncoder().encode(claims) {
            invariant(JWTJSON.claims(Array(written)) == claims, "round trip of \(claims)")
        }
    }
    if let header = JWTJSON.header(bytes) {
        struct Header: Decodable { var alg: String; var kid: String? }
        let decoded = try? JSONDecoder().decode(Header.self, from: Data(bytes))
        invariant(decoded?.alg == header.alg && decoded?.kid == header.kid, "header \(header) vs \(String(describing: decoded))")
    }
    return 0
}
