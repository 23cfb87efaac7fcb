import Foundation
import PortariaCore

/// What the registrar remembers between launches.
public protocol DeviceRegistrationState: Sendable {
    /// Stable for the life of the installation (not per user): the server's upsert key.
    /// Made on first use.
    func installationID() -> String
    func lastRegistration() -> DeviceRegistrar.Registered?
    func setLastRegistration(_ registered: DeviceRegistrar.Registered?)
}

/// Registers this installation's push tokens (`POST /v1/devices`) at login and whenever the
/// system issues a new token — an expired token is the first cause of "não recebi a
/// chamada" — and unregisters it at logout (`DELETE /v1/devices/{id}`), so a logged-out
/// phone stops receiving pushes with visitor names.
///
/// - Registrations that would change nothing (same user, and the same body: tokens, facts,
///   capabilities) are skipped.
/// - An iOS registration always carries the VoIP token this installation has: a renewal
///   of the alert token alone would otherwise reach the server without `voip_token` and
///   the iPhone would stop ringing with the app closed. The registrar keeps the last VoIP
///   token and adds it to any iOS registration that lacks one.
/// - Failures that may pass (no network, 429, 5xx) are retried with backoff until the
///   caller's deadline; the shell calls `register` again on the next launch or wake.
public actor DeviceRegistrar {
    /// Set by `voipTokenInvalidated()`: the kept VoIP token is dead.
    private var voipInvalidated = false
    /// The last registration the server accepted.
    public struct Registered: Sendable, Equatable, Codable {
        public var deviceID: String
        public var userID: String
        /// The `POST /v1/devices` body it accepted: a renewal changes one token in it.
        public var registration: DeviceRegistration
        public var registeredAt: Date
    }

    public enum Outcome: Sendable, Equatable {
        case registered(deviceID: String)
        /// Nothing changed since the last accepted registration: nothing was sent.
        case unchanged(deviceID: String)
        /// Not accepted (yet); `reason` is for logs.
        case failed(String)
    }

    public enum UnregisterOutcome: Sendable, Equatable {
        case unregistered(deviceID: String)
        case notRegistered
        case failed(String)
    }

    private let http: any AuthorizedHTTP
    private let state: any DeviceRegistrationState
    private let clock: any ClientClock
    private let random: RandomSource
    private let policy: RetryPolicy

    public init(http: any AuthorizedHTTP, state: any DeviceRegistrationState, clock: any ClientClock = SystemClock(),
                random: RandomSource = .system, policy: RetryPolicy = .standard) {
        self.http = http
        self.state = state
        self.clock = clock
        self.random = random
        self.policy = policy
    }

    /// The server's id of this device once registered (the realtime `device_id` and the
    /// `POST /answer` body use the installation id instead, which exists before).
    public var deviceID: String? { state.lastRegistration()?.deviceID }
    public var installationID: String { state.installationID() }

    /// Registers (or renews) this phone's tokens until accepted, a permanent refusal, or
    /// `deadline`.
    public func register(_ facts: DeviceFacts, pushToken: String, voipToken: String? = nil,
                         until deadline: Date?) async -> Outcome {
        let registration = DeviceRegistration(installationID: state.installationID(), platform: facts.platform,
                                              pushToken: pushToken, voipToken: voipToken, appVersion: facts.appVersion,
                                              deviceName: facts.deviceName, locale: facts.locale, capabilities: facts.capabilities)
        return await send(registration, until: deadline)
    }

    /// PushKit invalidated the VoIP token: registrations stop carrying the one kept from
    /// earlier, until a registration brings a new one. (The server keeps a token a
    /// registration omits; APNs' Unregistered answer retires it there.)
    public func voipTokenInvalidated() {
        voipInvalidated = true
    }

    /// What will be sent for `registration`: the VoIP token kept from earlier on iOS
    /// (unless PushKit invalidated it since).
    private func completed(_ registration: DeviceRegistration) -> DeviceRegistration {
        var registration = registration
        if registration.voipToken != nil { voipInvalidated = false }
        if !voipInvalidated, registration.platform == "ios", registration.voipToken == nil, let last = state.lastRegistration()?.registration,
           last.platform == "ios", let voip = last.voipToken {
            registration.voipToken = voip
        }
        return registration
    }

    private func send(_ requested: DeviceRegistration, until deadline: Date?) async -> Outcome {
        guard let userID = await http.userID else { return .failed("not logged in") }
        let body = completed(requested)
        if let last = state.lastRegistration(), last.userID == userID, last.registration == body {
            return .unchanged(deviceID: last.deviceID)
        }
        guard let request = try? ClientHTTPRequest(APIRoutes.registerDevice.endpoint, json: body) else { return .failed("unencodable registration") }
        var failures = 0
        while true {
            var retryAfter: TimeInterval?
            var reason: String
            do {
                let answer = try await http.sendAuthorized(request)
                if answer.isSuccess, let device = try? JSONCoding.decoder().decode(DeviceView.self, from: answer.body) {
                    state.setLastRegistration(Registered(deviceID: device.id, userID: userID, registration: body, registeredAt: clock.now()))
                    return .registered(deviceID: device.id)
                }
                reason = "HTTP \(answer.status) \(answer.errorBody?.code.rawValue ?? "")"
                let transient = answer.status == 408 || answer.status == 429 || answer.status >= 500 || answer.errorBody == nil
                guard transient else { return .failed(reason) }
                retryAfter = answer.header("retry-after").flatMap { RetryAfterHeader.seconds($0, now: clock.now()) }
            } catch is SessionManager.SessionError {
                return .failed("session ended")
            } catch {
                reason = String(describing: error)
            }
            failures += 1
            let wait = policy.delay(afterFailures: failures, retryAfter: retryAfter, random: random.next())
            if let deadline, clock.now().addingTimeInterval(wait) > deadline { return .failed(reason) }
            do { try await clock.sleep(for: wait) } catch { return .failed(reason) }
        }
    }

    /// A new alert/FCM token from the system: registers it with everything else unchanged.
    public func pushTokenChanged(_ token: String, until deadline: Date?) async -> Outcome {
        guard var registration = state.lastRegistration()?.registration else { return .failed("no registration to renew") }
        registration.pushToken = token
        return await send(registration, until: deadline)
    }

    /// A new PushKit token (iOS): registers it with the current alert token.
    public func voipTokenChanged(_ token: String, until deadline: Date?) async -> Outcome {
        guard var registration = state.lastRegistration()?.registration else { return .failed("no registration to renew") }
        registration.voipToken = token
        return await send(registration, until: deadline)
    }

    /// Deletes this device on the server (before the session ends: it needs the token).
    /// A 404 means the server no longer has it: the goal is reached either way.
    public func unregister() async -> UnregisterOutcome {
        guard let last = state.lastRegistration() else { return .notRegistered }
        do {
            let answer = try await http.sendAuthorized(try ClientHTTPRequest(APIRoutes.deleteDevice(id: last.deviceID)))
            guard answer.isSuccess || answer.status == 404 else {
                return .failed("HTTP \(answer.status) \(answer.errorBody?.code.rawValue ?? "")")
            }
            state.setLastRegistration(nil)
            return .unregistered(deviceID: last.deviceID)
        } catch {
            return .failed(String(describing: error))
        }
    }
}

/// Registration state in the session's `SecureStore` (the terminal client's file, the
/// Keychain on iOS via PortariaClientApple).
public struct FileDeviceRegistrationState: DeviceRegistrationState {
    let store: any SecureStore
    public init(store: any SecureStore) { self.store = store }

    public func installationID() -> String {
        if let existing = try? store.string(for: "installation_id"), !existing.isEmpty { return existing }
        let made = UUID().uuidString.lowercased()
        try? store.set(made, for: "installation_id")
        return made
    }

    public func lastRegistration() -> DeviceRegistrar.Registered? {
        guard let text = try? store.string(for: "device_registration") else { return nil }
        return try? JSONCoding.decoder().decode(DeviceRegistrar.Registered.self, from: Data(text.utf8))
    }

    public func setLastRegistration(_ registered: DeviceRegistrar.Registered?) {
        let text = registered.flatMap { try? JSONCoding.encoder().encode($0) }.map { String(decoding: $0, as: UTF8.self) }
        try? store.set(text, for: "device_registration")
    }
}

/// For tests.
public final class InMemoryDeviceRegistrationState: DeviceRegistrationState {
    private let state = Locked<(id: String?, last: DeviceRegistrar.Registered?)>((nil, nil))
    public init() {}
    public func installationID() -> String {
        state.withLock { state in
            if let id = state.id { return id }
            let made = UUID().uuidString.lowercased()
            state.id = made
            return made
        }
    }
    public func lastRegistration() -> DeviceRegistrar.Registered? { state.withLock { $0.last } }
    public func setLastRegistration(_ registered: DeviceRegistrar.Registered?) { state.withLock { $0.last = registered } }
}
