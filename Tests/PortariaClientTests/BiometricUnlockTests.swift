import Foundation
@testable import PortariaClient
import PortariaCore
import Testing

/// Biometric unlock (decisions 0017, 0076): the gate opens the app's screens; the session
/// itself renews without it, so lock-screen work never waits for Face ID.
@Suite("Biometric unlock")
@MainActor
struct BiometricUnlockTests {
    @Test("biometric unlock: the gate holds an unlock secret; a relaunch resumes with Face ID; cancel and invalidation")
    func biometricUnlock() async throws {
        let http = ScriptedHTTP(user: nil)
        http.then({ _ in ServerFixtures.login([ServerFixtures.demo]) },
                  { request in
                      #expect(request.path == "/v1/auth/refresh")
                      #expect(request.body.map { String(decoding: $0, as: UTF8.self) }?.contains("rt-1") == true)
                      return ServerFixtures.login([ServerFixtures.demo], token: "jwt-2", refresh: "rt-2")
                  })
        let secure = InMemorySecureStore(), preferences = InMemoryPreferences(), gate = FakeBiometricGate()
        let session = ServerFixtures.session(http, secure: secure, preferences: preferences, gate: gate)
        _ = try await session.login(username: "maria", password: "demo1234")
        try await session.enableBiometricUnlock()
        #expect(try secure.string(for: SessionKeys.refreshToken) == "rt-1", "the refresh token stays readable for background work")
        let unlockSecret = try #require(gate.secret.current)
        #expect(unlockSecret != "rt-1" && unlockSecret.count >= 32, "the gate holds a random secret, not a token")
        #expect(preferences.all[SessionKeys.biometricUnlock] == .bool(true))

        // A relaunch: a new session object over the same stores.
        let relaunched = ServerFixtures.session(http, secure: secure, preferences: preferences, gate: gate)
        let model = LoginViewModel(session: relaunched, biometrics: gate)
        await model.load()
        #expect(model.state.biometricAction == "Entrar com Face ID")
        await model.unlockWithBiometrics()
        #expect(model.state.phase == .loggedIn(companyName: "Residencial Demo"))
        #expect(try secure.string(for: SessionKeys.refreshToken) == "rt-2", "rotated in the secure store")
        #expect(gate.secret.current == unlockSecret)

        gate.answer.withLock { $0 = .cancel }
        await model.unlockWithBiometrics()
        #expect(model.state.error == "Desbloqueio cancelado")
        #expect(gate.secret.current == unlockSecret, "cancelling loses nothing")

        gate.answer.withLock { $0 = .invalidated }
        await model.unlockWithBiometrics()
        #expect(model.state.error == "Sua sessão terminou. Entre novamente")
        #expect(gate.secret.current == nil)
        #expect(await relaunched.isLoggedIn == false)
    }

    @Test("Face ID unlock on, access token expired, no prompt possible (a lock-screen answer): the session renews without the gate")
    func backgroundRefreshWithBiometricUnlock() async throws {
        let http = ScriptedHTTP(user: nil)
        http.then({ _ in ServerFixtures.login([ServerFixtures.demo]) },
                  { request in
                      #expect(request.path == "/v1/visits/v-1/answer")
                      return ServerFixtures.raw(401, #"{"error":{"code":"UNAUTHORIZED","message":"expired"}}"#)
                  },
                  { request in
                      #expect(request.path == "/v1/auth/refresh")
                      #expect(request.body.map { String(decoding: $0, as: UTF8.self) }?.contains("rt-1") == true)
                      return ServerFixtures.login([ServerFixtures.demo], token: "jwt-2", refresh: "rt-2")
                  },
                  { request in
                      #expect(request.path == "/v1/visits/v-1/answer")
                      return ServerFixtures.raw(200, "{}")
                  })
        let secure = InMemorySecureStore(), preferences = InMemoryPreferences()
        // The gate cannot prompt on a locked phone (errSecInteractionNotAllowed: no secret).
        let gate = FakeBiometricGate(answer: .cancel)
        let session = ServerFixtures.session(http, secure: secure, preferences: preferences, gate: gate)
        _ = try await session.login(username: "maria", password: "demo1234")
        try await session.enableBiometricUnlock()
        // The VoIP wake: a process that has not been opened with Face ID since launch.
        let woken = ServerFixtures.session(http, secure: secure, preferences: preferences, gate: gate)
        let answer = try await woken.sendAuthorized(ClientHTTPRequest(method: "POST", path: "/v1/visits/v-1/answer"))
        #expect(answer.status == 200)
        #expect(try secure.string(for: SessionKeys.refreshToken) == "rt-2")
        #expect(await woken.canUnlockWithBiometrics, "the app's screens still open only with Face ID")
    }

    @Test("biometric unlock needs enrolled biometry", arguments: [BiometricAvailability.notEnrolled, .unavailable])
    func biometricNeedsEnrollment(kind: BiometricAvailability) async throws {
        let http = ScriptedHTTP(user: nil)
        http.then { _ in ServerFixtures.login([ServerFixtures.demo]) }
        let session = ServerFixtures.session(http, gate: FakeBiometricGate(kind: kind))
        _ = try await session.login(username: "maria", password: "demo1234")
        await #expect(throws: BiometricGateError.notEnabled) { try await session.enableBiometricUnlock() }
        #expect(await session.biometricUnlockEnabled == false)
    }
}
