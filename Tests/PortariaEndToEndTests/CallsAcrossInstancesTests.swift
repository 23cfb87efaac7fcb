import Foundation
import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing

/// Two `portaria serve` processes on one PostgreSQL: the gate page on one, the answering
/// phone on the other (decision 0056).
@Suite("Calls across instances")
struct CallsAcrossInstancesTests {
    typealias R = RealtimeTests
    static func frame(_ type: String, _ data: String) -> String { CallSignalingTests.frame(type, data) }

    /// A session description over the 8000-byte NOTIFY limit, so it must go through a
    /// `call_relay` row; `tag` tells the offer from the answer.
    static func largeSDP(_ tag: String) -> String {
        var sdp = #"v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=\#(tag)\r\nt=0 0\r\n"#
        for line in 0..<400 { sdp += #"a=x-padding-\#(line):\#(String(repeating: "p", count: 30))\r\n"# }
        return sdp
    }

    static func visit(_ server: TestServer, _ session: R.Session, id: String) async throws -> [String: Any] {
        let detail = try await server.request("GET", "/v1/visits/\(id)",
                                              headers: [("Authorization", "Bearer \(session.token)"), ("X-Company-Id", session.companyID)])
        try #require(detail.status == 200, "\(detail.status) \(detail.text)")
        return try detail.json()
    }

    static func attempts(_ server: TestServer, _ session: R.Session, visit: String) async throws -> [[String: Any]] {
        try #require(try await Self.visit(server, session, id: visit)["attempts"] as? [[String: Any]])
    }

    /// Waits until the call of `visit` is in its timeline (its owner claimed it).
    static func expectCallStarted(_ server: TestServer, _ session: R.Session, visit: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) async {
        let started = await eventually(within: .seconds(20)) {
            let kinds = (try? await Self.attempts(server, session, visit: visit))?.compactMap { $0["kind"] as? String } ?? []
            return kinds.contains("call_started")
        }
        #expect(started, "the call never started", sourceLocation: sourceLocation)
    }

    /// Who is connected when Maria answers decides which instance holds the call: an
    /// instance that holds one of its participants at that moment.
    enum Arrival: String, CaseIterable, CustomTestStringConvertible {
        /// Both: A and B race to claim it.
        case bothConnected
        /// Only the gate page (A): A holds it; B hears of it when the phone connects.
        case phoneConnectsAfterAnswer
        /// Only the phone (B): B holds it; A hears of it when the gate page connects.
        case gateConnectsAfterAnswer
        /// Neither (the gate page reconnecting while Maria answers from a VoIP push, before
        /// her app has a socket): A and B follow the company through Maria's tablets, and
        /// one of them must still hold the call (before the review's fix, nobody did).
        case neitherConnectedAtAnswer
        var testDescription: String { rawValue }
    }

    @Test("the gate page on A and the phone on B: offer, answer, candidates, a move to A and hangup cross; both instances tell the same call",
          .requires(.postgres),
          arguments: Arrival.allCases)
    func callAcrossInstances(_ arrival: Arrival) async throws {
        try await TwoInstances.with { a, b in
            let (visit, visitorToken) = try await R.ring(a)
            let maria = try await R.login(b, "maria")
            let ana = try await R.login(b, "ana")

            func connectGatePage() async throws -> R.Reader { try await CallSignalingTests.gatePage(a, visitorToken: visitorToken) }
            // Two more devices of Maria's, one per instance: they rang, but the call is the
            // phone's. They also tell when each instance has handled the answer (a socket
            // that connects to it later is handled after that).
            let tabletOnA = try await R.subscribe(a, maria, query: "?device_id=tablet-9")
            let tabletOnB = try await R.subscribe(b, maria, query: "?device_id=tablet-8")
            let stranger = try await R.subscribe(b, ana)
            var gatePage = arrival == .gateConnectsAfterAnswer || arrival == .neitherConnectedAtAnswer ? nil : try await connectGatePage()
            var phoneSocket = arrival == .phoneConnectsAfterAnswer || arrival == .neitherConnectedAtAnswer
                ? nil : try await R.subscribe(b, maria, query: "?device_id=phone-1")

            try await CallSignalingTests.answer(b, maria, visit: visit)
            _ = try await tabletOnA.until("visit.answered", timeout: .seconds(10))
            _ = try await tabletOnB.until("visit.answered", timeout: .seconds(10))
            if gatePage == nil {
                // A gate page's offer needs a call to go to: between the answer and the
                // owner's claim there is none yet (CALL_NOT_FOUND; decision 0056), so it
                // waits for the call to be in the timeline.
                await Self.expectCallStarted(b, maria, visit: visit)
                gatePage = try await connectGatePage()
            }
            if phoneSocket == nil { phoneSocket = try await R.subscribe(b, maria, query: "?device_id=phone-1") }
            let visitor = try #require(gatePage), phone = try #require(phoneSocket)
            if arrival == .bothConnected || arrival == .phoneConnectsAfterAnswer {
                _ = try await visitor.until("visit.answered", timeout: .seconds(10))
            }

            // Offer (A → B) and answer (B → A), each too large for one notification.
            let offerSDP = Self.largeSDP("offer")
            visitor.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":"\#(offerSDP)"}"#))
            let offer = try await phone.until("call.offer", timeout: .seconds(10)).last
            #expect(offer?["data"]?["visit_id"]?.stringValue == visit)
            let offered = offer?["data"]?["sdp"]?.stringValue ?? ""
            #expect(offered.utf8.count > 8000 && offered.contains("s=offer") && offered.hasSuffix("a=x-padding-399:" + String(repeating: "p", count: 30) + "\r\n"),
                    "the offer arrived altered: \(offered.utf8.count) bytes")

            phone.connection.send(text: Self.frame("call.answer", #"{"visit_id":"\#(visit)","sdp":"\#(Self.largeSDP("answer"))"}"#))
            let answer = try await visitor.until("call.answer", timeout: .seconds(10)).last
            #expect(answer?["data"]?["sdp"]?.stringValue?.contains("s=answer") == true)

            // Candidates both ways, in the order they were sent.
            for port in [50001, 50002, 50003] {
                visitor.connection.send(text: Self.frame("call.ice", #"{"visit_id":"\#(visit)","candidate":{"candidate":"candidate:1 1 udp 2122260223 127.0.0.1 \#(port) typ host","sdp_mid":"0","sdp_m_line_index":0}}"#))
            }
            var fromVisitor: [String] = []
            for _ in 0..<3 {
                let ice = try await phone.until("call.ice", timeout: .seconds(10)).last
                fromVisitor.append(ice?["data"]?["candidate"]?["candidate"]?.stringValue ?? "")
            }
            #expect(fromVisitor.map { $0.split(separator: " ")[5] } == ["50001", "50002", "50003"], "\(fromVisitor)")
            phone.connection.send(text: Self.frame("call.ice", #"{"visit_id":"\#(visit)","candidate":{"candidate":"candidate:2 1 udp 41885439 127.0.0.1 60001 typ relay raddr 0.0.0.0 rport 0","sdp_mid":"0","sdp_m_line_index":0}}"#))
            #expect(try await visitor.until("call.ice", timeout: .seconds(10)).last?["data"]?["candidate"]?["candidate"]?.stringValue?.contains("60001") == true)

            // Maria's other devices and another unit's resident cannot join in, on either instance.
            for outsider in [tabletOnA, tabletOnB, stranger] {
                outsider.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":"v=0\r\n"}"#))
                #expect(try await outsider.until("error", timeout: .seconds(10)).last?["data"]?["code"]?.stringValue == "CALL_NOT_FOUND")
            }

            // The phone changes networks: its socket on B closes and it comes back on A. The
            // call goes on (no participant_left), whichever instance holds it.
            phone.connection.close()
            _ = await phone.closeCode(timeout: .seconds(10))
            let movedPhone = try await R.subscribe(a, maria, query: "?device_id=phone-1")
            visitor.connection.send(text: Self.frame("call.ice", #"{"visit_id":"\#(visit)","candidate":{"candidate":"candidate:1 1 udp 2122260223 127.0.0.1 50004 typ host","sdp_mid":"0","sdp_m_line_index":0}}"#))
            #expect(try await movedPhone.until("call.ice", timeout: .seconds(10)).last?["data"]?["candidate"]?["candidate"]?.stringValue?.contains("50004") == true)
            movedPhone.connection.send(text: Self.frame("call.ice", #"{"visit_id":"\#(visit)","candidate":{"candidate":"candidate:2 1 udp 41885439 127.0.0.1 60002 typ relay raddr 0.0.0.0 rport 0","sdp_mid":"0","sdp_m_line_index":0}}"#))
            #expect(try await visitor.until("call.ice", timeout: .seconds(10)).last?["data"]?["candidate"]?["candidate"]?.stringValue?.contains("60002") == true)

            movedPhone.connection.send(text: Self.frame("call.hangup", #"{"visit_id":"\#(visit)"}"#))
            let ended = try await visitor.until("call.ended", timeout: .seconds(10)).last
            #expect(ended?["data"]?["ended_by"]?.stringValue == "resident" && ended?["data"]?["reason"]?.stringValue == "hangup",
                    "\(ended.map { "\($0)" } ?? "none")")
            _ = try await movedPhone.until("call.ended", timeout: .seconds(10))

            // One call in the timeline, whichever instance is asked: started by Maria's
            // phone, connected, ended — each once (two instances each running a call of
            // their own would write two of each).
            var fromA: [String] = [], fromB: [String] = []
            let recorded = await eventually(within: .seconds(10)) {
                guard let onA = try? await Self.attempts(a, maria, visit: visit), let onB = try? await Self.attempts(b, maria, visit: visit) else { return false }
                fromA = onA.compactMap { $0["kind"] as? String }.filter { $0.hasPrefix("call_") }
                fromB = onB.compactMap { $0["kind"] as? String }.filter { $0.hasPrefix("call_") }
                return fromA.contains("call_ended")
            }
            #expect(recorded && fromA == ["call_started", "call_connected", "call_ended"], "\(fromA)")
            #expect(fromA == fromB)
            let onA = try await Self.visit(a, maria, id: visit), onB = try await Self.visit(b, maria, id: visit)
            let answeredBy = try #require((onA["answered_by"] as? [String: Any])?["id"] as? String)
            #expect((onB["answered_by"] as? [String: Any])?["id"] as? String == answeredBy)
            let started = (onB["attempts"] as? [[String: Any]])?.first { $0["kind"] as? String == "call_started" }
            #expect((started?["user"] as? [String: Any])?["id"] as? String == answeredBy, "\(started ?? [:])")
            #expect(started?["device_id"] as? String == "phone-1", "\(started ?? [:])")
        }
    }

    @Test("the instance holding the call stops gracefully: the gate page on the other instance hears call.ended (server_shutdown) at once, and the timeline says why",
          .requires(.postgres))
    func ownerStopsGracefully() async throws {
        try await TwoInstances.with { a, b in
            let (visit, visitorToken) = try await R.ring(a)
            let maria = try await R.login(b, "maria")
            // Only the phone (on B) is connected when Maria answers: B holds the call.
            let phone = try await R.subscribe(b, maria, query: "?device_id=phone-1")
            try await CallSignalingTests.answer(b, maria, visit: visit)
            await Self.expectCallStarted(b, maria, visit: visit)
            let visitor = try await CallSignalingTests.gatePage(a, visitorToken: visitorToken)
            visitor.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":"v=0\r\n"}"#))
            _ = try await phone.until("call.offer", timeout: .seconds(20))

            // B stops (a deploy). Before, the gate page on A heard nothing: its call's owner
            // was gone and only its own media timeout would end it.
            b.signal(SIGTERM)
            let ended = try await visitor.until("call.ended", timeout: .seconds(20)).last
            #expect(ended?["data"]?["reason"]?.stringValue == "server_shutdown" && ended?["data"]?["visit_id"]?.stringValue == visit,
                    "\(ended.map { "\($0)" } ?? "none")")
            #expect(await waitForExit(b.process, within: .seconds(30)) && b.process.terminationStatus == 0)
            let mariaOnA = try await R.login(a, "maria")
            let kinds = try await Self.attempts(a, mariaOnA, visit: visit).filter { ($0["kind"] as? String)?.hasPrefix("call_") == true }
            #expect(kinds.compactMap { $0["kind"] as? String } == ["call_started", "call_ended"], "\(kinds)")
            #expect((kinds.last?["detail"] as? String)?.hasPrefix("server_shutdown") == true, "\(kinds)")
        }
    }

    @Test("the visit is resolved while both participants are on B and the call's owner A follows nobody of the company: the call still ends with visit_closed",
          .requires(.postgres))
    func visitClosedAwayFromTheOwner() async throws {
        try await TwoInstances.with { a, b in
            let (visit, visitorToken) = try await R.ring(a)
            let maria = try await R.login(b, "maria")
            func connectGatePage(_ server: TestServer) async throws -> R.Reader { try await CallSignalingTests.gatePage(server, visitorToken: visitorToken) }
            // Only the gate page is connected when Maria answers: A holds the call.
            let gateOnA = try await connectGatePage(a)
            let witnessOnB = try await R.subscribe(b, maria, query: "?device_id=tablet-8")
            try await CallSignalingTests.answer(b, maria, visit: visit)
            _ = try await gateOnA.until("visit.answered", timeout: .seconds(10))
            _ = try await witnessOnB.until("visit.answered", timeout: .seconds(10))
            let phone = try await R.subscribe(b, maria, query: "?device_id=phone-1")
            gateOnA.connection.send(text: Self.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":"v=0\r\n"}"#))
            _ = try await phone.until("call.offer", timeout: .seconds(10))
            // The gate page moves to B: A now holds no socket of the company.
            let gateOnB = try await connectGatePage(b)
            gateOnA.connection.close()
            _ = await gateOnA.closeCode(timeout: .seconds(10))
            phone.connection.send(text: Self.frame("call.answer", #"{"visit_id":"\#(visit)","sdp":"v=0\r\n"}"#))
            _ = try await gateOnB.until("call.answer", timeout: .seconds(10))

            let resolved = try await R.resolve(b, maria, visit: visit)
            #expect(resolved.status == 200, "\(resolved.text)")
            let ended = try await phone.until("call.ended", timeout: .seconds(10)).last
            #expect(ended?["data"]?["reason"]?.stringValue == "visit_closed", "\(ended.map { "\($0)" } ?? "none")")
            let recorded = await eventually(within: .seconds(10)) {
                let kinds = (try? await Self.attempts(b, maria, visit: visit))?.compactMap { $0["kind"] as? String } ?? []
                return kinds.contains("call_ended")
            }
            #expect(recorded, "the owner never ended the call")
        }
    }
}
