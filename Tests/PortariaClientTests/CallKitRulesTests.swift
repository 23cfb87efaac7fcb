import Foundation
import PortariaClient
@testable import PortariaCore
import Testing

/// The coordinator's rules about CallKit's answers (decision 0075), as tables.
@Suite("CallKit rules")
struct CallKitRulesTests {
    typealias C = IncomingCallCoordinatorTests
    static let otherCall = UUID(uuidString: "11111111-2222-4333-8444-555555555555")!

    static func ringing(_ events: [CallEvent] = []) -> IncomingCallCoordinator {
        var coordinator = IncomingCallCoordinator(myUserID: C.me, deviceID: C.device)
        _ = coordinator.handle(.voipPush(payload: C.ring(), fallbackCallID: C.fallback), now: C.now)
        for event in events { _ = coordinator.handle(event, now: C.now) }
        return coordinator
    }

    // MARK: Report outcomes

    /// (name, CallKit's outcome for which UUID, effects expected, the call's phase after)
    static let reportCases: [(String, UUID, CallReportOutcome, [CallEffect], CallPhase)] = [
        ("shown: nothing to do", C.visitCall, .shown, [], .ringing),
        ("callUUIDAlreadyExists (a second push for the ringing call): the ring goes on",
         C.visitCall, .alreadyShown, [], .ringing),
        ("refused (Do Not Disturb, block list, unknown): the call ends here, unreported, and the resident is told",
         C.visitCall, .refused, [.show(ClientText.callNotShown), .closeRealtime], .ended(.failed)),
        ("a refusal of a UUID this phone is not ringing (a duplicate reported only to be ended) changes nothing",
         otherCall, .refused, [], .ringing),
    ]

    @Test("what each CallKit report outcome does", arguments: reportCases.indices)
    func reportOutcomes(_ index: Int) {
        let (name, callID, outcome, expected, phase) = Self.reportCases[index]
        var coordinator = Self.ringing()
        #expect(coordinator.handle(.callReported(callID: callID, outcome), now: C.now) == expected, "\(name)")
        #expect(coordinator.calls[C.visitID]?.phase == phase, "\(name)")
    }

    @Test("a second VoIP push for a ringing call, answered callUUIDAlreadyExists by CallKit, leaves the call ringing and answerable")
    func duplicatePushKeepsRinging() {
        var coordinator = Self.ringing()
        let again = coordinator.handle(.voipPush(payload: C.ring(pushID: C.push2), fallbackCallID: UUID()), now: C.now)
        guard case .reportIncomingCall(let report)? = again.first else { Issue.record("no report first"); return }
        #expect(report.callID == C.visitCall)
        #expect(coordinator.handle(.callReported(callID: report.callID, .alreadyShown), now: C.now).isEmpty)
        #expect(coordinator.calls[C.visitID]?.phase == .ringing)
        #expect(coordinator.callKitRequest(for: .userAnswered(visitID: C.visitID, idempotencyKey: "k")) == .answer(C.visitCall))
    }

    @Test("a refused call is over for CallKit too: no end report, no answer transaction afterwards")
    func refusedIsNotReportedEnded() {
        var coordinator = Self.ringing([.callReported(callID: C.visitCall, .refused)])
        #expect(coordinator.calls[C.visitID]?.callKit == .ended(.failed))
        #expect(coordinator.handle(.callEnded(visitID: C.visitID), now: C.now).isEmpty)
        #expect(coordinator.callKitRequest(for: .userAnswered(visitID: C.visitID, idempotencyKey: "k")) == nil)
    }

    // MARK: A phone nobody is signed in on

    /// (name, payload) — whatever the push says, the same report and end.
    static let signedOutCases: [(String, JSONValue)] = [
        ("a ring", C.ring()),
        ("a ring already expired", C.ring(expiresAt: C.now.addingTimeInterval(-5))),
        ("an unreadable payload", .object(["type": "visit.ring"])),
        ("not a ring", .object(["type": "visit.ring_cancelled", "push_id": .string(C.push1), "visit_id": .string(C.visitID)])),
    ]

    @Test("signed out: every VoIP push is reported as \"Portaria\" with no visitor data and ended at once, unacknowledged",
          arguments: signedOutCases.indices)
    func signedOut(_ index: Int) {
        let (name, payload) = Self.signedOutCases[index]
        var coordinator = IncomingCallCoordinator(myUserID: "", deviceID: C.device)
        #expect(!coordinator.isSignedIn)
        let effects = coordinator.handle(.voipPush(payload: payload, fallbackCallID: C.fallback), now: C.now)
        #expect(effects == [.reportIncomingCall(.unreadableForTests(C.fallback)), .reportCallEnded(C.fallback, .failed)], "\(name)")
        guard case .reportIncomingCall(let report)? = effects.first else { Issue.record("\(name): no report first"); return }
        #expect(!report.callerName.contains("Pedro") && !report.handle.contains("A-101") && !report.hasVideo, "\(name)")
        #expect(coordinator.calls.isEmpty, "\(name): nothing rings, nothing to answer")
        #expect(coordinator.discarded[C.fallback] == .ended(.failed), "\(name)")
    }

    // MARK: The answer never hangs

    /// (name, events after the ring, effects of the last event, the phase after)
    static let answerCases: [(String, [CallEvent], [CallEffect], CallPhase)] = [
        ("the server never answered within the deadline: the call ends as failed and the media hangs up",
         [.userAnswered(visitID: C.visitID, idempotencyKey: "k"), .answerTimedOut(visitID: C.visitID)],
         [.show(CallText.answerFailed), .hangUp(visitID: C.visitID), .reportCallEnded(C.visitCall, .failed), .closeRealtime],
         .ended(.failed)),
        ("the deadline after the server's yes changes nothing",
         [.userAnswered(visitID: C.visitID, idempotencyKey: "k"), .answerAccepted(visitID: C.visitID), .answerTimedOut(visitID: C.visitID)],
         [], .connecting),
        ("the server's yes after the deadline changes nothing",
         [.userAnswered(visitID: C.visitID, idempotencyKey: "k"), .answerTimedOut(visitID: C.visitID), .answerAccepted(visitID: C.visitID)],
         [], .ended(.failed)),
        ("a second answer action for a call already answering is failed, not left waiting",
         [.userAnswered(visitID: C.visitID, idempotencyKey: "k"), .userAnswered(visitID: C.visitID, idempotencyKey: "k2")],
         [.failAnswer(C.visitCall)], .answering),
        ("an answer for a call that ended meanwhile: nothing to post (the adapter fails any action left unresolved)",
         [.realtime(.cancelled, VisitEventData(visitID: C.visitID)), .userAnswered(visitID: C.visitID, idempotencyKey: "k")],
         [], .ended(.remoteEnded)),
        ("an answer after the user declined: nothing to post",
         [.userEnded(visitID: C.visitID, idempotencyKey: "e"), .userAnswered(visitID: C.visitID, idempotencyKey: "k")],
         [], .ended(.localEnded)),
    ]

    @Test("an answer is fulfilled at the tap and bounded by its deadline", arguments: answerCases.indices)
    func answers(_ index: Int) {
        let (name, events, expected, phase) = Self.answerCases[index]
        var coordinator = Self.ringing()
        var last: [CallEffect] = []
        for event in events { last = coordinator.handle(event, now: C.now) }
        #expect(last == expected, "\(name)")
        #expect(coordinator.calls[C.visitID]?.phase == phase, "\(name)")
    }
}
