import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

/// Fixtures shared by the call tests.
enum CallFixture {
    static let visitID = "visit-1"
    static let visitor = CallPeer.visitor(visitID: visitID)
    static let resident = CallPeer.resident(userID: "maria", deviceID: "maria-iphone")
    /// Maria's other phone: rang too, but did not answer.
    static let otherDevice = CallPeer.resident(userID: "maria", deviceID: "maria-ipad")
    /// João, same unit, another user.
    static let otherResident = CallPeer.resident(userID: "joao", deviceID: "joao-phone")
    /// The visitor page of another visit (possibly another company).
    static let otherVisitor = CallPeer.visitor(visitID: "visit-2")
    static let strangers = [otherDevice, otherResident, otherVisitor]

    static let offerSDP = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=offer\r\n"
    static let answerSDP = "v=0\r\no=- 2 1 IN IP4 127.0.0.1\r\ns=answer\r\n"
    static let offer = CallDescription(visitID: visitID, sdp: offerSDP)
    static let answer = CallDescription(visitID: visitID, sdp: answerSDP)
    static func candidate(_ n: Int) -> CallICE {
        CallICE(visitID: visitID, candidate: ICECandidate(candidate: "candidate:\(n) 1 udp 2122260223 10.0.0.\(n % 250) 5000 typ host", sdpMid: "0"))
    }

    static func ended(_ reason: CallEndReason, _ by: CallRole?) -> CallFrame {
        .ended(CallEnded(visitID: visitID, reason: reason, endedBy: by))
    }

    /// The error code of the one frame in `actions`, which must be an error to `peer`.
    static func rejection(_ actions: [CallAction], to peer: CallPeer) -> ErrorCode? {
        guard actions.count == 1, case .send(.error(let body), let target) = actions[0], target == peer else { return nil }
        return body.code
    }
}

@Suite("CallSession state machine")
struct CallSessionTests {
    typealias F = CallFixture

    func started(residentPresent: Bool = true) -> CallSession {
        CallSession.start(visitID: F.visitID, resident: F.resident, residentPresent: residentPresent).0
    }

    /// A session that went through offer and answer.
    func connected() -> CallSession {
        var session = started()
        _ = session.handle(.offer(F.offer, from: F.visitor))
        _ = session.handle(.answer(F.answer, from: F.resident))
        return session
    }

    /// One session in each non-terminal state.
    func everyLiveState() -> [CallSession] {
        var offered = started()
        _ = offered.handle(.offer(F.offer, from: F.visitor))
        return [started(), offered, connected()]
    }

    /// Every event a session can receive, from the participants.
    static let everyEvent: [CallEvent] = [
        .offer(F.offer, from: F.visitor), .offer(F.offer, from: F.resident),
        .answer(F.answer, from: F.visitor), .answer(F.answer, from: F.resident),
        .ice(F.candidate(1), from: F.visitor), .ice(F.candidate(1), from: F.resident),
        .hangup(from: F.visitor), .hangup(from: F.resident),
        .participantLeft(F.visitor), .participantLeft(F.resident),
        .participantJoined(F.visitor), .participantJoined(F.resident),
        .timeout(.negotiation), .timeout(.maxDuration), .timeout(.reconnect(.visitor)), .timeout(.reconnect(.resident)),
        .close(.visitClosed), .close(.serverShutdown),
    ]

    @Test("start records the call and arms the negotiation and max-duration timers")
    func start() {
        let limits = CallSession.Limits()
        let (session, actions) = CallSession.start(visitID: F.visitID, resident: F.resident)
        #expect(session.state == .waitingForOffer)
        #expect(session.visitor == F.visitor)
        #expect(actions == [.record(.started(visitID: F.visitID, resident: F.resident)),
                            .startTimer(.negotiation, after: limits.negotiationTimeout),
                            .startTimer(.maxDuration, after: limits.maxDuration)])
        #expect(limits.negotiationTimeout == .seconds(45) && limits.reconnectGrace == .seconds(30) && limits.maxDuration == .seconds(900))

        // A device answering from a push, socket not open yet: it must join in time.
        let (absent, absentActions) = CallSession.start(visitID: F.visitID, resident: F.resident, residentPresent: false)
        #expect(absent.absent == [.resident])
        #expect(absentActions.last == .startTimer(.reconnect(.resident), after: limits.reconnectGrace))
    }

    @Test("offer → candidates → answer → candidates → hangup, relayed to the other side only")
    func happyPath() {
        var session = started()
        #expect(session.handle(.offer(F.offer, from: F.visitor))
                == [.startTimer(.negotiation, after: .seconds(45)), .send(.offer(F.offer), to: F.resident)])
        #expect(session.state == .offered(by: .visitor, renegotiation: false))
        #expect(session.handle(.ice(F.candidate(1), from: F.visitor)) == [.send(.ice(F.candidate(1)), to: F.resident)])
        #expect(session.handle(.answer(F.answer, from: F.resident))
                == [.cancelTimer(.negotiation), .send(.answer(F.answer), to: F.visitor), .record(.connected(visitID: F.visitID))])
        #expect(session.state == .connected)
        #expect(session.hasConnected)
        #expect(session.handle(.ice(F.candidate(2), from: F.resident)) == [.send(.ice(F.candidate(2)), to: F.visitor)])
        let end = CallICE(visitID: F.visitID, candidate: nil)
        #expect(session.handle(.ice(end, from: F.visitor)) == [.send(.ice(end), to: F.resident)])
        #expect(session.handle(.hangup(from: F.resident)) == [
            .cancelTimer(.maxDuration),
            .send(F.ended(.hangup, .resident), to: F.visitor), .send(F.ended(.hangup, .resident), to: F.resident),
            .record(.ended(visitID: F.visitID, reason: .hangup, endedBy: .resident, wasConnected: true)),
            .finished(.hangup),
        ])
        #expect(session.state == .ended(.hangup, by: .resident))
        #expect(session.state.isTerminal)
    }

    @Test("a hangup before connecting records a call that never connected")
    func hangupBeforeConnecting() {
        var session = started()
        let actions = session.handle(.hangup(from: F.visitor))
        #expect(actions.contains(.record(.ended(visitID: F.visitID, reason: .hangup, endedBy: .visitor, wasConnected: false))))
        #expect(actions.contains(.cancelTimer(.negotiation)) && actions.contains(.cancelTimer(.maxDuration)))
        #expect(actions.last == .finished(.hangup))
    }

    @Test("only the visitor page and the answering device may signal", arguments: CallFixture.strangers)
    func strangersAreRefused(stranger: CallPeer) {
        let signals: [CallEvent] = [.offer(F.offer, from: stranger), .answer(F.answer, from: stranger),
                                    .ice(F.candidate(1), from: stranger), .hangup(from: stranger)]
        for live in everyLiveState() {
            for event in signals {
                var session = live
                let actions = session.handle(event)
                #expect(F.rejection(actions, to: stranger) == .callNotFound, "\(event) in \(live.state)")
                #expect(session.state == live.state)
            }
            // A stranger's socket coming and going changes nothing either.
            var session = live
            #expect(session.handle(.participantLeft(stranger)).isEmpty)
            #expect(session.handle(.participantJoined(stranger)).isEmpty)
            #expect(session.absent.isEmpty)
        }
    }

    @Test("the refusal of a stranger is the same as for a call that does not exist")
    func strangerErrorLeaksNothing() {
        var session = connected()
        let actions = session.handle(.offer(F.offer, from: F.otherVisitor))
        guard case .send(.error(let body), _) = actions.first else { Issue.record("no error"); return }
        #expect(body == CallSession.notFound(.offer, F.visitID))
        #expect(body.message == "no call for this visit")
    }

    @Test("answers and candidates out of order are CALL_STATE_CONFLICT, to the sender only")
    func outOfOrder() {
        var waiting = started()
        #expect(F.rejection(waiting.handle(.answer(F.answer, from: F.resident)), to: F.resident) == .callStateConflict)
        #expect(F.rejection(waiting.handle(.ice(F.candidate(1), from: F.visitor)), to: F.visitor) == .callStateConflict)
        #expect(waiting.state == .waitingForOffer)

        var offered = started()
        _ = offered.handle(.offer(F.offer, from: F.visitor))
        // The offerer cannot answer its own offer.
        #expect(F.rejection(offered.handle(.answer(F.answer, from: F.visitor)), to: F.visitor) == .callStateConflict)
        #expect(offered.state == .offered(by: .visitor, renegotiation: false))

        var live = connected()
        #expect(F.rejection(live.handle(.answer(F.answer, from: F.resident)), to: F.resident) == .callStateConflict)
        #expect(live.state == .connected)
    }

    @Test("glare: the visitor's offer wins, the resident's is refused")
    func glare() {
        var session = started()
        _ = session.handle(.offer(F.offer, from: F.visitor))
        #expect(F.rejection(session.handle(.offer(F.offer, from: F.resident)), to: F.resident) == .callStateConflict)
        #expect(session.state == .offered(by: .visitor, renegotiation: false))

        // The other way round (a resident's ICE restart crossing a visitor's offer):
        // the visitor's replaces it and goes to the resident, who rolls back.
        var restart = connected()
        _ = restart.handle(.offer(F.offer, from: F.resident))
        #expect(restart.state == .offered(by: .resident, renegotiation: true))
        let actions = restart.handle(.offer(F.offer, from: F.visitor))
        #expect(actions.contains(.send(.offer(F.offer), to: F.resident)))
        #expect(restart.state == .offered(by: .visitor, renegotiation: true))

        // The same side offering again simply replaces its offer.
        var again = started()
        _ = again.handle(.offer(F.offer, from: F.visitor))
        #expect(again.handle(.offer(F.offer, from: F.visitor)).contains(.send(.offer(F.offer), to: F.resident)))
    }

    @Test("renegotiation (ICE restart) from either side; connected is recorded once")
    func renegotiation() {
        var session = connected()
        for offerer in [F.resident, F.visitor] {
            let answerer = offerer == F.visitor ? F.resident : F.visitor
            #expect(session.handle(.offer(F.offer, from: offerer))
                    == [.startTimer(.negotiation, after: .seconds(45)), .send(.offer(F.offer), to: answerer)])
            #expect(session.state == .offered(by: offerer.role, renegotiation: true))
            #expect(session.handle(.answer(F.answer, from: answerer))
                    == [.cancelTimer(.negotiation), .send(.answer(F.answer), to: offerer)])
            #expect(session.state == .connected)
        }
    }

    @Test("at most 64 candidates per side per negotiation; a new offer resets the budget")
    func candidateLimit() {
        var session = started()
        _ = session.handle(.offer(F.offer, from: F.visitor))
        for n in 1...64 { #expect(session.handle(.ice(F.candidate(n), from: F.visitor)) == [.send(.ice(F.candidate(n)), to: F.resident)]) }
        #expect(F.rejection(session.handle(.ice(F.candidate(65), from: F.visitor)), to: F.visitor) == .callLimitExceeded)
        // The other side has its own budget.
        #expect(session.handle(.ice(F.candidate(1), from: F.resident)) == [.send(.ice(F.candidate(1)), to: F.visitor)])
        _ = session.handle(.offer(F.offer, from: F.visitor))
        #expect(session.handle(.ice(F.candidate(66), from: F.visitor)) == [.send(.ice(F.candidate(66)), to: F.resident)])
    }

    @Test("timeouts end the call with their reason", arguments: [
        (CallTimer.negotiation, CallEndReason.negotiationTimeout, CallRole?.none),
        (CallTimer.maxDuration, CallEndReason.maxDuration, CallRole?.none),
    ])
    func timeouts(timer: CallTimer, reason: CallEndReason, by: CallRole?) {
        var session = started()
        let actions = session.handle(.timeout(timer))
        #expect(session.state == .ended(reason, by: by))
        #expect(actions.contains(.send(F.ended(reason, by), to: F.visitor)))
        #expect(actions.contains(.send(F.ended(reason, by), to: F.resident)))
        #expect(actions.last == .finished(reason))
        // The fired timer is not cancelled again; the other one is.
        #expect(!actions.contains(.cancelTimer(timer)))
    }

    @Test("a timer that is not running is ignored")
    func staleTimer() {
        var session = connected() // the negotiation timer was cancelled by the answer
        #expect(session.handle(.timeout(.negotiation)).isEmpty)
        #expect(session.handle(.timeout(.reconnect(.visitor))).isEmpty)
        #expect(session.state == .connected)
    }

    @Test("a participant who leaves has the grace period; frames wait and are delivered on return")
    func leaveAndReturn() {
        var session = started()
        #expect(session.handle(.participantLeft(F.resident)) == [.startTimer(.reconnect(.resident), after: .seconds(30))])
        #expect(session.handle(.participantLeft(F.resident)).isEmpty) // already away: the deadline stays
        #expect(session.handle(.offer(F.offer, from: F.visitor)) == [.startTimer(.negotiation, after: .seconds(45))])
        #expect(session.handle(.ice(F.candidate(1), from: F.visitor)).isEmpty)
        #expect(session.handle(.participantJoined(F.resident)) == [
            .cancelTimer(.reconnect(.resident)),
            .send(.offer(F.offer), to: F.resident), .send(.ice(F.candidate(1)), to: F.resident),
        ])
        #expect(session.absent.isEmpty)
        #expect(session.handle(.participantJoined(F.resident)).isEmpty) // nothing left to deliver
    }

    @Test("a new offer supersedes what was queued for the absent side")
    func queueSuperseded() {
        var session = started(residentPresent: false)
        _ = session.handle(.offer(F.offer, from: F.visitor))
        _ = session.handle(.ice(F.candidate(1), from: F.visitor))
        let restart = CallDescription(visitID: F.visitID, sdp: "v=0\r\ns=restart\r\n")
        _ = session.handle(.offer(restart, from: F.visitor))
        _ = session.handle(.ice(F.candidate(2), from: F.visitor))
        #expect(session.handle(.participantJoined(F.resident)) == [
            .cancelTimer(.reconnect(.resident)),
            .send(.offer(restart), to: F.resident), .send(.ice(F.candidate(2)), to: F.resident),
        ])
    }

    @Test("not coming back in time ends the call as participant_left by that side", arguments: CallRole.allCases)
    func reconnectTimeout(role: CallRole) {
        var session = connected()
        let peer = role == .visitor ? F.visitor : F.resident
        _ = session.handle(.participantLeft(peer))
        let actions = session.handle(.timeout(.reconnect(role)))
        #expect(session.state == .ended(.participantLeft, by: role))
        #expect(actions.contains(.record(.ended(visitID: F.visitID, reason: .participantLeft, endedBy: role, wasConnected: true))))
    }

    @Test("the server can close a live call", arguments: [CallEndReason.visitClosed, .serverShutdown])
    func serverClose(reason: CallEndReason) {
        for live in everyLiveState() {
            var session = live
            let actions = session.handle(.close(reason))
            #expect(session.state == .ended(reason, by: nil))
            #expect(actions.filter { if case .send(.ended, _) = $0 { true } else { false } }.count == 2)
            #expect(actions.last == .finished(reason))
        }
    }

    @Test("ended is terminal: signals get an error, everything else is ignored", arguments: CallSessionTests.everyEvent)
    func terminal(event: CallEvent) {
        var session = connected()
        _ = session.handle(.hangup(from: F.visitor))
        let before = session.state
        let actions = session.handle(event)
        #expect(session.state == before)
        switch event {
        case .offer(_, let from), .answer(_, let from), .ice(_, let from), .hangup(let from):
            #expect(F.rejection(actions, to: from) == .callNotFound)
        case .participantLeft, .participantJoined, .timeout, .close:
            #expect(actions.isEmpty)
        }
    }

    @Test("every event in every live state leaves a consistent session", arguments: CallSessionTests.everyEvent)
    func everyEventEveryState(event: CallEvent) {
        for live in everyLiveState() {
            var session = live
            let actions = session.handle(event)
            let finished = actions.contains { if case .finished = $0 { true } else { false } }
            // A session finishes exactly when it reaches its terminal state…
            #expect(finished == session.state.isTerminal, "\(event) in \(live.state)")
            // …and frames only ever go to the two participants.
            for case .send(_, let peer) in actions { #expect(session.isParticipant(peer)) }
        }
    }
}
