import Foundation
@testable import PortariaCore
import Testing
@testable import PortariaServer

/// The hand-written `GET /v1/me` body (decision 0051) against `JSONCoding.encoder()`: the
/// same bytes for ordinary values, and for hostile strings (quotes, backslashes, every
/// control character, non-BMP scalars, U+2028) and nil optionals the same bytes and the
/// same value once decoded.
@Suite("Hand-written JSON responses")
struct HotResponseTests {
    static let hostile = [
        "", "plain", "Maria Souza", "João Ação", "quote \" and \\ backslash", "slash / kept",
        String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }) + "\u{7F}",
        "emoji 😀 and 𝄞 (non-BMP)", "line\u{2028}separator\u{2029}", "\u{FEFF}bom", "tab\there\r\n",
        "<script>alert(1)</script>", "\\u0000 not an escape",
    ]

    static func me(_ text: String, timeZone: String?, units: Int, permissions: [String]) -> MeResponse {
        MeResponse(user: UserSummary(id: "u-" + text, name: text, username: text + "x"),
                   company: CompanySummary(id: "c1", name: text, timeZone: timeZone),
                   profile: .resident,
                   units: (0..<units).map { UnitSummary(id: "unit-\($0)", label: text + "\($0)") },
                   permissions: permissions)
    }

    @Test("the same bytes as JSONEncoder, and the same value decoded", arguments: hostile)
    func sameAsJSONEncoder(text: String) throws {
        for value in [Self.me(text, timeZone: "America/Sao_Paulo", units: 2, permissions: ["visits", text]),
                      Self.me(text, timeZone: nil, units: 0, permissions: []),
                      Self.me(text, timeZone: text, units: 1, permissions: ["a", "b", "c"])] {
            let expected = Array(try JSONCoding.encoder().encode(value))
            #expect(value.jsonBytes == expected, "\(String(decoding: value.jsonBytes, as: UTF8.self)) vs \(String(decoding: expected, as: UTF8.self))")
            #expect(try JSONCoding.decoder().decode(MeResponse.self, from: Data(value.jsonBytes)) == value)
        }
    }

    @Test("every profile")
    func profiles() throws {
        for profile in Profile.allCases {
            var value = Self.me("x", timeZone: nil, units: 1, permissions: [])
            value.profile = profile
            #expect(value.jsonBytes == Array(try JSONCoding.encoder().encode(value)))
        }
    }
}
