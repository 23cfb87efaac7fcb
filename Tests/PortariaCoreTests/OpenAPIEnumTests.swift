import Foundation
import PortariaCore
import Testing

/// `docs/openapi.yaml` is what clients outside this repository generate their types from,
/// and what the schemathesis run checks responses against: every enum it declares must
/// list exactly the values the Swift contract can send. (The timeline's call entries were
/// sent for months while the document's `Attempt.kind` did not know them.)
@Suite("OpenAPI enums match the contract")
struct OpenAPIEnumTests {
    static let document: [Substring] = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = (try? String(contentsOf: root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false)
    }()

    /// The values of `components.schemas.<schema>.properties.<property>.enum`, read by
    /// indentation (the document's own layout: schemas at 4 spaces, properties at 8, the
    /// enum and its items at 10); nil when the document has no such enum.
    static func values(schema: String, property: String) -> Set<String>? {
        guard let start = document.firstIndex(of: "    \(schema):") else { return nil }
        var index = document.index(after: start)
        var inProperty = false
        var collecting = false
        var found: Set<String> = []
        while index < document.endIndex {
            let line = document[index]
            let indent = line.prefix { $0 == " " }.count
            if !line.isEmpty && indent <= 4 { break }                       // next schema
            if indent == 8, line.hasSuffix(":") { inProperty = line.dropFirst(8).dropLast() == property[...]; collecting = false }
            if inProperty, indent == 10, line.dropFirst(10) == "enum:" { collecting = true }
            else if collecting, indent == 10, line.dropFirst(10).hasPrefix("- ") { found.insert(String(line.dropFirst(12))) }
            else if collecting, !line.isEmpty, !(indent == 10 && line.dropFirst(10).hasPrefix("- ")) { collecting = false }
            index = document.index(after: index)
        }
        return found.isEmpty ? nil : found
    }

    static func rawValues<E: CaseIterable & RawRepresentable>(_: E.Type) -> Set<String> where E.RawValue == String {
        Set(E.allCases.map(\.rawValue))
    }

    static let pairs: [(schema: String, property: String, contract: Set<String>)] = [
        ("Attempt", "kind", rawValues(AttemptKind.self)),
        ("Visit", "kind", rawValues(VisitKind.self)),
        ("Visit", "status", rawValues(VisitStatus.self)),
        ("PublicVisit", "kind", rawValues(VisitKind.self)),
        ("Geofence", "status", rawValues(GeofenceStatus.self)),
        ("Resolution", "action", rawValues(ResolutionAction.self)),
        ("Resolution", "via", rawValues(ResolutionChannel.self)),
        ("UnitSettings", "delivery_rule", rawValues(DeliveryRule.self)),
        ("UnitSettings", "ring_mode", rawValues(RingMode.self)),
        ("CallEnded", "reason", rawValues(CallEndReason.self)),
        ("CallEnded", "ended_by", rawValues(CallRole.self).union(["null"])),   // nullable: timeouts end calls too
        ("Me", "profile", rawValues(Profile.self)),
    ]

    @Test("each documented enum lists exactly the contract's values", arguments: 0..<pairs.count)
    func enumMatches(index: Int) {
        let pair = Self.pairs[index]
        let documented = Self.values(schema: pair.schema, property: pair.property)
        #expect(documented != nil, "docs/openapi.yaml has no enum at \(pair.schema).\(pair.property)")
        #expect(documented == pair.contract,
                "\(pair.schema).\(pair.property): missing \(pair.contract.subtracting(documented ?? []).sorted()), extra \((documented ?? []).subtracting(pair.contract).sorted())")
    }
}
