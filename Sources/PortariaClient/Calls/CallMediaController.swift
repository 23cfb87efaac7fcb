import Foundation
import PortariaCore

/// Where call frames go: the realtime socket (`RealtimeClient`), a fake in tests.
public protocol CallSignalSender: Sendable {
    /// Sends a frame now; false when there is no live socket (the frame is kept and sent
    /// when the socket is live again: the server holds the call 30 s for an absent side).
    func send(_ frame: RealtimeFrame) async -> Bool
}

extension RealtimeClient: CallSignalSender {}

/// What the call layer hands the media, in order (`CallMediaController.submit`).
public enum CallMediaInput: Sendable {
    /// The coordinator's effects for one event, and its calls afterwards.
    case coordinator([CallEffect], calls: [String: CallRecord])
    /// An update from the one reader of the realtime stream (`call.*` frames, the socket
    /// coming back).
    case realtime(RealtimeClient.Update)
    /// `CXSetMutedCallAction` (CallKit's mute button or the app's).
    case muted(Bool)
    /// `provider(_:didActivate:)`: after an interruption, audio the call had comes back.
    case audioActivated
    /// `provider(_:didDeactivate:)`.
    case audioDeactivated
}

/// Owns the media of the one call this phone is in: a `CallMediaSession` and its peer
/// connection. Performs the session's effects strictly in order — one queue, like the web
/// app's promise chain — so a candidate can never reach the peer connection before the
/// offer it belongs to, and our answer always leaves before our candidates.
public actor CallMediaController {
    public typealias StatusHandler = @Sendable (_ visitID: String, CallMediaStatus) async -> Void

    private let engine: any CallMediaEngine
    private let http: any AuthorizedHTTP
    private let signaling: any CallSignalSender
    private let clock: any ClientClock
    private let connectTimeout: TimeInterval
    private var onStatus: StatusHandler

    public private(set) var session: CallMediaSession?
    /// The last status reported (for the screen and for tests).
    public private(set) var status: CallMediaStatus?
    private var peer: (any PeerConnection)?
    /// The call `peer` belongs to: a hangup queued by an earlier call closes its own
    /// connection even when the next call has started.
    private var peerOwner = 0
    /// Incremented for every call: a late result from an earlier call is dropped.
    private var generation = 0
    private var effects: [(generation: Int, effect: CallMediaEffect)] = []
    private var draining = false
    private var outbox: [RealtimeFrame] = []
    /// Frames waiting for a live socket.
    public var waitingFrames: Int { outbox.count }
    private var timeout: Task<Void, Never>?
    private var peerEvents: Task<Void, Never>?
    private let inputs: AsyncStream<CallMediaInput>.Continuation
    /// The coordinator started this call's audio (`.startMedia`: CallKit activated the
    /// session and the server accepted the answer) …
    private var audioStarted = false
    /// … and WebRTC's audio unit is on now (off between CallKit's deactivation and the
    /// next activation, an interruption).
    private var audioOn = false

    /// - Parameters:
    ///   - http: for `GET /v1/calls/ice_servers` (`SessionManager`).
    ///   - signaling: the realtime socket.
    ///   - connectTimeout: media must be up this long after "Atender", or the call is
    ///     hung up with "Não foi possível conectar o vídeo" (the server gives up on a
    ///     negotiation after 45 s; a relayed ICE check needs a few more).
    public init(engine: any CallMediaEngine, http: any AuthorizedHTTP, signaling: any CallSignalSender,
                clock: any ClientClock = SystemClock(), connectTimeout: TimeInterval = 60,
                onStatus: @escaping StatusHandler = { _, _ in }) {
        self.engine = engine
        self.http = http
        self.signaling = signaling
        self.clock = clock
        self.connectTimeout = connectTimeout
        self.onStatus = onStatus
        let (stream, continuation) = AsyncStream.makeStream(of: CallMediaInput.self)
        inputs = continuation
        // Reads `submit`'s inputs one at a time; ends when `deinit` finishes the stream.
        Task { [weak self] in
            for await input in stream {
                guard let self else { return }
                await self.process(input)
            }
        }
    }

    deinit {
        inputs.finish()
        timeout?.cancel()
        peerEvents?.cancel()
    }

    public func setStatusHandler(_ handler: @escaping StatusHandler) {
        onStatus = handler
    }

    /// Hands an input over without waiting, keeping the order of calls (for callers on the
    /// main actor: CallKit delegates, the realtime reader).
    public nonisolated func submit(_ input: CallMediaInput) {
        inputs.yield(input)
    }

    /// Processes an input now (what `submit` does later, in order).
    public func process(_ input: CallMediaInput) async {
        switch input {
        case .coordinator(let effects, let calls):
            await follow(effects, calls: calls)
        case .realtime(let update):
            await receive(update)
        case .muted(let muted):
            await handle(.setMuted(muted))
        case .audioActivated:
            // The first activation starts audio through the coordinator's `.startMedia`;
            // a later one (after an interruption) only brings back what the call had.
            guard audioStarted, !audioOn, !(session?.phase.isEnded ?? true) else { return }
            audioOn = true
            await engine.setAudioActive(true)
        case .audioDeactivated:
            audioOn = false
            await engine.setAudioActive(false)
        }
    }

    // MARK: The call layer

    /// The media side of the coordinator's effects. Media is prepared at "Atender" (the
    /// `POST /answer`): the visitor offers as soon as the server records the answer, and
    /// that offer may arrive before the answer's HTTP response does.
    public func follow(_ effects: [CallEffect], calls: [String: CallRecord]) async {
        for effect in effects {
            switch effect {
            case .postAnswer(let visitID, _, _), .joinCall(let visitID):
                await start(visitID: visitID)
            case .startMedia:
                // CallKit activated the audio session and the server accepted the answer.
                audioStarted = true
                audioOn = true
                await engine.setAudioActive(true)
            case .hangUp(let visitID):
                await hangUp(visitID: visitID)
            default:
                break
            }
        }
        // The call ended around the media (answered elsewhere, refused, the visit decided
        // or cancelled, the visitor gone): the media stops with it.
        if let session, !session.phase.isEnded, calls[session.visitID]?.phase.isEnded ?? true {
            await handle(.callOver)
        }
    }

    /// Starts the media of a call (again for the same call: nothing). A call still up for
    /// another visit is hung up first: one call at a time, as CallKit is configured.
    public func start(visitID: String) async {
        if let session, !session.phase.isEnded {
            if session.visitID == visitID { return }
            await handle(.hangUp)
        }
        generation += 1
        outbox = []
        audioStarted = false
        let session = CallMediaSession(visitID: visitID)
        self.session = session
        status = nil
        enqueue(session.start())
        await drain()
    }

    /// The realtime stream: this call's `call.*` frames; a live socket again sends what waited.
    public func receive(_ update: RealtimeClient.Update) async {
        switch update {
        case .call(let type, let data):
            guard let visitID = session?.visitID,
                  let event = CallMediaEvent.from(type: type, data: data, visitID: visitID) else { return }
            await handle(event)
        case .state(.live):
            await flushOutbox()
        case .state, .snapshot, .event:
            return
        }
    }

    public func hangUp(visitID: String) async {
        guard session?.visitID == visitID else { return }
        await handle(.hangUp)
    }

    public func setMuted(_ muted: Bool) async {
        await handle(.setMuted(muted))
    }

    // MARK: The machine and its effects

    /// `generation`: the call an engine result or timer belongs to (nil: the current one).
    /// Events produced while draining only queue their effects; the drainer runs them.
    private func handle(_ event: CallMediaEvent, generation expected: Int? = nil) async {
        if let expected, expected != generation { return }
        guard var session else { return }
        let effects = session.handle(event)
        self.session = session
        enqueue(effects)
        await drain()
    }

    private func enqueue(_ new: [CallMediaEffect]) {
        effects += new.map { (generation, $0) }
    }

    /// One drainer at a time: an event that arrives while an effect is awaited (a candidate
    /// during the answer) queues its effects behind it.
    private func drain() async {
        guard !draining else { return }
        draining = true
        while !effects.isEmpty {
            let (owner, effect) = effects.removeFirst()
            await perform(effect, generation: owner)
        }
        draining = false
    }

    private func perform(_ effect: CallMediaEffect, generation owner: Int) async {
        switch effect {
        case .fetchICEServers:
            let response = await iceServers()
            await handle(.iceServers(response?.iceServers, relayOnly: response?.iceTransportPolicy == .relay,
                                     available: response?.callsAvailable ?? true), generation: owner)
        case .createPeer(let servers, let relayOnly):
            // The call may have ended while this waited in the queue: no camera for it.
            guard owner == generation, !(session?.phase.isEnded ?? true) else { return }
            let (stream, continuation) = AsyncStream.makeStream(of: PeerConnectionEvent.self)
            do {
                let made = try await engine.makePeerConnection(iceServers: servers, relayOnly: relayOnly) { continuation.yield($0) }
                guard owner == generation, !(session?.phase.isEnded ?? true) else {
                    // The call ended while the connection was being made.
                    await made.close()
                    continuation.finish()
                    return
                }
                if let stale = peer { await stale.close() }   // never two at once
                peer = made
                peerOwner = owner
                peerEvents?.cancel()
                peerEvents = Task { [weak self] in
                    for await event in stream { await self?.handle(.local(event), generation: owner) }
                }
                await handle(.peerCreated, generation: owner)
            } catch {
                continuation.finish()
                await handle(.peerFailed, generation: owner)
            }
        case .answerOffer(let sdp):
            guard owner == generation, peerOwner == owner, let peer else { return }
            do {
                let answer = try await peer.answer(offer: sdp)
                await handle(.answerCreated(sdp: answer), generation: owner)
            } catch {
                await handle(.answerFailed, generation: owner)
            }
        case .addRemoteCandidate(let candidate):
            guard owner == generation, peerOwner == owner else { return }
            await peer?.addRemoteCandidate(candidate)
        case .send(let frame):
            // Frames wait behind the ones still waiting, so order holds across a reconnect.
            if outbox.isEmpty, await signaling.send(frame) { return }
            outbox.append(frame)
        case .setMuted(let muted):
            guard owner == generation, peerOwner == owner else { return }
            await peer?.setMuted(muted)
        case .startConnectTimeout:
            timeout?.cancel()
            let clock = clock, seconds = connectTimeout
            timeout = Task { [weak self] in
                guard (try? await clock.sleep(for: seconds)) != nil else { return }
                await self?.handle(.connectTimeout, generation: owner)
            }
        case .cancelConnectTimeout:
            guard owner == generation else { return }
            timeout?.cancel()
            timeout = nil
        case .closePeer:
            guard peerOwner == owner, peer != nil else { return }
            let closing = peer
            peer = nil
            peerEvents?.cancel()
            peerEvents = nil
            await closing?.close()
        case .status(let new):
            guard owner == generation, let visitID = session?.visitID else { return }
            status = new
            await onStatus(visitID, new)
        }
    }

    private func flushOutbox() async {
        while let frame = outbox.first {
            guard await signaling.send(frame) else { return }
            outbox.removeFirst()
        }
    }

    /// `GET /v1/calls/ice_servers`, fresh for every call (the TURN credential lives 10
    /// minutes). Nil when it fails: the call goes on without a relay (and the server keeps
    /// the phone's direct candidates from the visitor).
    private func iceServers() async -> ICEServersResponse? {
        try? await http.send(APIRoutes.iceServers.endpoint)
    }
}
