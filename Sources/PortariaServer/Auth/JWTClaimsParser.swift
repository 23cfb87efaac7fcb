import Foundation

/// The JSON of a JWT's header and claims, read without `JSONDecoder` (decision 0044).
///
/// Both are flat objects whose values are strings or integers — what `JWTCodec.sign`
/// writes. Anything else is refused (nil), and the caller answers the same 401 as for any
/// malformed token: nested values, arrays, booleans, null, fractions or exponents,
/// integers outside Int64, duplicate keys, invalid UTF-8, raw control characters in a
/// string, lone surrogates in `\u` escapes, and bytes after the object. Whitespace between
/// tokens is allowed (RFC 8259). Every index is checked before it is read, so no input
/// traps.
enum JWTJSON {
    enum Value: Equatable, Sendable {
        case string(String)
        case integer(Int64)
    }

    /// At most this many members: the claims have seven, the header three.
    static let maximumMembers = 16

    /// The members of a flat object, or nil.
    static func object(_ bytes: [UInt8]) -> [String: Value]? {
        var reader = Reader(bytes: bytes)
        return reader.object()
    }

    /// The claims `JWTCodec.sign` writes, exactly: the seven members and no other.
    static func claims(_ bytes: [UInt8]) -> AccessClaims? {
        guard let members = object(bytes), members.count == 7,
              case .string(let iss)? = members["iss"], case .string(let aud)? = members["aud"],
              case .string(let sub)? = members["sub"], case .string(let sid)? = members["sid"],
              case .integer(let iat)? = members["iat"], case .integer(let exp)? = members["exp"],
              case .string(let jti)? = members["jti"] else { return nil }
        return AccessClaims(iss: iss, aud: aud, sub: sub, sid: sid, iat: iat, exp: exp, jti: jti)
    }

    /// The header's `alg` and optional `kid`; `typ`, when present, must be a string. No
    /// other member.
    static func header(_ bytes: [UInt8]) -> (alg: String, kid: String?)? {
        guard let members = object(bytes), case .string(let alg)? = members["alg"] else { return nil }
        var kid: String?
        for (name, value) in members {
            switch (name, value) {
            case ("alg", _): continue
            case ("kid", .string(let text)): kid = text
            case ("typ", .string): continue
            default: return nil
            }
        }
        return (alg, kid)
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipWhitespace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
                index += 1
            }
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func object() -> [String: Value]? {
            guard consume(UInt8(ascii: "{")) else { return nil }
            var members: [String: Value] = [:]
            if consume(UInt8(ascii: "}")) { return finished(members) }
            while true {
                skipWhitespace()
                guard let name = string(), consume(UInt8(ascii: ":")), let value = value(),
                      members[name] == nil, members.count < JWTJSON.maximumMembers else { return nil }
                members[name] = value
                if consume(UInt8(ascii: ",")) { continue }
                guard consume(UInt8(ascii: "}")) else { return nil }
                return finished(members)
            }
        }

        /// The object, if nothing but whitespace follows it.
        mutating func finished(_ members: [String: Value]) -> [String: Value]? {
            skipWhitespace()
            return index == bytes.count ? members : nil
        }

        mutating func value() -> Value? {
            skipWhitespace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "\"") { return string().map(Value.string) }
            return integer().map(Value.integer)
        }

        /// `-?(0|[1-9][0-9]*)` within Int64; a fraction or exponent is refused.
        mutating func integer() -> Int64? {
            var negative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            let start = index
            var magnitude: UInt64 = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (plus, overflow2) = times.addingReportingOverflow(UInt64(bytes[index] - 0x30))
                guard !overflow1, !overflow2 else { return nil }
                magnitude = plus
                index += 1
            }
            let digits = index - start
            guard digits > 0, !(digits > 1 && bytes[start] == 0x30) else { return nil }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                return nil
            }
            if negative {
                guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
                return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
            }
            guard magnitude <= UInt64(Int64.max) else { return nil }
            return Int64(magnitude)
        }

        /// A JSON string at `index` (which must be its opening quote), unescaped.
        mutating func string() -> String? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            var out: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    // Invalid UTF-8 (an overlong form, a lone continuation byte) is refused here.
                    return String(validating: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let scalar = unicodeEscape() else { return nil }
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default: return nil
                    }
                case 0x00..<0x20:
                    return nil
                default:
                    out.append(byte)
                }
            }
            return nil
        }

        /// After `\u`: four hex digits, and for a high surrogate the `\uDC00`–`\uDFFF` that
        /// must follow it.
        mutating func unicodeEscape() -> Unicode.Scalar? {
            guard let first = hex4() else { return nil }
            if (0xD800...0xDBFF).contains(first) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { return nil }
                index += 2
                guard let second = hex4(), (0xDC00...0xDFFF).contains(second) else { return nil }
                return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
            }
            return Unicode.Scalar(first)   // nil for a lone low surrogate
        }

        mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: return nil
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }
    }
}
