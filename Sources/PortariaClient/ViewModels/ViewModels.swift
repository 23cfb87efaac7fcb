import Foundation
import Observation
import PortariaCore

// The screens' view models: plain observable state (`@Observable`, from the Swift
// standard library's Observation module — no UIKit, no SwiftUI; SwiftUI observes them
// directly, a UIKit shell uses `withObservationTracking`) and intents that call the core.
// They run on the main actor because that is where a screen reads them; the work they
// start runs in the core's actors.

/// The typed REST calls the screens need, over the session's authorized exchange (a 401
/// refreshes once). Non-2xx answers throw `APIClientError`, like `APIClient`.
public struct ResidentAPI: Sendable {
    let http: any AuthorizedHTTP

    public init(http: any AuthorizedHTTP) { self.http = http }

    func call<Response: Decodable>(_ method: String, _ path: String, body: (any Encodable)? = nil,
                                   as type: Response.Type = Response.self) async throws -> Response {
        var request = ClientHTTPRequest(method: method, path: path)
        if let body {
            request.body = try JSONCoding.encoder().encode(body)
            request.headers["Content-Type"] = "application/json"
        }
        let answer: ClientHTTPResponse
        do { answer = try await http.sendAuthorized(request) } catch let error as TransportError {
            throw APIClientError.transport(error.detail)
        }
        return try APIClient.decode(data: answer.body, status: answer.status)
    }

    public func me() async throws -> MeResponse { try await call("GET", "/v1/me") }
    public func visit(_ id: String) async throws -> Visit { try await call("GET", "/v1/visits/\(id)") }
    public func unitSettings(_ unitID: String) async throws -> UnitSettingsResponse { try await call("GET", "/v1/units/\(unitID)/settings") }
    public func updateUnitSettings(_ unitID: String, _ settings: UnitSettings) async throws -> UnitSettingsResponse {
        try await call("PUT", "/v1/units/\(unitID)/settings", body: settings)
    }
    public func devices() async throws -> [DeviceView] { try await call("GET", "/v1/devices", as: DeviceList.self).devices }
    public func deleteDevice(_ id: String) async throws {
        let _: JSONValue = try await call("DELETE", "/v1/devices/\(id)")
    }

    /// A media file of a visit (`VisitDetailState.photoURL`, `voiceMessageURL`) with the
    /// session's bearer. Only URLs on the server's own origin reach here (the state drops
    /// others), so the bearer never leaves for another host; the path is sent as is.
    public func media(_ url: URL) async throws -> Data {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true), !components.path.isEmpty else {
            throw APIClientError.unexpected(status: 0)
        }
        let request = ClientHTTPRequest(method: "GET", path: components.path, query: components.queryItems ?? [])
        let answer: ClientHTTPResponse
        do { answer = try await http.sendAuthorized(request) } catch let error as TransportError {
            throw APIClientError.transport(error.detail)
        }
        guard answer.isSuccess else {
            if let body = answer.errorBody { throw APIClientError.server(status: answer.status, error: body) }
            throw APIClientError.unexpected(status: answer.status)
        }
        return answer.body
    }
}

// MARK: - Login

@MainActor @Observable
public final class LoginViewModel {
    public var state = LoginState()
    @ObservationIgnored let session: SessionManager
    @ObservationIgnored let biometrics: (any BiometricGate)?

    public init(session: SessionManager, biometrics: (any BiometricGate)? = nil) {
        self.session = session
        self.biometrics = biometrics
    }

    /// The screen appears: the remembered username, and Face ID when a session can be resumed.
    public func load() async {
        let username = await session.rememberedUsername
        var biometric: BiometricAvailability?
        if await session.canUnlockWithBiometrics, let biometrics { biometric = await biometrics.availability() }
        state.prefill(username: username, biometric: biometric)
    }

    public func use(_ method: LoginState.Method) { state.use(method) }

    /// The primary button: password login, send the SMS code, or verify it.
    public func submit() async {
        guard state.canSubmit else { return }
        switch (state.method, state.phase) {
        case (.password, _):
            state.submitting()
            do {
                state.finished(try await session.login(username: state.username.trimmingCharacters(in: .whitespaces),
                                                       password: state.password, rememberMe: state.rememberMe))
                state.password = ""
            } catch { state.failed(error) }
        case (.sms, .awaitingCode(let phone)):
            state.submitting()
            do { state.finished(try await session.verifyCode(phone: phone, code: state.code)) } catch { state.failed(error) }
        case (.sms, _):
            let phone = state.phone
            state.submitting()
            do {
                try await session.requestCode(phone: phone)
                state.codeSent(to: phone)
            } catch { state.failed(error) }
        }
    }

    public func chooseCompany(_ company: CompanyGrant) async {
        do {
            try await session.selectCompany(id: company.id)
            state.companyChosen(company)
        } catch { state.failed(error) }
    }

    /// "Entrar com Face ID": the gate prompts while reading the refresh token.
    public func unlockWithBiometrics() async {
        state.submitting()
        do {
            try await session.unlockWithBiometrics()
            let companies = await session.availableCompanies
            if let selected = await session.selectedCompanyID, let company = companies.first(where: { $0.id == selected }) {
                state.finished(.ready(company))
            } else {
                state.finished(.needsCompanySelection(companies))
            }
        } catch { state.failed(error) }
    }
}

// MARK: - Home

@MainActor @Observable
public final class HomeViewModel {
    public private(set) var state: HomeState
    /// The sentence of the last decision (a toast): success, someone else first, queued.
    public private(set) var lastOutcome: String?
    @ObservationIgnored let queue: ResolveQueue
    @ObservationIgnored let companyID: @Sendable () async -> String?
    @ObservationIgnored let now: @Sendable () -> Date

    public init(queue: ResolveQueue, timeZone: TimeZone, companyID: @escaping @Sendable () async -> String?,
                now: @escaping @Sendable () -> Date = { Date() }) {
        state = HomeState(timeZone: timeZone)
        self.queue = queue
        self.companyID = companyID
        self.now = now
    }

    /// Feed every `RealtimeClient` update here.
    public func apply(_ update: RealtimeClient.Update) { state.apply(update, now: now()) }

    /// A decision button on a row: written to the durable queue at once, then sent; the
    /// sentence is what the user reads (never a status code), and a decision that could
    /// not be sent stays listed as queued.
    public func resolve(visitID: String, action: ResolutionAction, until deadline: Date? = nil) async {
        do {
            let report = try await queue.resolve(visitID: visitID, action: action, companyID: await companyID(),
                                                 until: deadline ?? now().addingTimeInterval(30))
            lastOutcome = report.sentence
        } catch {
            lastOutcome = ClientText.queued(action, because: .needsLogin)
        }
        await refreshQueued()
    }

    /// What the queue still holds (call on launch and foreground, after `sync`).
    public func refreshQueued() async {
        state.setQueued((try? await queue.pending()) ?? [])
    }
}

// MARK: - Call

@MainActor @Observable
public final class CallViewModel {
    public private(set) var state: CallScreenState
    @ObservationIgnored let visitID: String
    @ObservationIgnored let dispatch: @MainActor (CallEvent) -> Void
    @ObservationIgnored let setMuted: @MainActor (Bool) -> Void
    @ObservationIgnored let makeKey: @Sendable () -> String

    /// - Parameters:
    ///   - dispatch: hands an event to the owner of the `IncomingCallCoordinator`, which
    ///     performs the effects and calls `update` with the new record.
    ///   - setMuted: the media layer's microphone switch.
    public init(record: CallRecord, dispatch: @escaping @MainActor (CallEvent) -> Void,
                setMuted: @escaping @MainActor (Bool) -> Void,
                makeKey: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() }) {
        state = CallScreenState(record)
        visitID = record.visitID
        self.dispatch = dispatch
        self.setMuted = setMuted
        self.makeKey = makeKey
    }

    /// The coordinator's record changed (visit details arrived, the phase moved).
    public func update(_ record: CallRecord) {
        state = CallScreenState(record, isMuted: state.isMuted, message: state.message)
    }

    /// The microphone changed outside this screen (CallKit's own mute button): the button
    /// follows without switching the microphone again.
    public func muteChanged(_ muted: Bool) {
        state.isMuted = muted
    }

    /// A `.show` effect: the sentence over the call screen ("João já atendeu às 14:32").
    public func show(_ message: String) {
        state.message = message
    }

    public func perform(_ intent: CallIntent) {
        if case .setMuted(let muted) = intent {
            state.isMuted = muted
            setMuted(muted)
            return
        }
        guard state.actions.contains(where: { $0.intent == intent }),
              let event = intent.event(visitID: visitID, key: makeKey()) else { return }
        dispatch(event)
    }
}

// MARK: - Visit detail

@MainActor @Observable
public final class VisitDetailViewModel {
    public private(set) var state: VisitDetailState?
    public private(set) var isLoading = false
    public private(set) var error: String?
    public private(set) var lastOutcome: String?
    @ObservationIgnored let visitID: String
    @ObservationIgnored let api: ResidentAPI
    @ObservationIgnored let queue: ResolveQueue
    @ObservationIgnored let baseURL: URL
    @ObservationIgnored let timeZone: TimeZone

    public init(visitID: String, api: ResidentAPI, queue: ResolveQueue, baseURL: URL, timeZone: TimeZone) {
        self.visitID = visitID
        self.api = api
        self.queue = queue
        self.baseURL = baseURL
        self.timeZone = timeZone
    }

    public func load() async {
        isLoading = true
        defer { isLoading = false }
        do {
            let visit = try await api.visit(visitID)
            state = VisitDetailState(visit, baseURL: baseURL, timeZone: timeZone)
            error = nil
        } catch {
            self.error = ClientText.loadError
        }
    }

    /// A decision from the detail screen: through the queue, then the visit is read again.
    public func resolve(_ action: ResolutionAction, companyID: String?, until deadline: Date? = nil) async {
        do {
            let report = try await queue.resolve(visitID: visitID, action: action, companyID: companyID,
                                                 until: deadline ?? Date().addingTimeInterval(30))
            lastOutcome = report.sentence
        } catch {
            lastOutcome = ClientText.queued(action, because: .needsLogin)
        }
        await load()
    }
}

// MARK: - Settings

@MainActor @Observable
public final class SettingsViewModel {
    public var state = SettingsState()
    @ObservationIgnored let api: ResidentAPI

    public init(api: ResidentAPI, thisDeviceID: String?) {
        self.api = api
        state.thisDeviceID = thisDeviceID
    }

    /// The shell reports what the OS says (on launch, on foreground).
    public func setNotificationStatuses(_ statuses: [NotificationStatus]) { state.notificationStatuses = statuses }

    /// The user's unit (the first of `GET /v1/me`), its settings, and the user's devices.
    public func load() async {
        state.isLoading = true
        defer { state.isLoading = false }
        do {
            let me = try await api.me()
            if let unit = me.units.first {
                state.loaded(try await api.unitSettings(unit.id), unitLabel: unit.label)
            }
            state.loaded(devices: try await api.devices())
            state.error = nil
        } catch {
            state.error = ClientText.loadError
        }
    }

    public func setDeliveryRule(_ rule: DeliveryRule) async {
        guard var settings = state.settings else { return }
        settings.deliveryRule = rule
        await save(settings)
    }

    public func setRingMode(_ mode: RingMode) async {
        guard var settings = state.settings else { return }
        settings.ringMode = mode
        await save(settings)
    }

    /// Moves a resident up (−1) or down (+1) the ring order.
    public func moveResident(_ residentID: String, by offset: Int) async {
        guard let settings = state.movingResident(residentID, by: offset) else { return }
        await save(settings)
    }

    public func removeDevice(_ id: String) async {
        let before = state.devices
        state.loaded(devices: before.filter { $0.id != id })
        do {
            try await api.deleteDevice(id)
            state.error = nil
        } catch {
            state.loaded(devices: before)
            state.error = ClientText.settingsSaveError(error)
        }
    }

    /// Optimistic: the screen shows the change at once, and the server's answer (or the
    /// old value, with a sentence, when it refuses) replaces it.
    private func save(_ settings: UnitSettings) async {
        guard let unitID = state.unitID, let before = state.settings else { return }
        state.set(settings)
        state.isSaving = true
        defer { state.isSaving = false }
        do {
            let saved = try await api.updateUnitSettings(unitID, settings)
            state.loaded(saved, unitLabel: state.unitLabel)
            state.error = nil
        } catch {
            state.set(before)
            state.error = ClientText.settingsSaveError(error)
        }
    }
}
