import Foundation
import PortariaCore
import PortariaWebSocket
import Testing

/// Video-call signaling over `/v1/realtime` between the gate page and the one device that
/// answered, against the real binary.
@Suite("Call signaling")
struct CallSignalingTests {
    typealias R = RealtimeTests

    static func frame(_ type: String, _ data: String) -> String { #"{"type":"\#(type)","data":\#(data)}"# }

    @Test("offer, answer and ICE relay between the visitor and the answering device only; hangup ends both; the timeline records the call")
    func relay() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (visit, visitorToken) = try await R.ring(server)
            let maria = try await R.login(server, "maria")
            let ana = try await R.login(server, "ana")

            let ticket = try await server.request("POST", "/v1/realtime/tickets", headers: [("Authorization", "Bearer \(visitorToken)")])
            let visitorTicket = try #require(try ticket.json()["ticket"] as? String)
            let visitor = R.Reader(try await WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/v1/realtime?ticket=\(visitorTicket)"))
            let phone = R.Reader(try await R.socket(server, maria, query: "?device_id=phone-1"))
            let tablet = R.Reader(try await R.socket(server, maria, query: "?device_id=tablet-9"))
            let stranger = R.Reader(try await R.socket(server, ana))
            try await Task.sleep(for: .milliseconds(150))

            let answered = try await server.request("POST", "/v1/visits/\(visit)/answer",
                headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID),
                          ("Idempotency-Key", UUID().uuidString), ("Content-Type", "application/json")],
                body: Array(#"{"device_id":"phone-1"}"#.utf8))
            #expect(answered.status == 200, "\(answered.text)")
            _ = try await phone.until("visit.answered")
            _ = try await tablet.until("visit.answered")

            let sdp = #""v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n""#
            visitor.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":\#(sdp)}"#))
            let offer = try await phone.until("call.offer").last
            #expect(offer?["data"]?["visit_id"]?.stringValue == visit)
            #expect(offer?["data"]?["sdp"]?.stringValue?.hasPrefix("v=0") == true)

            phone.connection.send(text: Self.frame("call.answer", #"{"visit_id":"\#(visit)","sdp":\#(sdp)}"#))
            #expect(try await visitor.until("call.answer").last?["data"]?["visit_id"]?.stringValue == visit)

            visitor.connection.send(text: Self.frame("call.ice", #"{"visit_id":"\#(visit)","candidate":{"candidate":"candidate:1 1 udp 2122260223 127.0.0.1 54321 typ host","sdp_mid":"0","sdp_m_line_index":0}}"#))
            #expect(try await phone.until("call.ice").last?["data"]?["candidate"]?["candidate"]?.stringValue?.hasPrefix("candidate:") == true)

            // Another device of the same resident and another unit's resident cannot join in.
            tablet.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":\#(sdp)}"#))
            #expect(try await tablet.until("error").last?["type"]?.stringValue == "error")
            stranger.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":\#(sdp)}"#))
            #expect(try await stranger.until("error").last?["type"]?.stringValue == "error")

            phone.connection.send(text: Self.frame("call.hangup", #"{"visit_id":"\#(visit)"}"#))
            #expect(try await visitor.until("call.ended").last?["data"]?["visit_id"]?.stringValue == visit)
            _ = try await phone.until("call.ended")

            // The frames go out first; the timeline row is written right after.
            var kinds: [String] = []
            let recorded = await eventually(within: .seconds(5)) {
                guard let detail = try? await server.request("GET", "/v1/visits/\(visit)",
                                                             headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)]),
                      let attempts = (try? detail.json())?["attempts"] as? [[String: Any]] else { return false }
                kinds = attempts.compactMap { $0["kind"] as? String }
                return kinds.contains("call_ended")
            }
            #expect(recorded && kinds.contains("call_started") && kinds.contains("call_connected"), "\(kinds)")
        }
    }

    @Test("the gate page gets ICE servers with its visitor token once its call is live; a forged one is 401")
    func visitorICEServers() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (visit, visitorToken) = try await R.ring(server)
            let maria = try await R.login(server, "maria")
            let answered = try await server.request("POST", "/v1/visits/\(visit)/answer",
                headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID),
                          ("Idempotency-Key", UUID().uuidString), ("Content-Type", "application/json")],
                body: Array("{}".utf8))
            #expect(answered.status == 200, "\(answered.text)")
            let answer = try await server.request("GET", "/v1/calls/ice_servers", headers: [("Authorization", "Bearer \(visitorToken)")])
            #expect(answer.status == 200)
            #expect(answer.header("cache-control") == "no-store")
            #expect(try answer.json()["ice_servers"] is [Any])
            let forged = try await server.request("GET", "/v1/calls/ice_servers", headers: [("Authorization", "Bearer forged-token")])
            #expect(forged.status == 401)
        }
    }
}
