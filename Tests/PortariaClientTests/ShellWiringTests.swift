import Foundation
@testable import PortariaClient
@testable import PortariaCore
import Testing

/// The decisions the iOS shell would otherwise make in code that cannot compile on Linux: which
/// in-app buttons must go through CallKit, which call screen is up, where a tapped
/// notification leads.
@Suite("Shell wiring: CallKit requests, call screen routing")
@MainActor
struct ShellWiringTests {
    typealias Coordinator = IncomingCallCoordinatorTests
    static let zone = TimeZone(identifier: "America/Sao_Paulo")!

    /// A coordinator with one VoIP ring reported to CallKit, then `events`.
    static func ringing(_ events: [CallEvent] = []) -> IncomingCallCoordinator {
        var coordinator = IncomingCallCoordinator(myUserID: Coordinator.me, deviceID: Coordinator.device)
        _ = coordinator.voipPush(Coordinator.ring(), fallbackCallID: Coordinator.fallback, now: Coordinator.now)
        for event in events { _ = coordinator.handle(event, now: Coordinator.now) }
        return coordinator
    }

    @Test("Atender and Encerrar on the app's screen go through CallKit while CallKit shows the call; nothing after it ended")
    func callKitRequests() {
        let visitID = Coordinator.visitID
        let ringing = Self.ringing()
        #expect(ringing.callKitRequest(for: .userAnswered(visitID: visitID, idempotencyKey: "k")) == .answer(Coordinator.visitCall))
        #expect(ringing.callKitRequest(for: .userEnded(visitID: visitID, idempotencyKey: "k")) == .end(Coordinator.visitCall))
        // A decision ends the call itself (`.requestEndCall`): no request here.
        #expect(ringing.callKitRequest(for: .decided(visitID: visitID, .authorize)) == nil)
        // Answering: a second Atender asks for nothing; Encerrar still ends through CallKit.
        let answering = Self.ringing([.userAnswered(visitID: visitID, idempotencyKey: "k1")])
        #expect(answering.callKitRequest(for: .userAnswered(visitID: visitID, idempotencyKey: "k2")) == nil)
        #expect(answering.callKitRequest(for: .userEnded(visitID: visitID, idempotencyKey: "k2")) == .end(Coordinator.visitCall))
        // Over, or unknown: handled directly (the coordinator ignores them).
        let over = Self.ringing([.callEnded(visitID: visitID)])
        #expect(over.callKitRequest(for: .userEnded(visitID: visitID, idempotencyKey: "k")) == nil)
        #expect(ringing.callKitRequest(for: .userAnswered(visitID: "other", idempotencyKey: "k")) == nil)
    }

    @Test("a ring_cancelled background push ends the ring with CallKit's wording for its reason")
    func ringCancelledPush() {
        let visitID = Coordinator.visitID
        var coordinator = Self.ringing()
        let event = IncomingCallCoordinator.event(for: RingCancelledPush(pushID: Coordinator.push2, visitID: visitID, reason: .answeredElsewhere))
        let effects = coordinator.handle(event, now: Coordinator.now)
        #expect(effects.first == .reportCallEnded(Coordinator.visitCall, .answeredElsewhere))
        #expect(IncomingCallCoordinator.event(for: RingCancelledPush(pushID: Coordinator.push2, visitID: visitID, reason: nil))
                == .callEnded(visitID: visitID))
    }

    @Test("the call screen comes up for a call answered on CallKit's screen and goes when it ends; Atender on an alert ring opens the visit")
    func callScreenRouting() throws {
        let visitID = Coordinator.visitID
        let model = try Self.appModel()
        model.callsChanged(Self.ringing())
        #expect(model.callVisitID == nil, "a ringing call stays on CallKit's screen")
        model.callsChanged(Self.ringing([.userAnswered(visitID: visitID, idempotencyKey: "k")]))
        #expect(model.callVisitID == visitID)
        model.callsChanged(Self.ringing([.userAnswered(visitID: visitID, idempotencyKey: "k"),
                                         .realtime(.cancelled, VisitEventData(visitID: visitID))]))
        #expect(model.callVisitID == nil)

        model.open(.openCall(visitID: visitID), calls: Self.ringing())
        #expect(model.callVisitID == visitID)
        model.callVisitID = nil
        model.open(.openCall(visitID: "alert-ring"), calls: Self.ringing())
        #expect(model.callVisitID == nil)
        #expect(model.openedVisitID == "alert-ring")
    }

    @Test("CallKit's own mute button moves the screen's button without switching the microphone twice")
    func muteFromCallKit() throws {
        let coordinator = Self.ringing()
        let record = try #require(coordinator.calls[Coordinator.visitID])
        var switched: [Bool] = []
        let screen = CallViewModel(record: record, dispatch: { _ in }, setMuted: { switched.append($0) })
        screen.muteChanged(true)
        #expect(screen.state.isMuted)
        #expect(screen.state.actions.contains { $0.intent == .setMuted(false) && $0.title == ClientText.unmuteAction })
        #expect(switched.isEmpty)
        screen.perform(.setMuted(false))
        #expect(switched == [false])
    }

    static func appModel() throws -> ResidentAppModel {
        let http = ScriptedHTTP(user: nil)
        let session = ServerFixtures.session(http)
        let realtime = RealtimeClient(baseURL: URL(string: "http://127.0.0.1:9")!, http: http, credentials: session,
                                      transport: UnavailableRealtimeTransport())
        return ResidentAppModel(.init(session: session, queue: ResolveQueue(store: InMemoryResolveQueueStore(), http: http),
                                      registrar: DeviceRegistrar(http: http, state: InMemoryDeviceRegistrationState()),
                                      realtime: realtime, deviceFacts: { DeviceFacts(platform: "ios") }))
    }
}
