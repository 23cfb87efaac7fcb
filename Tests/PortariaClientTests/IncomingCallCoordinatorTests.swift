import Foundation
import PortariaClient
@testable import PortariaCore
import Testing

@Suite("Incoming call coordinator")
struct IncomingCallCoordinatorTests {
    static let me = "u-me"
    static let device = "install-1"
    static let visitID = "6f1c7d0e-2b1a-4c39-8f0e-3f4a5b6c7d8e"
    static let visitCall = UUID(uuidString: visitID)!
    static let push1 = "0a1b2c3d-0000-4000-8000-000000000001"
    static let push2 = "0a1b2c3d-0000-4000-8000-000000000002"
    static let fallback = UUID(uuidString: "ffffffff-ffff-4fff-8fff-ffffffffffff")!
    static let now = Timestamp.parse("2026-11-29T17:32:05Z")!
    static let deadline = now.addingTimeInterval(20)

    static func ring(pushID: String = push1, visitID: String = visitID, expiresAt: Date = deadline) -> JSONValue {
        .object(["type": "visit.ring", "push_id": .string(pushID), "visit_id": .string(visitID), "caller_name": "Pedro",
                 "unit_label": "A-101", "kind": "visit", "expires_at": .string(Timestamp.format(expiresAt)),
                 "geofence": .object(["status": "away", "distance_m": 340])])
    }

    static func report(_ id: UUID) -> CallReport? {
        var coordinator = IncomingCallCoordinator(myUserID: me, deviceID: device)
        guard case .reportIncomingCall(var report)? = coordinator.voipPush(ring(), fallbackCallID: fallback, now: now).effects.first else {
            return nil
        }
        report.callID = id
        return report
    }

    static func pushUUID(_ id: String) -> UUID { UUID(uuidString: id)! }

    // MARK: VoIP pushes: the report first, always

    /// (name, events before, the push, the exact effects expected)
    static let pushCases: [(String, [CallEvent], JSONValue, [CallEffect])] = [
        ("a fresh ring: report, then ack, details, socket, expiry", [], ring(),
         [.reportIncomingCall(report(visitCall)!), .acknowledgePush(pushID: push1), .fetchVisit(visitID: visitID), .openRealtime,
          .scheduleRingExpiry(visitID: visitID, at: deadline)]),
        ("the same push twice: reported again (CallKit drops the duplicate), nothing else",
         [.voipPush(payload: ring(), fallbackCallID: fallback)], ring(),
         [.reportIncomingCall(report(visitCall)!)]),
        ("a second push for a visit already ringing: same call, the new push acknowledged",
         [.voipPush(payload: ring(), fallbackCallID: fallback)], ring(pushID: push2),
         [.reportIncomingCall(report(visitCall)!), .acknowledgePush(pushID: push2)]),
        ("a ring already past expires_at: report, end as unanswered", [], ring(expiresAt: now.addingTimeInterval(-1)),
         [.reportIncomingCall(report(pushUUID(push1))!), .reportCallEnded(pushUUID(push1), .unanswered), .acknowledgePush(pushID: push1)]),
        ("a ring for a visit someone already decided: report, end as answered elsewhere",
         [.realtime(.resolved, VisitEventData(visitID: visitID))], ring(),
         [.reportIncomingCall(report(pushUUID(push1))!), .reportCallEnded(pushUUID(push1), .answeredElsewhere), .acknowledgePush(pushID: push1)]),
        ("a ring for a visit the visitor cancelled: report, end as remote ended",
         [.realtime(.cancelled, VisitEventData(visitID: visitID))], ring(),
         [.reportIncomingCall(report(pushUUID(push1))!), .reportCallEnded(pushUUID(push1), .remoteEnded), .acknowledgePush(pushID: push1)]),
        ("a late push after another phone picked up while this one rang",
         [.voipPush(payload: ring(), fallbackCallID: fallback),
          .realtime(.ringCancelled, VisitEventData(visitID: visitID, userIDs: [me], reason: .answeredElsewhere))], ring(pushID: push2),
         [.reportIncomingCall(report(pushUUID(push2))!), .reportCallEnded(pushUUID(push2), .answeredElsewhere), .acknowledgePush(pushID: push2)]),
        ("a re-ring after this user declined here: report, end as declined elsewhere",
         [.voipPush(payload: ring(), fallbackCallID: fallback), .userEnded(visitID: visitID, idempotencyKey: "k")], ring(pushID: push2),
         [.reportIncomingCall(report(pushUUID(push2))!), .reportCallEnded(pushUUID(push2), .declinedElsewhere), .acknowledgePush(pushID: push2)]),
        ("an unreadable payload is still reported, then ended as failed", [], .object(["garbage": true]),
         [.reportIncomingCall(CallReport.unreadableForTests(fallback)), .reportCallEnded(fallback, .failed)]),
        ("a non-ring payload on the VoIP channel: reported, ended, acknowledged", [],
         .object(["type": "delivery", "push_id": .string(push2), "visit_id": .string(visitID)]),
         [.reportIncomingCall(CallReport.unreadableForTests(pushUUID(push2))), .reportCallEnded(pushUUID(push2), .failed),
          .acknowledgePush(pushID: push2)]),
    ]

    @Test("VoIP pushes", arguments: pushCases.indices)
    func voipPushes(_ index: Int) {
        let (name, before, payload, expected) = Self.pushCases[index]
        var coordinator = IncomingCallCoordinator(myUserID: Self.me, deviceID: Self.device)
        for event in before { _ = coordinator.handle(event, now: Self.now) }
        let effects = coordinator.handle(.voipPush(payload: payload, fallbackCallID: Self.fallback), now: Self.now)
        #expect(effects == expected, "\(name)")
        Self.expectReportFirst(effects, name)
    }

    static func expectReportFirst(_ effects: [CallEffect], _ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .reportIncomingCall? = effects.first else {
            Issue.record("\(name): first effect is \(String(describing: effects.first))", sourceLocation: sourceLocation)
            return
        }
        let firstIsNetwork = effects.first?.isNetwork ?? true
        #expect(!firstIsNetwork, sourceLocation: sourceLocation)
    }

    @Test("whatever arrives on the VoIP channel, in whatever state, the first effect is the CallKit report, built from the payload")
    func reportFirstForAnyPayload() {
        var generator = SplitMix(seed: 20261129)
        let payloads: [JSONValue] = [
            .null, .array([]), .string("x"), .object([:]), .object(["type": "visit.ring"]),
            .object(["type": "visit.ring", "push_id": .string(Self.push1)]),
            .object(["type": "visit.ring", "visit_id": .string(Self.visitID)]),
            .object(["type": .number(3), "push_id": .bool(true)]),
            .object(["type": "visit.ring_cancelled", "push_id": .string(Self.push1), "visit_id": .string(Self.visitID)]),
            .object(["type": "test", "push_id": .string(Self.push1)]),
            Self.ring(), Self.ring(pushID: Self.push2), Self.ring(expiresAt: Self.now.addingTimeInterval(-60)),
        ]
        let events: [CallEvent] = [
            .userAnswered(visitID: Self.visitID, idempotencyKey: "a"), .userEnded(visitID: Self.visitID, idempotencyKey: "e"),
            .answerAccepted(visitID: Self.visitID), .audioActivated, .mediaConnected(visitID: Self.visitID),
            .realtime(.resolved, VisitEventData(visitID: Self.visitID)), .ringExpired(visitID: Self.visitID),
            .decided(visitID: Self.visitID, .authorize),
        ]
        for round in 0..<500 {
            var coordinator = IncomingCallCoordinator(myUserID: Self.me, deviceID: Self.device)
            for _ in 0..<Int(generator.next() % 6) {
                if generator.next() % 2 == 0 {
                    _ = coordinator.handle(.voipPush(payload: payloads[Int(generator.next() % UInt64(payloads.count))],
                                                     fallbackCallID: UUID()), now: Self.now)
                } else {
                    _ = coordinator.handle(events[Int(generator.next() % UInt64(events.count))], now: Self.now)
                }
            }
            let payload = payloads[Int(generator.next() % UInt64(payloads.count))]
            let outcome = coordinator.voipPush(payload, fallbackCallID: UUID(), now: Self.now)
            #expect(outcome.effects.first == .reportIncomingCall(outcome.report), "round \(round)")
            // Only the payload: the report names what the push said, never what a later
            // network answer could have told.
            if case .ring(let push)? = try? PushPayload.decode(payload) {
                #expect(outcome.report.callerName == push.callerName)
                #expect(outcome.report.geofenceBadge == push.geofence.badge)
            }
        }
    }

    // MARK: After the report

    /// (name, events, expected effects of the last event, expected phase)
    static let flowCases: [(String, [CallEvent], [CallEffect], CallPhase)] = [
        ("answer: configure audio (never activate), fulfil CallKit's action at once, POST /answer with the device id, arm its deadline",
         [.userAnswered(visitID: visitID, idempotencyKey: "key-a")],
         [.configureAudioSession, .fulfillAnswer(visitCall), .postAnswer(visitID: visitID, deviceID: device, idempotencyKey: "key-a"),
          .scheduleAnswerTimeout(visitID: visitID, at: now.addingTimeInterval(IncomingCallCoordinator.answerTimeout))], .answering),
        ("answer accepted before CallKit activated audio: join, but no media yet",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"), .answerAccepted(visitID: visitID)],
         [.joinCall(visitID: visitID)], .connecting),
        ("then CallKit activates audio: media starts",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"), .answerAccepted(visitID: visitID), .audioActivated],
         [.startMedia(visitID: visitID)], .connecting),
        ("audio activated first: media waits for the server's yes",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"), .audioActivated],
         [], .answering),
        ("… and starts with it",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"), .audioActivated, .answerAccepted(visitID: visitID)],
         [.joinCall(visitID: visitID), .startMedia(visitID: visitID)], .connecting),
        ("media connected",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"), .answerAccepted(visitID: visitID), .audioActivated, .mediaConnected(visitID: visitID)],
         [], .inCall),
        ("decline while ringing: POST /decline, CallKit already knows",
         [.userEnded(visitID: visitID, idempotencyKey: "key-d")],
         [.postDecline(visitID: visitID, deviceID: device, idempotencyKey: "key-d"), .closeRealtime], .ended(.localEnded)),
        ("someone else picked up: the ring stops with the right reason",
         [.realtime(.ringCancelled, VisitEventData(visitID: visitID, userIDs: [me], reason: .answeredElsewhere))],
         [.reportCallEnded(visitCall, .answeredElsewhere), .closeRealtime], .ended(.answeredElsewhere)),
        ("a cancellation for another resident's phone is not ours",
         [.realtime(.ringCancelled, VisitEventData(visitID: visitID, userIDs: ["u-joao"], reason: .nextStep))],
         [], .ringing),
        ("sequential ringing moved on: unanswered here",
         [.realtime(.ringCancelled, VisitEventData(visitID: visitID, userIDs: [me], reason: .nextStep))],
         [.reportCallEnded(visitCall, .unanswered), .closeRealtime], .ended(.unanswered)),
        ("the visitor gave up while ringing",
         [.realtime(.cancelled, VisitEventData(visitID: visitID))],
         [.reportCallEnded(visitCall, .remoteEnded), .closeRealtime], .ended(.remoteEnded)),
        ("the ring window passed",
         [.ringExpired(visitID: visitID)],
         [.reportCallEnded(visitCall, .unanswered), .closeRealtime], .ended(.unanswered)),
        ("another resident answered first: the 409 names who and when",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"),
          .answerRefused(visitID: visitID, ErrorBody(code: .visitAlreadyAnswered, message: "João já atendeu às 14:32",
                                                     details: ["answered_by": .object(["id": "u-joao", "name": "João Souza"]),
                                                               "answered_at": .string(Timestamp.format(now))]))],
         [.show("João já atendeu às 14:32"), .reportCallEnded(visitCall, .answeredElsewhere), .closeRealtime],
         .ended(.answeredElsewhere)),
        ("the visitor left before the answer reached the server",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"),
          .answerRefused(visitID: visitID, ErrorBody(code: .visitClosed, message: "", details: ["status": "cancelled"]))],
         [.show("O visitante desistiu"), .reportCallEnded(visitCall, .remoteEnded), .closeRealtime],
         .ended(.remoteEnded)),
        ("no network for the answer",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"), .answerFailed(visitID: visitID)],
         [.show("Não foi possível atender: sem conexão com a portaria"), .reportCallEnded(visitCall, .failed), .closeRealtime],
         .ended(.failed)),
        ("our own answer echoed by the socket changes nothing",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"),
          .realtime(.answered, VisitEventData(visitID: visitID, by: PersonRef(id: me, name: "Maria Souza"), deviceID: device))],
         [], .answering),
        ("this user picked up on another phone: this one stops",
         [.realtime(.answered, VisitEventData(visitID: visitID, by: PersonRef(id: me, name: "Maria Souza"), deviceID: "ipad"))],
         [.reportCallEnded(visitCall, .answeredElsewhere), .closeRealtime], .ended(.answeredElsewhere)),
        ("the visitor hung up during the call",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"), .answerAccepted(visitID: visitID), .callEnded(visitID: visitID)],
         [.reportCallEnded(visitCall, .remoteEnded), .closeRealtime], .ended(.remoteEnded)),
        ("Autorizar on the call screen: the queue decides, the call ends by transaction",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"), .answerAccepted(visitID: visitID), .decided(visitID: visitID, .authorize)],
         [.enqueueResolve(visitID: visitID, .authorize), .hangUp(visitID: visitID), .requestEndCall(visitCall), .closeRealtime],
         .ended(.localEnded)),
        ("hang up in a call",
         [.userAnswered(visitID: visitID, idempotencyKey: "k"), .answerAccepted(visitID: visitID), .userEnded(visitID: visitID, idempotencyKey: "e")],
         [.hangUp(visitID: visitID), .closeRealtime], .ended(.localEnded)),
        ("CallKit's end action after the call already ended is fulfilled by the shell, nothing more",
         [.ringExpired(visitID: visitID), .userEnded(visitID: visitID, idempotencyKey: "e")],
         [], .ended(.unanswered)),
    ]

    @Test("after the report", arguments: flowCases.indices)
    func flows(_ index: Int) {
        let (name, events, expected, phase) = Self.flowCases[index]
        var coordinator = IncomingCallCoordinator(myUserID: Self.me, deviceID: Self.device, timeZone: TimeZone(identifier: "America/Sao_Paulo")!)
        _ = coordinator.handle(.voipPush(payload: Self.ring(), fallbackCallID: Self.fallback), now: Self.now)
        var last: [CallEffect] = []
        for event in events { last = coordinator.handle(event, now: Self.now) }
        #expect(last == expected, "\(name)")
        #expect(coordinator.calls[Self.visitID]?.phase == phase, "\(name)")
    }

    @Test("visit details: a ring that is already over ends; a live one updates the CallKit entry")
    func details() {
        var coordinator = IncomingCallCoordinator(myUserID: Self.me, deviceID: Self.device)
        _ = coordinator.handle(.voipPush(payload: Self.ring(), fallbackCallID: Self.fallback), now: Self.now)
        let ringing = Visit(id: Self.visitID, companyID: "c", unit: UnitSummary(id: "u", label: "A-101"), kind: .visit,
                            visitorName: "Pedro Alves", carrier: nil, status: .ringing, geofence: .unknown, photo: nil, voiceMessage: nil,
                            attempts: [], answeredBy: nil, resolution: nil, ringDeadline: Self.deadline, expiresAt: Self.deadline,
                            createdAt: Self.now, updatedAt: Self.now)
        #expect(coordinator.handle(.visitLoaded(ringing), now: Self.now) == [.updateCall(Self.visitCall, callerName: "Pedro Alves", handle: "A-101 · Visita")])
        var answered = ringing
        answered.status = .answered
        answered.answeredBy = PersonRef(id: "u-joao", name: "João Souza")
        #expect(coordinator.handle(.visitLoaded(answered), now: Self.now) == [.reportCallEnded(Self.visitCall, .answeredElsewhere), .closeRealtime])
    }

    @Test("CallKit bookkeeping: every end, fulfil or transaction names a UUID that was reported and is not ended yet")
    func callKitBookkeeping() {
        var generator = SplitMix(seed: 42)
        let visits = [Self.visitID, "7f1c7d0e-2b1a-4c39-8f0e-3f4a5b6c7d8e"]
        for round in 0..<300 {
            var coordinator = IncomingCallCoordinator(myUserID: Self.me, deviceID: Self.device)
            var ledger: [UUID: CallKitState] = [:]
            for step in 0..<12 {
                let visit = visits[Int(generator.next() % 2)]
                let choice = generator.next() % 14
                let event: CallEvent
                switch choice {
                case 0, 1: event = .voipPush(payload: Self.ring(pushID: UUID().uuidString.lowercased(), visitID: visit,
                                                                expiresAt: Self.now.addingTimeInterval(generator.next() % 4 == 0 ? -5 : 20)),
                                             fallbackCallID: UUID())
                case 2: event = .userAnswered(visitID: visit, idempotencyKey: "a")
                case 3: event = .userEnded(visitID: visit, idempotencyKey: "e")
                case 4: event = .answerAccepted(visitID: visit)
                case 5: event = .answerRefused(visitID: visit, ErrorBody(code: .visitAlreadyAnswered, message: ""))
                case 6: event = .audioActivated
                case 7: event = .realtime(.ringCancelled, VisitEventData(visitID: visit, userIDs: [Self.me], reason: .answeredElsewhere))
                case 8: event = .realtime(.cancelled, VisitEventData(visitID: visit))
                case 9: event = .ringExpired(visitID: visit)
                case 10: event = .decided(visitID: visit, .deny)
                case 11: event = .answerTimedOut(visitID: visit)
                case 12: event = .callReported(callID: coordinator.calls[visit]?.callID ?? UUID(),
                                               generator.next() % 2 == 0 ? .refused : .alreadyShown)
                default: event = .callEnded(visitID: visit)
                }
                for effect in coordinator.handle(event, now: Self.now) {
                    switch effect {
                    case .reportIncomingCall(let report):
                        if ledger[report.callID] == nil { ledger[report.callID] = .reported }
                    case .reportCallEnded(let id, let reason):
                        #expect(ledger[id] == .reported, "round \(round) step \(step): ended \(id) in state \(String(describing: ledger[id]))")
                        ledger[id] = .ended(reason)
                    case .requestEndCall(let id):
                        #expect(ledger[id] == .reported, "round \(round) step \(step)")
                        ledger[id] = .ended(.localEnded)
                    case .fulfillAnswer(let id), .failAnswer(let id):
                        #expect(ledger[id] == .reported, "round \(round) step \(step)")
                    case .startMedia(let visitID):
                        #expect(coordinator.calls[visitID]?.audioActive == true, "media before CallKit activated audio")
                    default:
                        break
                    }
                }
                if case .userEnded(let visitID, _) = event, let id = coordinator.calls[visitID]?.callID, ledger[id] == .reported {
                    ledger[id] = .ended(.localEnded)   // CallKit ended it itself (the user's button)
                }
                if case .callReported(let id, .refused) = event, ledger[id] == .reported,
                   coordinator.calls.values.contains(where: { $0.callID == id && $0.callKit == .ended(.failed) }) {
                    ledger[id] = .ended(.failed)       // CallKit never showed it
                }
                for call in coordinator.calls.values {
                    // What the coordinator believes about CallKit matches what it told CallKit.
                    switch (call.callKit, ledger[call.callID]) {
                    case (.reported, .reported?), (.ended, .ended?): break
                    default: Issue.record("round \(round) step \(step): coordinator \(call.callKit), CallKit \(String(describing: ledger[call.callID]))")
                    }
                }
            }
        }
    }
}

extension CallReport {
    /// What the coordinator reports for an unreadable payload (for expectations).
    static func unreadableForTests(_ id: UUID) -> CallReport {
        var coordinator = IncomingCallCoordinator(myUserID: "x", deviceID: "y")
        return coordinator.voipPush(.null, fallbackCallID: id, now: Date()).report
    }
}

/// A small deterministic generator (SplitMix64) for the randomized walks.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
