import Foundation
@testable import PortariaCore
import Testing
@testable import PortariaServer

/// The hand-written `GET /v1/visits` and `GET /v1/visits/{id}` bodies (decision 0051)
/// against `JSONCoding.encoder()`: the same bytes, and the same value decoded, for every
/// status, kind, attempt kind, resolution and channel, every optional present and absent,
/// and hostile strings in every string field; decoded, the value JSONEncoder's bytes decode to.
@Suite("Hand-written visit responses")
struct VisitResponseBytesTests {
    static let hostile = HotResponseTests.hostile + [
        String(repeating: "Zé \"Aspas\" \\ 😀", count: 700),   // ~10 kB, well past any small-string or buffer size
        "\u{0}", "\u{1F}\u{7F}\u{80}\u{9F}", "\u{D7FF}\u{E000}\u{FFFD}\u{FFFF}", "\u{10FFFF}",
    ]

    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func media(_ text: String, kind: String, duration: Int?) -> VisitMediaInfo {
        VisitMediaInfo(url: "/v1/visits/\(text)/\(kind)", contentType: text, byteSize: 1_234_567, durationMs: duration,
                       createdAt: start.addingTimeInterval(3))
    }

    /// Every attempt kind, alternating which optionals are present, strings set to `text`.
    static func attempts(_ text: String) -> [VisitAttempt] {
        AttemptKind.allCases.enumerated().map { index, kind in
            let full = index % 2 == 0
            return VisitAttempt(id: "\(index + 1)", kind: kind,
                                user: full ? PersonRef(id: "u-\(index)", name: text) : nil,
                                deviceID: full ? text : nil, channel: index % 3 == 0 ? text : nil,
                                step: index % 4 == 0 ? index - 2 : nil, detail: index % 5 == 0 ? text : nil,
                                at: start.addingTimeInterval(Double(index) + 0.999))
        }
    }

    /// A minimal visit (every optional nil, no attempts) and a full one, per status and kind.
    static func visits(_ text: String) -> [Visit] {
        var visits: [Visit] = []
        for (index, status) in VisitStatus.allCases.enumerated() {
            for kind in VisitKind.allCases {
                visits.append(Visit(id: "v-\(index)", companyID: "c1", unit: UnitSummary(id: "unit", label: text), kind: kind,
                                    visitorName: text, carrier: nil, status: status, geofence: .unknown, photo: nil,
                                    voiceMessage: nil, attempts: [], answeredBy: nil, resolution: nil, ringDeadline: nil,
                                    expiresAt: start.addingTimeInterval(86_400), createdAt: start, updatedAt: start))
                let action = ResolutionAction.allCases[index % ResolutionAction.allCases.count]
                let via = ResolutionChannel.allCases[index % ResolutionChannel.allCases.count]
                let geofence = [GeofenceResult(status: .atEntrance, distanceM: 0, bearingDeg: 0),
                                GeofenceResult(status: .away, distanceM: 12_345, bearingDeg: 359),
                                GeofenceResult(status: .away, distanceM: 340, bearingDeg: nil),
                                GeofenceResult(status: .unknown, distanceM: nil, bearingDeg: 7)][index % 4]
                visits.append(Visit(id: text, companyID: text, unit: UnitSummary(id: text, label: text), kind: kind,
                                    visitorName: text, carrier: text, status: status, geofence: geofence,
                                    photo: media(text, kind: "photo", duration: nil),
                                    voiceMessage: media(text, kind: "voice_message", duration: index == 0 ? 0 : 20_000 * index),
                                    attempts: attempts(text), answeredBy: PersonRef(id: text, name: text),
                                    resolution: VisitResolution(action: action, by: PersonRef(id: "r", name: text),
                                                                at: start.addingTimeInterval(9), via: via),
                                    ringDeadline: start.addingTimeInterval(60), expiresAt: start.addingTimeInterval(86_400),
                                    createdAt: start.addingTimeInterval(-1), updatedAt: start.addingTimeInterval(0.5)))
            }
        }
        // One optional at a time, the rest present.
        let full = visits[1]
        var only = full; only.answeredBy = nil; visits.append(only)
        only = full; only.carrier = nil; visits.append(only)
        only = full; only.photo = nil; visits.append(only)
        only = full; only.voiceMessage = nil; visits.append(only)
        only = full; only.resolution = nil; visits.append(only)
        only = full; only.ringDeadline = nil; visits.append(only)
        only = full; only.attempts = []; visits.append(only)
        // Dates before 1970, at the epoch and past 9999 (Timestamp's other branch).
        only = full; only.createdAt = Date(timeIntervalSince1970: -86_401.5); only.updatedAt = Date(timeIntervalSince1970: 0)
        only.expiresAt = Date(timeIntervalSince1970: 253_402_300_800); visits.append(only)
        return visits
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test("a visit: the same bytes as JSONEncoder, and the same value decoded", arguments: hostile)
    func visit(text: String) throws {
        for visit in Self.visits(text) {
            let expected = Array(try JSONCoding.encoder().encode(visit))
            #expect(visit.jsonBytes == expected, "\(Self.text(visit.jsonBytes))\nvs\n\(Self.text(expected))")
            // Timestamps drop fractions on the wire, so the round trip is compared with JSONEncoder's.
            // (Past year 9999 neither decodes: compared as nil.)
            let ours = try? JSONCoding.decoder().decode(Visit.self, from: Data(visit.jsonBytes))
            let theirs = try? JSONCoding.decoder().decode(Visit.self, from: Data(expected))
            #expect(ours == theirs)
        }
    }

    @Test("a page: the same bytes as JSONEncoder, with and without a cursor, empty or not", arguments: hostile)
    func page(text: String) throws {
        let visits = Self.visits(text)
        for page in [VisitPage(visits: visits, nextCursor: text), VisitPage(visits: visits, nextCursor: nil),
                     VisitPage(visits: [], nextCursor: nil), VisitPage(visits: [], nextCursor: text),
                     VisitPage(visits: [visits[0]], nextCursor: "MTgwMDAwMDAwMDAwMDp2LTE")] {
            let expected = Array(try JSONCoding.encoder().encode(page))
            #expect(page.jsonBytes == expected, "\(Self.text(page.jsonBytes))\nvs\n\(Self.text(expected))")
            let ours = try? JSONCoding.decoder().decode(VisitPage.self, from: Data(page.jsonBytes))
            let theirs = try? JSONCoding.decoder().decode(VisitPage.self, from: Data(expected))
            #expect(ours == theirs)
        }
    }

    @Test("integers: zero, negatives and the extremes as JSONEncoder writes them")
    func integers() throws {
        for value in [0, 1, -1, 9, 10, 99, 100, -100, 1_000_000_007, Int(Int32.max), Int.max, Int.min, Int.min + 1] {
            var writer = JSONBytesWriter()
            writer.int(value)
            #expect(writer.bytes == Array(try JSONCoding.encoder().encode(value)), "\(value)")
        }
    }
}
