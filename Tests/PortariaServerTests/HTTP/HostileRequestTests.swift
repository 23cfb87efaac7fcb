import Foundation
@testable import PortariaCore
import Testing
@testable import PortariaServer

/// Request bodies, paths and realtime frames built to break parsers: deep nesting, numbers
/// past every integer type, invalid percent-escapes. Each gets a 4xx-style answer.
@Suite("Hostile requests and realtime frames")
struct HostileRequestTests {
    func decodeFailure<T: Decodable>(_ type: T.Type, _ body: String) -> HTTPError? {
        let request = HTTPRequest(method: "POST", path: "/", headers: ["content-type": "application/json"], body: Array(body.utf8))
        do { _ = try request.decode(T.self); return nil } catch let error as HTTPError { return error } catch {
            Issue.record("not an HTTPError: \(error)")
            return nil
        }
    }

    @Test("JSON nested 100,000 levels deep is a 400, not a stack overflow", arguments: ["[", "{\"a\":"])
    func deepNesting(opener: String) {
        let body = String(repeating: opener, count: 100_000)
        #expect(decodeFailure(JSONValue.self, body)?.status == 400)
        #expect(decodeFailure(UnitSettings.self, body)?.status == 400)
        #expect(RealtimeClientMessage.parse(#"{"type":"call.offer","data":"# + body) == .invalid)
    }

    @Test("numbers past Int into Int fields are a 400", arguments: [
        "9223372036854775808", "-9223372036854775809", "1e400", "1e19", "20.5", "-0.5",
    ])
    func hugeNumbers(number: String) {
        let body = #"{"delivery_rule":"ask","ring_order":[],"ring_mode":"sequential","ring_step_seconds":\#(number),"ring_window_seconds":60}"#
        let error = decodeFailure(UnitSettings.self, body)
        #expect(error?.status == 400, "\(number)")
    }

    @Test("a visitor location of 1e400 or NaN-like text is a 400; the geofence never sees a non-finite distance")
    func locations() {
        for location in [#"{"lat":1e400,"lon":0,"accuracy_m":1}"#, #"{"lat":"NaN","lon":0,"accuracy_m":1}"#] {
            let body = #"{"unit_id":"u","kind":"visit","visitor_name":"P","location":\#(location)}"#
            #expect(decodeFailure(CreateVisitRequest.self, body)?.status == 400, "\(location)")
        }
        let nowhere = VisitorLocation(lat: .nan, lon: .infinity, accuracyM: 1)
        #expect(Geofence.evaluate(location: nowhere, gate: GeoPoint(lat: 0, lon: 0), radius: 10) == .unknown)
    }

    @Test("realtime frames: ping, call frames, unknown types and garbage")
    func realtimeFrames() {
        #expect(RealtimeClientMessage.parse(#"{"type":"ping"}"#) == .ping)
        #expect(RealtimeClientMessage.parse(#"{"type":"call.hangup","data":{"visit_id":"v1"}}"#)
                == .call(type: "call.hangup", data: Array(#"{"visit_id":"v1"}"#.utf8)))
        #expect(RealtimeClientMessage.parse(#"{"type":"call.hangup"}"#) == .call(type: "call.hangup", data: Array("{}".utf8)))
        #expect(RealtimeClientMessage.parse(#"{"type":"subscribe"}"#) == .unknown(type: "subscribe"))
        for garbage in ["", "null", "[]", #"{"type":1e400}"#, #"{"type":7}"#, "\u{0}", #"{"type":"ping""#] {
            #expect(RealtimeClientMessage.parse(garbage) == .invalid, "\(garbage)")
        }
    }

    @Test("a call frame whose numbers overflow Int is INVALID_MESSAGE naming the field")
    func callFrameNumbers() {
        let frame = #"{"type":"call.ice","data":{"visit_id":"v1","candidate":{"candidate":"","sdp_m_line_index":1e300}}}"#
        guard case .call(let type, let data) = RealtimeClientMessage.parse(frame) else {
            Issue.record("not a call frame")
            return
        }
        #expect(throws: CallSignalError.self) { try CallSignal.decode(type: type, data: data) }
        do { _ = try CallSignal.decode(type: type, data: data) } catch {
            #expect(error.error.code == .invalidMessage)
        }
    }

    @Test("router: invalid percent-escapes and encoded slashes do not match a parameter wrongly")
    func routerEscapes() {
        let router = Router()
        router.get("/v1/visits/{id}") { _ in HTTPResponse(status: 204) }
        for path in ["/v1/visits/%", "/v1/visits/%zz", "/v1/visits/%E2%82", "/v1/visits/%00%"] {
            if case .found = router.match(method: "GET", path: path) { Issue.record("\(path) matched") }
        }
        guard case .found(_, let parameters, _) = router.match(method: "GET", path: "/v1/visits/a%2Fb") else {
            Issue.record("an encoded slash is one segment")
            return
        }
        #expect(parameters["id"] == "a/b")
    }
}
