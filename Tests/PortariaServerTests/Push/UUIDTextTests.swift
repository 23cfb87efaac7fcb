import Foundation
@testable import PortariaServer
import Testing

@Suite("Push ids as UUID text")
struct UUIDTextTests {
    @Test("a random id is a lowercase version-4 UUID that Foundation parses back to the same text, and ids differ")
    func randomIsVersion4() throws {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let text = UUIDText.random()
            #expect(text.utf8.count == 36)
            #expect(text == text.lowercased())
            let parsed = try #require(UUID(uuidString: text))
            #expect(parsed.uuidString.lowercased() == text)
            let bytes = withUnsafeBytes(of: parsed.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4, "version 4")
            #expect(bytes[8] >> 6 == 0b10, "RFC 4122 variant")
            seen.insert(text)
        }
        #expect(seen.count == 1000)
    }
}
