import Foundation
import Observation
import PortariaCore

/// The resident app above the screens: which screen is up, the view model behind each,
/// and the order of things between the core's actors — login then home, the device
/// registered with both of iOS's tokens, one reader of the realtime stream, logout that
/// unregisters first. A shell (the SwiftUI app) wires platform adapters in and renders;
/// nothing here imports a UI framework, so it is compiled and tested on Linux.
@MainActor @Observable
public final class ResidentAppModel {
    public enum Route: Sendable, Equatable {
        case login
        case home
    }

    public struct Dependencies: Sendable {
        public var session: SessionManager
        public var queue: ResolveQueue
        public var registrar: DeviceRegistrar
        public var realtime: RealtimeClient
        public var biometrics: (any BiometricGate)?
        public var deviceFacts: @Sendable () async -> DeviceFacts
        public var now: @Sendable () -> Date

        public init(session: SessionManager, queue: ResolveQueue, registrar: DeviceRegistrar, realtime: RealtimeClient,
                    biometrics: (any BiometricGate)? = nil, deviceFacts: @escaping @Sendable () async -> DeviceFacts,
                    now: @escaping @Sendable () -> Date = { Date() }) {
            self.session = session
            self.queue = queue
            self.registrar = registrar
            self.realtime = realtime
            self.biometrics = biometrics
            self.deviceFacts = deviceFacts
            self.now = now
        }
    }

    public private(set) var route: Route = .login
    public private(set) var login: LoginViewModel
    public private(set) var home: HomeViewModel
    public private(set) var settings: SettingsViewModel
    /// A sentence over every screen (a decision that landed later, a failure of the
    /// platform's own); the shell clears it when tapped.
    public var banner: String?
    /// The visit whose call screen is up.
    public var callVisitID: String?
    /// The visit whose detail a notification opened.
    public var openedVisitID: String?
    /// The Settings toggle.
    public private(set) var biometricUnlockEnabled = false
    /// The last registration's outcome (diagnostics; nil before the first).
    public private(set) var registration: DeviceRegistrar.Outcome?

    /// Every realtime update, after Home has it: the call layer's cancellations.
    @ObservationIgnored public var onRealtimeUpdate: @MainActor (RealtimeClient.Update) -> Void = { _ in }
    /// A session began (login, unlock, launch with a stored one): the call layer needs the
    /// user (whose answers are "mine") and the condominium's zone; the shell may ask for
    /// notification permission here — the device registration waits for it, so it carries
    /// the answer.
    @ObservationIgnored public var onSignedIn: @MainActor (_ userID: String, _ timeZone: TimeZone) async -> Void = { _, _ in }
    /// The user logged out (the call layer stops showing visitors: a VoIP push that still
    /// arrives is reported and ended with nothing of the visit shown).
    @ObservationIgnored public var onSignedOut: @MainActor () async -> Void = {}

    @ObservationIgnored private let dependencies: Dependencies
    @ObservationIgnored private var pushToken: String?
    @ObservationIgnored private var voipToken: String?
    @ObservationIgnored private var reader: Task<Void, Never>?

    public init(_ dependencies: Dependencies) {
        self.dependencies = dependencies
        login = LoginViewModel(session: dependencies.session, biometrics: dependencies.biometrics)
        home = Self.makeHome(dependencies, timeZone: ResolveQueue.defaultTimeZone)
        settings = SettingsViewModel(api: ResidentAPI(http: dependencies.session), thisDeviceID: nil)
        // One reader of the stream for the life of the app (an AsyncStream hands each
        // element to one iterator): Home first, then the call layer — which needs it even
        // before anyone logs in on screen (a VoIP push launches the app in the background).
        let updates = dependencies.realtime.updates
        reader = Task { [weak self] in
            for await update in updates {
                guard let self else { return }
                self.home.apply(update)
                self.onRealtimeUpdate(update)
            }
        }
    }

    /// The reader awaits the stream's next element; a model that goes away (a test, a
    /// scene torn down) must end it, or the task and the stream's buffers stay behind.
    deinit {
        reader?.cancel()
    }

    private static func makeHome(_ dependencies: Dependencies, timeZone: TimeZone) -> HomeViewModel {
        let session = dependencies.session
        return HomeViewModel(queue: dependencies.queue, timeZone: timeZone, companyID: { await session.selectedCompanyID },
                             now: dependencies.now)
    }

    // MARK: Launch and login (login-ios.md)

    /// The app started: a stored session goes home — unless only the owner's biometry can
    /// resume it, then the login screen offers "Entrar com Face ID".
    public func launch() async {
        let session = dependencies.session
        biometricUnlockEnabled = await session.biometricUnlockEnabled
        if await session.isLoggedIn, !(await session.canUnlockWithBiometrics) {
            await enterHome()
        } else {
            await login.load()
        }
    }

    /// The login screen's primary button (password, send code, verify code).
    public func submitLogin() async {
        await login.submit()
        await enterIfLoggedIn()
    }

    public func chooseCompany(_ company: CompanyGrant) async {
        await login.chooseCompany(company)
        await enterIfLoggedIn()
    }

    public func unlockWithBiometrics() async {
        await login.unlockWithBiometrics()
        if case .loggedIn = login.state.phase { return await enterHome() }
        // Biometry changed: the session is gone and the Face ID button with it.
        await login.load()
    }

    private func enterIfLoggedIn() async {
        if case .loggedIn = login.state.phase { await enterHome() }
    }

    private func enterHome() async {
        let session = dependencies.session
        route = .home
        // The condominium's zone for every "às 14:32" (`GET /v1/me` stores it).
        _ = try? await session.me()
        let zone = await condominiumTimeZone()
        if home.state.timeZone != zone { home = Self.makeHome(dependencies, timeZone: zone) }
        if let userID = await session.userID { await onSignedIn(userID, zone) }
        biometricUnlockEnabled = await session.biometricUnlockEnabled
        await dependencies.realtime.start()
        await home.refreshQueued()
        await registerDevice()
    }

    private func condominiumTimeZone() async -> TimeZone {
        let session = dependencies.session
        guard let company = await session.selectedCompanyID else { return ResolveQueue.defaultTimeZone }
        return await session.timeZone(companyID: company) ?? ResolveQueue.defaultTimeZone
    }

    /// Ends the session: the device is unregistered first, while the access token still
    /// works (a logged-out phone must stop receiving visitor names), then the server
    /// session, then the socket; every screen starts over.
    public func logout() async {
        let dependencies = dependencies
        _ = await dependencies.registrar.unregister()
        try? await dependencies.session.logout()
        await onSignedOut()
        await dependencies.realtime.stop()
        login = LoginViewModel(session: dependencies.session, biometrics: dependencies.biometrics)
        home = Self.makeHome(dependencies, timeZone: ResolveQueue.defaultTimeZone)
        settings = SettingsViewModel(api: ResidentAPI(http: dependencies.session), thisDeviceID: nil)
        callVisitID = nil
        openedVisitID = nil
        registration = nil
        biometricUnlockEnabled = false
        route = .login
        await login.load()
    }

    // MARK: Device registration

    /// The system issued an alert (APNs/FCM) token.
    public func pushTokenChanged(_ token: String) async {
        pushToken = token
        if route == .home { await registerDevice() }
    }

    /// PushKit issued a VoIP token. It may come before login, or before the alert token:
    /// it is kept and sent with the next registration — without it the iPhone would not
    /// ring with the app closed.
    public func voipTokenChanged(_ token: String) async {
        voipToken = token
        if route == .home { await registerDevice() }
    }

    /// PushKit invalidated the VoIP token: it is forgotten (no registration carries it
    /// again) and Settings says this iPhone cannot ring with the app closed until PushKit
    /// issues a new one. The server retires the dead token on APNs' Unregistered answer and
    /// rings this phone with an alert meanwhile (decision 0014).
    public func voipTokenInvalidated() async {
        voipToken = nil
        await dependencies.registrar.voipTokenInvalidated()
        if route == .home { await registerDevice() }
    }

    private func registerDevice() async {
        let facts = await dependencies.deviceFacts()
        settings.setNotificationStatuses(Self.statuses(facts, hasVoIPToken: voipToken != nil))
        // `push_token` is required: until the system hands the alert token over there is
        // nothing to register (the VoIP token waits here for it).
        guard let pushToken else { return }
        registration = await dependencies.registrar.register(facts, pushToken: pushToken, voipToken: voipToken,
                                                             until: dependencies.now().addingTimeInterval(60))
        settings.state.thisDeviceID = await dependencies.registrar.deviceID
    }

    private static func statuses(_ facts: DeviceFacts, hasVoIPToken: Bool) -> [NotificationStatus] {
        NotificationStatus.from(facts.capabilities, platform: facts.platform, hasVoIPToken: hasVoIPToken)
    }

    /// What Settings shows about this phone's ability to ring (launch, foreground).
    public func refreshNotificationStatus() async {
        let facts = await dependencies.deviceFacts()
        settings.setNotificationStatuses(Self.statuses(facts, hasVoIPToken: voipToken != nil))
    }

    // MARK: Lifecycle

    /// Back in front: REST first, then the socket (`RealtimeClient.foreground`); what is
    /// still queued goes out, and a decision that landed meanwhile is said.
    public func foreground() async {
        guard route == .home else { return }
        await dependencies.realtime.foreground()
        let reports = await dependencies.queue.sync(until: dependencies.now().addingTimeInterval(20))
        if let landed = reports.last(where: \.isFinished) { banner = landed.sentence }
        await home.refreshQueued()
        await refreshNotificationStatus()
    }

    /// To the background: the socket closes unless a ringing call needs it (its
    /// cancellations travel there); pushes are the channel meanwhile.
    public func background(callNeedsRealtime: Bool) async {
        guard !callNeedsRealtime else { return }
        await dependencies.realtime.stop()
    }

    // MARK: Settings

    public func setBiometricUnlock(_ on: Bool) async {
        let session = dependencies.session
        do {
            if on { try await session.enableBiometricUnlock() } else { try await session.disableBiometricUnlock() }
        } catch {
            banner = on ? ClientText.biometricUnavailable : ClientText.loginError(error)
        }
        biometricUnlockEnabled = await session.biometricUnlockEnabled
    }

    // MARK: Visits and calls

    /// The detail screen's view model, in the condominium's zone.
    public func visitDetail(_ visitID: String) -> VisitDetailViewModel {
        VisitDetailViewModel(visitID: visitID, api: ResidentAPI(http: dependencies.session), queue: dependencies.queue,
                             baseURL: dependencies.session.baseURL, timeZone: home.state.timeZone)
    }

    /// A decision on the detail screen, for the selected company.
    public func resolve(_ detail: VisitDetailViewModel, _ action: ResolutionAction) async {
        await detail.resolve(action, companyID: await dependencies.session.selectedCompanyID)
        await home.refreshQueued()
    }

    /// A photo or voice message of a visit (`VisitDetailState.photoURL` / `voiceMessageURL`),
    /// fetched with the session; nil when it cannot be had now.
    public func media(_ url: URL) async -> Data? {
        try? await ResidentAPI(http: dependencies.session).media(url)
    }

    /// A tapped notification. Atender on an alert ring opens the call screen only when
    /// the call layer has that call (a VoIP push made it); an alert ring has no CallKit
    /// call to join, so it opens the visit, where Autorizar and Negar are.
    public func open(_ intent: NotificationIntent, calls: IncomingCallCoordinator) {
        switch intent {
        case .openCall(let visitID):
            if calls.calls[visitID].map({ !$0.phase.isEnded }) == true { callVisitID = visitID } else { openedVisitID = visitID }
        case .openVisit(let visitID):
            openedVisitID = visitID
        case .resolve, .ignore:
            break
        }
    }

    /// The call layer's state changed: a call answered on CallKit's own screen (maybe on
    /// a locked phone) brings up the app's call screen; a call that ended takes it down.
    public func callsChanged(_ calls: IncomingCallCoordinator) {
        if let shown = callVisitID, calls.calls[shown].map({ $0.phase.isEnded }) ?? true {
            callVisitID = nil
        }
        if callVisitID == nil, let answered = calls.answeredCall {
            callVisitID = answered.visitID
        }
    }
}
