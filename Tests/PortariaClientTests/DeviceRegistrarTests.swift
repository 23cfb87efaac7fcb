import Foundation
import PortariaClient
import PortariaCore
import Testing

@Suite("Device registrar")
struct DeviceRegistrarTests {
    static let apnsToken = String(repeating: "ab", count: 32)
    static let newApnsToken = String(repeating: "cd", count: 32)
    static let voipToken = String(repeating: "ef", count: 32)

    static func device(id: String = "d-1", installation: String) -> DeviceView {
        DeviceView(id: id, installationID: installation, platform: "ios", pushTokenStatus: "active", voipTokenStatus: "active",
                   appVersion: nil, deviceName: nil, locale: nil, capabilities: DeviceCapabilities(),
                   createdAt: Fixtures.at1432, updatedAt: Fixtures.at1432, tokenRefreshedAt: Fixtures.at1432, lastPushAt: nil, lastAckAt: nil)
    }

    static func registered(_ http: ScriptedHTTP) -> ScriptedHTTP.Handler {
        { request in
            let body = try JSONCoding.decoder().decode(DeviceRegistration.self, from: request.body ?? Data())
            return Fixtures.json(201, device(installation: body.installationID))
        }
    }

    static func bodies(_ http: ScriptedHTTP) throws -> [DeviceRegistration] {
        try http.requests.filter { $0.method == "POST" }.map { try JSONCoding.decoder().decode(DeviceRegistration.self, from: $0.body ?? Data()) }
    }

    @Test("a stable installation id; an identical re-registration sends nothing; another user registers again")
    func stableAndSkipped() async throws {
        let store = InMemorySecureStore()
        let http = ScriptedHTTP()
        http.then(Self.registered(http), Self.registered(http))
        let registrar = DeviceRegistrar(http: http, state: FileDeviceRegistrationState(store: store), clock: VirtualClock())
        let facts = DeviceFacts(platform: "ios", capabilities: DeviceCapabilities(notificationsEnabled: true, osVersion: "18.1"))
        #expect(await registrar.register(facts, pushToken: Self.apnsToken, voipToken: Self.voipToken, until: nil) == .registered(deviceID: "d-1"))
        #expect(await registrar.register(facts, pushToken: Self.apnsToken, voipToken: Self.voipToken, until: nil) == .unchanged(deviceID: "d-1"))
        #expect(http.requests.count == 1)

        // Relaunch: same installation id from the store.
        let again = DeviceRegistrar(http: http, state: FileDeviceRegistrationState(store: store), clock: VirtualClock())
        #expect(await again.installationID == (try Self.bodies(http)).first?.installationID)
        #expect(await again.register(facts, pushToken: Self.apnsToken, voipToken: Self.voipToken, until: nil) == .unchanged(deviceID: "d-1"))

        http.setUser("u-joao")
        #expect(await again.register(facts, pushToken: Self.apnsToken, voipToken: Self.voipToken, until: nil) == .registered(deviceID: "d-1"))
        let bodies = try Self.bodies(http)
        #expect(bodies.count == 2)
        #expect(Set(bodies.map(\.installationID)).count == 1)
        #expect(bodies[0].capabilities?.osVersion == "18.1")
    }

    @Test("an iOS renewal of the alert token alone still carries the VoIP token (else the iPhone stops ringing)")
    func iosRenewalKeepsVoip() async throws {
        let http = ScriptedHTTP()
        http.then(Self.registered(http), Self.registered(http), Self.registered(http))
        let registrar = DeviceRegistrar(http: http, state: InMemoryDeviceRegistrationState(), clock: VirtualClock())
        _ = await registrar.register(DeviceFacts(platform: "ios"), pushToken: Self.apnsToken, voipToken: Self.voipToken, until: nil)
        #expect(await registrar.pushTokenChanged(Self.newApnsToken, until: nil) == .registered(deviceID: "d-1"))
        // The shell forgetting the VoIP token in a later call does not drop it either.
        #expect(await registrar.register(DeviceFacts(platform: "ios"), pushToken: Self.apnsToken, until: nil) == .registered(deviceID: "d-1"))
        let bodies = try Self.bodies(http)
        #expect(bodies.map(\.pushToken) == [Self.apnsToken, Self.newApnsToken, Self.apnsToken])
        #expect(bodies.map(\.voipToken) == [Self.voipToken, Self.voipToken, Self.voipToken])
    }

    @Test("after PushKit invalidates the VoIP token, the registration drops it until a new one comes")
    func invalidatedVoipIsDropped() async throws {
        let http = ScriptedHTTP()
        http.then(Self.registered(http), Self.registered(http), Self.registered(http))
        let registrar = DeviceRegistrar(http: http, state: InMemoryDeviceRegistrationState(), clock: VirtualClock())
        _ = await registrar.register(DeviceFacts(platform: "ios"), pushToken: Self.apnsToken, voipToken: Self.voipToken, until: nil)
        await registrar.voipTokenInvalidated()
        #expect(await registrar.register(DeviceFacts(platform: "ios"), pushToken: Self.apnsToken, until: nil) == .registered(deviceID: "d-1"))
        let newVoip = String(repeating: "cd", count: 32)
        #expect(await registrar.register(DeviceFacts(platform: "ios"), pushToken: Self.apnsToken, voipToken: newVoip, until: nil)
                == .registered(deviceID: "d-1"))
        let bodies = try Self.bodies(http)
        #expect(bodies.map(\.voipToken) == [Self.voipToken, nil, newVoip])
    }

    @Test("retries through no network and 503 until accepted; a 400 is final")
    func retries() async throws {
        let http = ScriptedHTTP()
        http.then({ _ in throw TransportError("offline") },
                  { _ in Fixtures.error(503, "SERVICE_UNAVAILABLE", headers: ["Retry-After": "3"]) },
                  Self.registered(http))
        let clock = VirtualClock()
        let registrar = DeviceRegistrar(http: http, state: InMemoryDeviceRegistrationState(), clock: clock, random: .constant(0.5))
        #expect(await registrar.register(DeviceFacts(platform: "android"), pushToken: "fcm-token", until: nil) == .registered(deviceID: "d-1"))
        #expect(clock.sleeps == [0.75, 3])

        let refusing = ScriptedHTTP(fallback: { _ in Fixtures.error(400, "INVALID_REQUEST", details: ["field": "push_token"]) })
        let final = DeviceRegistrar(http: refusing, state: InMemoryDeviceRegistrationState(), clock: VirtualClock())
        #expect(await final.register(DeviceFacts(platform: "ios"), pushToken: "not-hex", until: nil) == .failed("HTTP 400 INVALID_REQUEST"))
        #expect(refusing.requests.count == 1)
    }

    @Test("logout unregisters: DELETE /v1/devices/{id}, then nothing is left to unregister")
    func unregister() async throws {
        let http = ScriptedHTTP()
        http.then(Self.registered(http), { _ in ClientHTTPResponse(status: 204) })
        let registrar = DeviceRegistrar(http: http, state: InMemoryDeviceRegistrationState(), clock: VirtualClock())
        _ = await registrar.register(DeviceFacts(platform: "android"), pushToken: "fcm-token", until: nil)
        #expect(await registrar.unregister() == .unregistered(deviceID: "d-1"))
        #expect(http.requests.last?.method == "DELETE")
        #expect(http.requests.last?.path == "/v1/devices/d-1")
        #expect(await registrar.unregister() == .notRegistered)
        #expect(await registrar.deviceID == nil)
    }
}
