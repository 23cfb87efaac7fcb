import Foundation
import PortariaClient
import PortariaCore
import Testing

// MARK: - Fakes at the seam

/// Opens when told: an engine call can be held in flight while other inputs arrive.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }
    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

/// A media engine that records what the session asked of it, in order.
final class FakeMediaEngine: CallMediaEngine, @unchecked Sendable {
    static let answerSDP = "v=0\r\no=- 2 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    struct State {
        var log: [String] = []
        var iceServers: [[ICEServer]] = []
        var events: (@Sendable (PeerConnectionEvent) -> Void)?
        var failPeer = false
        var failAnswer = false
        var answerGate: Gate?
    }
    let state = Locked(State())

    var log: [String] { state.withLock { $0.log } }
    func record(_ line: String) { state.withLock { $0.log.append(line) } }
    /// What the peer connection reports (candidates, state), as WebRTC would from its thread.
    func emit(_ event: PeerConnectionEvent) { state.withLock { $0.events }?(event) }

    func makePeerConnection(iceServers: [ICEServer], relayOnly: Bool, events: @escaping @Sendable (PeerConnectionEvent) -> Void) async throws -> any PeerConnection {
        let fail = state.withLock { state in
            state.iceServers.append(iceServers)
            state.events = events
            state.log.append("peer")
            return state.failPeer
        }
        if fail { throw TransportError("no camera") }
        return FakePeer(engine: self)
    }

    func setAudioActive(_ active: Bool) async { record("audio:\(active)") }
}

final class FakePeer: PeerConnection, @unchecked Sendable {
    let engine: FakeMediaEngine
    init(engine: FakeMediaEngine) { self.engine = engine }

    func answer(offer sdp: String) async throws -> String {
        engine.record("answer:\(sdp.contains("o=- 1") ? "offer-1" : "offer-2")")
        let (gate, fail) = engine.state.withLock { ($0.answerGate, $0.failAnswer) }
        await gate?.wait()
        if fail { throw TransportError("bad offer") }
        engine.record("answered")
        return FakeMediaEngine.answerSDP
    }
    func addRemoteCandidate(_ candidate: ICECandidate?) async { engine.record("remote:\(candidate?.candidate.prefix(11) ?? "end")") }
    func setMuted(_ muted: Bool) async { engine.record("muted:\(muted)") }
    func close() async { engine.record("close") }
}

/// The realtime socket: records frames; `live` false refuses them (reconnecting).
final class FakeSignaling: CallSignalSender, @unchecked Sendable {
    let state = Locked((live: true, sent: [RealtimeFrame]()))
    var sent: [RealtimeFrame] { state.withLock { $0.sent } }
    var types: [String] { sent.map(\.type) }
    func setLive(_ live: Bool) { state.withLock { $0.live = live } }
    func send(_ frame: RealtimeFrame) async -> Bool {
        state.withLock { state in
            guard state.live else { return false }
            state.sent.append(frame)
            return true
        }
    }
}

final class StatusLog: @unchecked Sendable {
    let state = Locked([CallMediaStatus]())
    var all: [CallMediaStatus] { state.withLock { $0 } }
    var handler: CallMediaController.StatusHandler { { _, status in self.state.withLock { $0.append(status) } } }
}

/// Polls until `condition` holds or `seconds` pass (the machine is loaded: generous
/// deadline, no fixed sleep standing in for an event).
func eventually(_ seconds: Double = 20, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

enum Media {
    static let visitID = IncomingCallCoordinatorTests.visitID
    static let offer1 = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    static let offer2 = "v=0\r\no=- 7 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    static let host = ICECandidate(candidate: "candidate:1 1 udp 2122260223 127.0.0.1 54321 typ host", sdpMid: "0", sdpMLineIndex: 0)
    static let relay = ICECandidate(candidate: "candidate:3 1 udp 41885439 127.0.0.1 61000 typ relay", sdpMid: "0", sdpMLineIndex: 0)
    static let turn = ICEServersResponse(iceServers: [ICEServer(urls: ["stun:turn.example:3478"]),
                                                      ICEServer(urls: ["turn:turn.example:3478?transport=udp"], username: "1796000600:u-me",
                                                                credential: "c2VjcmV0")],
                                         ttl: 600, turnConfigured: true)

    static func frame(_ type: CallMessageType, _ data: [String: JSONValue], visitID: String = visitID) -> RealtimeClient.Update {
        .call(type: type.rawValue, data: .object(data.merging(["visit_id": .string(visitID)]) { $1 }))
    }
    static func offer(_ sdp: String = offer1) -> RealtimeClient.Update { frame(.offer, ["sdp": .string(sdp)]) }
    static func ice(_ candidate: ICECandidate) -> RealtimeClient.Update {
        frame(.ice, ["candidate": .object(["candidate": .string(candidate.candidate), "sdp_mid": "0", "sdp_m_line_index": 0])])
    }
    static func ended(_ reason: String, by: String?) -> RealtimeClient.Update {
        frame(.ended, ["reason": .string(reason), "ended_by": by.map(JSONValue.string) ?? .null])
    }
}

// MARK: - The machine

@Suite("Call media session: the resident's side of the signalling")
struct CallMediaSessionTests {
    typealias S = CallMediaSession
    static let v = Media.visitID

    static func send(_ type: CallMessageType, _ data: [String: JSONValue]) -> CallMediaEffect {
        .send(RealtimeFrame(type: type.rawValue, data: .object(data.merging(["visit_id": .string(v)]) { $1 })))
    }
    static let hangupFrame = send(.hangup, [:])

    @Test("offer and candidates before the peer connection wait; our candidates wait for our answer; then live")
    func orderedNegotiation() {
        var session = S(visitID: Self.v)
        #expect(session.start() == [.status(.connecting), .startConnectTimeout, .fetchICEServers])
        #expect(session.handle(.iceServers(Media.turn.iceServers)) == [.createPeer(Media.turn.iceServers)])
        // The visitor's offer and first candidate come while WebRTC is still being set up.
        #expect(session.handle(.remoteOffer(sdp: Media.offer1)) == [])
        #expect(session.handle(.remoteCandidate(Media.host)) == [])
        #expect(session.handle(.peerCreated) == [.answerOffer(sdp: Media.offer1), .addRemoteCandidate(Media.host)])
        #expect(session.phase == .answering)
        // Later candidates go straight after the offer (the performer keeps the order).
        #expect(session.handle(.remoteCandidate(nil)) == [.addRemoteCandidate(nil)])
        // Our candidates gathered before our answer left wait for it.
        #expect(session.handle(.local(.localCandidate(Media.relay))) == [])
        #expect(session.handle(.local(.localCandidate(ICECandidate(candidate: "", sdpMid: "0")))) == [], "end of one m-line is not sent")
        let answer = Self.send(.answer, ["sdp": .string(FakeMediaEngine.answerSDP)])
        let relay = Self.send(.ice, ["candidate": .object(["candidate": .string(Media.relay.candidate), "sdp_mid": "0", "sdp_m_line_index": 0])])
        #expect(session.handle(.answerCreated(sdp: FakeMediaEngine.answerSDP)) == [answer, relay])
        #expect(session.phase == .negotiated)
        #expect(session.handle(.local(.localCandidate(nil))) == [Self.send(.ice, ["candidate": .null])])
        #expect(session.handle(.local(.stateChanged(.connecting))) == [])
        #expect(session.handle(.local(.stateChanged(.connected))) == [.cancelConnectTimeout, .status(.live)])
        #expect(session.handle(.local(.stateChanged(.connected))) == [], "reported once")
        // A renegotiation (the visitor's ICE restart) is answered again while live.
        #expect(session.handle(.remoteOffer(sdp: Media.offer2)) == [.answerOffer(sdp: Media.offer2)])
        #expect(session.phase == .live)
        // Encerrar: hangup first, then everything stops; nothing after.
        #expect(session.handle(.hangUp) == [Self.hangupFrame, .cancelConnectTimeout, .closePeer, .status(.ended(.hungUpHere))])
        #expect(session.handle(.remoteOffer(sdp: Media.offer1)) == [])
        #expect(session.handle(.local(.localCandidate(Media.relay))) == [])
        #expect(session.handle(.hangUp) == [])
    }

    @Test("a newer offer before the peer connection replaces the older one and its candidates")
    func newerOfferWins() {
        var session = S(visitID: Self.v)
        _ = session.handle(.iceServers(nil))
        _ = session.handle(.remoteOffer(sdp: Media.offer1))
        _ = session.handle(.remoteCandidate(Media.host))
        _ = session.handle(.remoteOffer(sdp: Media.offer2))
        _ = session.handle(.remoteCandidate(Media.relay))
        #expect(session.handle(.peerCreated) == [.answerOffer(sdp: Media.offer2), .addRemoteCandidate(Media.relay)])
    }

    @Test("the ICE servers fetch failing still makes a connection, with no servers (as the web app)")
    func noICEServers() {
        var session = S(visitID: Self.v)
        #expect(session.handle(.iceServers(nil)) == [.createPeer([])])
        #expect(session.handle(.iceServers([])) == [], "once")
    }

    @Test("mute before the connection exists is applied when it does")
    func earlyMute() {
        var session = S(visitID: Self.v)
        #expect(session.handle(.setMuted(true)) == [])
        _ = session.handle(.iceServers(nil))
        #expect(session.handle(.peerCreated) == [.setMuted(true)])
        #expect(session.handle(.setMuted(true)) == [])
        #expect(session.handle(.setMuted(false)) == [.setMuted(false)])
    }

    @Test("buffered candidates stop at the server's limit of 64 per side")
    func candidateLimit() {
        var session = S(visitID: Self.v)
        _ = session.handle(.iceServers(nil))
        _ = session.handle(.remoteOffer(sdp: Media.offer1))
        for _ in 0..<100 { _ = session.handle(.remoteCandidate(Media.host)) }
        #expect(session.handle(.peerCreated).count == 1 + 64)
        // Ours, gathered before our answer left.
        for _ in 0..<100 { _ = session.handle(.local(.localCandidate(Media.relay))) }
        #expect(session.handle(.answerCreated(sdp: FakeMediaEngine.answerSDP)).count == 1 + 64)
    }

    /// (name, events after an answered offer, expected effects of the last one, ending)
    static let endings: [(String, [CallMediaEvent], [CallMediaEffect], CallMediaEnding?)] = [
        ("the visitor hung up: no frame back, the call ends", [.serverEnded(CallEnded(visitID: v, reason: .hangup, endedBy: .visitor))],
         [.cancelConnectTimeout, .closePeer, .status(.ended(.server(.hangup, endedBy: .visitor)))], .server(.hangup, endedBy: .visitor)),
        ("the server's negotiation timeout", [.serverEnded(CallEnded(visitID: v, reason: .negotiationTimeout, endedBy: nil))],
         [.cancelConnectTimeout, .closePeer, .status(.ended(.server(.negotiationTimeout, endedBy: nil)))], .server(.negotiationTimeout, endedBy: nil)),
        ("no media by the deadline: hang up", [.connectTimeout],
         [hangupFrame, .cancelConnectTimeout, .closePeer, .status(.ended(.couldNotConnect))], .couldNotConnect),
        ("the deadline after media came up changes nothing", [.local(.stateChanged(.connected)), .connectTimeout], [], nil),
        ("ICE failed before it was ever up", [.local(.stateChanged(.failed))],
         [hangupFrame, .cancelConnectTimeout, .closePeer, .status(.ended(.couldNotConnect))], .couldNotConnect),
        ("ICE failed after it was up: the connection dropped", [.local(.stateChanged(.connected)), .local(.stateChanged(.failed))],
         [hangupFrame, .cancelConnectTimeout, .closePeer, .status(.ended(.connectionLost))], .connectionLost),
        ("disconnected may recover: nothing yet", [.local(.stateChanged(.connected)), .local(.stateChanged(.disconnected))], [], nil),
        ("WebRTC could not answer the offer", [.answerFailed],
         [hangupFrame, .cancelConnectTimeout, .closePeer, .status(.ended(.couldNotConnect))], .couldNotConnect),
        ("the call ended around the media (answered elsewhere, decided): stop, send nothing", [.callOver],
         [.cancelConnectTimeout, .closePeer, .status(.ended(.callOver))], .callOver),
    ]

    @Test("endings", arguments: endings.indices)
    func ending(_ index: Int) {
        let (name, events, expected, ending) = Self.endings[index]
        var session = S(visitID: Self.v)
        _ = session.handle(.iceServers(nil))
        _ = session.handle(.peerCreated)
        _ = session.handle(.remoteOffer(sdp: Media.offer1))
        var last: [CallMediaEffect] = []
        for event in events { last = session.handle(event) }
        #expect(last == expected, "\(name)")
        if let ending { #expect(session.phase == .ended(ending), "\(name)") } else { #expect(!session.phase.isEnded, "\(name)") }
    }

    @Test("a server without calls: no camera, no frame, the call screen stays for the decision")
    func unavailable() {
        var session = S(visitID: Self.v)
        #expect(session.handle(.iceServers([], available: false))
                == [.cancelConnectTimeout, .closePeer, .status(.ended(.unavailable))])
        #expect(session.phase == .ended(.unavailable))
        #expect(session.handle(.peerCreated).isEmpty && session.handle(.remoteOffer(sdp: Media.offer1)).isEmpty)
        #expect(CallMediaStatus.ended(.unavailable).coordinatorEvent(visitID: Self.v) == nil, "CallKit keeps the call")
        #expect(CallMediaEnding.unavailable.text == "Vídeo indisponível neste servidor (sem relay de vídeo): decida pelos botões.")
    }

    @Test("what the resident reads, and what ends the call for CallKit")
    func endingTexts() {
        #expect(CallMediaEnding.server(.hangup, endedBy: .visitor).text == "O visitante encerrou a chamada")
        #expect(CallMediaEnding.server(.participantLeft, endedBy: .visitor).text == "O visitante saiu da chamada")
        #expect(CallMediaEnding.server(.maxDuration, endedBy: nil).text == "A chamada chegou ao tempo máximo")
        #expect(CallMediaEnding.connectionLost.text == "A conexão de vídeo caiu")
        #expect(CallMediaEnding.couldNotConnect.text == "Não foi possível conectar o vídeo")
        #expect(CallMediaStatus.live.coordinatorEvent(visitID: Self.v) == .mediaConnected(visitID: Self.v))
        #expect(CallMediaStatus.ended(.server(.hangup, endedBy: .visitor)).coordinatorEvent(visitID: Self.v) == .callEnded(visitID: Self.v))
        #expect(CallMediaStatus.ended(.couldNotConnect).coordinatorEvent(visitID: Self.v) == .callEnded(visitID: Self.v))
        #expect(CallMediaStatus.ended(.hungUpHere).coordinatorEvent(visitID: Self.v) == nil, "the user ended it: CallKit knows")
        #expect(CallMediaStatus.ended(.callOver).coordinatorEvent(visitID: Self.v) == nil)
    }

    @Test("server frames: this visit's offer, candidates and ending; another visit's and unreadable ones ignored")
    func serverFrames() {
        func event(_ update: RealtimeClient.Update, visitID: String = Self.v) -> CallMediaEvent? {
            guard case .call(let type, let data) = update else { return nil }
            return CallMediaEvent.from(type: type, data: data, visitID: visitID)
        }
        #expect(event(Media.offer()) == .remoteOffer(sdp: Media.offer1))
        #expect(event(Media.ice(Media.host)) == .remoteCandidate(Media.host))
        #expect(event(Media.frame(.ice, ["candidate": .null])) == .remoteCandidate(nil))
        #expect(event(Media.ended("hangup", by: "visitor")) == .serverEnded(CallEnded(visitID: Self.v, reason: .hangup, endedBy: .visitor)))
        #expect(event(Media.offer(), visitID: "another-visit") == nil)
        #expect(event(Media.frame(.answer, ["sdp": .string(Media.offer1)])) == nil, "the resident never offers")
        #expect(event(Media.frame(.ice, [:])) == nil, "a frame without `candidate` is not the end of candidates")
        #expect(event(Media.frame(.ended, ["reason": "some_new_reason"])) == nil)
    }
}

// MARK: - The actor, over the fakes

@Suite("Call media controller: effects in order, over a fake engine")
struct CallMediaControllerTests {
    static let v = Media.visitID

    static func controller(http: ScriptedHTTP = ScriptedHTTP(), timeout: TimeInterval = 600)
        -> (CallMediaController, FakeMediaEngine, FakeSignaling, StatusLog) {
        let engine = FakeMediaEngine(), signaling = FakeSignaling(), statuses = StatusLog()
        let controller = CallMediaController(engine: engine, http: http, signaling: signaling, connectTimeout: timeout,
                                             onStatus: statuses.handler)
        return (controller, engine, signaling, statuses)
    }

    @Test("ICE servers from the server reach the engine; a candidate that arrives during the answer is applied after it")
    func candidateWaitsForAnswer() async throws {
        let http = ScriptedHTTP()
        http.then({ request in
            #expect(request.method == "GET" && request.path == "/v1/calls/ice_servers")
            return Fixtures.json(200, Media.turn)
        })
        let (controller, engine, signaling, statuses) = Self.controller(http: http)
        let gate = Gate()
        engine.state.withLock { $0.answerGate = gate }
        await controller.start(visitID: Self.v)
        #expect(engine.state.withLock { $0.iceServers } == [Media.turn.iceServers])

        // The answer is held in flight; a candidate arrives meanwhile.
        let offer = Task { await controller.receive(Media.offer()) }
        #expect(await eventually { engine.log.contains("answer:offer-1") })
        await controller.receive(Media.ice(Media.host))
        engine.emit(.localCandidate(Media.relay))
        #expect(!engine.log.contains { $0.hasPrefix("remote:") }, "a candidate reached WebRTC before its offer was applied")
        await gate.open()
        await offer.value
        #expect(await eventually { signaling.types == ["call.answer", "call.ice"] }, "\(signaling.types)")
        #expect(await eventually { engine.log == ["peer", "answer:offer-1", "answered", "remote:candidate:1"] }, "\(engine.log)")
        #expect(signaling.sent.first?.data?["sdp"]?.stringValue == FakeMediaEngine.answerSDP)

        engine.emit(.stateChanged(.connected))
        #expect(await eventually { statuses.all == [.connecting, .live] }, "\(statuses.all)")
        await controller.hangUp(visitID: Self.v)
        #expect(signaling.types.last == "call.hangup")
        #expect(engine.log.last == "close")
        #expect(await controller.status == .ended(.hungUpHere))
    }

    @Test("frames refused while the socket reconnects leave in order once it is live again")
    func outboxAcrossReconnect() async throws {
        let (controller, engine, signaling, _) = Self.controller()
        signaling.setLive(false)
        await controller.start(visitID: Self.v)
        await controller.receive(Media.offer())
        #expect(await eventually { engine.log.contains("answered") })
        engine.emit(.localCandidate(Media.relay))
        engine.emit(.localCandidate(nil))
        #expect(await eventually { await controller.waitingFrames == 3 })
        #expect(signaling.sent.isEmpty)
        signaling.setLive(true)
        await controller.receive(.state(.live))
        #expect(signaling.types == ["call.answer", "call.ice", "call.ice"], "\(signaling.types)")
        #expect(signaling.sent.last?.data?["candidate"] == .null)
    }

    @Test("no media by the deadline: call.hangup, the connection closed, 'Não foi possível conectar o vídeo'")
    func connectTimeout() async throws {
        let (controller, engine, signaling, statuses) = Self.controller(timeout: 0.2)
        await controller.start(visitID: Self.v)
        #expect(await eventually { statuses.all.last == .ended(.couldNotConnect) }, "\(statuses.all)")
        #expect(signaling.types == ["call.hangup"])
        // On a loaded machine the deadline may pass before the connection is even made;
        // either way no connection stays open.
        #expect(engine.log == ["peer", "close"] || engine.log.isEmpty, "\(engine.log)")
        #expect(CallMediaEnding.couldNotConnect.text == ClientText.callMediaEnded(.couldNotConnect))
    }

    @Test("the engine cannot open camera or connection: the call is hung up with a sentence, never silence")
    func engineFailure() async throws {
        let (controller, engine, signaling, statuses) = Self.controller()
        engine.state.withLock { $0.failPeer = true }
        await controller.start(visitID: Self.v)
        #expect(statuses.all == [.connecting, .ended(.couldNotConnect)])
        #expect(signaling.types == ["call.hangup"])
    }

    @Test("a second call while the first is still answering: the first is hung up and its connection closed before the next opens")
    func secondCallClosesFirst() async throws {
        let (controller, engine, signaling, _) = Self.controller()
        let gate = Gate()
        engine.state.withLock { $0.answerGate = gate }
        await controller.start(visitID: Self.v)
        let offer = Task { await controller.receive(Media.offer()) }
        #expect(await eventually { engine.log.contains("answer:offer-1") })
        // The first call's answer is still in flight when the second call starts.
        let second = Task { await controller.start(visitID: "visit-2") }
        #expect(await eventually { await controller.session?.visitID == "visit-2" })
        await gate.open()
        await offer.value
        await second.value
        #expect(await eventually { engine.log.filter { $0 == "peer" }.count == 2 }, "\(engine.log)")
        let log = engine.log
        let close = try #require(log.firstIndex(of: "close"), "the first call's connection was never closed: \(log)")
        let reopened = try #require(log.lastIndex(of: "peer"))
        #expect(close < reopened, "\(log)")
        #expect(signaling.sent.map { "\($0.type) \($0.data?["visit_id"]?.stringValue ?? "")" } == ["call.hangup \(Self.v)"],
                "the first call's late answer must not be sent after its hangup: \(signaling.sent)")
    }

    @Test("the visitor hangs up: the media closes, nothing is sent back, the coordinator learns the call ended")
    func visitorHangsUp() async throws {
        let (controller, engine, signaling, statuses) = Self.controller()
        await controller.start(visitID: Self.v)
        await controller.receive(Media.offer())
        await controller.receive(Media.ended("hangup", by: "visitor"))
        #expect(signaling.types == ["call.answer"])
        #expect(engine.log.last == "close")
        let status = try #require(statuses.all.last)
        #expect(status == .ended(.server(.hangup, endedBy: .visitor)))
        #expect(status.coordinatorEvent(visitID: Self.v) == .callEnded(visitID: Self.v))
    }
}

// MARK: - With the coordinator

@Suite("Call media with the coordinator: Atender starts it, the end closes it, mute, audio")
struct CallMediaCoordinatorTests {
    typealias C = IncomingCallCoordinatorTests
    static let v = C.visitID

    /// The coordinator and the media as `CallService` connects them: every event's effects
    /// go to the media with the calls afterwards; the media's status goes back as an event.
    final class Phone: @unchecked Sendable {
        var coordinator = IncomingCallCoordinator(myUserID: C.me, deviceID: C.device)
        let media: CallMediaController
        let engine = FakeMediaEngine()
        let signaling = FakeSignaling()
        let statuses = StatusLog()

        init() {
            media = CallMediaController(engine: engine, http: ScriptedHTTP(), signaling: signaling, onStatus: statuses.handler)
        }

        @discardableResult
        func handle(_ event: CallEvent) async -> [CallEffect] {
            let effects = coordinator.handle(event, now: C.now)
            await media.process(.coordinator(effects, calls: coordinator.calls))
            return effects
        }

        /// The media's last status, handed to the coordinator as `CallService` does.
        func feedStatus() async {
            if let event = statuses.all.last?.coordinatorEvent(visitID: C.visitID) { await handle(event) }
        }
    }

    @Test("Atender prepares the media before the server's yes; CallKit's audio starts it; live moves the call in; Autorizar hangs up")
    func answerToDecision() async throws {
        let phone = Phone()
        await phone.handle(.voipPush(payload: C.ring(), fallbackCallID: C.fallback))
        #expect(await phone.media.session == nil, "nothing before Atender")
        await phone.handle(.userAnswered(visitID: Self.v, idempotencyKey: "k"))
        #expect(await phone.media.session?.visitID == Self.v)
        // The visitor's offer can beat the HTTP answer to the phone.
        await phone.media.process(.realtime(Media.offer()))
        #expect(phone.signaling.types == ["call.answer"])
        await phone.handle(.answerAccepted(visitID: Self.v))
        await phone.handle(.audioActivated)
        #expect(phone.engine.log.contains("audio:true"), "\(phone.engine.log)")
        await phone.media.process(.muted(true))
        phone.engine.emit(.stateChanged(.connected))
        #expect(await eventually { phone.statuses.all.last == .live })
        await phone.feedStatus()
        #expect(phone.coordinator.calls[Self.v]?.phase == .inCall)
        await phone.handle(.decided(visitID: Self.v, .authorize))
        #expect(phone.signaling.types == ["call.answer", "call.hangup"])
        #expect(phone.engine.log.suffix(2) == ["muted:true", "close"], "\(phone.engine.log)")
        await phone.media.process(.audioDeactivated)
        #expect(phone.engine.log.last == "audio:false")
    }

    @Test("submit (what CallService and the realtime reader use) keeps the order of inputs handed over without waiting")
    func submitKeepsOrder() async throws {
        let phone = Phone()
        var coordinator = IncomingCallCoordinator(myUserID: C.me, deviceID: C.device)
        let ring = coordinator.handle(.voipPush(payload: C.ring(), fallbackCallID: C.fallback), now: C.now)
        phone.media.submit(.coordinator(ring, calls: coordinator.calls))
        let answer = coordinator.handle(.userAnswered(visitID: Self.v, idempotencyKey: "k"), now: C.now)
        phone.media.submit(.coordinator(answer, calls: coordinator.calls))
        phone.media.submit(.realtime(Media.offer()))
        phone.media.submit(.muted(true))
        phone.media.submit(.realtime(Media.ended("hangup", by: "visitor")))
        #expect(await eventually { phone.engine.log == ["peer", "answer:offer-1", "answered", "muted:true", "close"] }, "\(phone.engine.log)")
        #expect(phone.signaling.types == ["call.answer"])
    }

    @Test("CallKit's audio: on with the server's yes, off at deactivation, back after an interruption — never before the call had it")
    func audioFollowsCallKit() async throws {
        let phone = Phone()
        await phone.handle(.voipPush(payload: C.ring(), fallbackCallID: C.fallback))
        await phone.handle(.userAnswered(visitID: Self.v, idempotencyKey: "k"))
        // CallKit activates before the server's yes: nothing yet (the coordinator waits).
        await phone.handle(.audioActivated)
        await phone.media.process(.audioActivated)
        #expect(!phone.engine.log.contains { $0.hasPrefix("audio:") }, "\(phone.engine.log)")
        await phone.handle(.answerAccepted(visitID: Self.v))
        await phone.media.process(.audioActivated)   // as CallService submits after the coordinator's effects
        #expect(phone.engine.log.filter { $0.hasPrefix("audio:") } == ["audio:true"], "started once")
        // An interruption: CallKit deactivates, then activates again.
        await phone.handle(.audioDeactivated)
        await phone.media.process(.audioDeactivated)
        await phone.handle(.audioActivated)
        await phone.media.process(.audioActivated)
        #expect(phone.engine.log.filter { $0.hasPrefix("audio:") } == ["audio:true", "audio:false", "audio:true"], "\(phone.engine.log)")
    }

    @Test("answered on another device first (409): the prepared media closes without a frame")
    func answeredElsewhere() async throws {
        let phone = Phone()
        await phone.handle(.voipPush(payload: C.ring(), fallbackCallID: C.fallback))
        await phone.handle(.userAnswered(visitID: Self.v, idempotencyKey: "k"))
        #expect(await eventually { phone.engine.log == ["peer"] })
        await phone.handle(.answerRefused(visitID: Self.v, ErrorBody(code: .visitAlreadyAnswered, message: "")))
        #expect(phone.engine.log == ["peer", "close"])
        #expect(phone.signaling.types.isEmpty, "not a participant: nothing to hang up")
        #expect(await phone.media.status == .ended(.callOver))
    }

    @Test("this user picked up on another device while this one was answering: the prepared media closes without a frame")
    func answeredOnAnotherDevice() async throws {
        let phone = Phone()
        await phone.handle(.voipPush(payload: C.ring(), fallbackCallID: C.fallback))
        await phone.handle(.userAnswered(visitID: Self.v, idempotencyKey: "k"))
        await phone.handle(.realtime(.answered, VisitEventData(visitID: Self.v, by: PersonRef(id: C.me, name: "Maria Souza"), deviceID: "ipad")))
        #expect(phone.coordinator.calls[Self.v]?.phase == .ended(.answeredElsewhere))
        #expect(phone.engine.log.last == "close")
        #expect(phone.signaling.types.isEmpty)
        // Our own answer echoed by the socket is not "elsewhere": the media stays.
        let mine = Phone()
        await mine.handle(.voipPush(payload: C.ring(), fallbackCallID: C.fallback))
        await mine.handle(.userAnswered(visitID: Self.v, idempotencyKey: "k"))
        await mine.handle(.realtime(.answered, VisitEventData(visitID: Self.v, by: PersonRef(id: C.me, name: "Maria Souza"), deviceID: C.device)))
        #expect(await mine.media.status == .connecting)
        #expect(!mine.engine.log.contains("close"))
    }

    @Test("the visit decided elsewhere during the call: media closes; the visitor's hangup ends the CallKit call")
    func closedAround() async throws {
        let phone = Phone()
        await phone.handle(.voipPush(payload: C.ring(), fallbackCallID: C.fallback))
        await phone.handle(.userAnswered(visitID: Self.v, idempotencyKey: "k"))
        await phone.handle(.answerAccepted(visitID: Self.v))
        await phone.handle(.realtime(.resolved, VisitEventData(visitID: Self.v)))
        #expect(phone.engine.log.last == "close")

        let second = Phone()
        await second.handle(.voipPush(payload: C.ring(), fallbackCallID: C.fallback))
        await second.handle(.userAnswered(visitID: Self.v, idempotencyKey: "k"))
        await second.handle(.answerAccepted(visitID: Self.v))
        await second.media.process(.realtime(Media.ended("hangup", by: "visitor")))
        await second.feedStatus()
        #expect(second.coordinator.calls[Self.v]?.phase == .ended(.remoteEnded))
        #expect(second.coordinator.calls[Self.v]?.callKit == .ended(.remoteEnded), "CallKit is told the visitor left")
    }
}
