import AVFoundation
import Foundation
import PortariaClient
import PortariaClientApple
import PortariaClientAppleShared
import PortariaCore
import UIKit
import UserNotifications

/// Wiring only: builds the core's actors over the Apple adapters, hands them to
/// `ResidentAppModel` (routes and every screen's view model, tested on Linux) and connects
/// the adapters' callbacks to it. No screen state and no decisions live here.
@MainActor
final class AppModel {
    let app: ResidentAppModel
    let calls: CallService
    let notifications: NotificationCenterAdapter
    /// The call screen's video (drawn by the WebRTC engine).
    let video = VideoViews()

    init() {
        let info = Bundle.main.infoDictionary ?? [:]
        let base = (info["PortariaServerURL"] as? String).flatMap(URL.init(string:)) ?? URL(string: "https://portaria.example.com")!
        let secure = KeychainSecureStore()
        let preferences = UserDefaultsPreferenceStore()
        let gate = KeychainBiometricGate()
        // With the gate, biometric unlock keeps the refresh token behind Face ID / Touch ID.
        let session = SessionManager(api: APIClient(baseURL: base), secure: secure, preferences: preferences, biometricGate: gate)
        // The queue lives in the App Group container: decisions taken from a notification
        // and in the app are one queue (decision 0021).
        let group = (info["PortariaAppGroup"] as? String).flatMap { FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: $0) }
            ?? FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
        let store: any ResolveQueueStore = (try? FileResolveQueueStore(directory: group.appendingPathComponent("queue").path))
            ?? InMemoryResolveQueueStore()
        let queue = ResolveQueue(store: store, http: session, timeZone: { companyID in
            let selected = await session.selectedCompanyID
            guard let id = companyID ?? selected else { return ResolveQueue.defaultTimeZone }
            return await session.timeZone(companyID: id) ?? ResolveQueue.defaultTimeZone
        })
        let registration = FileDeviceRegistrationState(store: secure)
        let registrar = DeviceRegistrar(http: session, state: registration)
        let installation = registration.installationID()
        let realtime = RealtimeClient(baseURL: base, http: session, credentials: session, transport: URLSessionRealtimeTransport(),
                                      deviceID: installation)
        app = ResidentAppModel(.init(session: session, queue: queue, registrar: registrar, realtime: realtime, biometrics: gate,
                                     deviceFacts: { await AppModel.deviceFacts() }))
        // The call layer exists from launch: a VoIP push may be why the app is running. The
        // user and zone of a stored session now; `signedIn` updates them after a login.
        let zone = preferences.string(for: SessionKeys.selectedCompany)
            .flatMap { preferences.string(for: SessionKeys.timeZone(companyID: $0)) }
            .flatMap(TimeZone.init(identifier:)) ?? ResolveQueue.defaultTimeZone
        calls = CallService(userID: preferences.string(for: SessionKeys.userID) ?? "", deviceID: installation, timeZone: zone,
                            dependencies: CallServiceDependencies(session: session, queue: queue, registrar: registrar, realtime: realtime,
                                                                  receipts: PushReceiptSender(baseURL: base)))
        notifications = NotificationCenterAdapter(dependencies: .init(queue: queue, session: session))
        // The call's media: signalling over the realtime socket, ICE servers from the
        // server, WebRTC behind `CallMediaEngine` (decision 0034).
        let media = CallMediaController(engine: WebRTCMediaEngine(views: video), http: session, signaling: realtime)
        calls.media = media
        // WebRTC must see every change to the session it plays through (RTCAudioSession).
        calls.configureCallAudio = { WebRTCMediaEngine.configureCallAudio() }

        // The adapters' callbacks, all on the main actor. (These objects live as long as
        // the process, so the references they hold on each other are never released.)
        let app = app, calls = calls
        app.onRealtimeUpdate = { update in calls.realtimeUpdate(update) }
        let notifications = notifications
        app.onSignedIn = { userID, zone in
            calls.signedIn(userID: userID, timeZone: zone)
            // Asked once someone is in (the prompt means something then); the registration
            // that follows carries the answer.
            _ = await notifications.requestAuthorization()
            // Microphone and camera now, in the app, not at the first call: a call answered
            // from the lock screen cannot show the prompt, and would have no sound and no
            // self-video. The system asks once; later launches return at once.
            await AppModel.requestCallPermissions()
        }
        app.onSignedOut = { calls.signedOut() }
        calls.onVoIPToken = { token in Task { await app.voipTokenChanged(token) } }
        calls.onVoIPTokenInvalidated = { Task { await app.voipTokenInvalidated() } }
        calls.onCallsChanged = { coordinator in app.callsChanged(coordinator) }
        Task {
            await media.setStatusHandler { visitID, status in
                await MainActor.run { calls.mediaStatusChanged(visitID: visitID, status) }
            }
        }
        notifications.open = { intent in app.open(intent, calls: calls.coordinator) }
    }

    /// The call's microphone and camera permissions, asked while the app is on screen.
    nonisolated static func requestCallPermissions() async {
        if AVAudioApplication.shared().recordPermission == .undetermined {
            _ = await AVAudioApplication.requestRecordPermission()
        }
        if AVCaptureDevice.authorizationStatus(for: .video) == .notDetermined {
            _ = await AVCaptureDevice.requestAccess(for: .video)
        }
    }

    /// What the registration says about this phone, asked each time (the user may have
    /// turned notifications off in Settings meanwhile).
    nonisolated static func deviceFacts() async -> DeviceFacts {
        let settings = await UNUserNotificationCenter.current().notificationSettings()
        let enabled: Bool?
        switch settings.authorizationStatus {
        case .authorized, .provisional, .ephemeral: enabled = true
        case .denied: enabled = false
        case .notDetermined: enabled = nil
        @unknown default: enabled = nil
        }
        let (model, system) = await MainActor.run { (UIDevice.current.model, UIDevice.current.systemVersion) }
        return DeviceFacts(platform: "ios", appVersion: Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String,
                           deviceName: model, locale: "pt-BR",
                           capabilities: DeviceCapabilities(notificationsEnabled: enabled, manufacturer: "Apple", osVersion: system))
    }

    /// A background push (`visit.ring_cancelled`): remove the ring's alert (its identifier
    /// is the server's collapse id, the visit id) and end the CallKit call.
    func backgroundPush(_ json: Data) {
        guard case .ringCancelled(let push)? = try? PushPayload.decode(json: json) else { return }
        UNUserNotificationCenter.current().removeDeliveredNotifications(withIdentifiers: [push.visitID])
        calls.ringCancelled(push)
    }
}
