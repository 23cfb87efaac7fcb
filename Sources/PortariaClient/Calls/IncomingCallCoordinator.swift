import Foundation
import PortariaCore

// The phone side of a ring, as a pure state machine: events in, effects out, no I/O.
// An owner (the iOS shell's PushKit/CallKit delegate, or a test) performs the effects.
//
// The rule that shapes it (spec §3, Apple's PushKit contract): a VoIP push must be
// reported to CallKit *in the same run, before any network call*; an app that fails to
// report is killed, and repeat offenders lose VoIP pushes. So the handling of a VoIP push
// returns a `VoIPPushOutcome` whose first member is a non-optional `CallReport` built
// from the payload alone — reordering or omitting it does not type-check — and the
// effects list always starts with it. A push that must not ring (a duplicate, a visit
// answered elsewhere, a ring already past `expires_at`, an unreadable payload) is still
// reported, then ended at once with the matching reason.

/// What CallKit shows for an incoming call: only what the push carried.
public struct CallReport: Sendable, Equatable {
    /// CallKit's call UUID.
    public var callID: UUID
    /// "Pedro" (the name the visitor typed).
    public var callerName: String
    /// "A-101 · Visita" — CallKit's handle line.
    public var handle: String
    public var kind: VisitKind
    /// "✓ Na entrada" / "⚠ A 340m da portaria" / "Localização desconhecida".
    public var geofenceBadge: String
    public var hasVideo: Bool

    /// The only way to build a report for a ring: from its payload.
    init(_ push: RingPush, callID: UUID) {
        self.callID = callID
        callerName = push.callerName
        handle = "\(push.unitLabel) · \(push.kind == .delivery ? "Entrega" : "Visita")"
        kind = push.kind
        geofenceBadge = push.geofence.badge
        hasVideo = push.kind == .visit
    }

    /// What is reported for a payload that cannot be read (then ended at once).
    init(unreadable callID: UUID) {
        self.callID = callID
        callerName = "Portaria"
        handle = "Portaria"
        kind = .visit
        geofenceBadge = GeofenceResult.unknown.badge
        hasVideo = false
    }
}

/// Why a call ended, in CallKit's terms (`CXCallEndedReason`) plus the local case.
public enum CallEndReason: String, Sendable, Equatable, Codable {
    /// Another resident (or another of my devices) picked up or decided.
    case answeredElsewhere = "answered_elsewhere"
    /// Declined on another of my devices.
    case declinedElsewhere = "declined_elsewhere"
    /// The visitor gave up, or ended the call.
    case remoteEnded = "remote_ended"
    /// Nobody here answered in time (ring step over, window over, expired).
    case unanswered
    /// Something broke (unreadable push, answer impossible).
    case failed
    /// The user ended or declined it here: CallKit already knows, nothing to report.
    case localEnded = "local_ended"

    init(_ reason: RingCancelReason) {
        switch reason {
        case .answeredElsewhere, .resolved: self = .answeredElsewhere
        case .nextStep, .timeout, .expired: self = .unanswered
        case .cancelled: self = .remoteEnded
        }
    }
}

/// CallKit bookkeeping, tracked apart from the call's own phase (as Signal and Element
/// do): it answers "may I report/end this UUID now?", which the phase alone does not.
public enum CallKitState: Sendable, Equatable {
    case notReported
    case reported
    case ended(CallEndReason)
}

/// Where a call is in its life.
public enum CallPhase: Sendable, Equatable {
    /// Reported; waiting for the user.
    case ringing
    /// The user tapped answer; `POST /answer` is in flight.
    case answering
    /// The server said we are the one: joining the video call.
    case connecting
    /// Media flows.
    case inCall
    case ended(CallEndReason)

    public var isEnded: Bool {
        if case .ended = self { return true }
        return false
    }
}

/// One call this phone knows about (per visit).
public struct CallRecord: Sendable, Equatable {
    public var visitID: String
    public var callID: UUID
    public var report: CallReport
    public var phase: CallPhase
    public var callKit: CallKitState
    public var expiresAt: Date?
    /// CallKit activated the audio session (`provider(_:didActivate:)`).
    public var audioActive = false
    /// Call media started (only once both the answer is accepted and audio is active).
    public var mediaStarted = false
    public var pushIDs: Set<String>
    /// Filled from `GET /v1/visits/{id}` after the report.
    public var visit: Visit?
}

/// Inputs.
public enum CallEvent: Sendable, Equatable {
    /// PushKit delivered a VoIP push (`payload` as received). `fallbackCallID` is used
    /// only when the payload cannot be read well enough to name the call.
    case voipPush(payload: JSONValue, fallbackCallID: UUID)
    /// `GET /v1/visits/{id}` answered.
    case visitLoaded(Visit)
    /// A realtime event about a visit.
    case realtime(VisitEventType, VisitEventData)
    /// A `call.ended` frame (the visitor hung up, the call timed out).
    case callEnded(visitID: String)
    /// `CXAnswerCallAction`; the owner made the `Idempotency-Key` at the tap.
    case userAnswered(visitID: String, idempotencyKey: String)
    /// `CXEndCallAction` (decline while ringing, hang up in a call).
    case userEnded(visitID: String, idempotencyKey: String)
    /// `POST /answer` → 200.
    case answerAccepted(visitID: String)
    /// `POST /answer` → 409: someone else picked up, decided, or the visitor left.
    case answerRefused(visitID: String, ErrorBody)
    /// `POST /answer` got no answer after the owner's retries.
    case answerFailed(visitID: String)
    /// The answer's deadline passed with `POST /answer` still in flight (the owner's timer
    /// from `.scheduleAnswerTimeout`, or CallKit's `provider(_:timedOutPerforming:)`).
    case answerTimedOut(visitID: String)
    /// How CallKit answered `reportNewIncomingCall` for this UUID.
    case callReported(callID: UUID, CallReportOutcome)
    /// `provider(_:didActivate:)`.
    case audioActivated
    /// `provider(_:didDeactivate:)`.
    case audioDeactivated
    /// The peer connection is up.
    case mediaConnected(visitID: String)
    /// The owner's timer at `expiresAt` fired.
    case ringExpired(visitID: String)
    /// Autorizar / Negar / Deixar na portaria on the call screen.
    case decided(visitID: String, ResolutionAction)
}

/// A `CXCallController` transaction an in-app button asks for (see
/// `IncomingCallCoordinator.callKitRequest(for:)`).
public enum CallKitRequest: Sendable, Equatable {
    /// `CXAnswerCallAction`.
    case answer(UUID)
    /// `CXEndCallAction`.
    case end(UUID)
}

/// Outputs, performed by the owner in order.
public enum CallEffect: Sendable, Equatable {
    /// `CXProvider.reportNewIncomingCall` — always the first effect of a VoIP push.
    case reportIncomingCall(CallReport)
    /// `CXProvider.reportCall(with:endedAt:reason:)`.
    case reportCallEnded(UUID, CallEndReason)
    /// `CXProvider.reportCall(with:updated:)` once the visit details arrive.
    case updateCall(UUID, callerName: String, handle: String)
    /// `POST /v1/push/{push_id}/ack` — with `ackToken` through `PushReceiptSender`, which
    /// needs no session (a VoIP push may wake an app whose access token expired hours ago);
    /// without one (an older server), with the bearer.
    case acknowledgePush(pushID: String, ackToken: String? = nil)
    /// `GET /v1/visits/{id}`.
    case fetchVisit(visitID: String)
    /// Open (or keep) the realtime socket: cancellations travel there, not by VoIP push.
    case openRealtime
    /// No call needs the socket any more.
    case closeRealtime
    /// Wake at this instant with `.ringExpired`.
    case scheduleRingExpiry(visitID: String, at: Date)
    /// `AVAudioSession` category `playAndRecord`, mode `videoChat` — configured, not
    /// activated: CallKit activates it and says so with `.audioActivated`.
    case configureAudioSession
    /// Wake at this instant with `.answerTimedOut` (a `POST /answer` never hangs a call).
    case scheduleAnswerTimeout(visitID: String, at: Date)
    /// `POST /v1/visits/{id}/answer` with this device's id.
    case postAnswer(visitID: String, deviceID: String, idempotencyKey: String)
    /// `POST /v1/visits/{id}/decline` with this device's id.
    case postDecline(visitID: String, deviceID: String, idempotencyKey: String)
    /// `CXCallController` end transaction: the app ends a call the user did not end in
    /// CallKit's own UI (a decision on the call screen).
    case requestEndCall(UUID)
    /// `CXAnswerCallAction.fulfill()` / `.fail()`.
    case fulfillAnswer(UUID)
    case failAnswer(UUID)
    /// Join the video call (signaling over the realtime socket; the gate page offers).
    case joinCall(visitID: String)
    /// Start audio/video I/O — only after CallKit activated the audio session.
    case startMedia(visitID: String)
    /// Send `call.hangup`.
    case hangUp(visitID: String)
    /// Hand the decision to the resolve queue.
    case enqueueResolve(visitID: String, ResolutionAction)
    /// A pt-BR sentence for the user.
    case show(String)

    /// Whether this effect touches the network (none may precede a CallKit report).
    public var isNetwork: Bool {
        switch self {
        case .acknowledgePush, .fetchVisit, .openRealtime, .postAnswer, .postDecline, .joinCall, .hangUp, .enqueueResolve:
            return true
        case .reportIncomingCall, .reportCallEnded, .updateCall, .closeRealtime, .scheduleRingExpiry, .scheduleAnswerTimeout, .configureAudioSession,
             .requestEndCall, .fulfillAnswer, .failAnswer, .startMedia, .show:
            return false
        }
    }
}

/// What handling a VoIP push produces: the report first, by construction.
public struct VoIPPushOutcome: Sendable, Equatable {
    public let report: CallReport
    public let then: [CallEffect]
    public var effects: [CallEffect] { [.reportIncomingCall(report)] + then }
}

/// The coordinator: every call this phone knows, and what to do next.
public struct IncomingCallCoordinator: Sendable, Equatable {
    public let myUserID: String
    /// This installation (the `device_id` of `POST /answer` and of the realtime socket).
    public let deviceID: String
    /// The condominium's zone, for "Maria já atendeu às 14:32".
    public let timeZone: TimeZone
    public internal(set) var calls: [String: CallRecord] = [:]
    /// CallKit UUIDs reported only to be ended at once (duplicates, stale rings).
    public internal(set) var discarded: [UUID: CallKitState] = [:]
    /// Visits known to be over (from realtime or details), so a late push for one of
    /// them does not ring.
    public private(set) var closedVisits: [String: CallEndReason] = [:]

    /// Whether someone is signed in on this phone (`myUserID` is empty after a logout, and
    /// at a launch with no stored session).
    public var isSignedIn: Bool { !myUserID.isEmpty }

    public init(myUserID: String, deviceID: String, timeZone: TimeZone = ResolveQueue.defaultTimeZone) {
        self.myUserID = myUserID
        self.deviceID = deviceID
        self.timeZone = timeZone
    }

    /// Whether a realtime socket is needed (a call is not over).
    public var needsRealtime: Bool { calls.values.contains { !$0.phase.isEnded } }

    /// The call the user picked up (answering, connecting or in the call): the app shows its
    /// call screen — answered on CallKit's own screen, maybe on a locked phone, the video,
    /// badge and decisions are in the app.
    public var answeredCall: CallRecord? {
        calls.values.filter { [.answering, .connecting, .inCall].contains($0.phase) }.min { $0.visitID < $1.visitID }
    }

    /// What an in-app button must ask CallKit for instead of acting directly. A call CallKit
    /// shows is answered or ended through a `CXCallController` transaction, so the system's
    /// call UI and the audio session follow; CallKit then performs the action, and its
    /// delegate hands the coordinator `.userAnswered` / `.userEnded`. Acting directly would
    /// leave CallKit ringing (and never activate audio) or showing a call that is over.
    /// Nil: handle the event directly (the call was never reported, or is over).
    public func callKitRequest(for event: CallEvent) -> CallKitRequest? {
        switch event {
        case .userAnswered(let visitID, _):
            guard let call = calls[visitID], call.callKit == .reported, call.phase == .ringing else { return nil }
            return .answer(call.callID)
        case .userEnded(let visitID, _):
            guard let call = calls[visitID], call.callKit == .reported, !call.phase.isEnded else { return nil }
            return .end(call.callID)
        default:
            return nil
        }
    }

    /// A `visit.ring_cancelled` background push as the event the coordinator understands:
    /// the same as the realtime event (the reason picks CallKit's wording), or the visitor
    /// leaving when this version does not know the reason.
    public static func event(for push: RingCancelledPush) -> CallEvent {
        guard let reason = push.reason else { return .callEnded(visitID: push.visitID) }
        return .realtime(.ringCancelled, VisitEventData(visitID: push.visitID, reason: reason))
    }

    public mutating func handle(_ event: CallEvent, now: Date) -> [CallEffect] {
        switch event {
        case .voipPush(let payload, let fallback):
            return voipPush(payload, fallbackCallID: fallback, now: now).effects
        case .visitLoaded(let visit):
            return visitLoaded(visit)
        case .realtime(let type, let data):
            return realtime(type, data)
        case .callEnded(let visitID):
            return end(visitID, .remoteEnded, report: true)
        case .userAnswered(let visitID, let key):
            return answer(visitID, idempotencyKey: key, now: now)
        case .userEnded(let visitID, let key):
            guard let call = calls[visitID], !call.phase.isEnded else { return [] }
            var effects: [CallEffect] = []
            switch call.phase {
            case .ringing:
                effects.append(.postDecline(visitID: visitID, deviceID: deviceID, idempotencyKey: key))
            case .answering, .connecting, .inCall:
                effects.append(.hangUp(visitID: visitID))
            case .ended:
                break
            }
            return effects + end(visitID, .localEnded, report: false)
        case .answerAccepted(let visitID):
            guard var call = calls[visitID], call.phase == .answering else { return [] }
            call.phase = .connecting
            var effects: [CallEffect] = [.joinCall(visitID: visitID)]
            if call.audioActive && !call.mediaStarted {
                call.mediaStarted = true
                effects.append(.startMedia(visitID: visitID))
            }
            calls[visitID] = call
            return effects
        case .answerRefused(let visitID, let error):
            guard let call = calls[visitID], call.phase == .answering else { return [] }
            let (reason, sentence) = refusal(error)
            return [.show(sentence)] + end(visitID, reason, report: true)
        case .answerFailed(let visitID):
            guard let call = calls[visitID], call.phase == .answering else { return [] }
            return [.show(CallText.answerFailed)] + end(visitID, .failed, report: true)
        case .answerTimedOut(let visitID):
            return answerTimedOut(visitID)
        case .callReported(let callID, let outcome):
            return callReported(callID, outcome)
        case .audioActivated:
            var effects: [CallEffect] = []
            for (visitID, var call) in calls where !call.phase.isEnded {
                call.audioActive = true
                if (call.phase == .connecting || call.phase == .inCall) && !call.mediaStarted {
                    call.mediaStarted = true
                    effects.append(.startMedia(visitID: visitID))
                }
                calls[visitID] = call
            }
            return effects
        case .audioDeactivated:
            for (visitID, var call) in calls {
                call.audioActive = false
                calls[visitID] = call
            }
            return []
        case .mediaConnected(let visitID):
            guard var call = calls[visitID], call.phase == .connecting else { return [] }
            call.phase = .inCall
            calls[visitID] = call
            return []
        case .ringExpired(let visitID):
            guard let call = calls[visitID], call.phase == .ringing else { return [] }
            return end(visitID, .unanswered, report: true)
        case .decided(let visitID, let action):
            guard let call = calls[visitID], !call.phase.isEnded else { return [] }
            // The decision goes through the durable queue; the call ends with it, by a
            // CallKit end transaction (the user did not press CallKit's own button).
            var effects: [CallEffect] = [.enqueueResolve(visitID: visitID, action)]
            if call.phase != .ringing { effects.append(.hangUp(visitID: visitID)) }
            if call.callKit == .reported { effects.append(.requestEndCall(call.callID)) }
            return effects + end(visitID, .localEnded, report: false)
        }
    }

    // MARK: VoIP pushes

    /// Handles a PushKit payload. The report comes first whatever the payload says.
    public mutating func voipPush(_ payload: JSONValue, fallbackCallID: UUID, now: Date) -> VoIPPushOutcome {
        // Nobody is signed in (logged out, and unregistering failed or has not reached the
        // server): PushKit still requires a report, but nothing of the visit is shown.
        guard isSignedIn else { return signedOutPush(fallbackCallID: fallbackCallID) }
        let decoded = try? PushPayload.decode(payload)
        guard case .ring(let push)? = decoded else {
            // Not a ring (or unreadable): iOS still requires a report. Report, end, ack.
            let callID = decoded?.pushID.flatMap(UUID.init(uuidString:)) ?? fallbackCallID
            discarded[callID] = .ended(.failed)
            return VoIPPushOutcome(report: CallReport(unreadable: callID),
                                   then: [.reportCallEnded(callID, .failed)] + (decoded?.pushID.map { [.acknowledgePush(pushID: $0, ackToken: decoded?.ackToken)] } ?? []))
        }
        let visitCallID = UUID(uuidString: push.visitID) ?? fallbackCallID
        let pushCallID = UUID(uuidString: push.pushID) ?? fallbackCallID

        // A ring for a call this phone already has.
        if var call = calls[push.visitID] {
            let duplicate = call.pushIDs.contains(push.pushID)
            call.pushIDs.insert(push.pushID)
            calls[push.visitID] = call
            if !call.phase.isEnded {
                // CallKit refuses a second report of a live UUID as a duplicate: reporting
                // it satisfies PushKit without ringing twice.
                return VoIPPushOutcome(report: CallReport(push, callID: call.callID),
                                       then: duplicate ? [] : [.acknowledgePush(pushID: push.pushID, ackToken: push.ackToken)])
            }
            let reason: CallEndReason
            if case .ended(let ended) = call.phase, ended != .localEnded { reason = ended } else { reason = .declinedElsewhere }
            return reportThenEnd(push, callID: pushCallID, reason: reason, acknowledge: !duplicate)
        }
        if let reason = closedVisits[push.visitID] {
            return reportThenEnd(push, callID: pushCallID, reason: reason, acknowledge: true)
        }
        if let expiresAt = push.expiresAt, expiresAt <= now {
            // Delivered late (the phone was off): ringing now would call for a visitor
            // whose ring window is over.
            return reportThenEnd(push, callID: pushCallID, reason: .unanswered, acknowledge: true)
        }

        let report = CallReport(push, callID: visitCallID)
        calls[push.visitID] = CallRecord(visitID: push.visitID, callID: visitCallID, report: report, phase: .ringing,
                                         callKit: .reported, expiresAt: push.expiresAt, pushIDs: [push.pushID])
        var then: [CallEffect] = [.acknowledgePush(pushID: push.pushID, ackToken: push.ackToken), .fetchVisit(visitID: push.visitID), .openRealtime]
        if let expiresAt = push.expiresAt { then.append(.scheduleRingExpiry(visitID: push.visitID, at: expiresAt)) }
        return VoIPPushOutcome(report: report, then: then)
    }

    private mutating func reportThenEnd(_ push: RingPush, callID: UUID, reason: CallEndReason, acknowledge: Bool) -> VoIPPushOutcome {
        discarded[callID] = .ended(reason)
        return VoIPPushOutcome(report: CallReport(push, callID: callID),
                               then: [.reportCallEnded(callID, reason)] + (acknowledge ? [.acknowledgePush(pushID: push.pushID, ackToken: push.ackToken)] : []))
    }

    // MARK: What the server says

    private mutating func visitLoaded(_ visit: Visit) -> [CallEffect] {
        guard var call = calls[visit.id], !call.phase.isEnded else { return [] }
        call.visit = visit
        calls[visit.id] = call
        if visit.resolution != nil { return end(visit.id, .answeredElsewhere, report: true) }
        switch visit.status {
        case .cancelled: return end(visit.id, .remoteEnded, report: true)
        case .expired, .unanswered: return end(visit.id, .unanswered, report: true)
        case .answered where call.phase == .ringing && visit.answeredBy?.id != myUserID:
            return end(visit.id, .answeredElsewhere, report: true)
        default:
            let handle = "\(visit.unit.label) · \(visit.kind == .delivery ? "Entrega" : "Visita")"
            return [.updateCall(call.callID, callerName: visit.visitorName, handle: handle)]
        }
    }

    private mutating func realtime(_ type: VisitEventType, _ data: VisitEventData) -> [CallEffect] {
        switch type {
        case .resolved:
            closedVisits[data.visitID] = .answeredElsewhere
            guard let call = calls[data.visitID], !call.phase.isEnded else { return [] }
            // Decided while ringing here (or while in a call on this phone: the call ends).
            return end(data.visitID, call.phase == .ringing ? .answeredElsewhere : .remoteEnded, report: true)
        case .cancelled:
            closedVisits[data.visitID] = .remoteEnded
            return end(data.visitID, .remoteEnded, report: true)
        case .expired:
            closedVisits[data.visitID] = .unanswered
            return end(data.visitID, .unanswered, report: true)
        case .ringCancelled:
            guard let reason = data.reason, data.userIDs?.contains(myUserID) ?? true else { return [] }
            guard let call = calls[data.visitID], call.phase == .ringing else { return [] }
            return end(data.visitID, CallEndReason(reason), report: true)
        case .answered:
            guard let call = calls[data.visitID], !call.phase.isEnded else { return [] }
            let byMe = data.by?.id == myUserID
            if byMe && (data.deviceID == nil || data.deviceID == deviceID) { return [] }   // our own answer
            if call.phase == .ringing || call.phase == .answering {
                if !byMe { closedVisits[data.visitID] = .answeredElsewhere }
                return end(data.visitID, .answeredElsewhere, report: true)
            }
            return []
        case .created, .ringing, .declined, .unanswered, .photoAdded, .voiceMessageAdded:
            return []
        }
    }

    /// Ends a call: reports it to CallKit unless the user ended it there, and closes the
    /// socket when no call needs it.
    mutating func end(_ visitID: String, _ reason: CallEndReason, report: Bool) -> [CallEffect] {
        guard var call = calls[visitID], !call.phase.isEnded else { return [] }
        call.phase = .ended(reason)
        var effects: [CallEffect] = []
        if report, call.callKit == .reported {
            effects.append(.reportCallEnded(call.callID, reason))
        }
        if call.callKit == .reported { call.callKit = .ended(reason) }
        calls[visitID] = call
        if !needsRealtime { effects.append(.closeRealtime) }
        return effects
    }
}
