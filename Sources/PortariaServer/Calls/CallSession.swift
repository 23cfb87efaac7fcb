import Foundation
import PortariaCore

/// One endpoint of a call, stable across reconnects of its socket.
///
/// A resident is identified by *device*, not just user: only the device that answered
/// may signal, so the same resident's other phone (which got `visit.ring_cancelled`
/// with `answered_elsewhere`) cannot hijack or disturb the call. A visitor is its
/// visitor token's visit.
public enum CallPeer: Hashable, Sendable, CustomStringConvertible {
    case visitor(visitID: String)
    case resident(userID: String, deviceID: String)

    public var role: CallRole {
        switch self {
        case .visitor: .visitor
        case .resident: .resident
        }
    }

    public var description: String {
        switch self {
        case .visitor(let visitID): "visitor(\(visitID))"
        case .resident(let userID, let deviceID): "resident(\(userID)/\(deviceID))"
        }
    }
}

/// A frame the server sends to a participant: `type` and `data` of the realtime
/// envelope (the realtime layer adds `seq`).
public enum CallFrame: Sendable, Equatable {
    case offer(CallDescription)
    case answer(CallDescription)
    case ice(CallICE)
    case ended(CallEnded)
    /// `type: "error"`, data the error body (`code`, `message`, `in_reply_to`, …).
    case error(ErrorBody)

    public var type: String {
        switch self {
        case .offer: CallMessageType.offer.rawValue
        case .answer: CallMessageType.answer.rawValue
        case .ice: CallMessageType.ice.rawValue
        case .ended: CallMessageType.ended.rawValue
        case .error: CallMessageType.errorFrameType
        }
    }

    /// The visit (call) the frame is about; nil for an error frame that names none.
    public var visitID: String? {
        switch self {
        case .offer(let value), .answer(let value): value.visitID
        case .ice(let value): value.visitID
        case .ended(let value): value.visitID
        case .error(let value): value.details["visit_id"]?.stringValue
        }
    }

    /// The `data` member, as JSON bytes (snake_case, sorted keys).
    public func encodedData() -> [UInt8] {
        let encoder = JSONCoding.encoder()
        // Encoding these plain structs cannot fail; `try!` would still be a crash
        // path, so fall back to an empty object.
        let data: Data?
        switch self {
        case .offer(let value), .answer(let value): data = try? encoder.encode(value)
        case .ice(let value): data = try? encoder.encode(value)
        case .ended(let value): data = try? encoder.encode(value)
        case .error(let value): data = try? encoder.encode(value)
        }
        return data.map(Array.init) ?? Array("{}".utf8)
    }
}

/// The timers a call runs; `CallRegistry` turns them into deadlines on its clock.
public enum CallTimer: Hashable, Sendable {
    /// An offer must come after the visit is answered, and an answer after an offer.
    case negotiation
    /// A participant whose socket went away (or had not opened yet) must come back.
    case reconnect(CallRole)
    /// No call lasts forever (a forgotten tab must not hold a relay).
    case maxDuration
}

/// What a call adds to the visit's attempts timeline.
public enum CallTimelineEntry: Sendable, Equatable {
    /// The resident's device answered and the call can be negotiated.
    case started(visitID: String, resident: CallPeer)
    /// The first answer was relayed: media can flow.
    case connected(visitID: String)
    /// The call is over.
    case ended(visitID: String, reason: CallEndReason, endedBy: CallRole?, wasConnected: Bool)
}

/// What `CallSession` asks its owner to do.
public enum CallAction: Sendable, Equatable {
    /// Send this frame to that participant (dropped by the realtime layer if it has
    /// no socket; the session only sends to participants it believes present).
    case send(CallFrame, to: CallPeer)
    case startTimer(CallTimer, after: Duration)
    case cancelTimer(CallTimer)
    case record(CallTimelineEntry)
    /// The session reached a terminal state; drop it.
    case finished(CallEndReason)
}

/// What happens to a call.
public enum CallEvent: Sendable, Equatable {
    case offer(CallDescription, from: CallPeer)
    case answer(CallDescription, from: CallPeer)
    case ice(CallICE, from: CallPeer)
    case hangup(from: CallPeer)
    /// The participant's last socket closed.
    case participantLeft(CallPeer)
    /// A socket of the participant opened (again).
    case participantJoined(CallPeer)
    case timeout(CallTimer)
    /// The server ends the call (visit resolved elsewhere, shutdown).
    case close(CallEndReason)

    /// The event for a validated client frame.
    public init(_ signal: CallSignal, from peer: CallPeer) {
        switch signal {
        case .offer(let description): self = .offer(description, from: peer)
        case .answer(let description): self = .answer(description, from: peer)
        case .ice(let ice): self = .ice(ice, from: peer)
        case .hangup: self = .hangup(from: peer)
        }
    }
}

/// The signaling of one visit's call between the visitor's page and the one resident
/// device that answered: a pure state machine (no I/O, no clock). `CallRegistry`
/// owns the sessions, performs the actions and drives the timers.
///
/// Negotiation follows WebRTC "perfect negotiation" with fixed roles: either side may
/// offer (the visitor page normally offers first, right after `visit.answered`; a
/// resident app coming back from the background offers an ICE restart), and when both
/// offer at once the visitor's offer wins — the resident app is the polite peer and
/// rolls back. Frames for a participant whose socket is away are queued and delivered
/// when it comes back within the grace period.
public struct CallSession: Sendable {
    /// Where the call is. `ended` is terminal: every event after it is refused or ignored.
    public enum State: Sendable, Equatable {
        /// The resident answered; no offer yet.
        case waitingForOffer
        /// `by` sent an offer; the other side must answer. `renegotiation` once the
        /// call has connected before (an ICE restart).
        case offered(by: CallRole, renegotiation: Bool)
        /// The last offer was answered.
        case connected
        case ended(CallEndReason, by: CallRole?)

        public var isTerminal: Bool {
            switch self {
            case .ended: true
            case .waitingForOffer, .offered, .connected: false
            }
        }
    }

    /// Timeouts and bounds; the defaults are the product's.
    public struct Limits: Sendable, Equatable {
        /// From answering to the offer, and from an offer to its answer. Covers a
        /// resident app cold-started by a VoIP push opening its socket.
        public var negotiationTimeout: Duration = .seconds(45)
        /// How long a participant's socket may be away (backgrounded app, network
        /// switch, page reload) before the call ends.
        public var reconnectGrace: Duration = .seconds(30)
        /// A gate conversation takes a minute or two; 15 minutes is generous.
        public var maxDuration: Duration = .seconds(15 * 60)
        /// Candidates one side may send per negotiation: real gathering yields under
        /// 20; more is a flood.
        public var maxCandidatesPerNegotiation = 64
        public init() {}
    }

    public let visitID: String
    public let visitor: CallPeer
    public let resident: CallPeer
    public let limits: Limits
    public private(set) var state: State = .waitingForOffer
    /// Whether an answer was ever relayed (for the timeline and renegotiation).
    public private(set) var hasConnected = false
    /// Participants whose socket is away; frames for them wait in `outbox`.
    public private(set) var absent: Set<CallRole> = []
    private var outbox: [CallRole: [CallFrame]] = [:]
    private var candidates: [CallRole: Int] = [:]
    private var runningTimers: Set<CallTimer> = []

    /// Starts the call of `visitID` once `resident` answered. `residentPresent` says
    /// whether that device has a realtime socket open now (an app answering from a
    /// push often has not yet).
    public static func start(visitID: String, resident: CallPeer, residentPresent: Bool = true,
                             limits: Limits = Limits()) -> (CallSession, [CallAction]) {
        precondition(resident.role == .resident, "the answering participant must be a resident device")
        var session = CallSession(visitID: visitID, visitor: .visitor(visitID: visitID), resident: resident, limits: limits)
        var actions: [CallAction] = [.record(.started(visitID: visitID, resident: resident))]
        session.startTimer(.negotiation, after: limits.negotiationTimeout, &actions)
        session.startTimer(.maxDuration, after: limits.maxDuration, &actions)
        if !residentPresent {
            session.absent.insert(.resident)
            session.startTimer(.reconnect(.resident), after: limits.reconnectGrace, &actions)
        }
        return (session, actions)
    }

    private init(visitID: String, visitor: CallPeer, resident: CallPeer, limits: Limits) {
        self.visitID = visitID
        self.visitor = visitor
        self.resident = resident
        self.limits = limits
    }

    /// Whether `peer` is one of the two participants.
    public func isParticipant(_ peer: CallPeer) -> Bool { peer == visitor || peer == resident }

    public func peer(_ role: CallRole) -> CallPeer {
        switch role {
        case .visitor: visitor
        case .resident: resident
        }
    }

    /// Applies one event and says what to do.
    public mutating func handle(_ event: CallEvent) -> [CallAction] {
        var actions: [CallAction] = []
        switch event {
        case .offer(let description, let from):
            guard admit(from, .offer, &actions) else { break }
            offer(description, from: from.role, &actions)
        case .answer(let description, let from):
            guard admit(from, .answer, &actions) else { break }
            answer(description, from: from.role, &actions)
        case .ice(let ice, let from):
            guard admit(from, .ice, &actions) else { break }
            relayCandidate(ice, from: from.role, &actions)
        case .hangup(let from):
            guard admit(from, .hangup, &actions) else { break }
            end(.hangup, by: from.role, &actions)
        case .participantLeft(let peer):
            guard isParticipant(peer), !state.isTerminal, !absent.contains(peer.role) else { break }
            absent.insert(peer.role)
            startTimer(.reconnect(peer.role), after: limits.reconnectGrace, &actions)
        case .participantJoined(let peer):
            guard isParticipant(peer), !state.isTerminal, absent.contains(peer.role) else { break }
            absent.remove(peer.role)
            cancelTimer(.reconnect(peer.role), &actions)
            for frame in outbox.removeValue(forKey: peer.role) ?? [] { actions.append(.send(frame, to: peer)) }
        case .timeout(let timer):
            // A timer that fires after it was cancelled (a race in the owner) is ignored.
            guard runningTimers.remove(timer) != nil, !state.isTerminal else { break }
            switch timer {
            case .negotiation: end(.negotiationTimeout, by: nil, &actions)
            case .reconnect(let role): end(.participantLeft, by: role, &actions)
            case .maxDuration: end(.maxDuration, by: nil, &actions)
            }
        case .close(let reason):
            guard !state.isTerminal else { break }
            end(reason, by: nil, &actions)
        }
        return actions
    }

    // MARK: - Transitions

    /// Refuses signaling from a non-participant or after the end. A stranger gets the
    /// same `CALL_NOT_FOUND` as for a call that does not exist: nothing tells it that a
    /// call runs for that visit.
    private func admit(_ peer: CallPeer, _ type: CallMessageType, _ actions: inout [CallAction]) -> Bool {
        guard isParticipant(peer) else {
            actions.append(.send(.error(Self.notFound(type, visitID)), to: peer))
            return false
        }
        switch state {
        case .ended:
            actions.append(.send(.error(CallSignalError(.callNotFound, "the call has ended", inReplyTo: type.rawValue,
                                                         visitID: visitID).error), to: peer))
            return false
        case .waitingForOffer, .offered, .connected:
            return true
        }
    }

    private mutating func offer(_ description: CallDescription, from role: CallRole, _ actions: inout [CallAction]) {
        switch state {
        case .waitingForOffer, .connected:
            break
        case .offered(let by, _):
            // Glare: the pending offer came from the other side. The visitor's offer
            // wins; the resident's is refused (its app rolls back and answers).
            if by != role && role == .resident {
                reject(role, .callStateConflict, "the visitor's offer is pending: roll back and answer it", .offer, &actions)
                return
            }
        case .ended:
            return // admit() refused it already
        }
        state = .offered(by: role, renegotiation: hasConnected)
        // A new offer starts a new negotiation: fresh candidate budget, and whatever
        // was queued for the other side from the superseded one is obsolete.
        candidates = [:]
        let other = role.other
        outbox[other] = nil
        startTimer(.negotiation, after: limits.negotiationTimeout, &actions)
        send(.offer(description), to: other, &actions)
    }

    private mutating func answer(_ description: CallDescription, from role: CallRole, _ actions: inout [CallAction]) {
        switch state {
        case .offered(let by, _) where by != role:
            state = .connected
            cancelTimer(.negotiation, &actions)
            send(.answer(description), to: by, &actions)
            if !hasConnected {
                hasConnected = true
                actions.append(.record(.connected(visitID: visitID)))
            }
        case .offered:
            reject(role, .callStateConflict, "you sent the pending offer; the other side answers it", .answer, &actions)
        case .waitingForOffer, .connected:
            reject(role, .callStateConflict, "there is no offer to answer", .answer, &actions)
        case .ended:
            return
        }
    }

    private mutating func relayCandidate(_ ice: CallICE, from role: CallRole, _ actions: inout [CallAction]) {
        switch state {
        case .waitingForOffer:
            // Candidates follow a local description; none exists before an offer.
            reject(role, .callStateConflict, "send call.offer before candidates", .ice, &actions)
        case .offered, .connected:
            let count = candidates[role, default: 0] + 1
            guard count <= limits.maxCandidatesPerNegotiation else {
                reject(role, .callLimitExceeded,
                       "more than \(limits.maxCandidatesPerNegotiation) candidates in one negotiation", .ice, &actions)
                return
            }
            candidates[role] = count
            send(.ice(ice), to: role.other, &actions)
        case .ended:
            return
        }
    }

    private mutating func end(_ reason: CallEndReason, by role: CallRole?, _ actions: inout [CallAction]) {
        state = .ended(reason, by: role)
        for timer in runningTimers.sorted(by: { "\($0)" < "\($1)" }) { actions.append(.cancelTimer(timer)) }
        runningTimers = []
        outbox = [:]
        let ended = CallFrame.ended(CallEnded(visitID: visitID, reason: reason, endedBy: role))
        // Both sides, present or not: an absent one reconciles over REST anyway, and a
        // socket that just came back without `participantJoined` still learns it.
        actions.append(.send(ended, to: visitor))
        actions.append(.send(ended, to: resident))
        actions.append(.record(.ended(visitID: visitID, reason: reason, endedBy: role, wasConnected: hasConnected)))
        actions.append(.finished(reason))
    }

    // MARK: - Helpers

    private mutating func send(_ frame: CallFrame, to role: CallRole, _ actions: inout [CallAction]) {
        if absent.contains(role) {
            outbox[role, default: []].append(frame)
        } else {
            actions.append(.send(frame, to: peer(role)))
        }
    }

    private func reject(_ role: CallRole, _ code: ErrorCode, _ message: String, _ type: CallMessageType,
                        _ actions: inout [CallAction]) {
        let error = CallSignalError(code, message, inReplyTo: type.rawValue, visitID: visitID)
        actions.append(.send(.error(error.error), to: peer(role)))
    }

    private mutating func startTimer(_ timer: CallTimer, after duration: Duration, _ actions: inout [CallAction]) {
        // Restarting replaces the deadline (CallRegistry keeps one per timer).
        runningTimers.insert(timer)
        actions.append(.startTimer(timer, after: duration))
    }

    private mutating func cancelTimer(_ timer: CallTimer, _ actions: inout [CallAction]) {
        guard runningTimers.remove(timer) != nil else { return }
        actions.append(.cancelTimer(timer))
    }

    /// The error for signaling about a call the sender is not part of.
    static func notFound(_ type: CallMessageType, _ visitID: String) -> ErrorBody {
        CallSignalError(.callNotFound, "no call for this visit", inReplyTo: type.rawValue, visitID: visitID).error
    }
}

extension CallRole {
    /// The other side of the call.
    public var other: CallRole {
        switch self {
        case .visitor: .resident
        case .resident: .visitor
        }
    }
}
