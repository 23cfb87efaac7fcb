import Foundation
import PortariaClient
import PortariaCore
import PortariaTestSupport
import Testing

/// The resident app's wiring (`ResidentAppModel`, what the iOS shell renders) against the
/// real server: login to home, the device registered with a VoIP token that arrived
/// before login, the one realtime reader feeding Home and the call layer, logout that
/// unregisters the device.
@Suite("Resident app model end to end")
struct ResidentAppModelEndToEndTests {
    /// PushKit and APNs tokens are hex; the server checks the shape.
    static let voipToken = String(repeating: "ab", count: 32)
    static let pushToken = String(repeating: "cd", count: 32)

    @Test("joão: VoIP token before login → registered with it at login; live feed reaches Home and the call layer; logout deletes the device")
    func loginRegisterFeedLogout() async throws {
        try await TestServer.with(["--demo"]) { server in try await self.loginRegisterFeedLogout(server) }
    }

    @MainActor
    func loginRegisterFeedLogout(_ server: TestServer) async throws {
        do {
            let session = SessionManager(api: APIClient(baseURL: server.baseURL), secure: InMemorySecureStore(),
                                         preferences: InMemoryPreferences())
            let state = InMemoryDeviceRegistrationState()
            let realtime = RealtimeClient(baseURL: server.baseURL, http: session, credentials: session,
                                          transport: WebSocketRealtimeTransport(), deviceID: state.installationID())
            let model = ResidentAppModel(.init(
                session: session, queue: ResolveQueue(store: InMemoryResolveQueueStore(), http: session),
                registrar: DeviceRegistrar(http: session, state: state), realtime: realtime,
                deviceFacts: { DeviceFacts(platform: "ios", appVersion: "1.0", deviceName: "iPhone de teste", locale: "pt-BR",
                                           capabilities: DeviceCapabilities(notificationsEnabled: true)) }))
            var forwarded: [RealtimeClient.Update] = []
            model.onRealtimeUpdate = { forwarded.append($0) }
            var signedIn: String?
            model.onSignedIn = { userID, _ in signedIn = userID }
            var signedOut = false
            model.onSignedOut = { signedOut = true }

            // PushKit's token comes first, at launch, before anyone logs in.
            await model.launch()
            #expect(model.route == .login)
            await model.voipTokenChanged(Self.voipToken)
            await model.pushTokenChanged(Self.pushToken)
            #expect(model.registration == nil, "nothing is registered before login")

            model.login.state.username = "joao"
            model.login.state.password = "demo1234"
            await model.submitLogin()
            #expect(model.route == .home)
            #expect(signedIn != nil)
            guard case .registered(let deviceID)? = model.registration else {
                Issue.record("not registered: \(String(describing: model.registration))")
                return
            }
            let devices = try await ResidentAPI(http: session).devices()
            let device = try #require(devices.first { $0.id == deviceID })
            #expect(device.installationID == state.installationID())
            #expect(device.voipTokenStatus == "active", "the VoIP token that came before login was registered")
            #expect(device.pushTokenStatus == "active")
            #expect(model.settings.state.thisDeviceID == deviceID)
            #expect(model.settings.state.notificationStatuses == [.allowed])

            // One reader of the stream: Home lists the ring, the call layer sees the event.
            #expect(await eventually(within: .seconds(30)) { model.home.state.connection == .live }, "connection: \(model.home.state.connection)")
            let visitID = try await ClientQueueEndToEndTests.arrive(server, kind: "visit", name: "Pedro")
            #expect(await eventually(within: .seconds(30)) { model.home.state.ringing.contains { $0.id == visitID } })
            #expect(forwarded.contains { update in
                if case .event(.created, _, let data) = update { return data.visitID == visitID }
                return false
            })

            // PushKit invalidates the VoIP token: the phone forgets it and Settings says this
            // iPhone cannot ring with the app closed; the server keeps the token until APNs
            // answers Unregistered (a dead token is retired by APNs' answer, decision 0014).
            await model.voipTokenInvalidated()
            #expect(model.settings.state.notificationStatuses == [.noVoIPToken])
            let afterInvalidation = try #require(try await ResidentAPI(http: session).devices().first { $0.id == deviceID })
            #expect(afterInvalidation.pushTokenStatus == "active", "the alert token still rings it")

            // Logout: the device goes first (it needs the token), then the session; the call
            // layer is told (a VoIP push still in flight then shows nothing of the visit).
            await model.logout()
            #expect(signedOut)
            #expect(model.route == .login)
            #expect(model.home.state.ringing.isEmpty)
            let again = SessionManager(api: APIClient(baseURL: server.baseURL), secure: InMemorySecureStore(),
                                       preferences: InMemoryPreferences())
            _ = try await again.login(username: "joao", password: "demo1234")
            let left = try await ResidentAPI(http: again).devices()
            #expect(!left.contains { $0.id == deviceID }, "the logged-out phone is still registered: \(left.map(\.id))")
            await realtime.finish()
        }
    }
}
