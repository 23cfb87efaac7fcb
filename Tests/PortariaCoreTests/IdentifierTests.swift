import Foundation
import PortariaCore
import Testing

@Suite("Identifier")
struct IdentifierTests {
    @Test("an id is 1 to 64 UTF-8 bytes; anything else is no id")
    func bounds() {
        #expect(VisitID(rawValue: "") == nil)
        #expect(VisitID(rawValue: String(repeating: "a", count: 64))?.rawValue.utf8.count == 64)
        #expect(VisitID(rawValue: String(repeating: "a", count: 65)) == nil)
        // Bytes, not characters: 32 two-byte letters fit, 33 do not.
        #expect(UnitID(rawValue: String(repeating: "é", count: 32)) != nil)
        #expect(UnitID(rawValue: String(repeating: "é", count: 33)) == nil)
    }

    @Test("encodes as a plain JSON string and refuses to decode a value that is no id")
    func coding() throws {
        let id = try #require(UserID(rawValue: "9f1c2d3e-0000-4000-8000-000000000001"))
        let data = try JSONEncoder().encode([id])
        #expect(String(decoding: data, as: UTF8.self) == #"["9f1c2d3e-0000-4000-8000-000000000001"]"#)
        #expect(try JSONDecoder().decode([UserID].self, from: data) == [id])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([UserID].self, from: Data(#"[""]"#.utf8)) }
    }
}
