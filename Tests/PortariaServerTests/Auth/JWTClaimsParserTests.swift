import Foundation
import Testing
@testable import PortariaServer

/// `JWTJSON`, the hand-written reader of a token's header and claims (decision 0044): it
/// accepts what `JWTCodec.sign` writes (and JSON's other spellings of the same values),
/// agrees with `JSONDecoder` on everything it accepts, and refuses everything else — which
/// the request path turns into the same 401 as before.
@Suite("JWT claims without JSONDecoder")
struct JWTClaimsParserTests {
    let key = SigningKey(id: "k1", secret: Array("0123456789abcdef0123456789abcdef".utf8))
    var codec: JWTCodec { JWTCodec(keys: [key], currentKeyID: "k1") }
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func signed(_ payload: String, header: String = #"{"alg":"HS256","kid":"k1","typ":"JWT"}"#) -> String {
        let head = Base64URL.encode(Array(header.utf8))
        let body = Base64URL.encode(Array(payload.utf8))
        return "\(head).\(body).\(Base64URL.encode(Crypto.hmacSHA256(key: key.secret, data: Array("\(head).\(body)".utf8))))"
    }

    static let valid = #"{"iss":"portaria","aud":"portaria-api","sub":"u-1","sid":"s-1","iat":1800000000,"exp":1800000900,"jti":"j"}"#

    @Test("what JWTCodec.sign writes is read back exactly, for many random claims")
    func signedClaimsRoundTrip() throws {
        for index in 0..<200 {
            let claims = AccessClaims(iss: JWTCodec.issuer, aud: JWTCodec.audience, sub: UUID().uuidString.lowercased(),
                                      sid: UUID().uuidString.lowercased(), iat: 1_800_000_000 - Int64(index),
                                      exp: 1_800_000_900 + Int64(index), jti: Base64URL.encode(Crypto.randomBytes(12)))
            #expect(try codec.verify(codec.sign(claims), now: now) == claims)
            #expect(JWTJSON.claims(Array(try JSONEncoder().encode(claims))) == claims)
        }
    }

    @Test("other valid spellings of the same claims agree with JSONDecoder", arguments: [
        valid,
        " {\n\t\"jti\" : \"j\", \"exp\":1800000900,\"iat\":1800000000,\"sid\":\"s-1\",\"sub\":\"u-1\",\"aud\":\"portaria-api\",\"iss\":\"portaria\" } \r\n",
        #"{"iss":"portaria","aud":"portaria-api","sub":"\u0075-1","sid":"s\/1","iat":1800000000,"exp":1800000900,"jti":"\ud83d\ude00 \" \\ \n é"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":-0,"exp":0,"jti":""}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":-9223372036854775808,"exp":9223372036854775807,"jti":"\u0000"}"#,
    ])
    func agreesWithJSONDecoder(text: String) throws {
        let parsed = try #require(JWTJSON.claims(Array(text.utf8)))
        #expect(parsed == (try JSONDecoder().decode(AccessClaims.self, from: Data(text.utf8))))
    }

    @Test("anything else is malformed: the same 401 as a broken token", arguments: [
        "", "{}", "[]", "null", #"{"iss":"portaria"}"#,
        // Shape: an eighth member, a missing one, a duplicate, a nested or wrongly typed value.
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":1,"exp":2,"jti":"j","admin":true}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":1,"exp":2}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sub":"v","sid":"s","iat":1,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":["portaria-api"],"sub":"u","sid":"s","iat":1,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":{"id":"u"},"sid":"s","iat":1,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":"1","exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":null,"sid":"s","iat":1,"exp":2,"jti":"j"}"#,
        // Numbers: fraction, exponent, leading zero, plus sign, overflow, bare minus.
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":1.0,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":1e3,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":01,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":+1,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":1,"exp":9223372036854775808,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":-,"exp":2,"jti":"j"}"#,
        // Strings: raw control character, bad escape, lone surrogates, short \u, unterminated.
        "{\"iss\":\"portaria\",\"aud\":\"portaria-api\",\"sub\":\"u\n\",\"sid\":\"s\",\"iat\":1,\"exp\":2,\"jti\":\"j\"}",
        #"{"iss":"portaria","aud":"portaria-api","sub":"\x","sid":"s","iat":1,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"\ud83d","sid":"s","iat":1,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"\ude00","sid":"s","iat":1,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"\u12","sid":"s","iat":1,"exp":2,"jti":"j"}"#,
        #"{"iss":"portaria","aud":"portaria-api","sub":"u"#,
        // Structure: trailing comma, missing colon, text after the object, two objects.
        #"{"iss":"portaria","aud":"portaria-api","sub":"u","sid":"s","iat":1,"exp":2,"jti":"j",}"#,
        #"{"iss" "portaria","aud":"portaria-api","sub":"u","sid":"s","iat":1,"exp":2,"jti":"j"}"#,
        valid + "x", valid + valid,
    ])
    func refused(text: String) {
        #expect(JWTJSON.claims(Array(text.utf8)) == nil)
        #expect(Result { () throws(TokenError) in try codec.verify(signed(text), now: now) } == .failure(.malformed))
    }

    @Test("invalid UTF-8 inside a string is refused, not replaced")
    func invalidUTF8() {
        for bad: [UInt8] in [[0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82]] {
            var bytes = Array(#"{"iss":"portaria","aud":"portaria-api","sub":""#.utf8)
            bytes += bad
            bytes += Array(#"","sid":"s","iat":1,"exp":2,"jti":"j"}"#.utf8)
            #expect(JWTJSON.claims(bytes) == nil, "\(bad)")
        }
    }

    @Test("the header: alg, kid and typ only, strings only")
    func header() {
        #expect(JWTJSON.header(Array(#"{"alg":"HS256","kid":"k1","typ":"JWT"}"#.utf8))! == ("HS256", "k1"))
        #expect(JWTJSON.header(Array(#"{"alg":"HS256"}"#.utf8))! == ("HS256", nil))
        for text in [#"{"kid":"k1"}"#, #"{"alg":"HS256","kid":1}"#, #"{"alg":"HS256","cty":"JWT"}"#,
                     #"{"alg":"HS256","alg":"none"}"#, #"{"alg":"HS256","typ":null}"#, #"{"alg":"HS256"} x"#] {
            #expect(JWTJSON.header(Array(text.utf8)) == nil, "\(text)")
        }
        #expect(Result { () throws(TokenError) in
            try codec.verify(signed(Self.valid, header: #"{"alg":"HS256","kid":"k1","jku":"https://evil"}"#), now: now)
        } == .failure(.malformed))
    }
}
