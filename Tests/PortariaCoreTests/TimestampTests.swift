import Foundation
import PortariaCore
import Testing

@Suite("Timestamp")
struct TimestampTests {
    /// Seconds since the epoch of well-known instants, computed independently (Python's
    /// `calendar.timegm`), covering pre-1970, leap days and century rules.
    static let knownInstants: [(String, Int64)] = [
        ("1970-01-01T00:00:00Z", 0),
        ("1969-12-31T23:59:59Z", -1),
        ("1900-01-01T00:00:00Z", -2_208_988_800),
        ("1960-02-29T12:00:00Z", -310_478_400),
        ("1600-02-29T06:07:08Z", -11_670_976_372),
        ("0001-01-01T00:00:00Z", -62_135_596_800),
        ("2000-02-29T00:00:00Z", 951_782_400),
        ("2024-02-29T23:59:59Z", 1_709_251_199),
        ("2100-03-01T00:00:00Z", 4_107_542_400),
        ("9999-12-31T23:59:59Z", 253_402_300_799),
    ]

    @Test("format gives the exact UTC text", arguments: knownInstants)
    func format(_ text: String, _ seconds: Int64) {
        #expect(Timestamp.format(Date(timeIntervalSince1970: Double(seconds))) == text)
    }

    @Test("parse gives the exact instant", arguments: knownInstants.filter { $0.1 >= -2_208_988_800 })
    func parse(_ text: String, _ seconds: Int64) throws {
        let date = try #require(Timestamp.parse(text))
        #expect(date.timeIntervalSince1970 == Double(seconds))
    }

    @Test("format agrees with Foundation's Gregorian calendar on 5,000 instants from 1583 to 9999")
    func formatAgreesWithCalendar() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        // 1583: Foundation's Gregorian calendar switches to Julian before October 1582.
        let low: Int64 = -12_212_553_600, high: Int64 = 253_402_300_799
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let seconds = Int64.random(in: low...high, using: &generator)
            let date = Date(timeIntervalSince1970: Double(seconds))
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
            let expected = String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
            #expect(Timestamp.format(date) == expected, "at \(seconds)")
            if Timestamp.format(date) != expected { return }
        }
    }

    @Test("fractions are dropped on output, rounding down even before 1970")
    func fractionsRoundDown() {
        #expect(Timestamp.format(Date(timeIntervalSince1970: 0.999)) == "1970-01-01T00:00:00Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: -86_400.25)) == "1969-12-30T23:59:59Z")
    }

    @Test("fractional seconds are accepted on input")
    func parsesFractions() throws {
        let date = try #require(Timestamp.parse("2026-11-29T14:32:05.250Z"))
        #expect(abs(date.timeIntervalSince1970 - 1_795_962_725.25) < 0.0005)
    }

    @Test("malformed text is rejected", arguments: [
        "", "yesterday", "2026-11-29", "2026-11-29 14:32:05Z", "2026-13-01T00:00:00Z",
        "2026-11-29T25:00:00Z", "2023-02-29T00:00:00Z", "2100-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-29T23:60:00Z", "2026-11-29T14:32:05",
    ])
    func rejectsMalformed(_ text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test("format and parse round-trip over four centuries, including every Feb 29 boundary")
    func roundTrip() throws {
        var seconds: Int64 = -2_208_988_800 // 1900-01-01
        var generator = SplitMix(seed: 0x5EED)
        while seconds < 4_102_444_800 { // 2100-01-01
            let date = Date(timeIntervalSince1970: Double(seconds))
            let text = Timestamp.format(date)
            #expect(text.count == 20 && text.hasSuffix("Z"))
            let parsed = try #require(Timestamp.parse(text), "\(text) did not parse")
            #expect(parsed == date, "\(text)")
            seconds += Int64(generator.next() % 3_000_000) + 1
        }
        for year in stride(from: 1904, through: 2096, by: 4) {
            let text = String(format: "%04d-02-29T23:59:59Z", year)
            let parsed = try #require(Timestamp.parse(text), "\(text) did not parse")
            #expect(Timestamp.format(parsed) == text)
            #expect(Timestamp.format(parsed.addingTimeInterval(1)) == String(format: "%04d-03-01T00:00:00Z", year))
        }
    }
}

/// A tiny deterministic generator so failures reproduce.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
