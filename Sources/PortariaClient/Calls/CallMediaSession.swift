import Foundation
import PortariaCore

// The media half of a video call on the resident's phone (decision 0034): a small seam
// over a WebRTC peer connection, and a pure state machine that drives the server's
// signalling exactly as the web resident app does (`Web/shared/call.js`, decision 0009):
//
// - the visitor's gate page offers right after `visit.answered`; the resident only ever
//   answers (the visitor wins glare), so this side never makes an offer;
// - ICE servers come from `GET /v1/calls/ice_servers`, fetched per call (the TURN
//   credential is short-lived); a failed fetch goes on with none, as the web does;
// - remote candidates wait until the offer they belong to reached the peer connection;
//   local candidates wait until our answer was sent — the server refuses candidates at
//   the wrong moment (`CALL_STATE_CONFLICT`);
// - `call.ended` (either side hung up, a timeout, the visit closed) closes the media;
//   "Encerrar" here sends `call.hangup` first.
//
// No I/O here: events in, effects out. `CallMediaController` (an actor) performs them.

// MARK: - The engine seam

/// `RTCPeerConnectionState`, as far as the call cares.
public enum PeerConnectionState: String, Sendable, Equatable {
    case new, connecting, connected, disconnected, failed, closed
}

/// What a peer connection reports, in the order it happens.
public enum PeerConnectionEvent: Sendable, Equatable {
    /// A local ICE candidate to trickle; nil when gathering is complete.
    case localCandidate(ICECandidate?)
    case stateChanged(PeerConnectionState)
}

/// One WebRTC peer connection, the answering side.
public protocol PeerConnection: Sendable {
    /// Applies the remote offer, attaches the camera and microphone, creates the answer and
    /// sets it as the local description; returns the answer's SDP.
    func answer(offer sdp: String) async throws -> String
    /// A remote candidate (nil: the other side gathered all of its own). One that cannot be
    /// used is dropped by the engine: it is not a reason to end a call.
    func addRemoteCandidate(_ candidate: ICECandidate?) async
    /// The microphone (the track is disabled, the call goes on).
    func setMuted(_ muted: Bool) async
    /// Stops capture, closes the connection. Idempotent.
    func close() async
}

/// Makes peer connections and owns the audio device: Google's WebRTC framework on iOS
/// (`Apps/iOS/App/WebRTCMediaEngine.swift`), a fake in the tests.
public protocol CallMediaEngine: Sendable {
    /// A new peer connection with these ICE servers; `events` receives its candidates and
    /// state changes in order, from any thread. `relayOnly`: gather relay candidates only
    /// (`iceTransportPolicy = .relay`), so not even a connectivity check leaves from the
    /// phone's own addresses (decision 0066).
    func makePeerConnection(iceServers: [ICEServer], relayOnly: Bool,
                            events: @escaping @Sendable (PeerConnectionEvent) -> Void) async throws -> any PeerConnection
    /// CallKit activated (true) or deactivated (false) the audio session. With WebRTC's
    /// manual audio the audio unit runs only in between; starting it earlier breaks CallKit.
    func setAudioActive(_ active: Bool) async
}

// MARK: - Status and endings

/// How a call's media ended, and what the resident reads.
public enum CallMediaEnding: Sendable, Equatable {
    /// "Encerrar" on this phone (or a decision): `call.hangup` was sent.
    case hungUpHere
    /// The server's `call.ended`.
    case server(PortariaCore.CallEndReason, endedBy: CallRole?)
    /// The peer connection failed after it had been up (network gone for good).
    case connectionLost
    /// No media within the deadline, the engine could not make a connection or an answer.
    case couldNotConnect
    /// The call ended around the media (answered elsewhere, the visit was decided, the
    /// answer was refused): nothing to send, only to stop.
    case callOver
    /// The server offers no calls (`calls_available: false`): the resident decides with
    /// the buttons; the call screen stays.
    case unavailable

    /// pt-BR, for the call screen.
    public var text: String { ClientText.callMediaEnded(self) }

    /// Whether the call itself must now end (CallKit told, the screen closed): true when
    /// the media ended without the user or the coordinator ending the call.
    public var endsCall: Bool {
        switch self {
        case .server, .connectionLost, .couldNotConnect: return true
        case .hungUpHere, .callOver, .unavailable: return false
        }
    }
}

/// What the call layer and the screen hear from the media.
public enum CallMediaStatus: Sendable, Equatable {
    case connecting
    case live
    case ended(CallMediaEnding)

    /// The coordinator event this status means for the call, if any.
    public func coordinatorEvent(visitID: String) -> CallEvent? {
        switch self {
        case .connecting: return nil
        case .live: return .mediaConnected(visitID: visitID)
        case .ended(let ending): return ending.endsCall ? .callEnded(visitID: visitID) : nil
        }
    }
}

// MARK: - The machine

public enum CallMediaEvent: Sendable, Equatable {
    /// `GET /v1/calls/ice_servers` answered (nil: it failed; the call goes on without a
    /// relay). `relayOnly`: the server's `ice_transport_policy` is `relay`. `available`:
    /// its `calls_available` — false when it has no relay and does not allow direct calls,
    /// so no media could ever flow.
    case iceServers([ICEServer]?, relayOnly: Bool = false, available: Bool = true)
    case peerCreated
    case peerFailed
    /// `call.offer` from the visitor.
    case remoteOffer(sdp: String)
    /// `call.ice` from the visitor.
    case remoteCandidate(ICECandidate?)
    /// `call.ended` from the server.
    case serverEnded(PortariaCore.CallEnded)
    case answerCreated(sdp: String)
    case answerFailed
    case local(PeerConnectionEvent)
    /// "Encerrar" (or a decision) on this phone.
    case hangUp
    /// The call ended around the media (see `CallMediaEnding.callOver`).
    case callOver
    case setMuted(Bool)
    /// The deadline for media to come up passed.
    case connectTimeout
}

public enum CallMediaEffect: Sendable, Equatable {
    case fetchICEServers
    case createPeer([ICEServer], relayOnly: Bool = false)
    /// Give the offer to the peer connection; `.answerCreated` / `.answerFailed` follows.
    case answerOffer(sdp: String)
    case addRemoteCandidate(ICECandidate?)
    /// A `call.*` frame for the realtime socket.
    case send(RealtimeFrame)
    case setMuted(Bool)
    case startConnectTimeout
    case cancelConnectTimeout
    case closePeer
    case status(CallMediaStatus)
}

/// One call's media, from "Atender" to the end. Pure: events in, effects out, in order.
public struct CallMediaSession: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        /// Fetching ICE servers, creating the peer connection.
        case preparing
        case waitingForOffer
        /// The offer is with the peer connection.
        case answering
        /// Our answer was sent; ICE is checking.
        case negotiated
        case live
        case ended(CallMediaEnding)

        public var isEnded: Bool {
            if case .ended = self { return true }
            return false
        }
    }

    /// The server accepts at most 64 candidates per side per negotiation; buffering more
    /// would only hold what it refuses.
    public static let candidateLimit = 64

    public let visitID: String
    public private(set) var phase: Phase = .preparing
    public private(set) var isMuted = false
    private var peerRequested = false
    private var peerReady = false
    /// An offer that came before the peer connection existed (the latest wins: a new offer
    /// replaces the negotiation, as on the server).
    private var pendingOffer: String?
    /// Remote candidates wait until an offer reached the peer connection.
    private var offerGiven = false
    private var pendingRemote: [ICECandidate?] = []
    /// Local candidates wait until our answer was sent.
    private var answerSent = false
    private var pendingLocal: [ICECandidate?] = []

    public init(visitID: String) {
        self.visitID = visitID
    }

    /// The first effects: ICE servers, the deadline, "Conectando o vídeo…".
    public func start() -> [CallMediaEffect] {
        [.status(.connecting), .startConnectTimeout, .fetchICEServers]
    }

    public mutating func handle(_ event: CallMediaEvent) -> [CallMediaEffect] {
        guard !phase.isEnded else { return [] }
        switch event {
        case .iceServers(let servers, let relayOnly, let available):
            guard phase == .preparing, !peerRequested else { return [] }
            // No camera, no frame: the visitor's page reads the same answer and stops too.
            guard available else { return end(.unavailable, hangUp: false) }
            peerRequested = true
            return [.createPeer(servers ?? [], relayOnly: relayOnly)]
        case .peerCreated:
            guard phase == .preparing else { return [] }
            peerReady = true
            phase = .waitingForOffer
            var effects: [CallMediaEffect] = isMuted ? [.setMuted(true)] : []
            if let offer = pendingOffer {
                pendingOffer = nil
                effects += giveOffer(offer)
            }
            return effects
        case .peerFailed:
            return end(.couldNotConnect, hangUp: true)
        case .remoteOffer(let sdp):
            guard peerReady else {
                // Candidates buffered so far belonged to an earlier offer.
                pendingOffer = sdp
                pendingRemote = []
                return []
            }
            return giveOffer(sdp)
        case .remoteCandidate(let candidate):
            if offerGiven { return [.addRemoteCandidate(candidate)] }
            if pendingRemote.count < Self.candidateLimit { pendingRemote.append(candidate) }
            return []
        case .serverEnded(let ended):
            return end(.server(ended.reason, endedBy: ended.endedBy), hangUp: false)
        case .answerCreated(let sdp):
            answerSent = true
            if phase == .answering { phase = .negotiated }
            let local = pendingLocal
            pendingLocal = []
            return [.send(frame(.answer, ["sdp": .string(sdp)]))] + local.map(iceFrame)
        case .answerFailed:
            return end(.couldNotConnect, hangUp: true)
        case .local(.localCandidate(let candidate)):
            // "" ends one m-line's candidates; the final nil covers them all (as the web does).
            if let candidate, candidate.candidate.isEmpty { return [] }
            if answerSent { return [iceFrame(candidate)] }
            if pendingLocal.count < Self.candidateLimit { pendingLocal.append(candidate) }
            return []
        case .local(.stateChanged(let state)):
            switch state {
            case .connected:
                guard phase != .live else { return [] }
                phase = .live
                return [.cancelConnectTimeout, .status(.live)]
            case .failed:
                // Up before and now failed: the network is gone. Never up: it never connected.
                return end(phase == .live ? .connectionLost : .couldNotConnect, hangUp: true)
            case .new, .connecting, .disconnected, .closed:
                // `disconnected` may recover by itself (ICE keeps checking); `failed` follows if not.
                return []
            }
        case .hangUp:
            return end(.hungUpHere, hangUp: true)
        case .callOver:
            return end(.callOver, hangUp: false)
        case .setMuted(let muted):
            guard muted != isMuted else { return [] }
            isMuted = muted
            return peerReady ? [.setMuted(muted)] : []
        case .connectTimeout:
            guard phase != .live else { return [] }
            return end(.couldNotConnect, hangUp: true)
        }
    }

    private mutating func giveOffer(_ sdp: String) -> [CallMediaEffect] {
        offerGiven = true
        if phase != .live { phase = .answering }
        // Queued after the offer: the performer runs effects in order, so these reach the
        // peer connection only once it has the remote description.
        let remote = pendingRemote
        pendingRemote = []
        return [.answerOffer(sdp: sdp)] + remote.map { .addRemoteCandidate($0) }
    }

    private mutating func end(_ ending: CallMediaEnding, hangUp: Bool) -> [CallMediaEffect] {
        phase = .ended(ending)
        pendingOffer = nil
        pendingRemote = []
        pendingLocal = []
        let bye: [CallMediaEffect] = hangUp ? [.send(frame(.hangup, [:]))] : []
        return bye + [.cancelConnectTimeout, .closePeer, .status(.ended(ending))]
    }

    /// `call.ice` with the candidate in the contract's snake_case shape (`null`: gathering done).
    private func iceFrame(_ candidate: ICECandidate?) -> CallMediaEffect {
        guard let candidate else { return .send(frame(.ice, ["candidate": .null])) }
        var fields: [String: JSONValue] = ["candidate": .string(candidate.candidate)]
        if let mid = candidate.sdpMid { fields["sdp_mid"] = .string(mid) }
        if let index = candidate.sdpMLineIndex { fields["sdp_m_line_index"] = .number(Double(index)) }
        if let fragment = candidate.usernameFragment { fields["username_fragment"] = .string(fragment) }
        return .send(frame(.ice, ["candidate": .object(fields)]))
    }

    private func frame(_ type: CallMessageType, _ data: [String: JSONValue]) -> RealtimeFrame {
        RealtimeFrame(type: type.rawValue, data: .object(data.merging(["visit_id": .string(visitID)]) { $1 }))
    }
}

// MARK: - Server frames

extension CallMediaEvent {
    /// A `call.*` frame from the server as an event for the call of `visitID`; nil for
    /// another visit's frame, a frame this side ignores (`call.answer`: the resident never
    /// offers) or one it cannot read.
    public static func from(type: String, data: JSONValue, visitID: String) -> CallMediaEvent? {
        guard data["visit_id"]?.stringValue == visitID, let type = CallMessageType(rawValue: type),
              let bytes = try? JSONCoding.encoder().encode(data) else { return nil }
        let decoder = JSONCoding.decoder()
        switch type {
        case .offer:
            return (try? decoder.decode(CallDescription.self, from: bytes)).map { .remoteOffer(sdp: $0.sdp) }
        case .ice:
            return (try? decoder.decode(CallICE.self, from: bytes)).map { .remoteCandidate($0.candidate) }
        case .ended:
            return (try? decoder.decode(PortariaCore.CallEnded.self, from: bytes)).map { .serverEnded($0) }
        case .answer, .hangup:
            return nil
        }
    }
}
