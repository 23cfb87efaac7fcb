import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

/// The messages instances exchange about calls on NOTIFY `portaria_calls` (decision 0056).
@Suite("Call relay messages")
struct CallRelayMessageTests {
    static let resident = CallPeer.resident(userID: "u-1", deviceID: "phone-1")

    @Test("every kind survives the trip through its JSON text", arguments: [
        CallRelayMessage(kind: .signal, visitID: "v-1", companyID: "c-1", from: "i-a", to: "i-b", peer: .visitor(visitID: "v-1"),
                         type: "call.offer", data: #"{"visit_id":"v-1","sdp":"v=0\r\n"}"#),
        CallRelayMessage(kind: .presence, visitID: "v-1", companyID: "c-1", from: "i-b", to: "i-a", peer: resident, present: false),
        CallRelayMessage(kind: .frame, visitID: "v-1", companyID: "c-1", from: "i-a", peer: resident,
                         type: "call.ended", data: #"{"reason":"hangup"}"#),
        CallRelayMessage(kind: .claimed, visitID: "v-1", companyID: "c-1", from: "i-a", peer: resident),
        CallRelayMessage(kind: .closed, visitID: "v-1", companyID: "c-1", from: "i-b", to: "i-a", peer: resident),
    ])
    func roundTrip(_ message: CallRelayMessage) {
        #expect(CallRelayMessage.parse(message.jsonText) == message)
    }

    @Test("a reference keeps the routing fields only, so a receiver decides before reading the row")
    func reference() throws {
        let large = CallRelayMessage(kind: .frame, visitID: "v-1", companyID: "c-1", from: "i-a", peer: Self.resident,
                                     type: "call.offer", data: String(repeating: "x", count: 20_000))
        #expect(large.jsonText.utf8.count > CallRelayMessage.inlineLimit)
        let reference = large.reference(42)
        #expect(reference.jsonText.utf8.count < 400)
        let parsed = try #require(CallRelayMessage.parse(reference.jsonText))
        #expect(parsed.ref == 42 && parsed.type == nil && parsed.data == nil)
        #expect(parsed.kind == .frame && parsed.peer == Self.resident && parsed.companyID == "c-1" && parsed.visitID == "v-1")
    }

    @Test("malformed payloads are dropped", arguments: [
        "", "null", "[]", #"{"k":"signal"}"#,
        #"{"k":"nope","v":"v","c":"c","f":"i","p":{"visitor":true}}"#,
        #"{"k":"frame","v":"v","c":"c","f":"i","p":{"user":"u"}}"#,
        #"{"k":"frame","v":"v","c":"c","f":"i","p":{"visitor":true},"ref":-1}"#,
        #"{"k":"frame","v":"v","c":"c","f":"i","p":{"visitor":true},"ref":1.5}"#,
        #"{"k":"frame","v":"v","c":"c","f":"i","p":{"visitor":true},"ref":1e300}"#,
    ])
    func malformed(_ payload: String) {
        #expect(CallRelayMessage.parse(payload) == nil)
    }

    @Test("a visitor peer is the visitor of the message's visit, whatever else the payload says")
    func visitorPeerIsBoundToTheVisit() throws {
        let parsed = try #require(CallRelayMessage.parse(#"{"k":"frame","v":"v-9","c":"c","f":"i","p":{"visitor":"v-1"}}"#))
        #expect(parsed.peer == .visitor(visitID: "v-9"))
    }
}
