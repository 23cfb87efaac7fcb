import Foundation
import PortariaClient
import PortariaCore
import PortariaTestSupport
import PortariaWebSocket
import Testing

/// The iPhone's call media session (`CallMediaController`, what the iOS app drives WebRTC
/// with) against the real server: the gate side is the visitor's real socket, the phone is
/// the client core with its realtime socket and a fake WebRTC engine. Offer, answer and
/// candidates go through the server both ways; hangup ends both sides.
@Suite("Call media end to end")
struct CallMediaEndToEndTests {
    typealias R = RealtimeTests
    static let answerSDP = "v=0\r\no=- 4 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\n"
    static let offerSDP = "v=0\r\no=- 1 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\n"
    static let relay = ICECandidate(candidate: "candidate:3 1 udp 41885439 127.0.0.1 61000 typ relay raddr 0.0.0.0 rport 0",
                                    sdpMid: "0", sdpMLineIndex: 0)

    /// A WebRTC engine that answers every offer with `answerSDP` and records the rest.
    final class Engine: CallMediaEngine, PeerConnection, @unchecked Sendable {
        let state = Locked((log: [String](), servers: [[ICEServer]](), relayOnly: [Bool](), offers: [String](),
                            events: nil as (@Sendable (PeerConnectionEvent) -> Void)?))
        var log: [String] { state.withLock { $0.log } }
        func emit(_ event: PeerConnectionEvent) { state.withLock { $0.events }?(event) }

        func makePeerConnection(iceServers: [ICEServer], relayOnly: Bool, events: @escaping @Sendable (PeerConnectionEvent) -> Void) async throws -> any PeerConnection {
            state.withLock { $0.servers.append(iceServers); $0.relayOnly.append(relayOnly); $0.events = events; $0.log.append("peer") }
            return self
        }
        func setAudioActive(_ active: Bool) async {}
        func answer(offer sdp: String) async throws -> String {
            state.withLock { $0.offers.append(sdp); $0.log.append("answer") }
            return CallMediaEndToEndTests.answerSDP
        }
        func addRemoteCandidate(_ candidate: ICECandidate?) async {
            state.withLock { $0.log.append("remote \(candidate?.candidate ?? "end")") }
        }
        func setMuted(_ muted: Bool) async {}
        func close() async { state.withLock { $0.log.append("close") } }
    }

    /// Maria's phone: logged in, its realtime socket live with `device_id`, every update
    /// handed to the media controller (as `CallService` does through `ResidentAppModel`).
    struct Phone {
        let session: SessionManager
        let realtime: RealtimeClient
        let media: CallMediaController
        let engine: Engine
        let statuses: Locked<[CallMediaStatus]>
        let reader: Task<Void, Never>
    }

    static func phone(_ server: TestServer, deviceID: String, username: String = "maria") async throws -> Phone {
        let session = SessionManager(api: APIClient(baseURL: server.baseURL), secure: InMemorySecureStore(), preferences: InMemoryPreferences())
        switch try await session.login(username: username, password: "demo1234") {
        case .ready: break
        case .needsCompanySelection(let companies):
            let id = try #require(companies.first { $0.name == "Residencial Demo" }?.id)
            try await session.selectCompany(id: id)
        }
        let realtime = RealtimeClient(baseURL: server.baseURL, http: session, credentials: session,
                                      transport: WebSocketRealtimeTransport(), deviceID: deviceID)
        let engine = Engine()
        let statuses = Locked([CallMediaStatus]())
        let media = CallMediaController(engine: engine, http: session, signaling: realtime,
                                        onStatus: { _, status in statuses.withLock { $0.append(status) } })
        let live = Locked(false)
        let reader = Task {
            for await update in realtime.updates {
                if update == .state(.live) { live.withLock { $0 = true } }
                await media.process(.realtime(update))
            }
        }
        await realtime.start()
        try #require(await eventually(within: .seconds(30)) { live.withLock { $0 } }, "the phone's socket never went live")
        return Phone(session: session, realtime: realtime, media: media, engine: engine, statuses: statuses, reader: reader)
    }

    static func answer(_ phone: Phone, visit: String, deviceID: String) async throws {
        let body = try JSONCoding.encoder().encode(CallActionRequest(deviceID: deviceID))
        let response = try await phone.session.sendAuthorized(ClientHTTPRequest(
            method: "POST", path: "/v1/visits/\(visit)/answer",
            headers: ["Idempotency-Key": UUID().uuidString, "Content-Type": "application/json"], body: body))
        try #require(response.status == 200, "answer: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
    }

    /// The coordinator as `CallService` runs it: each event's effects performed — here only
    /// the answer (`POST /answer` with the device id, as `CallService.post` does) — and
    /// handed to the media with the calls afterwards.
    final class Calls: @unchecked Sendable {
        var coordinator: IncomingCallCoordinator
        let phone: Phone
        init(_ phone: Phone, userID: String, deviceID: String) {
            self.phone = phone
            coordinator = IncomingCallCoordinator(myUserID: userID, deviceID: deviceID)
        }

        func handle(_ event: CallEvent) async {
            let effects = coordinator.handle(event, now: Date())
            await phone.media.process(.coordinator(effects, calls: coordinator.calls))
            for case .postAnswer(let visitID, let deviceID, let key) in effects {
                let body = try? JSONCoding.encoder().encode(CallActionRequest(deviceID: deviceID))
                let response = try? await phone.session.sendAuthorized(ClientHTTPRequest(
                    method: "POST", path: "/v1/visits/\(visitID)/answer",
                    headers: ["Idempotency-Key": key, "Content-Type": "application/json"], body: body))
                if response?.status == 200 {
                    await handle(.answerAccepted(visitID: visitID))
                } else if let response, response.status == 409, let error = response.errorBody {
                    await handle(.answerRefused(visitID: visitID, error))
                } else {
                    await handle(.answerFailed(visitID: visitID))
                }
            }
        }
    }

    /// The VoIP push the server sends for `visit` (the fields the coordinator reads).
    static func ring(_ visit: String) -> JSONValue {
        .object(["type": "visit.ring", "push_id": .string(UUID().uuidString.lowercased()), "visit_id": .string(visit),
                 "caller_name": "Rafael", "unit_label": "A-101", "kind": "visit", "geofence": .object(["status": "unknown"])])
    }

    static func send(_ reader: R.Reader, _ type: CallMessageType, _ data: [String: JSONValue]) {
        reader.connection.send(text: RealtimeFrame(type: type.rawValue, data: .object(data)).jsonText)
    }

    /// The gate page's side of the offer (`Web/shared/call.js`): after `visit.answered`,
    /// and again on `CALL_NOT_FOUND` — the server opens the call just after it broadcasts
    /// the answer, so an offer sent at once can arrive first. Returns the `call.answer`.
    static func offer(_ visitor: R.Reader, visit: String) async throws -> JSONValue {
        _ = try await visitor.until("visit.answered", timeout: .seconds(30))
        for _ in 0..<50 {
            send(visitor, .offer, ["visit_id": .string(visit), "sdp": .string(offerSDP)])
            while true {
                let frame = try await visitor.next(timeout: .seconds(30))
                if frame["type"]?.stringValue == "call.answer" { return frame }
                if frame["type"]?.stringValue == "error", frame["data"]?["code"]?.stringValue == "CALL_NOT_FOUND" { break }
            }
            try await Task.sleep(for: .milliseconds(100))   // pacing between offers, as the gate page's 1 s
        }
        throw HarnessError("the server never accepted the gate's offer")
    }

    @Test("Atender with TURN configured: relay credentials reach WebRTC; offer → answer, candidates both ways, live; Encerrar ends the gate's call too")
    func negotiateAndHangUp() async throws {
        try await TestServer.with(["--demo", "--turn-url", "turn:127.0.0.1:3478", "--turn-secret", "test-secret"]) { server in
            let (visit, visitorToken) = try await R.ring(server)
            let visitor = try await CallSignalingTests.gatePage(server, visitorToken: visitorToken)
            let phone = try await Self.phone(server, deviceID: "phone-1")
            defer { phone.reader.cancel() }

            // The ring reaches the phone; "Atender" on CallKit: media prepared (ICE servers
            // from the server), then POST /answer with this device, accepted.
            let userID = try #require(await phone.session.userID)
            let calls = Calls(phone, userID: userID, deviceID: "phone-1")
            await calls.handle(.voipPush(payload: Self.ring(visit), fallbackCallID: UUID()))
            await calls.handle(.userAnswered(visitID: visit, idempotencyKey: UUID().uuidString))
            #expect(calls.coordinator.calls[visit]?.phase == .connecting, "\(String(describing: calls.coordinator.calls[visit]?.phase))")
            let servers = try #require(phone.engine.state.withLock { $0.servers }.first)
            // The server's ice_transport_policy reaches WebRTC: the phone gathers relay candidates only.
            #expect(phone.engine.state.withLock { $0.relayOnly } == [true])
            let turn = try #require(servers.first { $0.urls.contains { $0.hasPrefix("turn:127.0.0.1:3478") } }, "\(servers)")
            #expect(turn.username?.hasSuffix(":" + userID) == true, "\(turn)")
            #expect(turn.credential?.isEmpty == false)

            // The gate page offers; the phone's answer comes back through the server.
            let answer = try await Self.offer(visitor, visit: visit)
            #expect(answer["data"]?["sdp"]?.stringValue == Self.answerSDP)
            #expect(phone.engine.state.withLock { $0.offers }.last == Self.offerSDP)

            // Candidates both ways: the phone's relay one reaches the gate, the gate's the phone.
            phone.engine.emit(.localCandidate(Self.relay))
            let ice = try #require(try await visitor.until("call.ice", timeout: .seconds(30)).last)
            #expect(ice["data"]?["candidate"]?["candidate"]?.stringValue == Self.relay.candidate)
            #expect(ice["data"]?["candidate"]?["sdp_m_line_index"] == .number(0))
            Self.send(visitor, .ice, ["visit_id": .string(visit),
                                      "candidate": .object(["candidate": "candidate:9 1 udp 2122260223 127.0.0.1 54321 typ host",
                                                            "sdp_mid": "0", "sdp_m_line_index": 0])])
            #expect(await eventually(within: .seconds(30)) { phone.engine.log.contains("remote candidate:9 1 udp 2122260223 127.0.0.1 54321 typ host") },
                    "\(phone.engine.log)")
            phone.engine.emit(.stateChanged(.connected))
            #expect(await eventually(within: .seconds(30)) { phone.statuses.withLock { $0.last } == .live })
            if let event = phone.statuses.withLock({ $0.last })?.coordinatorEvent(visitID: visit) { await calls.handle(event) }
            #expect(calls.coordinator.calls[visit]?.phase == .inCall)

            // Encerrar on the phone: the gate hears who ended it; the phone's media is closed.
            await calls.handle(.userEnded(visitID: visit, idempotencyKey: UUID().uuidString))
            let ended = try #require(try await visitor.until("call.ended", timeout: .seconds(30)).last)
            #expect(ended["data"]?["reason"]?.stringValue == "hangup")
            #expect(ended["data"]?["ended_by"]?.stringValue == "resident")
            #expect(phone.engine.log.last == "close")
            #expect(phone.statuses.withLock { $0 } == [.connecting, .live, .ended(.hungUpHere)])

            let kinds = Locked([String]())
            let recorded = await eventually(within: .seconds(10)) {
                guard let detail = try? await phone.session.sendAuthorized(ClientHTTPRequest(method: "GET", path: "/v1/visits/\(visit)")),
                      let visit = try? JSONCoding.decoder().decode(Visit.self, from: detail.body) else { return false }
                kinds.withLock { $0 = visit.attempts.map(\.kind.rawValue) }
                return kinds.withLock { $0.contains("call_ended") }
            }
            #expect(recorded && kinds.withLock { $0.contains("call_connected") }, "\(kinds.withLock { $0 })")
            await phone.realtime.finish()
        }
    }

    @Test("two residents tap Atender: the second's media, prepared at the tap, closes on the server's 409 without a frame; the call goes to the first")
    func answeredElsewhere() async throws {
        // No TURN here: direct calls allowed, so the server offers calls at all (decision 0066).
        try await TestServer.with(["--demo", "--calls-allow-direct"]) { server in
            let (visit, visitorToken) = try await R.ring(server)
            let visitor = try await CallSignalingTests.gatePage(server, visitorToken: visitorToken)
            let maria = try await Self.phone(server, deviceID: "maria-phone")
            let joao = try await Self.phone(server, deviceID: "joao-phone", username: "joao")
            defer { maria.reader.cancel(); joao.reader.cancel() }
            let mariaCalls = Calls(maria, userID: try #require(await maria.session.userID), deviceID: "maria-phone")
            let joaoCalls = Calls(joao, userID: try #require(await joao.session.userID), deviceID: "joao-phone")
            await mariaCalls.handle(.voipPush(payload: Self.ring(visit), fallbackCallID: UUID()))
            await joaoCalls.handle(.voipPush(payload: Self.ring(visit), fallbackCallID: UUID()))

            await mariaCalls.handle(.userAnswered(visitID: visit, idempotencyKey: UUID().uuidString))
            #expect(mariaCalls.coordinator.calls[visit]?.phase == .connecting)
            await joaoCalls.handle(.userAnswered(visitID: visit, idempotencyKey: UUID().uuidString))
            #expect(joaoCalls.coordinator.calls[visit]?.phase == .ended(.answeredElsewhere))
            #expect(joao.engine.log == ["peer", "close"], "\(joao.engine.log)")
            #expect(joao.statuses.withLock { $0 } == [.connecting, .ended(.callOver)])

            // The gate's offer reaches the one device that answered.
            let answer = try await Self.offer(visitor, visit: visit)
            #expect(answer["data"]?["sdp"]?.stringValue == Self.answerSDP)
            #expect(maria.engine.state.withLock { $0.offers }.last == Self.offerSDP)
            #expect(joao.engine.state.withLock { $0.offers }.isEmpty)
            await maria.realtime.finish()
            await joao.realtime.finish()
        }
    }

    @Test("the visitor hangs up: the server's call.ended closes the phone's media with 'O visitante encerrou a chamada'")
    func visitorHangsUp() async throws {
        try await TestServer.with(["--demo", "--calls-allow-direct"]) { server in
            let (visit, visitorToken) = try await R.ring(server)
            let visitor = try await CallSignalingTests.gatePage(server, visitorToken: visitorToken)
            let phone = try await Self.phone(server, deviceID: "phone-2")
            defer { phone.reader.cancel() }
            await phone.media.start(visitID: visit)
            #expect(phone.engine.state.withLock { $0.servers } == [[]], "no TURN, direct calls allowed: no ICE servers, the call goes on")
            try await Self.answer(phone, visit: visit, deviceID: "phone-2")
            _ = try await Self.offer(visitor, visit: visit)

            Self.send(visitor, .hangup, ["visit_id": .string(visit)])
            #expect(await eventually(within: .seconds(30)) { phone.statuses.withLock { $0.last }.map { if case .ended = $0 { true } else { false } } == true })
            let last = try #require(phone.statuses.withLock { $0.last })
            #expect(last == .ended(.server(.hangup, endedBy: .visitor)))
            if case .ended(let ending) = last { #expect(ending.text == "O visitante encerrou a chamada") }
            #expect(last.coordinatorEvent(visitID: visit) == .callEnded(visitID: visit))
            #expect(phone.engine.log.last == "close")
            await phone.realtime.finish()
        }
    }

    @Test("a server without TURN or direct calls: the phone opens no camera and says video is unavailable; the call stays for the decision")
    func callsUnavailable() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (visit, _) = try await R.ring(server)
            let phone = try await Self.phone(server, deviceID: "phone-3")
            defer { phone.reader.cancel() }
            await phone.media.start(visitID: visit)
            #expect(await eventually(within: .seconds(30)) { phone.statuses.withLock { $0.last } == .ended(.unavailable) },
                    "\(phone.statuses.withLock { $0 })")
            #expect(!phone.engine.log.contains("peer"), "no peer connection, so no camera: \(phone.engine.log)")
            #expect(CallMediaStatus.ended(.unavailable).coordinatorEvent(visitID: visit) == nil)
            await phone.realtime.finish()
        }
    }
}
