import Foundation
import PortariaCore
import Testing

/// The error envelope of DESIGN §3: details sit beside `code` and `message`.
@Suite struct ErrorEnvelopeShapeTests {
    @Test func detailsAreFlattenedBesideCodeAndMessage() throws {
        let envelope = ErrorEnvelope(error: ErrorBody(code: .invalidRequest, message: "unit_id is required",
                                                      details: ["field": .string("unit_id")]))
        let data = try JSONEncoder().encode(envelope)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["code"] as? String == "INVALID_REQUEST")
        #expect(error["field"] as? String == "unit_id")
        #expect(try JSONDecoder().decode(ErrorEnvelope.self, from: data) == envelope)
    }
}
