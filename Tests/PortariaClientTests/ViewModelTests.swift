import Foundation
import Observation
@testable import PortariaClient
import PortariaCore
import Testing

/// A biometric Keychain item in memory: `unlock` answers as scripted.
final class FakeBiometricGate: BiometricGate, @unchecked Sendable {
    enum Answer { case allow, cancel, invalidated }
    let secret = Locked<String?>(nil)
    let answer: Locked<Answer>
    let kind: BiometricAvailability
    init(kind: BiometricAvailability = .faceID, answer: Answer = .allow) {
        self.kind = kind
        self.answer = Locked(answer)
    }
    func availability() async -> BiometricAvailability { kind }
    func store(_ secret: String) async throws { self.secret.withLock { $0 = secret } }
    func unlock(reason: String) async throws -> String? {
        switch answer.current {
        case .allow: return secret.current
        case .cancel: return nil
        case .invalidated: throw BiometricGateError.invalidated
        }
    }
    func clear() async throws { secret.withLock { $0 = nil } }
}

enum ServerFixtures {
    static let demo = CompanyGrant(id: "c-demo", name: "Residencial Demo", permissions: ["visits.resolve"],
                                   sectors: [SectorGrant(id: "s-1", name: "Moradores", permissions: ["devices.manage"])])
    static let azul = CompanyGrant(id: "c-azul", name: "Condomínio Azul", permissions: ["visits.resolve"], sectors: [])

    static func login(_ companies: [CompanyGrant], token: String = "jwt-1", refresh: String = "rt-1", master: Bool = false,
                      driver: Bool = true) -> ClientHTTPResponse {
        Fixtures.json(200, LoginResponse(jwtToken: token, refreshToken: refresh, expiresIn: 900, userID: "u-maria",
                                         master: master, driver: driver, companies: companies))
    }

    static func raw(_ status: Int, _ json: String) -> ClientHTTPResponse {
        ClientHTTPResponse(status: status, headers: ["content-type": "application/json"], body: Data(json.utf8))
    }

    static func session(_ http: ScriptedHTTP, secure: InMemorySecureStore = InMemorySecureStore(),
                        preferences: InMemoryPreferences = InMemoryPreferences(), gate: FakeBiometricGate? = nil) -> SessionManager {
        SessionManager(api: APIClient(baseURL: URL(string: "http://127.0.0.1:9")!, transport: http),
                       secure: secure, preferences: preferences, biometricGate: gate)
    }
}

@Suite("View models")
@MainActor
struct ViewModelTests {
    nonisolated static let zone = TimeZone(identifier: "America/Sao_Paulo")!

    // MARK: Login

    @Test("the primary button is enabled only for a complete step", arguments: [
        (LoginState.Method.password, "maria", "demo1234", "", "", true),
        (.password, "", "demo1234", "", "", false),
        (.password, "   ", "demo1234", "", "", false),
        (.password, "maria", "1234567", "", "", false),       // passwords are 8–128 characters
        (.password, "maria", String(repeating: "x", count: 129), "", "", false),
        (.sms, "", "", "+55 11 99999-0001", "", true),
        (.sms, "", "", "99999", "", false),
    ])
    func canSubmit(method: LoginState.Method, username: String, password: String, phone: String, code: String, expected: Bool) {
        var state = LoginState()
        state.use(method)
        state.username = username
        state.password = password
        state.phone = phone
        state.code = code
        #expect(state.canSubmit == expected)
    }

    @Test("password login: one company is ready at once; remembered username survives logout; the password is not kept")
    func passwordLogin() async throws {
        let http = ScriptedHTTP(user: nil)
        http.then({ _ in ServerFixtures.login([ServerFixtures.demo]) }, { _ in ServerFixtures.raw(204, "") })
        let preferences = InMemoryPreferences()
        let secure = InMemorySecureStore()
        let session = ServerFixtures.session(http, secure: secure, preferences: preferences)
        let model = LoginViewModel(session: session)
        model.state.username = " maria "
        model.state.password = "demo1234"
        model.state.rememberMe = true
        #expect(model.state.submitTitle == "Entrar")
        await model.submit()
        #expect(model.state.phase == .loggedIn(companyName: "Residencial Demo"))
        #expect(model.state.password.isEmpty)
        let sent = try JSONCoding.decoder().decode(LoginRequest.self, from: try #require(http.requests.first?.body))
        #expect(sent.username == "maria")
        #expect(!preferences.all.values.contains(.string("demo1234")))
        #expect(try secure.string(for: "password") == nil)

        try await session.logout()
        let again = LoginViewModel(session: session)
        await again.load()
        #expect(again.state.username == "maria")
        #expect(again.state.rememberMe)
        #expect(again.state.biometricAction == nil)
    }

    @Test("login errors are sentences, never statuses", arguments: [
        (ServerFixtures.raw(401, #"{"error":{"code":"INVALID_CREDENTIALS","message":"invalid credentials"}}"#), "Usuário ou senha incorretos"),
        (ServerFixtures.raw(429, #"{"error":{"code":"RATE_LIMITED","message":"slow down","retry_after":290}}"#), "Muitas tentativas. Tente de novo em 5 min"),
        // A value no server sends must not trap the conversion to minutes.
        (ServerFixtures.raw(429, #"{"error":{"code":"RATE_LIMITED","message":"slow down","retry_after":1e300}}"#), "Muitas tentativas. Tente de novo mais tarde"),
        (ServerFixtures.raw(503, #"<html>bad gateway</html>"#), "Não foi possível entrar agora. Tente de novo"),
    ])
    func loginErrors(answer: ClientHTTPResponse, sentence: String) async {
        let http = ScriptedHTTP(user: nil)
        http.then { _ in answer }
        let model = LoginViewModel(session: ServerFixtures.session(http))
        model.state.username = "maria"
        model.state.password = "wrong-password"
        await model.submit()
        #expect(model.state.error == sentence)
        #expect(model.state.phase == .editing)
        #expect(model.state.canSubmit)
    }

    @Test("SMS code: send → code step with a masked number; a wrong code keeps the step; the right one → company choice → in")
    func smsCode() async throws {
        let http = ScriptedHTTP(user: nil)
        http.then({ request in
            #expect(request.path == "/v1/auth/otp/send")
            return ServerFixtures.raw(202, "{}")
        }, { _ in ServerFixtures.raw(401, #"{"error":{"code":"INVALID_OTP","message":"invalid or expired code"}}"#) },
           { request in
            #expect(request.path == "/v1/auth/otp/verify")
            return Fixtures.json(200, OTPVerifyResponse(otpToken: "otp-1"))
        }, { request in
            #expect(request.path == "/v1/auth/generate_access_token")
            return ServerFixtures.login([ServerFixtures.demo, ServerFixtures.azul])
        })
        let preferences = InMemoryPreferences()
        let model = LoginViewModel(session: ServerFixtures.session(http, preferences: preferences))
        model.use(.sms)
        model.state.phone = "+5511999990001"
        #expect(model.state.submitTitle == "Enviar código")
        await model.submit()
        #expect(model.state.phase == .awaitingCode(phone: "+5511999990001"))
        #expect(model.state.notice == "Enviamos um código por SMS para •••••-0001. Ele vale por 10 minutos")
        #expect(model.state.submitTitle == "Confirmar código")
        #expect(!model.state.canSubmit)
        model.state.code = "123456"
        await model.submit()
        #expect(model.state.error == "Código inválido ou expirado")
        #expect(model.state.phase == .awaitingCode(phone: "+5511999990001"))
        model.state.code = "654321"
        await model.submit()
        #expect(model.state.phase == .choosingCompany([ServerFixtures.demo, ServerFixtures.azul]))
        await model.chooseCompany(ServerFixtures.demo)
        #expect(model.state.phase == .loggedIn(companyName: "Residencial Demo"))
        #expect(preferences.string(for: SessionKeys.selectedCompany) == "c-demo")
        #expect(Set(preferences.strings(for: SessionKeys.permissions)) == ["visits.resolve", "devices.manage"])
        let verify = try JSONCoding.decoder().decode(JSONValue.self, from: try #require(http.requests[2].body))
        #expect(verify == .object(["phone": "+5511999990001", "code": "654321"]))
    }

    // MARK: Session persistence (login-ios.md "Persistência")

    @Test("persisted keys: jwt_token in the secure store only, booleans as booleans, everything cleared at logout")
    func persistence() async throws {
        let http = ScriptedHTTP(user: nil)
        http.then({ _ in ServerFixtures.login([ServerFixtures.demo], master: false, driver: true) }, { _ in ServerFixtures.raw(204, "") })
        let secure = InMemorySecureStore(), preferences = InMemoryPreferences()
        let session = ServerFixtures.session(http, secure: secure, preferences: preferences)
        _ = try await session.login(username: "maria", password: "demo1234")

        #expect(try secure.string(for: SessionKeys.jwtToken) == "jwt-1")
        #expect(try secure.string(for: SessionKeys.refreshToken) == "rt-1")
        #expect(!preferences.all.values.contains(.string("jwt-1")), "no token in preferences")
        #expect(preferences.all[SessionKeys.master] == .bool(false))
        #expect(preferences.all[SessionKeys.driver] == .bool(true))
        #expect(preferences.all[SessionKeys.userID] == .string("u-maria"))
        #expect(preferences.all[SessionKeys.selectedCompany] == .string("c-demo"))
        #expect(preferences.all[SessionKeys.permissions] == .strings(["devices.manage", "visits.resolve"]))
        let driver = await session.isDriver, master = await session.isMaster
        #expect(driver && !master)

        try await session.logout()
        #expect(try secure.string(for: SessionKeys.jwtToken) == nil)
        #expect(try secure.string(for: SessionKeys.refreshToken) == nil)
        for key in [SessionKeys.permissions, SessionKeys.selectedCompany, SessionKeys.userID, SessionKeys.master, SessionKeys.driver,
                    SessionKeys.companies, SessionKeys.rememberMe, SessionKeys.rememberedUsername] {
            #expect(preferences.all[key] == nil, "\(key) survived logout")
        }
        #expect(await session.isLoggedIn == false)
    }

    @Test("booleans survive the terminal's file store as booleans")
    func fileStoreBooleans() throws {
        let path = try temporaryDirectory("prefs") + "/session.json"
        let preferences = SecureStorePreferences(store: FileSecureStore(path: path))
        preferences.set(true, for: SessionKeys.master)
        preferences.set(false, for: SessionKeys.driver)
        #expect(preferences.bool(for: SessionKeys.master) == true)
        #expect(preferences.bool(for: SessionKeys.driver) == false)
        preferences.remove(SessionKeys.master)
        #expect(preferences.bool(for: SessionKeys.master) == nil)
    }

    // MARK: Home

    @Test("row actions: a delivery's three, a visit's two, none once closed; each with its label", arguments: [
        (VisitKind.delivery, VisitStatus.unanswered, ["Autorizar: Loggi — Pedro", "Deixar na portaria: Loggi — Pedro", "Negar: Loggi — Pedro"]),
        (.visit, .ringing, ["Autorizar: Pedro", "Negar: Pedro"]),
        (.delivery, .resolved, []),
        (.visit, .expired, []),
    ])
    func rowActions(kind: VisitKind, status: VisitStatus, labels: [String]) {
        var home = HomeState(timeZone: Self.zone)
        let visit = Fixtures.visit(id: "v-1", kind: kind, status: status)
        home.apply(.snapshot(pending: status == .unanswered ? [visit] : [], recent: status == .unanswered ? [] : [visit]), now: Fixtures.at1432)
        let row = (home.pending + home.ringing + home.history).first
        #expect(row?.actions.map(\.accessibilityLabel) == labels)
    }

    @Test("Home resolve: the queue's sentence becomes the toast; a decision that cannot be sent stays listed")
    func homeResolve() async throws {
        let http = ScriptedHTTP(user: "u-me")
        http.then { _ in Fixtures.json(200, Fixtures.visit(id: "v-1", kind: .delivery, status: .resolved)) }
        let clock = VirtualClock()
        let queue = ResolveQueue(store: InMemoryResolveQueueStore(), http: http,
                                 clock: clock, random: .constant(0.5))
        let model = HomeViewModel(queue: queue, timeZone: Self.zone, companyID: { "c-demo" }, now: { clock.now() })
        await model.resolve(visitID: "v-1", action: .leaveAtConcierge)
        #expect(model.lastOutcome == "Entrega: deixar na portaria ✓")
        #expect(model.state.queued.isEmpty)
        // No network at all: retried until the deadline, then listed as queued.
        await model.resolve(visitID: "v-2", action: .authorize, until: clock.now().addingTimeInterval(5))
        #expect(model.lastOutcome == "Sem conexão com a portaria. Sua decisão (autorizar) foi guardada e será enviada assim que possível")
        #expect(model.state.queued.count == 1)
    }

    // MARK: Call

    @Test("call intents become coordinator events; mute never reaches the coordinator", arguments: [
        (CallIntent.answer, Optional(CallEvent.userAnswered(visitID: "v-1", idempotencyKey: "k-1"))),
        (.decide(.authorize), .decided(visitID: "v-1", .authorize)),
        (.decide(.deny), .decided(visitID: "v-1", .deny)),
        (.end, .userEnded(visitID: "v-1", idempotencyKey: "k-1")),
        (.setMuted(true), nil),
    ])
    func callIntents(intent: CallIntent, event: CallEvent?) {
        #expect(intent.event(visitID: "v-1", key: "k-1") == event)
    }

    nonisolated static func ringingRecord(kind: VisitKind = .visit, geofence: String = #"{"status":"away","distance_m":340}"#) throws -> CallRecord {
        var coordinator = IncomingCallCoordinator(myUserID: "u-me", deviceID: "d-1")
        let payload = try JSONCoding.decoder().decode(JSONValue.self, from: Data(#"""
            {"type":"visit.ring","push_id":"9d1c8f4e-0000-4000-8000-000000000001","visit_id":"5b0f3c2a-0000-4000-8000-000000000002",
             "caller_name":"Pedro","unit_label":"A-101","kind":"\#(kind.rawValue)","geofence":\#(geofence),
             "expires_at":"2030-01-01T00:00:00Z"}
            """#.utf8))
        _ = coordinator.handle(.voipPush(payload: payload, fallbackCallID: UUID()), now: Fixtures.at1432)
        return try #require(coordinator.calls.values.first)
    }

    @Test("call screen: the badge's text, colour and spoken label per geofence", arguments: [
        (#"{"status":"at_entrance","distance_m":12}"#, "✓ Na entrada", CallScreenState.BadgeColor.green, "Confirmado: Na entrada"),
        (#"{"status":"away","distance_m":340}"#, "⚠ A 340m da portaria", .amber, "Atenção: A 340 metros da portaria"),
        (#"{"status":"away","distance_m":1240}"#, "⚠ A 1,2km da portaria", .amber, "Atenção: A 1,2 quilômetros da portaria"),
        (#"{"status":"unknown"}"#, "Localização desconhecida", .gray, "Localização desconhecida"),
    ])
    func badge(geofence: String, text: String, color: CallScreenState.BadgeColor, spoken: String) throws {
        let screen = CallScreenState(try Self.ringingRecord(geofence: geofence))
        #expect(screen.badgeText == text)
        #expect(screen.badgeColor == color)
        #expect(screen.badgeAccessibilityLabel == spoken)
    }

    @Test("call view model: actions by phase, every action labelled, mute is local, the 409 sentence shows")
    func callViewModel() throws {
        var dispatched: [CallEvent] = []
        var muted: [Bool] = []
        let record = try Self.ringingRecord(kind: .delivery)
        let model = CallViewModel(record: record, dispatch: { dispatched.append($0) }, setMuted: { muted.append($0) }, makeKey: { "k" })
        #expect(model.state.actions.map(\.title) == ["Atender", "Autorizar", "Deixar na portaria", "Negar", "Mudo", "Encerrar"])
        #expect(model.state.actions.allSatisfy { !$0.accessibilityLabel.isEmpty })
        #expect(model.state.actions.filter(\.isPrimary).map(\.title) == ["Autorizar"])
        #expect(model.state.phaseText == "Chamando…")

        model.perform(.setMuted(true))
        #expect(muted == [true] && dispatched.isEmpty)
        #expect(model.state.actions.first { $0.title == "Ativar som" }?.accessibilityLabel == "Ativar o microfone")
        model.perform(.decide(.leaveAtConcierge))
        #expect(dispatched == [.decided(visitID: record.visitID, .leaveAtConcierge)])

        var answered = record
        answered.phase = .inCall
        model.update(answered)
        #expect(!model.state.actions.map(\.title).contains("Atender"))
        model.perform(.answer)   // no such button any more: nothing happens
        #expect(dispatched.count == 1)
        model.show("João já atendeu às 14:32")
        var ended = record
        ended.phase = .ended(.answeredElsewhere)
        model.update(ended)
        #expect(model.state.actions.isEmpty)
        #expect(model.state.phaseText == "Atendida em outro aparelho")
        #expect(model.state.message == "João já atendeu às 14:32")
    }

    // MARK: Visit detail

    @Test("location: distance and direction from the gate", arguments: [
        (GeofenceResult(status: .away, distanceM: 340, bearingDeg: 45), "A 340m da portaria, a nordeste"),
        (GeofenceResult(status: .away, distanceM: 340, bearingDeg: 0), "A 340m da portaria, a norte"),
        (GeofenceResult(status: .away, distanceM: 1240, bearingDeg: 200), "A 1,2km da portaria, a sul"),
        (GeofenceResult(status: .away, distanceM: 700, bearingDeg: 337), "A 700m da portaria, a noroeste"),
        (GeofenceResult(status: .away, distanceM: 700, bearingDeg: 338), "A 700m da portaria, a norte"),
        (GeofenceResult(status: .away, distanceM: 90, bearingDeg: nil), "A 90m da portaria"),
        (GeofenceResult(status: .atEntrance, distanceM: 12, bearingDeg: 90), "Na entrada (a 10m da portaria)"),
        (GeofenceResult(status: .unknown, distanceM: nil), "Localização desconhecida"),
    ])
    func location(geofence: GeofenceResult, text: String) {
        #expect(ClientText.location(geofence) == text)
    }

    @Test("compass points", arguments: [(0, "norte"), (22, "norte"), (23, "nordeste"), (90, "leste"), (135, "sudeste"),
                                        (180, "sul"), (225, "sudoeste"), (270, "oeste"), (315, "noroeste"), (359, "norte"), (-90, "oeste")])
    func compass(degrees: Int, name: String) {
        #expect(ClientText.compassPoint(degrees) == name)
    }

    @Test("media URLs: the server's own paths and host only", arguments: [
        ("/v1/visits/v-1/photo", Optional("https://portaria.example/v1/visits/v-1/photo")),
        ("https://portaria.example/v1/visits/v-1/photo", "https://portaria.example/v1/visits/v-1/photo"),
        ("https://evil.example/x.jpg", nil),
        ("http://portaria.example/v1/visits/v-1/photo", nil),
    ])
    func mediaURL(path: String, expected: String?) {
        #expect(VisitDetailState.resolve(path, against: URL(string: "https://portaria.example")!)?.absoluteString == expected)
    }

    @Test("visit detail: photo, location, voice message and the timeline in order, in the condominium's time")
    func visitDetail() throws {
        var visit = Fixtures.visit(id: "v-1", kind: .visit, status: .resolved,
                                   resolution: VisitResolution(action: .authorize, by: PersonRef(id: "u-j", name: "João Souza"),
                                                               at: Fixtures.at1432, via: .app))
        visit.geofence = GeofenceResult(status: .away, distanceM: 340, bearingDeg: 45)
        visit.photo = VisitMediaInfo(url: "/v1/visits/v-1/photo", contentType: "image/jpeg", byteSize: 1000, durationMs: nil, createdAt: Fixtures.at1432)
        visit.voiceMessage = VisitMediaInfo(url: "/v1/visits/v-1/voice_message", contentType: "audio/ogg", byteSize: 1000,
                                            durationMs: 75_400, createdAt: Fixtures.at1432)
        let maria = PersonRef(id: "u-m", name: "Maria Souza"), joao = PersonRef(id: "u-j", name: "João Souza")
        let t = Fixtures.at1432.addingTimeInterval(-60)
        visit.attempts = [
            VisitAttempt(id: "a3", kind: .timeout, user: maria, deviceID: nil, channel: "scheduler", step: 0, detail: nil, at: t.addingTimeInterval(20)),
            VisitAttempt(id: "a1", kind: .ring, user: maria, deviceID: nil, channel: "push", step: 0, detail: nil, at: t),
            VisitAttempt(id: "a2", kind: .pushReceipt, user: maria, deviceID: "d-1", channel: "push", step: nil, detail: nil, at: t.addingTimeInterval(1)),
            VisitAttempt(id: "a4", kind: .ring, user: joao, deviceID: nil, channel: "push", step: 1, detail: nil, at: t.addingTimeInterval(20)),
            VisitAttempt(id: "a5", kind: .resolution, user: joao, deviceID: nil, channel: "app", step: nil, detail: nil, at: Fixtures.at1432),
        ]
        let state = VisitDetailState(visit, baseURL: URL(string: "http://127.0.0.1:8080")!, timeZone: Self.zone)
        #expect(state.photoURL?.absoluteString == "http://127.0.0.1:8080/v1/visits/v-1/photo")
        #expect(state.photoAccessibilityLabel == "Foto tirada na portaria: Pedro")
        #expect(state.locationText == "A 340m da portaria, a nordeste")
        #expect(state.locationAccessibilityLabel == "A 340 metros da portaria, a nordeste")
        #expect(state.bearingDeg == 45)
        #expect(state.voiceMessageDurationText == "1min 15s")
        #expect(state.statusText == "João autorizou às 14:32")
        #expect(state.actions.isEmpty)
        #expect(state.timeline.map(\.text) == [
            "14:31 · Tocou para Maria (etapa 1)",
            "14:31 · Notificação recebida por Maria",
            "14:31 · Maria não atendeu",
            "14:31 · Tocou para João (etapa 2)",
            "14:32 · João autorizou",
        ])
    }

    @Test("the timeline names the decision as the web app does", arguments: [
        (ResolutionAction.authorize, ResolutionChannel.app, "app", "14:32 · João autorizou"),
        (.deny, .notification, "notification", "14:32 · João negou"),
        (.leaveAtConcierge, .app, "app", "14:32 · João pediu para deixar na portaria"),
        (.leaveAtConcierge, .auto, "auto", "14:32 · Deixado na portaria automaticamente"),
    ])
    func resolutionLine(action: ResolutionAction, via: ResolutionChannel, channel: String, expected: String) {
        let joao = PersonRef(id: "u-j", name: "João Souza")
        let attempt = VisitAttempt(id: "a1", kind: .resolution, user: via == .auto ? nil : joao, deviceID: nil, channel: channel,
                                   step: nil, detail: nil, at: Fixtures.at1432)
        let resolution = VisitResolution(action: action, by: joao, at: Fixtures.at1432, via: via)
        #expect(ClientText.attempt(attempt, timeZone: Self.zone, resolution: resolution) == expected)
    }

    // MARK: Settings

    nonisolated static func settingsResponse(rule: DeliveryRule = .ask, order: [String] = ["u-m", "u-j"]) -> UnitSettingsResponse {
        UnitSettingsResponse(unitID: "un-1", settings: UnitSettings(deliveryRule: rule, ringOrder: order, ringMode: .sequential),
                             residents: [PersonRef(id: "u-m", name: "Maria Souza"), PersonRef(id: "u-j", name: "João Souza")])
    }

    nonisolated static let me = #"{"user":{"id":"u-m","name":"Maria Souza","username":"maria"},"company":{"id":"c-demo","name":"Residencial Demo"},"profile":"resident","units":[{"id":"un-1","label":"A-101"}],"permissions":[]}"#

    nonisolated static func device(_ id: String, platform: String, name: String?) -> DeviceView {
        DeviceView(id: id, installationID: "i-\(id)", platform: platform, pushTokenStatus: "active", voipTokenStatus: nil, appVersion: nil,
                   deviceName: name, locale: nil, capabilities: DeviceCapabilities(), createdAt: Fixtures.at1432, updatedAt: Fixtures.at1432,
                   tokenRefreshedAt: Fixtures.at1432, lastPushAt: nil, lastAckAt: nil)
    }

    @Test("settings: load, options, ring order moves, optimistic save rolled back with a sentence when refused")
    func settings() async throws {
        let http = ScriptedHTTP(user: "u-m")
        http.then({ _ in ServerFixtures.raw(200, Self.me) },
                  { _ in Fixtures.json(200, Self.settingsResponse()) },
                  { _ in Fixtures.json(200, DeviceList(devices: [Self.device("d-1", platform: "ios", name: "iPhone da Maria"),
                                                                 Self.device("d-2", platform: "android", name: nil)])) },
                  { request in
                      let sent = try JSONCoding.decoder().decode(UnitSettings.self, from: request.body ?? Data())
                      #expect(request.method == "PUT" && sent.ringOrder == ["u-j", "u-m"])
                      return Fixtures.json(200, Self.settingsResponse(order: ["u-j", "u-m"]))
                  },
                  { _ in Fixtures.error(403, "FORBIDDEN", "forbidden") },
                  { _ in ClientHTTPResponse(status: 204) })
        let model = SettingsViewModel(api: ResidentAPI(http: http), thisDeviceID: "d-1")
        await model.load()
        #expect(model.state.unitLabel == "A-101")
        #expect(model.state.deliveryRuleOptions.filter(\.isSelected).map(\.title) == ["Sempre me perguntar"])
        #expect(model.state.ringOrder.map(\.title) == ["1º Maria Souza", "2º João Souza"])
        #expect(model.state.ringOrder.map(\.canMoveUp) == [false, true])
        #expect(model.state.ringOrder[1].moveUpAccessibilityLabel == "Mover João Souza para cima na ordem de chamada")
        #expect(model.state.deviceRows.map(\.subtitle) == ["iPhone · Este aparelho", "Android"])
        #expect(model.state.deviceRows.map(\.title) == ["iPhone da Maria", "Aparelho sem nome"])
        #expect(model.state.deviceRows[1].removeAccessibilityLabel == "Remover o aparelho Aparelho sem nome")

        await model.moveResident("u-j", by: -1)
        #expect(model.state.ringOrder.map(\.title) == ["1º João Souza", "2º Maria Souza"])
        await model.moveResident("u-j", by: -1)   // already first: nothing sent
        await model.setDeliveryRule(.leaveAtConcierge)
        #expect(model.state.settings?.deliveryRule == .ask, "refused: the old rule is back")
        #expect(model.state.error == "Você não pode alterar as configurações desta unidade")
        await model.removeDevice("d-2")
        #expect(model.state.deviceRows.map(\.id) == ["d-1"])
        #expect(model.state.error == nil)
        #expect(http.requests.map { "\($0.method) \($0.path)" } == [
            "GET /v1/me", "GET /v1/units/un-1/settings", "GET /v1/devices", "PUT /v1/units/un-1/settings",
            "PUT /v1/units/un-1/settings", "DELETE /v1/devices/d-2",
        ])
    }

    @Test("notification status from what the phone reports", arguments: [
        (DeviceCapabilities(notificationsEnabled: true), "ios", true, [NotificationStatus.allowed]),
        (DeviceCapabilities(notificationsEnabled: true), "ios", false, [.noVoIPToken]),
        (DeviceCapabilities(notificationsEnabled: false), "ios", true, [.denied]),
        (DeviceCapabilities(), "android", false, [.notDetermined]),
        (DeviceCapabilities(notificationsEnabled: true, fullScreenIntentAllowed: false, ignoringBatteryOptimizations: false), "android", false,
         [.fullScreenIntentRevoked, .batteryOptimized]),
    ])
    func notificationStatus(capabilities: DeviceCapabilities, platform: String, voip: Bool, expected: [NotificationStatus]) {
        #expect(NotificationStatus.from(capabilities, platform: platform, hasVoIPToken: voip) == expected)
        var state = SettingsState()
        state.notificationStatuses = expected + [.allowed]
        #expect(state.notificationLines.first == .init(text: ClientText.notificationStatus(expected[0]), isProblem: expected[0].isProblem))
        #expect(state.notificationLines.last == .init(text: ClientText.notificationStatus(.allowed), isProblem: false))
    }

    // MARK: Observation

    @Test("screens observe their view model: a change of state notifies")
    func observable() async throws {
        let http = ScriptedHTTP(user: nil)
        http.then { _ in ServerFixtures.login([ServerFixtures.demo]) }
        let model = LoginViewModel(session: ServerFixtures.session(http))
        let changed = Locked(false)
        withObservationTracking { _ = model.state.phase } onChange: { changed.withLock { $0 = true } }
        model.state.username = "maria"
        model.state.password = "demo1234"
        #expect(changed.current)
    }
}
