import Foundation
import PortariaCore

// The coordinator's rules about CallKit's own answers (decision 0075): what a report error
// means, what a phone nobody is signed in on does with a VoIP push, and how long an answer
// may wait for the server. The Apple adapter (`CallService`) only maps CallKit's types onto
// these values and performs the effects.

/// How CallKit answered `CXProvider.reportNewIncomingCall`, in the coordinator's terms.
public enum CallReportOutcome: Sendable, Equatable {
    /// No error: the call is on screen.
    case shown
    /// `CXErrorCodeIncomingCallError.callUUIDAlreadyExists`: CallKit already shows a call
    /// with this UUID — a second push for a call that is still ringing (an APNs duplicate,
    /// a new push for the same visit). The live call goes on; this is not a refusal.
    case alreadyShown
    /// Any other error (Do Not Disturb, the block list, not entitled, unknown): the system
    /// will not show this call.
    case refused
}

extension IncomingCallCoordinator {
    /// How long an answer waits for `POST /answer` before the call ends as failed. CallKit's
    /// answer action is fulfilled at the tap (CallKit times out actions held longer, and a
    /// held action keeps the audio session off); the server's yes is awaited here instead.
    public static let answerTimeout: TimeInterval = 15

    /// Atender (CallKit's answer action, or the app's own button for a call CallKit does not
    /// show). A ringing call: configure audio, fulfil CallKit's action at once, post the
    /// answer and arm its deadline. Anything else: CallKit's action is failed — every
    /// answer action is fulfilled or failed.
    mutating func answer(_ visitID: String, idempotencyKey key: String, now: Date) -> [CallEffect] {
        guard var call = calls[visitID] else { return [] }
        guard call.phase == .ringing else { return call.callKit == .reported ? [.failAnswer(call.callID)] : [] }
        call.phase = .answering
        calls[visitID] = call
        // Configure, never activate: CallKit activates the session once the action is
        // fulfilled, and only then may audio start (with the server's yes as well).
        var effects: [CallEffect] = [.configureAudioSession]
        if call.callKit == .reported { effects.append(.fulfillAnswer(call.callID)) }
        return effects + [.postAnswer(visitID: visitID, deviceID: deviceID, idempotencyKey: key),
                          .scheduleAnswerTimeout(visitID: visitID, at: now.addingTimeInterval(Self.answerTimeout))]
    }

    /// The answer's deadline passed while `POST /answer` was still in flight: the call ends
    /// as failed and the gate is told this phone is gone (the server may record the answer
    /// late; the media the answer prepared hangs up).
    mutating func answerTimedOut(_ visitID: String) -> [CallEffect] {
        guard let call = calls[visitID], call.phase == .answering else { return [] }
        return [.show(CallText.answerFailed), .hangUp(visitID: visitID)] + end(visitID, .failed, report: true)
    }

    /// CallKit's answer to a report. Only a refusal of a call the coordinator is ringing
    /// changes anything: the call was never shown, so it ends here without a report, and
    /// the resident is told (the visit keeps ringing on the other phones).
    mutating func callReported(_ callID: UUID, _ outcome: CallReportOutcome) -> [CallEffect] {
        guard outcome == .refused,
              let call = calls.values.first(where: { $0.callID == callID && !$0.phase.isEnded }) else { return [] }
        var refused = call
        refused.callKit = .ended(.failed)
        calls[call.visitID] = refused
        return [.show(ClientText.callNotShown)] + end(call.visitID, .failed, report: false)
    }

    /// A VoIP push on a phone nobody is signed in on: reported (PushKit's rule) as
    /// "Portaria" with nothing from the payload — no visitor name, no unit — and ended at
    /// once. Not acknowledged: the phone did not ring for anyone, and the missing receipt
    /// is what shows the stale registration in push health.
    mutating func signedOutPush(fallbackCallID callID: UUID) -> VoIPPushOutcome {
        discarded[callID] = .ended(.failed)
        return VoIPPushOutcome(report: CallReport(unreadable: callID), then: [.reportCallEnded(callID, .failed)])
    }

    /// The 409s of `POST /answer`, as a reason and a sentence.
    func refusal(_ error: ErrorBody) -> (CallEndReason, String) {
        switch error.code {
        case .visitAlreadyAnswered:
            if case .object(let by)? = error.details["answered_by"], let name = by["name"]?.stringValue,
               let at = error.details["answered_at"]?.stringValue.flatMap(Timestamp.parse) {
                return (.answeredElsewhere, ResolutionText.alreadyAnswered(by: PersonRef(id: "", name: name), at: at, timeZone: timeZone))
            }
            return (.answeredElsewhere, CallText.answeredElsewhereNoName)
        case .visitAlreadyResolved:
            return (.answeredElsewhere, error.message.isEmpty ? CallText.answeredElsewhereNoName : error.message)
        case .visitClosed:
            return (.remoteEnded, CallText.visitorLeft)
        default:
            return (.failed, CallText.answerFailed)
        }
    }
}

/// The call screen's sentences (pt-BR), beside `ClientText`.
public enum CallText {
    public static let answeredElsewhereNoName = "Outro morador já atendeu"
    public static let visitorLeft = "O visitante desistiu"
    public static let answerFailed = "Não foi possível atender: sem conexão com a portaria"
}
