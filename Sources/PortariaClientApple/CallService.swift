// CallKit + PushKit + AVAudioSession: performs what `IncomingCallCoordinator` decides.
// Every decision (which push rings, which ends at once, when media starts, which in-app
// button goes through CallKit) is the coordinator's, tested on Linux; this file only maps
// its effects onto Apple's calls.
//
// iOS only (`canImport(UIKit)`: iOS and Mac Catalyst, not macOS): `AVAudioSession` is
// unavailable on macOS (API_UNAVAILABLE(macos)), and the package also builds for macOS —
// `canImport(AVFAudio)` alone would be true there and the file would not compile. (Not
// `os(iOS)`: the Linux type-check, scripts/ios-typecheck, compiles this file against
// stand-in modules, and `os(…)` cannot be made true there.)
#if canImport(CallKit) && canImport(PushKit) && canImport(AVFAudio) && canImport(UIKit)
import AVFAudio
import CallKit
import Foundation
import Observation
import PortariaClient
import PortariaCore
import PushKit
import UIKit

/// What the call service needs from the rest of the app.
public struct CallServiceDependencies: Sendable {
    public var session: SessionManager
    public var queue: ResolveQueue
    public var registrar: DeviceRegistrar
    public var realtime: RealtimeClient
    /// Acknowledges a push with its per-push `ack_token` (no session needed).
    public var receipts: PushReceiptSender

    public init(session: SessionManager, queue: ResolveQueue, registrar: DeviceRegistrar, realtime: RealtimeClient,
                receipts: PushReceiptSender) {
        self.session = session
        self.queue = queue
        self.registrar = registrar
        self.realtime = realtime
        self.receipts = receipts
    }
}

/// Owns the `CXProvider`, the `CXCallController` and the `PKPushRegistry`, the
/// coordinator, and the call screens' view models. Lives on the main actor; CallKit and
/// PushKit are given the main queue, so their delegate callbacks arrive there (the
/// `@preconcurrency` conformances below check that at run time, and trap if it were ever
/// untrue).
@MainActor @Observable
public final class CallService: NSObject {
    public private(set) var coordinator: IncomingCallCoordinator
    /// A sentence to show over any screen ("João já atendeu às 14:32").
    public var message: String?

    @ObservationIgnored private let provider: CXProvider
    @ObservationIgnored private let controller = CXCallController()
    @ObservationIgnored private let registry = PKPushRegistry(queue: .main)
    @ObservationIgnored private let dependencies: CallServiceDependencies
    /// The call's media (signalling and WebRTC through `CallMediaEngine`, decision 0034):
    /// handed every effect and realtime update in order; its status comes back through
    /// `mediaStatusChanged`. Nil: calls ring and decide, without video.
    @ObservationIgnored public var media: CallMediaController?
    /// PushKit issued a VoIP token (`ResidentAppModel.voipTokenChanged`: it must reach the
    /// registration even when it comes before login).
    @ObservationIgnored public var onVoIPToken: @MainActor (String) -> Void = { _ in }
    /// The coordinator changed (`ResidentAppModel.callsChanged`: which call screen is up).
    @ObservationIgnored public var onCallsChanged: @MainActor (IncomingCallCoordinator) -> Void = { _ in }
    /// The answer action being handled (fulfilled or failed by the coordinator's effects
    /// before `provider(_:perform:)` returns; failed there if neither happened).
    @ObservationIgnored private var pendingAnswers: [UUID: CXAnswerCallAction] = [:]
    /// The coordinator's timers (ring expiry, answer deadline), per visit and kind; each
    /// removes itself when it fires, and a visit's are cancelled when its call ends.
    @ObservationIgnored private var timers: [TimerKey: Task<Void, Never>] = [:]
    private struct TimerKey: Hashable {
        var visitID: String
        var answer: Bool
    }
    /// Configures the audio session for a call (category, mode, options) without
    /// activating it. The app sets it to go through WebRTC's `RTCAudioSession`, which must
    /// know of every change; the default configures `AVAudioSession` directly.
    @ObservationIgnored public var configureCallAudio: @MainActor () -> Void = {
        try? AVAudioSession.sharedInstance().setCategory(.playAndRecord, mode: .videoChat, options: [.allowBluetooth, .defaultToSpeaker])
    }
    /// PushKit invalidated the VoIP token (`ResidentAppModel.voipTokenInvalidated`: the app
    /// forgets it and Settings shows the problem until a new token arrives).
    @ObservationIgnored public var onVoIPTokenInvalidated: @MainActor () -> Void = {}
    /// The call screens' view models, per visit.
    @ObservationIgnored private var screens: [String: CallViewModel] = [:]

    /// CallKit's configuration. `iconTemplateImageData`: the gate glyph CallKit shows on
    /// its call screen (the `CallKitIcon` image: a 40 pt single-colour template, alpha
    /// only); `ringtoneSound`: `Ringtone.caf` from the app bundle when present (CallKit's
    /// default ringtone otherwise).
    public static func configuration() -> CXProviderConfiguration {
        let configuration = CXProviderConfiguration()
        configuration.iconTemplateImageData = UIImage(named: "CallKitIcon")?.pngData()
        if Bundle.main.url(forResource: "Ringtone", withExtension: "caf") != nil { configuration.ringtoneSound = "Ringtone.caf" }
        configuration.supportsVideo = true
        // Privacy: the visitor's name must not land in the Phone app's recents (and iCloud).
        configuration.includesCallsInRecents = false
        configuration.maximumCallGroups = 1
        configuration.maximumCallsPerCallGroup = 1
        configuration.supportedHandleTypes = [.generic]
        return configuration
    }

    public init(userID: String, deviceID: String, timeZone: TimeZone, dependencies: CallServiceDependencies) {
        coordinator = IncomingCallCoordinator(myUserID: userID, deviceID: deviceID, timeZone: timeZone)
        provider = CXProvider(configuration: Self.configuration())
        self.dependencies = dependencies
        super.init()
        provider.setDelegate(self, queue: nil)   // nil: the main queue
    }

    /// A user logged in (the coordinator was made at launch, maybe before anyone had): the
    /// user whose answers are "mine" and the condominium's zone. Only between calls — a
    /// call in progress keeps the coordinator that knows it.
    public func signedIn(userID: String, timeZone: TimeZone) {
        guard !coordinator.needsRealtime,
              coordinator.myUserID != userID || coordinator.timeZone != timeZone else { return }
        coordinator = IncomingCallCoordinator(myUserID: userID, deviceID: coordinator.deviceID, timeZone: timeZone)
        screens = [:]
    }

    /// The user logged out: any call ends, and from now on a VoIP push (unregistering may
    /// have failed offline) is reported and ended at once with nothing of the visit shown
    /// (`IncomingCallCoordinator.isSignedIn`).
    public func signedOut() {
        for call in coordinator.calls.values where !call.phase.isEnded { handle(.callEnded(visitID: call.visitID)) }
        for task in timers.values { task.cancel() }
        timers = [:]
        coordinator = IncomingCallCoordinator(myUserID: "", deviceID: coordinator.deviceID, timeZone: coordinator.timeZone)
        screens = [:]
        onCallsChanged(coordinator)
    }

    /// Registers for VoIP pushes. Call at launch, every launch: iOS relaunches the app in
    /// the background for a VoIP push, and the registry must exist before the push is read.
    public func startVoIPRegistration() {
        registry.delegate = self
        registry.desiredPushTypes = [.voIP]
    }

    // MARK: Events → coordinator → effects

    public func handle(_ event: CallEvent) {
        let effects = coordinator.handle(event, now: Date())
        perform(effects)
        // Media follows the same effects (Atender prepares it, `.startMedia` starts audio,
        // `.hangUp` and every ending close it); `submit` keeps their order.
        media?.submit(.coordinator(effects, calls: coordinator.calls))
        for (visitID, screen) in screens {
            if let record = coordinator.calls[visitID] { screen.update(record) }
        }
        // A call that ended needs none of its timers.
        for (timer, task) in timers where coordinator.calls[timer.visitID]?.phase.isEnded ?? true {
            task.cancel()
            timers[timer] = nil
        }
        onCallsChanged(coordinator)
    }

    /// What the call screen's buttons send (`CallViewModel`'s `dispatch`). Atender and
    /// Encerrar on a call CallKit shows become CallKit transactions, so the system UI and
    /// the audio session follow; CallKit then performs the action and the delegate below
    /// hands it to the coordinator.
    public func dispatch(_ event: CallEvent) {
        switch coordinator.callKitRequest(for: event) {
        case .answer(let callID)?:
            request(CXAnswerCallAction(call: callID))
        case .end(let callID)?:
            request(CXEndCallAction(call: callID))
        case nil:
            handle(event)
        }
    }

    /// The call screen of a visit this phone is ringing for (nil when there is no call).
    public func screen(for visitID: String) -> CallViewModel? {
        if let screen = screens[visitID] { return screen }
        guard let record = coordinator.calls[visitID] else { return nil }
        let callID = record.callID
        let screen = CallViewModel(record: record, dispatch: { [weak self] event in self?.dispatch(event) },
                                   setMuted: { [weak self] muted in
                                       // Through CallKit, so its own mute button agrees.
                                       self?.request(CXSetMutedCallAction(call: callID, muted: muted))
                                   })
        screens[visitID] = screen
        return screen
    }

    private func request(_ action: CXCallAction) {
        // @Sendable: CallKit calls it on a queue of its own; a closure inferred as
        // main-actor isolated would trap there under Swift 6's isolation checks.
        controller.request(CXTransaction(action: action)) { @Sendable _ in }
    }

    /// A `visit.ring_cancelled` background push (`application(_:didReceiveRemoteNotification:)`).
    public func ringCancelled(_ push: RingCancelledPush) {
        handle(IncomingCallCoordinator.event(for: push))
    }

    private func visitID(for callID: UUID) -> String? {
        coordinator.calls.values.first { $0.callID == callID }?.visitID
    }

    /// Performs effects in order. CallKit calls happen synchronously here; network effects
    /// start tasks, so a `.reportIncomingCall` first in the list reaches CallKit before any
    /// request is even created.
    private func perform(_ effects: [CallEffect]) {
        for effect in effects {
            switch effect {
            case .reportIncomingCall(let report):
                let update = CXCallUpdate()
                update.remoteHandle = CXHandle(type: .generic, value: report.handle)
                update.localizedCallerName = "\(report.callerName) · \(report.geofenceBadge)"
                update.hasVideo = report.hasVideo
                update.supportsHolding = false
                update.supportsGrouping = false
                update.supportsUngrouping = false
                update.supportsDTMF = false
                let callID = report.callID
                // The completion runs on the delegate queue (main here); @Sendable and a hop
                // to the main actor keep that an assumption Swift does not have to trust.
                provider.reportNewIncomingCall(with: callID, update: update) { @Sendable [weak self] error in
                    // What the error means (a duplicate of a live call is not a refusal)
                    // is the coordinator's rule; this only names CallKit's answer.
                    let outcome = Self.reportOutcome(error)
                    guard outcome != .shown else { return }
                    Task { @MainActor in self?.handle(.callReported(callID: callID, outcome)) }
                }
            case .reportCallEnded(let callID, let reason):
                provider.reportCall(with: callID, endedAt: nil, reason: Self.endedReason(reason))
            case .updateCall(let callID, let callerName, let handle):
                let update = CXCallUpdate()
                update.remoteHandle = CXHandle(type: .generic, value: handle)
                update.localizedCallerName = callerName
                provider.reportCall(with: callID, updated: update)
            case .acknowledgePush(let pushID, let ackToken):
                acknowledge(pushID: pushID, ackToken: ackToken)
            case .fetchVisit(let visitID):
                let session = dependencies.session
                Task {
                    guard let visit = try? await session.send(APIRoutes.visit(id: visitID)) else { return }
                    self.handle(.visitLoaded(visit))
                }
            case .openRealtime:
                // Cancellations travel over the socket (a VoIP push can only mean "ring
                // now"). The app's one consumer of `realtime.updates` forwards events here
                // through `realtimeUpdate(_:)` (an AsyncStream has one reader).
                let realtime = dependencies.realtime
                Task { await realtime.start() }
            case .closeRealtime:
                // The socket is shared with Home; the app stops it when it goes to the background.
                break
            case .scheduleRingExpiry(let visitID, let at):
                schedule(TimerKey(visitID: visitID, answer: false), at: at, .ringExpired(visitID: visitID))
            case .scheduleAnswerTimeout(let visitID, let at):
                schedule(TimerKey(visitID: visitID, answer: true), at: at, .answerTimedOut(visitID: visitID))
            case .configureAudioSession:
                // Configure only: CallKit activates the session and says so in
                // provider(_:didActivate:). Activating it ourselves breaks CallKit audio.
                configureCallAudio()
            case .postAnswer(let visitID, let deviceID, let key):
                post(APIRoutes.answerCall(id: visitID), visitID: visitID, deviceID: deviceID, key: key, reportsBack: true)
            case .postDecline(let visitID, let deviceID, let key):
                post(APIRoutes.declineCall(id: visitID), visitID: visitID, deviceID: deviceID, key: key, reportsBack: false)
            case .requestEndCall(let callID):
                request(CXEndCallAction(call: callID))
            case .fulfillAnswer(let callID):
                pendingAnswers.removeValue(forKey: callID)?.fulfill()
            case .failAnswer(let callID):
                pendingAnswers.removeValue(forKey: callID)?.fail()
            case .joinCall, .startMedia, .hangUp:
                // The media's (`media.submit` in `handle`).
                break
            case .enqueueResolve(let visitID, let action):
                let queue = dependencies.queue
                let session = dependencies.session
                Task {
                    let company = await session.selectedCompanyID
                    do {
                        let report = try await queue.resolve(visitID: visitID, action: action, via: .call, companyID: company,
                                                             until: Date().addingTimeInterval(25))
                        self.message = report.sentence
                    } catch {
                        // Not even stored (logged out, disk): say so — never silence.
                        self.message = ClientText.decisionNotStored
                    }
                }
            case .show(let sentence):
                message = sentence
                for screen in screens.values { screen.show(sentence) }
            }
        }
    }

    private func schedule(_ timer: TimerKey, at: Date, _ event: CallEvent) {
        timers[timer]?.cancel()
        timers[timer] = Task {
            try? await Task.sleep(for: .seconds(max(0, at.timeIntervalSinceNow)))
            guard !Task.isCancelled else { return }
            self.timers[timer] = nil
            self.handle(event)
        }
    }

    /// CallKit's answer to a report, named for the coordinator.
    nonisolated static func reportOutcome(_ error: (any Error)?) -> CallReportOutcome {
        guard let error else { return .shown }
        if let callKit = error as? CXErrorCodeIncomingCallError, callKit.code == .callUUIDAlreadyExists { return .alreadyShown }
        return .refused
    }

    private func acknowledge(pushID: String, ackToken: String?) {
        let receipts = dependencies.receipts
        let session = dependencies.session
        Task.detached {
            if let ackToken {
                _ = await receipts.acknowledge(PushReceiptCapability(pushID: pushID, ackToken: ackToken),
                                               deadline: Date().addingTimeInterval(25))
            } else {
                _ = try? await session.sendAuthorized(try ClientHTTPRequest(APIRoutes.pushAck(pushID: pushID)))
            }
        }
    }

    /// `answerCall` or `declineCall` for `visitID`.
    private func post(_ endpoint: APIEndpoint<CallActionRequest, Visit>, visitID: String, deviceID: String, key: String, reportsBack: Bool) {
        let session = dependencies.session
        Task {
            let request = try? ClientHTTPRequest(endpoint, json: CallActionRequest(deviceID: deviceID), headers: ["Idempotency-Key": key])
            let response: ClientHTTPResponse? = if let request { try? await session.sendAuthorized(request) } else { nil }
            guard reportsBack else { return }
            if let response, response.isSuccess {
                self.handle(.answerAccepted(visitID: visitID))
            } else if let response, let error = response.errorBody, response.status == 409 {
                self.handle(.answerRefused(visitID: visitID, error))
            } else {
                self.handle(.answerFailed(visitID: visitID))
            }
        }
    }

    /// Called by the app's single reader of `RealtimeClient.updates`.
    public func realtimeUpdate(_ update: RealtimeClient.Update) {
        if case .event(let type, _, let data) = update { handle(.realtime(type, data)) }
        // `call.*` frames, and the socket coming back (frames waiting to be sent).
        media?.submit(.realtime(update))
    }

    /// The media's status (`CallMediaController`'s handler, hopped to the main actor):
    /// live moves the call in; an ending the user did not cause ends the CallKit call, and
    /// the screen says why ("O visitante encerrou a chamada").
    public func mediaStatusChanged(visitID: String, _ status: CallMediaStatus) {
        if case .ended(let ending) = status, ending.endsCall {
            message = ending.text
            screens[visitID]?.show(ending.text)
        }
        if let event = status.coordinatorEvent(visitID: visitID) { handle(event) }
    }

    static func endedReason(_ reason: PortariaClient.CallEndReason) -> CXCallEndedReason {
        switch reason {
        case .answeredElsewhere: return .answeredElsewhere
        case .declinedElsewhere: return .declinedElsewhere
        case .remoteEnded, .localEnded: return .remoteEnded
        case .unanswered: return .unanswered
        case .failed: return .failed
        }
    }
}

// MARK: PushKit and CallKit delegates
//
// Both deliver on the main queue (`PKPushRegistry(queue: .main)`, `setDelegate(_:queue: nil)`
// = main), so the conformances are `@preconcurrency` and the methods main-actor isolated:
// Swift checks at run time that each call really arrives on the main actor (and traps if
// it ever did not) instead of copying non-Sendable CallKit actions across isolation.

extension CallService: @preconcurrency PKPushRegistryDelegate {
    public func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType) {
        guard type == .voIP else { return }
        onVoIPToken(pushCredentials.token.map { String(format: "%02x", $0) }.joined())
    }

    /// Apple's rule: report the call to CallKit before this method returns, every time,
    /// or iOS kills the app and eventually stops delivering VoIP pushes. The coordinator's
    /// first effect is always `.reportIncomingCall`, built from the payload alone, and
    /// `perform` does it synchronously; nothing touches the network before it.
    public func pushRegistry(_ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload,
                             for type: PKPushType, completion: @escaping @Sendable () -> Void) {
        let json = (try? JSONSerialization.data(withJSONObject: payload.dictionaryPayload)).flatMap {
            try? JSONCoding.decoder().decode(JSONValue.self, from: $0)
        } ?? .object([:])
        handle(.voipPush(payload: json, fallbackCallID: UUID()))
        completion()
    }

    /// The token is dead: the app forgets it (the server retires it on APNs' answer and rings
    /// this phone with an alert until PushKit issues a new token through didUpdate).
    public func pushRegistry(_ registry: PKPushRegistry, didInvalidatePushTokenFor type: PKPushType) {
        guard type == .voIP else { return }
        onVoIPTokenInvalidated()
    }
}

extension CallService: @preconcurrency CXProviderDelegate {
    public func providerDidReset(_ provider: CXProvider) {
        for call in coordinator.calls.values where !call.phase.isEnded { handle(.callEnded(visitID: call.visitID)) }
        pendingAnswers.removeAll()
    }

    /// Fulfilled at once for a ringing call (the coordinator's `.fulfillAnswer`; the
    /// server's answer is awaited with its own deadline), failed otherwise — never left
    /// for CallKit to time out.
    public func provider(_ provider: CXProvider, perform action: CXAnswerCallAction) {
        guard let visitID = visitID(for: action.callUUID) else { return action.fail() }
        pendingAnswers[action.callUUID] = action
        handle(.userAnswered(visitID: visitID, idempotencyKey: UUID().uuidString.lowercased()))
        pendingAnswers.removeValue(forKey: action.callUUID)?.fail()
    }

    public func provider(_ provider: CXProvider, perform action: CXEndCallAction) {
        if let visitID = visitID(for: action.callUUID) {
            handle(.userEnded(visitID: visitID, idempotencyKey: UUID().uuidString.lowercased()))
        }
        action.fulfill()
    }

    /// CallKit gave up waiting for an action. Answers are fulfilled at once, so this is a
    /// backstop: an answer CallKit timed out is an answer that failed.
    public func provider(_ provider: CXProvider, timedOutPerforming action: CXAction) {
        guard let answer = action as? CXAnswerCallAction else { return }
        pendingAnswers.removeValue(forKey: answer.callUUID)
        if let visitID = visitID(for: answer.callUUID) { handle(.answerTimedOut(visitID: visitID)) }
    }

    /// Mute from either screen (CallKit's, or ours through `CXSetMutedCallAction`).
    public func provider(_ provider: CXProvider, perform action: CXSetMutedCallAction) {
        media?.submit(.muted(action.isMuted))
        if let visitID = visitID(for: action.callUUID) { screens[visitID]?.muteChanged(action.isMuted) }
        action.fulfill()
    }

    /// CallKit activated the `playAndRecord` session configured when answering: media may
    /// start now (the coordinator waits for both this and the server's acceptance).
    public func provider(_ provider: CXProvider, didActivate audioSession: AVAudioSession) {
        handle(.audioActivated)
        // After an interruption CallKit activates the session again; the coordinator
        // starts media only once, so the media brings its audio back itself.
        media?.submit(.audioActivated)
    }

    public func provider(_ provider: CXProvider, didDeactivate audioSession: AVAudioSession) {
        handle(.audioDeactivated)
        // WebRTC's manual audio: the audio unit stops with CallKit's session.
        media?.submit(.audioDeactivated)
    }
}
#endif
