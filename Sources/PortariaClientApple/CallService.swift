// CallKit + PushKit + AVAudioSession: performs what `IncomingCallCoordinator` decides.
// Every decision (which push rings, which ends at once, when media starts) is the
// coordinator's, tested on Linux; this file only maps its effects onto Apple's calls.
#if canImport(CallKit) && canImport(PushKit) && canImport(AVFAudio)
import AVFAudio
import CallKit
import Foundation
import PortariaClient
import PortariaCore
import PushKit

/// The video part of a call (WebRTC in the app target; not part of this package).
@MainActor
public protocol VideoCallEngine: AnyObject {
    /// Negotiate with the gate over the realtime socket (`call.offer/answer/ice`).
    func join(visitID: String)
    /// CallKit activated the audio session: start capturing and playing.
    func startMedia(visitID: String)
    func hangUp(visitID: String)
    func setMuted(_ muted: Bool)
}

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

/// Owns the `CXProvider`, the `CXCallController` and the `PKPushRegistry`, and the
/// coordinator. Lives on the main actor; CallKit and PushKit are given the main queue, so
/// their callbacks arrive there (`MainActor.assumeIsolated` below states that).
@MainActor
public final class CallService: NSObject, ObservableObject {
    @Published public private(set) var coordinator: IncomingCallCoordinator
    /// A sentence to show ("João já atendeu às 14:32").
    @Published public private(set) var message: String?
    @Published public private(set) var isMuted = false

    private let provider: CXProvider
    private let controller = CXCallController()
    private let registry = PKPushRegistry(queue: .main)
    private let dependencies: CallServiceDependencies
    public weak var engine: (any VideoCallEngine)?
    /// Answer actions CallKit waits on until the server accepts the answer.
    private var pendingAnswers: [UUID: CXAnswerCallAction] = [:]
    private var expiryTasks: [String: Task<Void, Never>] = [:]

    public static func configuration() -> CXProviderConfiguration {
        let configuration = CXProviderConfiguration()
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

    /// Registers for VoIP pushes. Call at launch, every launch: iOS relaunches the app in
    /// the background for a VoIP push, and the registry must exist before the push is read.
    public func startVoIPRegistration() {
        registry.delegate = self
        registry.desiredPushTypes = [.voIP]
    }

    // MARK: Events → coordinator → effects

    public func handle(_ event: CallEvent) {
        perform(coordinator.handle(event, now: Date()))
    }

    public func userAnswered(visitID: String) {
        handle(.userAnswered(visitID: visitID, idempotencyKey: UUID().uuidString.lowercased()))
    }

    public func userEnded(visitID: String) {
        handle(.userEnded(visitID: visitID, idempotencyKey: UUID().uuidString.lowercased()))
    }

    public func decide(visitID: String, action: ResolutionAction) {
        handle(.decided(visitID: visitID, action))
    }

    public func toggleMute() {
        isMuted.toggle()
        engine?.setMuted(isMuted)
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
                provider.reportNewIncomingCall(with: callID, update: update) { [weak self] error in
                    guard let error else { return }
                    // Refused by the system (Do Not Disturb, blocked, a call already up):
                    // the coordinator ends the call and the visit keeps ringing elsewhere.
                    Task { @MainActor in
                        guard let self, let visitID = self.visitID(for: callID) else { return }
                        self.message = "Não foi possível tocar: \(error.localizedDescription)"
                        self.handle(.callEnded(visitID: visitID))
                    }
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
                    guard let visit = try? await session.send("GET", "/v1/visits/\(visitID)", as: Visit.self) else { return }
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
                expiryTasks[visitID]?.cancel()
                expiryTasks[visitID] = Task {
                    try? await Task.sleep(for: .seconds(max(0, at.timeIntervalSinceNow)))
                    guard !Task.isCancelled else { return }
                    self.handle(.ringExpired(visitID: visitID))
                }
            case .configureAudioSession:
                // Configure only: CallKit activates the session and says so in
                // provider(_:didActivate:). Activating it ourselves breaks CallKit audio.
                try? AVAudioSession.sharedInstance().setCategory(.playAndRecord, mode: .videoChat,
                                                                 options: [.allowBluetooth, .defaultToSpeaker])
            case .postAnswer(let visitID, let deviceID, let key):
                post("answer", visitID: visitID, deviceID: deviceID, key: key, reportsBack: true)
            case .postDecline(let visitID, let deviceID, let key):
                post("decline", visitID: visitID, deviceID: deviceID, key: key, reportsBack: false)
            case .requestEndCall(let callID):
                controller.request(CXTransaction(action: CXEndCallAction(call: callID))) { _ in }
            case .fulfillAnswer(let callID):
                pendingAnswers.removeValue(forKey: callID)?.fulfill()
            case .failAnswer(let callID):
                pendingAnswers.removeValue(forKey: callID)?.fail()
            case .joinCall(let visitID):
                engine?.join(visitID: visitID)
            case .startMedia(let visitID):
                engine?.startMedia(visitID: visitID)
            case .hangUp(let visitID):
                engine?.hangUp(visitID: visitID)
            case .enqueueResolve(let visitID, let action):
                let queue = dependencies.queue
                let session = dependencies.session
                Task {
                    let company = await session.selectedCompanyID
                    guard let report = try? await queue.resolve(visitID: visitID, action: action, via: .call, companyID: company,
                                                                until: Date().addingTimeInterval(25)) else { return }
                    self.message = report.sentence
                }
            case .show(let sentence):
                message = sentence
            }
        }
    }

    private func acknowledge(pushID: String, ackToken: String?) {
        let receipts = dependencies.receipts
        let session = dependencies.session
        Task.detached {
            if let ackToken {
                _ = await receipts.acknowledge(PushReceiptCapability(pushID: pushID, ackToken: ackToken),
                                               deadline: Date().addingTimeInterval(25))
            } else {
                _ = try? await session.sendAuthorized(ClientHTTPRequest(method: "POST", path: "/v1/push/\(pushID)/ack"))
            }
        }
    }

    private func post(_ verb: String, visitID: String, deviceID: String, key: String, reportsBack: Bool) {
        let session = dependencies.session
        Task {
            let body = try? JSONCoding.encoder().encode(CallActionRequest(deviceID: deviceID))
            let request = ClientHTTPRequest(method: "POST", path: "/v1/visits/\(visitID)/\(verb)",
                                            headers: ["Idempotency-Key": key, "Content-Type": "application/json"], body: body)
            let response = try? await session.sendAuthorized(request)
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
    }

    static func endedReason(_ reason: CallEndReason) -> CXCallEndedReason {
        switch reason {
        case .answeredElsewhere: return .answeredElsewhere
        case .declinedElsewhere: return .declinedElsewhere
        case .remoteEnded, .localEnded: return .remoteEnded
        case .unanswered: return .unanswered
        case .failed: return .failed
        }
    }
}

// MARK: PushKit

extension CallService: PKPushRegistryDelegate {
    public nonisolated func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType) {
        let token = pushCredentials.token.map { String(format: "%02x", $0) }.joined()
        MainActor.assumeIsolated {
            let registrar = dependencies.registrar
            Task { _ = await registrar.voipTokenChanged(token, until: Date().addingTimeInterval(60)) }
        }
    }

    /// Apple's rule: report the call to CallKit before this method returns, every time,
    /// or iOS kills the app and eventually stops delivering VoIP pushes. The coordinator's
    /// first effect is always `.reportIncomingCall`, built from the payload alone, and
    /// `perform` does it synchronously; nothing touches the network before it.
    public nonisolated func pushRegistry(_ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload,
                                         for type: PKPushType, completion: @escaping @Sendable () -> Void) {
        let json = (try? JSONSerialization.data(withJSONObject: payload.dictionaryPayload)).flatMap {
            try? JSONCoding.decoder().decode(JSONValue.self, from: $0)
        } ?? .object([:])
        MainActor.assumeIsolated {
            let outcome = coordinator.voipPush(json, fallbackCallID: UUID(), now: Date())
            perform(outcome.effects)
        }
        completion()
    }

    public nonisolated func pushRegistry(_ registry: PKPushRegistry, didInvalidatePushTokenFor type: PKPushType) {
        // A new token follows in didUpdate; until then the server falls back to an alert ring.
    }
}

// MARK: CallKit

extension CallService: CXProviderDelegate {
    public nonisolated func providerDidReset(_ provider: CXProvider) {
        MainActor.assumeIsolated {
            for call in coordinator.calls.values where !call.phase.isEnded { handle(.callEnded(visitID: call.visitID)) }
            pendingAnswers.removeAll()
        }
    }

    public nonisolated func provider(_ provider: CXProvider, perform action: CXAnswerCallAction) {
        MainActor.assumeIsolated {
            guard let visitID = visitID(for: action.callUUID) else { return action.fail() }
            // Fulfilled or failed once the server accepts the answer (`.fulfillAnswer`).
            pendingAnswers[action.callUUID] = action
            userAnswered(visitID: visitID)
        }
    }

    public nonisolated func provider(_ provider: CXProvider, perform action: CXEndCallAction) {
        MainActor.assumeIsolated {
            if let visitID = visitID(for: action.callUUID) { userEnded(visitID: visitID) }
            action.fulfill()
        }
    }

    public nonisolated func provider(_ provider: CXProvider, perform action: CXSetMutedCallAction) {
        MainActor.assumeIsolated {
            isMuted = action.isMuted
            engine?.setMuted(action.isMuted)
            action.fulfill()
        }
    }

    /// CallKit activated the `playAndRecord` session configured when answering: media may
    /// start now (the coordinator waits for both this and the server's acceptance).
    public nonisolated func provider(_ provider: CXProvider, didActivate audioSession: AVAudioSession) {
        MainActor.assumeIsolated { handle(.audioActivated) }
    }

    public nonisolated func provider(_ provider: CXProvider, didDeactivate audioSession: AVAudioSession) {
        MainActor.assumeIsolated { handle(.audioDeactivated) }
    }
}
#endif
