import Foundation
import PortariaCore
import Testing

@Suite("Error envelope")
struct ErrorEnvelopeTests {
    private func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("details sit beside code and message inside \"error\"")
    func encodesFlat() throws {
        let envelope = ErrorEnvelope(error: ErrorBody(
            code: .visitAlreadyResolved, message: "Maria já autorizou às 14:32",
            details: [
                "resolved_by": .object(["id": .string("u-1"), "name": .string("Maria Souza")]),
                "resolved_at": .string("2026-11-29T14:32:05Z"),
                "action": .string("authorize"),
            ]))
        let data = try JSONCoding.encoder().encode(envelope)
        let root = try object(data)
        #expect(Array(root.keys) == ["error"])
        let error = try #require(root["error"] as? [String: Any])
        #expect(Set(error.keys) == ["code", "message", "resolved_by", "resolved_at", "action"])
        #expect(error["code"] as? String == "VISIT_ALREADY_RESOLVED")
        #expect(error["message"] as? String == "Maria já autorizou às 14:32")
        #expect((error["resolved_by"] as? [String: Any])?["name"] as? String == "Maria Souza")

        let decoded = try JSONCoding.decoder().decode(ErrorEnvelope.self, from: data)
        #expect(decoded == envelope)
    }

    @Test("a field detail is exposed as `field`")
    func fieldDetail() throws {
        let json = #"{"error":{"code":"INVALID_REQUEST","message":"a.b[2].c must be an integer","field":"a.b[2].c"}}"#
        let envelope = try JSONCoding.decoder().decode(ErrorEnvelope.self, from: Data(json.utf8))
        #expect(envelope.error.code == .invalidRequest)
        #expect(envelope.error.field == "a.b[2].c")
        #expect(envelope.error.details == ["field": .string("a.b[2].c")])
    }

    @Test("codes this build has never seen still decode; a missing message decodes as empty")
    func lenientDecoding() throws {
        let json = #"{"error":{"code":"SOMETHING_NEW","extra":[1,2,{"x":null}]}}"#
        let envelope = try JSONCoding.decoder().decode(ErrorEnvelope.self, from: Data(json.utf8))
        #expect(envelope.error.code.rawValue == "SOMETHING_NEW")
        #expect(envelope.error.message == "")
        #expect(envelope.error.details["extra"] == .array([.number(1), .number(2), .object(["x": .null])]))
        #expect(envelope.error.field == nil)
    }

    @Test("an error without a code is not an error envelope")
    func codeRequired() {
        #expect(throws: DecodingError.self) {
            try JSONCoding.decoder().decode(ErrorEnvelope.self, from: Data(#"{"error":{"message":"x"}}"#.utf8))
        }
    }

    @Test("encoding is deterministic (sorted keys)")
    func deterministic() throws {
        let body = ErrorBody(code: .invalidRequest, message: "m", details: ["b": .number(2), "a": .number(1), "z": .null])
        let first = try JSONCoding.encoder().encode(body)
        let second = try JSONCoding.encoder().encode(body)
        #expect(first == second)
        #expect(String(decoding: first, as: UTF8.self) == #"{"a":1,"b":2,"code":"INVALID_REQUEST","message":"m","z":null}"#)
    }
}
