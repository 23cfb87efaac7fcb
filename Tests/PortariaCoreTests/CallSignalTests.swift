import Foundation
import PortariaCore
import Testing

@Suite("Call signaling frames")
struct CallSignalTests {
    static let visitID = "0b9f4d0e-6f0a-4d8e-9d43-2f2c7a1c9e11"
    static let sdp = "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"

    func decode(_ type: String, _ json: String) throws(CallSignalError) -> CallSignal {
        try CallSignal.decode(type: type, data: Array(json.utf8))
    }

    func failure(_ type: String, _ json: String) -> ErrorBody? {
        do { _ = try decode(type, json); return nil } catch { return error.error }
    }

    @Test("offer, answer, ice and hangup decode from snake_case data")
    func decodesValidFrames() throws {
        let description = CallDescription(visitID: Self.visitID, sdp: Self.sdp)
        let sdpJSON = String(decoding: try JSONEncoder().encode(Self.sdp), as: UTF8.self)
        #expect(try decode("call.offer", #"{"visit_id":"\#(Self.visitID)","sdp":\#(sdpJSON)}"#) == .offer(description))
        #expect(try decode("call.answer", #"{"visit_id":"\#(Self.visitID)","sdp":\#(sdpJSON)}"#) == .answer(description))
        let ice = try decode("call.ice", #"{"visit_id":"\#(Self.visitID)","candidate":{"candidate":"candidate:1 1 udp 2122260223 192.168.1.2 54321 typ host","sdp_mid":"0","sdp_m_line_index":0,"username_fragment":"abcd"}}"#)
        #expect(ice == .ice(CallICE(visitID: Self.visitID, candidate: ICECandidate(
            candidate: "candidate:1 1 udp 2122260223 192.168.1.2 54321 typ host", sdpMid: "0", sdpMLineIndex: 0, usernameFragment: "abcd"))))
        #expect(try decode("call.ice", #"{"visit_id":"\#(Self.visitID)","candidate":null}"#) == .ice(CallICE(visitID: Self.visitID, candidate: nil)))
        #expect(try decode("call.ice", #"{"visit_id":"\#(Self.visitID)","candidate":{"candidate":"","sdp_mid":"0"}}"#).type == .ice)
        #expect(try decode("call.hangup", #"{"visit_id":"\#(Self.visitID)"}"#) == .hangup(CallHangup(visitID: Self.visitID)))
        #expect(try CallSignal.decode(type: "call.hangup", data: JSONValue.object(["visit_id": .string(Self.visitID)])).visitID == Self.visitID)
    }

    @Test("unknown types and call.ended from a client are refused as UNKNOWN_MESSAGE_TYPE")
    func unknownTypes() {
        for type in ["call.video", "call.", "call.ended"] {
            let error = failure(type, #"{"visit_id":"\#(Self.visitID)"}"#)
            #expect(error?.code == .unknownMessageType)
            #expect(error?.details["in_reply_to"] == .string(type))
        }
        #expect(CallMessageType.isCallFrame("call.anything"))
        #expect(!CallMessageType.isCallFrame("visit.created"))
    }

    @Test("malformed data names the field", arguments: [
        ("call.offer", #"{"sdp":"v=0"}"#, "visit_id"),
        ("call.offer", #"{"visit_id":"v1","sdp":42}"#, "sdp"),
        ("call.offer", #"{"visit_id":"v1","sdp":"hello"}"#, "sdp"),
        ("call.offer", #"{"visit_id":"v1/../x","sdp":"v=0"}"#, "visit_id"),
        ("call.offer", #"{"visit_id":"","sdp":"v=0"}"#, "visit_id"),
        ("call.ice", #"{"visit_id":"v1"}"#, "candidate"),
        ("call.ice", #"{"visit_id":"v1","candidate":{"candidate":"candidate:1 1 udp 1 1.2.3.4 5 typ host"}}"#, "candidate.sdp_mid"),
        ("call.ice", #"{"visit_id":"v1","candidate":{"candidate":"a=candidate:1","sdp_mid":"0"}}"#, "candidate.candidate"),
        ("call.ice", #"{"visit_id":"v1","candidate":{"candidate":"candidate:1\r\na=evil","sdp_mid":"0"}}"#, "candidate.candidate"),
        ("call.ice", #"{"visit_id":"v1","candidate":{"candidate":"candidate:1","sdp_m_line_index":999}}"#, "candidate.sdp_m_line_index"),
        ("call.ice", #"{"visit_id":"v1","candidate":{"candidate":"candidate:1","sdp_m_line_index":"0"}}"#, "candidate.sdp_m_line_index"),
        ("call.hangup", #"{"visit_id":7}"#, "visit_id"),
    ])
    func malformed(type: String, json: String, field: String) {
        let error = failure(type, json)
        #expect(error?.code == .invalidMessage)
        #expect(error?.field == field)
        #expect(error?.details["in_reply_to"] == .string(type))
    }

    @Test("data that is not a JSON object is INVALID_MESSAGE", arguments: ["[]", "\"x\"", "{", ""])
    func notAnObject(json: String) {
        #expect(failure("call.hangup", json)?.code == .invalidMessage)
    }

    @Test("an SDP of 64 KiB passes, one byte more is MESSAGE_TOO_LARGE")
    func sdpLimit() throws {
        let limit = CallSignal.Limits().maxSDPBytes
        #expect(limit == 65_536)
        let atLimit = "v=0" + String(repeating: "a", count: limit - 3)
        let json = { (sdp: String) in #"{"visit_id":"v1","sdp":"\#(sdp)"}"# }
        #expect(try decode("call.offer", json(atLimit)).type == .offer)
        let error = failure("call.answer", json(atLimit + "a"))
        #expect(error?.code == .messageTooLarge)
        #expect(error?.field == "sdp")
        #expect(error?.details["visit_id"] == .string("v1"))
    }

    @Test("server frames encode with explicit snake_case keys and explicit nulls")
    func serverFrames() throws {
        let encoder = JSONCoding.encoder()
        #expect(String(decoding: try encoder.encode(CallEnded(visitID: "v1", reason: .participantLeft, endedBy: .resident)), as: UTF8.self)
                == #"{"ended_by":"resident","reason":"participant_left","visit_id":"v1"}"#)
        #expect(String(decoding: try encoder.encode(CallEnded(visitID: "v1", reason: .negotiationTimeout, endedBy: nil)), as: UTF8.self)
                == #"{"ended_by":null,"reason":"negotiation_timeout","visit_id":"v1"}"#)
        #expect(String(decoding: try encoder.encode(CallICE(visitID: "v1", candidate: nil)), as: UTF8.self)
                == #"{"candidate":null,"visit_id":"v1"}"#)
        #expect(String(decoding: try encoder.encode(ICECandidate(candidate: "candidate:1", sdpMid: "0", sdpMLineIndex: 0)), as: UTF8.self)
                == #"{"candidate":"candidate:1","sdp_m_line_index":0,"sdp_mid":"0"}"#)
        let error = CallSignalError(.callNotFound, "no call for this visit", inReplyTo: "call.offer", visitID: "v1").error
        #expect(String(decoding: try encoder.encode(error), as: UTF8.self)
                == #"{"code":"CALL_NOT_FOUND","in_reply_to":"call.offer","message":"no call for this visit","visit_id":"v1"}"#)
        #expect(Set(CallEndReason.allCases.map(\.rawValue)) == ["hangup", "participant_left", "negotiation_timeout",
                                                                 "max_duration", "visit_closed", "server_shutdown"])
    }
}
