import Foundation
import PortariaCore
import Testing

@Suite("JSONValue.jsonText")
struct JSONValueTests {
    /// Parses `text` with Foundation's own parser, independent of the code under test.
    private func parse(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    }

    static let trickyStrings: [String] = [
        "",
        "plain",
        "quote \" inside",
        "back\\slash and \\\" both",
        "line\nfeed, carriage\rreturn, tab\t",
        "bell \u{07} escape \u{1B} unit-separator \u{1F} delete \u{7F}",
        "NUL \u{0} in the middle",
        "línea separator \u{2028} paragraph \u{2029}",
        "ação, coração, João — “aspas”",
        "emoji 😀👍🏽👨‍👩‍👧 flag 🇧🇷",
        "中文 日本語 한국어 العربية",
        "</script><!-- -->",
        "slash / stays",
    ]

    @Test("strings are escaped so that JSONSerialization reads back the same text", arguments: trickyStrings)
    func stringRoundTrip(_ text: String) throws {
        let json = JSONValue.string(text).jsonText
        #expect(json.first == "\"" && json.last == "\"")
        #expect(!json.unicodeScalars.contains { $0.value < 0x20 }, "raw control character in \(json.debugDescription)")
        let parsed = try #require(try parse(json) as? String)
        #expect(parsed == text)
    }

    @Test("control characters use the short escapes or \\u00XX")
    func escapeSpelling() {
        #expect(JSONValue.string("a\"b").jsonText == #""a\"b""#)
        #expect(JSONValue.string("a\\b").jsonText == #""a\\b""#)
        #expect(JSONValue.string("\n\r\t").jsonText == #""\n\r\t""#)
        #expect(JSONValue.string("\u{0}\u{1}\u{1F}").jsonText == #""\u0000\u0001\u001f""#)
        #expect(JSONValue.string("é😀").jsonText == "\"é😀\"")
    }

    @Test("objects sort their keys, escape them too, and nest")
    func objects() throws {
        let value = JSONValue.object([
            "zeta": .array([.number(1), .number(-2.5), .bool(true), .bool(false), .null]),
            "alpha": .object(["nested \"key\"\n": .string("v")]),
            "mid": .string("😀"),
        ])
        let json = value.jsonText
        #expect(json.hasPrefix(#"{"alpha":"#))
        #expect(json.firstRange(of: "\"mid\"")!.lowerBound < json.firstRange(of: "\"zeta\"")!.lowerBound)
        let parsed = try #require(try parse(json) as? [String: Any])
        #expect((parsed["alpha"] as? [String: Any])?["nested \"key\"\n"] as? String == "v")
        #expect(parsed["mid"] as? String == "😀")
        // And the contract's own decoder reads back the same value.
        #expect(try JSONCoding.decoder().decode(JSONValue.self, from: Data(json.utf8)) == value)
    }

    @Test("numbers: integers without a fraction, other finite doubles exactly, non-finite as null")
    func numbers() throws {
        #expect(JSONValue.number(3).jsonText == "3")
        #expect(JSONValue.number(-42).jsonText == "-42")
        #expect(JSONValue.number(0).jsonText == "0")
        for value in [0.1, -2.5, 1e300, -1e-300, 123_456_789.125, 1e16, Double.pi] {
            let parsed = try #require(try parse(JSONValue.number(value).jsonText) as? NSNumber)
            #expect(parsed.doubleValue == value, "\(value)")
        }
        #expect(JSONValue.number(.nan).jsonText == "null")
        #expect(JSONValue.number(.infinity).jsonText == "null")
        #expect(JSONValue.array([.number(-.infinity)]).jsonText == "[null]")
    }
}
