import Foundation
import PortariaClient
import PortariaClientApple
import PortariaCore
import SwiftUI
import UIKit
import UserNotifications

/// Wires the core's actors to the screens. Every decision is in PortariaClient; this type
/// only calls it and publishes the screen states it returns.
@MainActor
final class AppModel: ObservableObject {
    enum Route { case login, home }

    @Published var route: Route = .login
    @Published var login = LoginState()
    @Published var home = HomeState()
    @Published var banner: String?
    @Published var callVisitID: VisitID?
    @Published var openedVisit: VisitID?
    @Published var biometricTitle: String?

    let baseURL: URL
    let secure: KeychainSecureStore
    let preferences: UserDefaultsPreferenceStore
    let biometricGate: KeychainBiometricGate
    let session: SessionManager
    let queue: ResolveQueue
    let registrar: DeviceRegistrar
    let realtime: RealtimeClient
    let calls: CallService
    let notifications: NotificationCenterAdapter
    private var pushToken: String?
    private var updatesTask: Task<Void, Never>?

    init() {
        let base = (Bundle.main.object(forInfoDictionaryKey: "PortariaServerURL") as? String).flatMap(URL.init(string:))
            ?? URL(string: "https://portaria.example.com")!
        baseURL = base
        // Locals first: a class may not read its own stored properties before all are set.
        let secure = KeychainSecureStore(), preferences = UserDefaultsPreferenceStore(), gate = KeychainBiometricGate()
        self.secure = secure
        self.preferences = preferences
        biometricGate = gate
        // With the gate, biometric unlock keeps the refresh token behind Face ID / Touch ID.
        let session = SessionManager(api: APIClient(baseURL: base), secure: secure, preferences: preferences,
                                     biometricGate: gate)
        self.session = session
        let group = (Bundle.main.object(forInfoDictionaryKey: "PortariaAppGroup") as? String)
            .flatMap { FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: $0) }
            ?? FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
        // The queue lives in the App Group container: the app and its extensions share it.
        let store: any ResolveQueueStore = (try? FileResolveQueueStore(directory: group.appendingPathComponent("queue").path))
            ?? InMemoryResolveQueueStore()
        queue = ResolveQueue(store: store, http: session, timeZone: { companyID in
            let selected = await session.selectedCompanyID
            guard let id = companyID ?? selected else { return ResolveQueue.defaultTimeZone }
            return await session.timeZone(companyID: id) ?? ResolveQueue.defaultTimeZone
        })
        registrar = DeviceRegistrar(http: session, state: FileDeviceRegistrationState(store: secure))
        let installation = FileDeviceRegistrationState(store: secure).installationID()
        realtime = RealtimeClient(baseURL: base, http: session, credentials: session, transport: URLSessionRealtimeTransport(),
                                  deviceID: installation)
        let userID = preferences.string(for: SessionKeys.userID) ?? ""
        let selected = preferences.string(for: SessionKeys.selectedCompany)
        let zone = selected.flatMap { preferences.string(for: SessionKeys.timeZone(companyID: $0)) }.flatMap(TimeZone.init(identifier:))
            ?? ResolveQueue.defaultTimeZone
        calls = CallService(userID: userID, deviceID: installation, timeZone: zone,
                            dependencies: CallServiceDependencies(session: session, queue: queue, registrar: registrar, realtime: realtime,
                                                                  receipts: PushReceiptSender(baseURL: base)))
        notifications = NotificationCenterAdapter(dependencies: .init(queue: queue, session: session))
        home = HomeState(timeZone: zone)
        // "Lembrar" keeps the username only; resuming without typing is biometric unlock's
        // job (decision 0017).
        Task {
            if let username = await session.rememberedUsername {
                login.username = username
                login.rememberMe = true
            }
            await refreshBiometricTitle()
        }
        notifications.open = { [weak self] intent in
            switch intent {
            case .openCall(let visitID): self?.callVisitID = VisitID(value: visitID)
            case .openVisit(let visitID): self?.openedVisit = VisitID(value: visitID)
            case .resolve, .ignore: break
            }
        }
        Task { if await session.isLoggedIn { self.enterHome() } }
    }

    // MARK: Login (login-ios.md)

    func submitPassword() {
        login.submitting()
        let username = login.username, password = login.password, remember = login.rememberMe
        Task {
            do {
                let result = try await session.login(username: username, password: password, rememberMe: remember)
                login.finished(result)
                if case .ready = result { enterHome() }
            } catch {
                login.failed(error)
            }
        }
    }

    func requestCode(phone: String) {
        login.submitting()
        Task {
            do {
                try await session.requestCode(phone: phone)
                login.codeSent(to: phone)
            } catch { login.failed(error) }
        }
    }

    func verifyCode(phone: String, code: String) {
        login.submitting()
        Task {
            do {
                let result = try await session.verifyCode(phone: phone, code: code)
                login.finished(result)
                if case .ready = result { enterHome() }
            } catch { login.failed(error) }
        }
    }

    func choose(_ company: CompanyGrant) {
        Task {
            do {
                _ = try await session.selectCompany(id: company.id)
                login.companyChosen(company)
                enterHome()
            } catch { login.failed(error) }
        }
    }

    func unlockWithBiometrics() {
        Task {
            do {
                try await session.unlockWithBiometrics()
                enterHome()
            } catch SessionManager.SessionError.locked {
                // Cancelled at the prompt: stay on the login screen, quietly.
            } catch {
                await refreshBiometricTitle()
                banner = ClientText.loginError(error)
            }
        }
    }

    func setBiometricUnlock(_ on: Bool) {
        Task {
            do {
                if on { try await session.enableBiometricUnlock() } else { try await session.disableBiometricUnlock() }
            } catch {
                banner = "Biometria indisponível neste aparelho"
            }
            await refreshBiometricTitle()
        }
    }

    /// "Entrar com Face ID" while a stored session can be resumed with biometry.
    private func refreshBiometricTitle() async {
        guard await session.canUnlockWithBiometrics else { biometricTitle = nil; return }
        biometricTitle = ClientText.biometricAction(await biometricGate.availability())
    }

    private func enterHome() {
        route = .home
        Task {
            _ = try? await session.me()   // the condominium's time zone for sentences
            await registerDevice()
        }
        startRealtime()
        Task { _ = await notifications.requestAuthorization() }
    }

    func logout() {
        Task {
            // Unregister while the access token still works, then end the session.
            _ = await registrar.unregister()
            try? await session.logout()
            await realtime.stop()
            route = .login
            login = LoginState()
        }
    }

    // MARK: Devices

    func pushTokenChanged(_ token: String) {
        pushToken = token
        Task {
            guard await session.isLoggedIn else { return }
            _ = await registrar.pushTokenChanged(token, until: Date().addingTimeInterval(60))
        }
    }

    private func registerDevice() async {
        guard let pushToken else { return }   // registered when the token arrives
        let settings = await UNUserNotificationCenter.current().notificationSettings()
        let tokens = DeviceRegistrar.Tokens(
            platform: "ios", pushToken: pushToken, voipToken: nil,
            appVersion: Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String,
            deviceName: UIDevice.current.model, locale: "pt-BR",
            capabilities: DeviceCapabilities(notificationsEnabled: settings.authorizationStatus == .authorized,
                                             manufacturer: "Apple", osVersion: UIDevice.current.systemVersion))
        // `completed` adds the VoIP token the installation already has (decision 0014).
        _ = await registrar.register(await registrar.completed(tokens), until: Date().addingTimeInterval(60))
    }

    // MARK: Realtime and lifecycle

    private func startRealtime() {
        guard updatesTask == nil else { return }
        let realtime = realtime
        updatesTask = Task {
            await realtime.start()
            // The one reader of the stream: Home and the call service both need it.
            for await update in realtime.updates {
                home.apply(update, now: Date())
                calls.realtimeUpdate(update)
            }
        }
    }

    func foreground() {
        guard route == .home else { return }
        Task {
            await realtime.foreground()
            _ = await queue.sync(until: Date().addingTimeInterval(20))
            home.setQueued((try? await queue.pending()) ?? [])
        }
    }

    func background() {
        // A ringing call keeps the socket (cancellations travel there); otherwise push is
        // the channel while in the background.
        guard !calls.coordinator.needsRealtime else { return }
        Task { await realtime.stop() }
    }

    func backgroundPush(_ json: Data) {
        guard case .ringCancelled(let push)? = try? PushPayload.decode(json: json) else { return }
        UNUserNotificationCenter.current().removeDeliveredNotifications(withIdentifiers: [push.visitID])
        calls.handle(.callEnded(visitID: push.visitID))
    }

    // MARK: Decisions from the app

    func resolve(_ visitID: String, _ action: ResolutionAction) {
        Task {
            let company = await session.selectedCompanyID
            do {
                let report = try await queue.resolve(visitID: visitID, action: action, via: .app, companyID: company,
                                                     until: Date().addingTimeInterval(20))
                banner = report.sentence
            } catch {
                banner = "Não foi possível guardar sua decisão. Tente de novo"
            }
            home.setQueued((try? await queue.pending()) ?? [])
        }
    }
}
