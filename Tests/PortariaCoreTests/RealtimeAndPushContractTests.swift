import Foundation
@testable import PortariaCore
import Testing

/// The typed contract the apps decode: realtime frames and push payloads, read from the
/// exact text the server writes (the server-side renderers are checked against these
/// types in PortariaServerTests' `PushPayloadContractTests`).
@Suite("Realtime and push contract")
struct RealtimeAndPushContractTests {
    @Test("every visit event type the server writes has a case, spelled as on the wire")
    func eventTypeSpelling() {
        let wire = ["visit.created", "visit.ringing", "visit.answered", "visit.declined", "visit.ring_cancelled",
                    "visit.unanswered", "visit.resolved", "visit.cancelled", "visit.expired",
                    "visit.photo_added", "visit.voice_message_added"]
        #expect(VisitEventType.allCases.map(\.rawValue) == wire)
        #expect(VisitEventType.allCases.filter(\.closesVisit) == [.resolved, .cancelled, .expired])
    }

    @Test("a visit.resolved frame decodes into its resolution")
    func resolvedFrame() throws {
        let text = #"{"data":{"action":"authorize","at":"2026-11-29T17:32:05Z","by":{"id":"u-1","name":"Maria Souza"},"kind":"visit","status":"resolved","unit_id":"un-1","unit_label":"A-101","via":"app","visit_id":"v-1"},"seq":42,"type":"visit.resolved"}"#
        guard case .event(let type, let seq, let data) = RealtimeMessage.parse(text) else {
            Issue.record("not an event: \(RealtimeMessage.parse(text))")
            return
        }
        #expect(type == .resolved)
        #expect(seq == 42)
        #expect(data.visitID == "v-1")
        #expect(data.unitLabel == "A-101")
        #expect(data.resolution == VisitResolution(action: .authorize, by: PersonRef(id: "u-1", name: "Maria Souza"),
                                                   at: Timestamp.parse("2026-11-29T17:32:05Z")!, via: .app))
    }

    @Test("a ringing frame carries the visitor, the geofence and the deadlines")
    func ringingFrame() throws {
        let text = #"{"data":{"geofence":{"distance_m":340,"status":"away"},"kind":"visit","ring_deadline":"2026-11-29T17:33:00Z","ring_mode":"sequential","status":"ringing","step":0,"step_expires_at":"2026-11-29T17:32:20Z","unit_id":"un-1","unit_label":"A-101","user_ids":["u-1"],"visit_id":"v-1","visitor_name":"Pedro"},"seq":7,"type":"visit.ringing"}"#
        guard case .event(.ringing, 7, let data) = RealtimeMessage.parse(text) else {
            Issue.record("not a ringing event")
            return
        }
        #expect(data.userIDs == ["u-1"])
        #expect(data.visitorName == "Pedro")
        #expect(data.geofence == GeofenceResult(status: .away, distanceM: 340))
        #expect(data.step == 0)
        #expect(data.ringDeadline == Timestamp.parse("2026-11-29T17:33:00Z"))
    }

    @Test("control frames, call frames, and what this version does not know")
    func controlFrames() {
        #expect(RealtimeMessage.parse(#"{"seq":12,"type":"subscribed"}"#) == .subscribed(seq: 12))
        #expect(RealtimeMessage.parse(#"{"seq":90,"type":"resync_required"}"#) == .resyncRequired(seq: 90))
        #expect(RealtimeMessage.parse(#"{"type":"pong"}"#) == .pong)
        #expect(RealtimeMessage.parse(#"{"data":{"code":"UNKNOWN_MESSAGE_TYPE","message":"unknown message type x"},"type":"error"}"#)
                == .error(ErrorBody(code: .unknownMessageType, message: "unknown message type x")))
        #expect(RealtimeMessage.parse(#"{"data":{"visit_id":"v-1","sdp":"v=0"},"type":"call.offer"}"#)
                == .call(type: "call.offer", data: .object(["visit_id": "v-1", "sdp": "v=0"])))
        #expect(RealtimeMessage.parse(#"{"data":{"visit_id":"v-1"},"seq":3,"type":"visit.teleported"}"#) == .unknown(type: "visit.teleported"))
        #expect(RealtimeMessage.parse("not json") == .unknown(type: ""))
        // An event without its visit id cannot be acted on: unknown, not a crash.
        #expect(RealtimeMessage.parse(#"{"data":{},"seq":3,"type":"visit.created"}"#) == .unknown(type: "visit.created"))
        #expect(RealtimeFrame.ping.jsonText == #"{"type":"ping"}"#)
    }

    @Test("a value this version cannot read becomes nil, not a lost event")
    func lenientOptionalMembers() throws {
        let text = #"{"data":{"reason":"abducted","status":"ringing","user_ids":["u-2"],"visit_id":"v-1"},"seq":8,"type":"visit.ring_cancelled"}"#
        guard case .event(.ringCancelled, 8, let data) = RealtimeMessage.parse(text) else {
            Issue.record("event lost")
            return
        }
        #expect(data.reason == nil)
        #expect(data.userIDs == ["u-2"])
    }

    @Test("visit.ring decodes from the APNs shape (nested geofence, numbers) and the FCM shape (strings, flattened)")
    func ringBothShapes() throws {
        let apns = #"{"caller_name":"Pedro","expires_at":"2026-11-29T17:33:00Z","geofence":{"distance_m":340,"status":"away"},"kind":"visit","push_id":"p-1","type":"visit.ring","unit_label":"A-101","visit_id":"v-1"}"#
        let fcm = #"{"caller_name":"Pedro","expires_at":"2026-11-29T17:33:00Z","geofence_distance_m":"340","geofence_status":"away","kind":"visit","push_id":"p-1","type":"visit.ring","unit_label":"A-101","visit_id":"v-1"}"#
        let expected = PushPayload.ring(RingPush(pushID: "p-1", visitID: "v-1", callerName: "Pedro", unitLabel: "A-101",
                                                 kind: .visit, geofence: GeofenceResult(status: .away, distanceM: 340),
                                                 expiresAt: Timestamp.parse("2026-11-29T17:33:00Z")))
        #expect(try PushPayload.decode(json: Data(apns.utf8)) == expected)
        #expect(try PushPayload.decode(json: Data(fcm.utf8)) == expected)
        #expect(expected.pushID == "p-1")
    }

    @Test("cancellation, delivery, test and unknown pushes; a ring without ids is refused")
    func otherPushes() throws {
        #expect(try PushPayload.decode(json: Data(#"{"aps":{"content-available":1},"push_id":"p-2","reason":"answered_elsewhere","type":"visit.ring_cancelled","visit_id":"v-1"}"#.utf8))
                == .ringCancelled(RingCancelledPush(pushID: "p-2", visitID: "v-1", reason: .answeredElsewhere)))
        #expect(try PushPayload.decode(json: Data(#"{"aps":{"category":"DELIVERY"},"caller_name":"João","carrier":"Loggi","push_id":"p-3","type":"delivery","unit_label":"A-101","visit_id":"v-2"}"#.utf8))
                == .delivery(DeliveryPush(pushID: "p-3", visitID: "v-2", callerName: "João", unitLabel: "A-101", carrier: "Loggi")))
        #expect(try PushPayload.decode(json: Data(#"{"push_id":"p-4","text":"oi","type":"test"}"#.utf8)) == .test(pushID: "p-4", text: "oi"))
        #expect(try PushPayload.decode(json: Data(#"{"push_id":"p-5","type":"visit.hologram"}"#.utf8)) == .unknown(type: "visit.hologram", pushID: "p-5"))
        #expect(throws: PushPayloadError.missing("visit_id")) {
            try PushPayload.decode(json: Data(#"{"push_id":"p-6","type":"visit.ring"}"#.utf8))
        }
        #expect(throws: PushPayloadError.notAnObject) { try PushPayload.decode(json: Data("[1]".utf8)) }
    }

    @Test("numbers where strings belong are read with checked arithmetic: 1e300 as a push id is text, not a trap (fuzz/push-payload)")
    func hugeNumbers() throws {
        let huge = Data(#"{"type":"test","push_id":1e300,"ack_token":"Yg"}"#.utf8)
        #expect(try PushPayload.decode(json: huge) == .test(pushID: "1e+300", text: nil, ackToken: "Yg"))
        #expect(PushPayload.receipt(json: huge) == PushReceiptCapability(pushID: "1e+300", ackToken: "Yg"))
        let negative = Data(#"{"type":"visit.ring","push_id":-9.3e18,"visit_id":12,"geofence_status":"away","geofence_distance_m":"1e300"}"#.utf8)
        guard case .ring(let ring) = try PushPayload.decode(json: negative) else { Issue.record("not a ring"); return }
        #expect(ring.pushID == "-9.3e+18" && ring.visitID == "12")
        #expect(ring.geofence.distanceM == nil)
    }
}
