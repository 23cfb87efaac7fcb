import Foundation
import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing

/// Video-call signaling over `/v1/realtime` between the gate page and the one device that
/// answered, against the real binary.
@Suite("Call signaling")
struct CallSignalingTests {
    typealias R = RealtimeTests

    static func frame(_ type: String, _ data: String) -> String { #"{"type":"\#(type)","data":\#(data)}"# }

    /// The gate page's realtime socket on `server`, subscribed with a ticket for its visitor token.
    static func gatePage(_ server: TestServer, visitorToken: String) async throws -> R.Reader {
        let ticket = try await server.request("POST", "/v1/realtime/tickets", headers: [("Authorization", "Bearer \(visitorToken)")])
        let visitorTicket = try #require(try ticket.json()["ticket"] as? String)
        let reader = R.Reader(try await WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/v1/realtime?ticket=\(visitorTicket)"))
        try await reader.waitUntilSubscribed()
        return reader
    }

    /// `session` answers `visit` on `server` (`body`: which device takes the call); expects 200.
    static func answer(_ server: TestServer, _ session: R.Session, visit: String, body: String = #"{"device_id":"phone-1"}"#,
                       sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let answered = try await server.request("POST", "/v1/visits/\(visit)/answer",
            headers: [("Authorization", "Bearer \(session.token)"), ("X-Company-Id", session.companyID),
                      ("Idempotency-Key", UUID().uuidString), ("Content-Type", "application/json")],
            body: Array(body.utf8))
        #expect(answered.status == 200, "\(answered.text)", sourceLocation: sourceLocation)
    }

    @Test("offer, answer and ICE relay between the visitor and the answering device only; hangup ends both; the timeline records the call")
    func relay() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (visit, visitorToken) = try await R.ring(server)
            let maria = try await R.login(server, "maria")
            let ana = try await R.login(server, "ana")

            let visitor = try await Self.gatePage(server, visitorToken: visitorToken)
            let phone = try await R.subscribe(server, maria, query: "?device_id=phone-1")
            let tablet = try await R.subscribe(server, maria, query: "?device_id=tablet-9")
            let stranger = try await R.subscribe(server, ana)

            try await Self.answer(server, maria, visit: visit)
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

    @Test("a graceful stop ends the call on both sides at once (server_shutdown) and the timeline says why")
    func gracefulStopEndsCalls() async throws {
        var server = try await TestServer.start(["--demo"])
        do {
            let (visit, visitorToken) = try await R.ring(server)
            let maria = try await R.login(server, "maria")
            let visitor = try await Self.gatePage(server, visitorToken: visitorToken)
            let phone = try await R.subscribe(server, maria, query: "?device_id=phone-1")
            try await Self.answer(server, maria, visit: visit)
            _ = try await visitor.until("visit.answered", timeout: .seconds(20))
            let sdp = #""v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n""#
            visitor.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":\#(sdp)}"#))
            _ = try await phone.until("call.offer", timeout: .seconds(20))
            phone.connection.send(text: Self.frame("call.answer", #"{"visit_id":"\#(visit)","sdp":\#(sdp)}"#))
            _ = try await visitor.until("call.answer", timeout: .seconds(20))

            // SIGTERM (a deploy): both sides hear it from the server before their sockets
            // close, instead of waiting out their own media timeouts.
            server.signal(SIGTERM)
            for side in [visitor, phone] {
                let ended = try await side.until("call.ended", timeout: .seconds(20)).last
                #expect(ended?["data"]?["reason"]?.stringValue == "server_shutdown" && ended?["data"]?["visit_id"]?.stringValue == visit,
                        "\(ended.map { "\($0)" } ?? "none")")
            }
            #expect(await waitForExit(server.process, within: .seconds(30)) && server.process.terminationStatus == 0)

            // The timeline row was written before the database closed.
            server = try await server.restart()
            let detail = try await server.request("GET", "/v1/visits/\(visit)",
                                                  headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)])
            let attempts = (try detail.json()["attempts"] as? [[String: Any]]) ?? []
            let ending = attempts.last { $0["kind"] as? String == "call_ended" }
            #expect((ending?["detail"] as? String)?.hasPrefix("server_shutdown") == true, "\(attempts)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("by default, with TURN or without it, the visitor sees only the resident's relay candidates (no host, mDNS or server-reflexive address)",
          arguments: [["--turn-url", "turn:127.0.0.1:3478", "--turn-secret", "test-secret"], []])
    func residentAddressesStayPrivate(_ turn: [String]) async throws {
        try await TestServer.with(["--demo"] + turn) { server in
            let (visit, visitorToken) = try await R.ring(server)
            let maria = try await R.login(server, "maria")
            let visitor = try await Self.gatePage(server, visitorToken: visitorToken)
            let phone = try await R.subscribe(server, maria, query: "?device_id=phone-1")
            try await Self.answer(server, maria, visit: visit)
            // The gate page offers once it hears the answer; an offer before it has no call yet.
            _ = try await visitor.until("visit.answered", timeout: .seconds(20))

            let offer = #""v=0\r\no=- 1 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\n""#
            visitor.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":\#(offer)}"#))
            _ = try await phone.until("call.offer")

            // The resident's answer names its LAN, its public address and a TURN relay.
            let answer = #""v=0\r\no=- 3 4 IN IP4 192.168.1.20\r\ns=-\r\nt=0 0\r\nm=video 50000 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 192.168.1.20\r\na=rtcp:50001 IN IP4 192.168.1.20\r\na=candidate:1 1 udp 2122260223 192.168.1.20 50000 typ host\r\na=candidate:2 1 udp 1686052607 198.51.100.20 50000 typ srflx raddr 192.168.1.20 rport 50000\r\na=candidate:3 1 udp 41885439 127.0.0.1 61000 typ relay raddr 198.51.100.20 rport 50000\r\n""#
            phone.connection.send(text: Self.frame("call.answer", #"{"visit_id":"\#(visit)","sdp":\#(answer)}"#))
            let received = try #require(try await visitor.until("call.answer").last?["data"]?["sdp"]?.stringValue)
            #expect(!received.contains("192.168.1.20") && !received.contains("198.51.100.20"), "resident addresses leaked: \(received)")
            #expect(received.contains("typ relay") && received.contains("127.0.0.1 61000"), "the relay candidate was dropped: \(received)")

            // Trickled: the host and srflx candidates never reach the visitor; the relay one does.
            for candidate in ["candidate:1 1 udp 2122260223 10.0.0.7 50002 typ host",
                              "candidate:4 1 udp 2122262783 2001:db8::20 50002 typ host",
                              "candidate:5 1 udp 2122260223 0f3c9a52-6c1d-4a1e-9b7e-2f1d5c3b8a10.local 50002 typ host",
                              "candidate:2 1 udp 1686052607 198.51.100.20 50002 typ srflx raddr 10.0.0.7 rport 50002",
                              "candidate:3 1 udp 41885439 127.0.0.1 61002 typ relay raddr 198.51.100.20 rport 50002"] {
                phone.connection.send(text: Self.frame("call.ice", #"{"visit_id":"\#(visit)","candidate":{"candidate":"\#(candidate)","sdp_mid":"0","sdp_m_line_index":0}}"#))
            }
            let ice = try await visitor.until("call.ice")
            #expect(ice.last?["data"]?["candidate"]?["candidate"]?.stringValue?.contains("typ relay") == true,
                    "the first candidate the visitor got was not the relay one: \(ice.last.map { "\($0)" } ?? "none")")
            // Not later either: the next call.ice the visitor gets is this relay one.
            phone.connection.send(text: Self.frame("call.ice", #"{"visit_id":"\#(visit)","candidate":{"candidate":"candidate:6 1 udp 41885439 127.0.0.1 61003 typ relay raddr 10.0.0.7 rport 50003","sdp_mid":"0","sdp_m_line_index":0}}"#))
            let next = try await visitor.until("call.ice").last?["data"]?["candidate"]?["candidate"]?.stringValue ?? ""
            #expect(next.contains("61003") && !next.contains("10.0.0.7"), "\(next)")
            // The visitor's own candidates still reach the resident unfiltered.
            visitor.connection.send(text: Self.frame("call.ice", #"{"visit_id":"\#(visit)","candidate":{"candidate":"candidate:9 1 udp 2122260223 127.0.0.1 54321 typ host","sdp_mid":"0","sdp_m_line_index":0}}"#))
            #expect(try await phone.until("call.ice").last?["data"]?["candidate"]?["candidate"]?.stringValue?.contains("typ host") == true)
        }
    }

    @Test("with --calls-allow-direct the resident's host candidates reach the visitor, and both sides are told to gather every kind")
    func directCallsWhenAllowed() async throws {
        try await TestServer.with(["--demo", "--calls-allow-direct"]) { server in
            #expect(server.log.contains("--calls-allow-direct: video calls may connect directly"))
            let (visit, visitorToken) = try await R.ring(server)
            let maria = try await R.login(server, "maria")
            let visitor = try await Self.gatePage(server, visitorToken: visitorToken)
            let phone = try await R.subscribe(server, maria, query: "?device_id=phone-1")
            try await Self.answer(server, maria, visit: visit)
            _ = try await visitor.until("visit.answered")
            let ice = try await server.request("GET", "/v1/calls/ice_servers", headers: [("Authorization", "Bearer \(visitorToken)")])
            let body = try ice.json()
            #expect(body["calls_available"] as? Bool == true && body["ice_transport_policy"] as? String == "all", "\(ice.text)")
            visitor.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":"v=0\r\n"}"#))
            _ = try await phone.until("call.offer")
            phone.connection.send(text: Self.frame("call.answer", #"{"visit_id":"\#(visit)","sdp":"v=0\r\n"}"#))
            _ = try await visitor.until("call.answer")
            phone.connection.send(text: Self.frame("call.ice", #"{"visit_id":"\#(visit)","candidate":{"candidate":"candidate:1 1 udp 2122260223 10.0.0.7 50002 typ host","sdp_mid":"0","sdp_m_line_index":0}}"#))
            #expect(try await visitor.until("call.ice").last?["data"]?["candidate"]?["candidate"]?.stringValue?.contains("10.0.0.7") == true)
        }
    }

    @Test("without TURN and without --calls-allow-direct, calls are offered as unavailable (said once in the log); the answer still claims the visit and the resident can decide")
    func callsUnavailableWithoutTURN() async throws {
        try await TestServer.with(["--demo"]) { server in
            // Once in the JSON log (with --demo the human banner on stderr repeats it for a person).
            let jsonLines = server.log.split(separator: "\n").filter { $0.hasPrefix("{") }
            #expect(jsonLines.filter { $0.contains("video calls are unavailable") }.count == 1, "\(server.log.suffix(1500))")
            let (visit, visitorToken) = try await R.ring(server)
            let maria = try await R.login(server, "maria")
            try await Self.answer(server, maria, visit: visit, body: "{}")
            let ice = try await server.request("GET", "/v1/calls/ice_servers", headers: [("Authorization", "Bearer \(visitorToken)")])
            let available = try ice.json()["calls_available"] as? Bool
            #expect(ice.status == 200 && available == false, "\(ice.text)")
            let resolved = try await server.request("POST", "/v1/visits/\(visit)/resolve",
                headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID),
                          ("Idempotency-Key", UUID().uuidString), ("Content-Type", "application/json")],
                body: Array(#"{"action":"authorize"}"#.utf8))
            #expect(resolved.status == 200, "\(resolved.text)")
        }
    }

    @Test("the gate page's relay credentials end with its call: 409 while ringing, 200 while live, 409 CALL_NOT_ACTIVE once the call ended (visit still answered)")
    func visitorCredentialsEndWithTheCall() async throws {
        try await TestServer.with(["--demo", "--turn-url", "turn:127.0.0.1:3478", "--turn-secret", "test-secret"]) { server in
            let (visit, visitorToken) = try await R.ring(server)
            func fetch() async throws -> RawResponse {
                try await server.request("GET", "/v1/calls/ice_servers", headers: [("Authorization", "Bearer \(visitorToken)")])
            }
            #expect(try await fetch().status == 409, "credentials before the call exists")
            let maria = try await R.login(server, "maria")
            let visitor = try await Self.gatePage(server, visitorToken: visitorToken)
            let phone = try await R.subscribe(server, maria, query: "?device_id=phone-1")
            try await Self.answer(server, maria, visit: visit)
            _ = try await visitor.until("visit.answered")
            let live = try await fetch()
            #expect(live.status == 200 && live.text.contains("turn:127.0.0.1:3478"), "\(live.text)")

            phone.connection.send(text: Self.frame("call.hangup", #"{"visit_id":"\#(visit)"}"#))
            _ = try await visitor.until("call.ended")
            var ended: RawResponse?
            #expect(await eventually(within: .seconds(10)) {
                ended = try? await fetch()
                return ended?.status == 409
            }, "credentials after the call ended: \(ended.map { "\($0.status) \($0.text)" } ?? "none")")
            #expect(try ended?.json()["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "CALL_NOT_ACTIVE")
            let detail = try await server.request("GET", "/v1/visits/\(visit)",
                headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)])
            #expect((try detail.json()["status"] as? String) == "answered", "the visit is still answered, only its call ended")
        }
    }

    @Test("the gate page gets ICE servers with its visitor token once its call is live; a forged one is 401")
    func visitorICEServers() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (visit, visitorToken) = try await R.ring(server)
            let maria = try await R.login(server, "maria")
            try await Self.answer(server, maria, visit: visit, body: "{}")
            let answer = try await server.request("GET", "/v1/calls/ice_servers", headers: [("Authorization", "Bearer \(visitorToken)")])
            #expect(answer.status == 200)
            #expect(answer.header("cache-control") == "no-store")
            #expect(try answer.json()["ice_servers"] is [Any])
            let forged = try await server.request("GET", "/v1/calls/ice_servers", headers: [("Authorization", "Bearer forged-token")])
            #expect(forged.status == 401)
        }
    }
}
