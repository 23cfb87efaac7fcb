import Foundation
import PortariaCore

/// The login flow of `login-ios.md`, shared by every app shell: password or SMS code,
/// company selection, permission resolution (`perms_user`), token refresh.
///
/// An actor because refreshes must be serialized: the server treats a second use of a
/// refresh token as theft and revokes the session (RFC 9700), so two screens refreshing
/// at once would log the user out. Here concurrent callers share one refresh.
public actor SessionManager: AuthorizedHTTP, RealtimeCredentials {
    public enum LoginResult: Sendable, Equatable {
        /// One company (or the stored one): ready to use.
        case ready(CompanyGrant)
        /// Several companies: the app shows the selection modal, then calls `selectCompany`.
        case needsCompanySelection([CompanyGrant])
    }

    public enum SessionError: Error, Sendable, Equatable {
        case notLoggedIn
        case unknownCompany
        /// The server ended the session (logout elsewhere, refresh reuse, expiry).
        case sessionEnded
        /// Biometric unlock is on and the owner's biometry did not open the app (prompt
        /// cancelled or failed): nothing is lost, the next `unlockWithBiometrics` resumes
        /// the session.
        case locked
    }

    private var api: APIClient
    private let secure: any SecureStore
    private let preferences: any PreferenceStore
    private var companies: [CompanyGrant] = []
    private var refreshing: Task<Void, any Error>?
    private let biometricGate: (any BiometricGate)?

    /// - Parameter biometricGate: the device's biometric Keychain item (nil where there is
    ///   none, e.g. the terminal client): with it, `enableBiometricUnlock` keeps the refresh
    ///   token behind the owner's biometry.
    public init(api: APIClient, secure: any SecureStore, preferences: any PreferenceStore,
                biometricGate: (any BiometricGate)? = nil) {
        self.biometricGate = biometricGate
        var api = api
        api.bearerToken = try? secure.string(for: SessionKeys.jwtToken)
        api.companyID = preferences.string(for: SessionKeys.selectedCompany)
        self.api = api
        self.baseURLValue = api.baseURL
        self.secure = secure
        self.preferences = preferences
        // The company list of the last login, so the selection screen (and `portaria
        // client companies`) works after a relaunch without logging in again.
        if let text = preferences.string(for: SessionKeys.companies),
           let stored = try? JSONCoding.decoder().decode([CompanyGrant].self, from: Data(text.utf8)) {
            companies = stored
        }
    }

    /// The resolved permissions of the selected company (the spec's `perms_user`).
    public var permissions: Set<String> { Set(preferences.strings(for: SessionKeys.permissions)) }
    public var selectedCompanyID: String? { preferences.string(for: SessionKeys.selectedCompany) }
    public var availableCompanies: [CompanyGrant] { companies }
    /// The logged-in user, or nil.
    public var userID: String? { api.bearerToken == nil ? nil : preferences.string(for: SessionKeys.userID) }
    public var isLoggedIn: Bool { api.bearerToken != nil }
    /// The login's `master` and `driver` flags (booleans, as `login-ios.md` keeps them).
    public var isMaster: Bool { preferences.bool(for: SessionKeys.master) ?? false }
    public var isDriver: Bool { preferences.bool(for: SessionKeys.driver) ?? false }
    /// "Lembrar": the username to prefill, when the user asked to be remembered.
    public var rememberedUsername: String? {
        preferences.bool(for: SessionKeys.rememberMe) == true ? preferences.string(for: SessionKeys.rememberedUsername) : nil
    }
    /// Whether the refresh token lives behind the biometric gate.
    public var biometricUnlockEnabled: Bool { biometricGate != nil && preferences.bool(for: SessionKeys.biometricUnlock) == true }
    /// A stored session that only the owner's biometry can resume (launch screen: offer
    /// Face ID instead of the password).
    public var canUnlockWithBiometrics: Bool { biometricUnlockEnabled && preferences.string(for: SessionKeys.userID) != nil }
    /// The server this session talks to.
    public nonisolated var baseURL: URL { baseURLValue }
    private nonisolated let baseURLValue: URL

    /// The company's time zone as `GET /v1/me` last said (`company.time_zone`), if known.
    public func timeZone(companyID: String) -> TimeZone? {
        preferences.string(for: SessionKeys.timeZone(companyID: companyID)).flatMap(TimeZone.init(identifier:))
    }

    /// - Parameter rememberMe: keep the username for the next login ("Lembrar"). The
    ///   password is never stored: resuming without typing it is biometric unlock's job
    ///   (decision 0017).
    public func login(username: String, password: String, rememberMe: Bool = false) async throws -> LoginResult {
        let body = try await api.send(APIRoutes.login.endpoint, LoginRequest(username: username, password: password))
        preferences.set(rememberMe, for: SessionKeys.rememberMe)
        if rememberMe { preferences.set(username, for: SessionKeys.rememberedUsername) } else { preferences.remove(SessionKeys.rememberedUsername) }
        return try await store(body)
    }

    public func requestCode(phone: String) async throws {
        _ = try await api.send(APIRoutes.otpSend.endpoint, OTPSendRequest(phone: phone))
    }

    public func verifyCode(phone: String, code: String) async throws -> LoginResult {
        let verified = try await api.send(APIRoutes.otpVerify.endpoint, OTPVerifyRequest(phone: phone, code: code))
        let body = try await api.send(APIRoutes.generateAccessToken.endpoint, GenerateAccessTokenRequest(otpToken: verified.otpToken))
        return try await store(body)
    }

    /// Persists the company choice and its resolved permissions.
    @discardableResult
    public func selectCompany(id: String) throws -> Set<String> {
        guard let company = companies.first(where: { $0.id == id }) else { throw SessionError.unknownCompany }
        let permissions = company.effectivePermissions
        preferences.set(id, for: SessionKeys.selectedCompany)
        preferences.set(Permissions.sorted(permissions), for: SessionKeys.permissions)
        api.companyID = id
        return permissions
    }

    private func store(_ body: LoginResponse) async throws -> LoginResult {
        try secure.set(body.jwtToken, for: SessionKeys.jwtToken)
        try await storeRefreshToken(body.refreshToken)
        preferences.set(body.userID, for: SessionKeys.userID)
        preferences.set(body.master, for: SessionKeys.master)
        preferences.set(body.driver, for: SessionKeys.driver)
        api.bearerToken = body.jwtToken
        companies = body.companies
        if let data = try? JSONCoding.encoder().encode(body.companies) {
            preferences.set(String(decoding: data, as: UTF8.self), for: SessionKeys.companies)
        }
        if let stored = selectedCompanyID, body.companies.contains(where: { $0.id == stored }) {
            try selectCompany(id: stored)
            return .ready(body.companies.first { $0.id == stored }!)
        }
        if body.companies.count == 1 {
            try selectCompany(id: body.companies[0].id)
            return .ready(body.companies[0])
        }
        return .needsCompanySelection(body.companies)
    }

    /// Rotates the tokens unless someone already replaced `token` (the one that got the
    /// 401): callers that failed with the same old token share one rotation.
    public func refresh(replacing token: String) async throws {
        if let refreshing { return try await refreshing.value }
        guard api.bearerToken == token else { return }
        try await refresh()
    }

    /// Rotates the tokens; concurrent callers wait for the same rotation.
    public func refresh() async throws {
        if let refreshing { return try await refreshing.value }
        let task = Task { try await self.performRefresh() }
        refreshing = task
        defer { refreshing = nil }
        try await task.value
    }

    private func performRefresh() async throws {
        let token = try await readRefreshToken()
        do {
            let body = try await api.send(APIRoutes.refresh.endpoint, RefreshRequest(refreshToken: token))
            _ = try await store(body)
        } catch APIClientError.server(let status, _) where status == 401 {
            try await clear()
            throw SessionError.sessionEnded
        }
    }

    // MARK: Refresh token and the biometric gate (decision 0076)
    //
    // The refresh token always lives in the secure store (on iOS readable after the first
    // unlock since boot), so a VoIP wake or a notification button on a locked phone can
    // renew an expired access token — Face ID cannot be shown there. Biometric unlock gates
    // the app's screens instead: the gate holds a random unlock secret, and a launch with a
    // stored session opens only after the owner's biometry reads it.

    private func readRefreshToken() async throws -> String {
        if let token = try secure.string(for: SessionKeys.refreshToken) { return token }
        // An installation whose refresh token was kept behind the gate: read it there once
        // (this prompts, so only in the app) and move it back to the secure store.
        guard biometricUnlockEnabled, let gate = biometricGate else { throw SessionError.notLoggedIn }
        let token = try await unlockGate(gate)
        try secure.set(token, for: SessionKeys.refreshToken)
        try await gate.store(Self.unlockSecret())
        return token
    }

    private func storeRefreshToken(_ token: String) async throws {
        try secure.set(token, for: SessionKeys.refreshToken)
    }

    /// The gate's secret, prompting. Nil answer (cancelled, no UI): `.locked`; the
    /// enrolment changed: the session ends (only the password may open it now).
    private func unlockGate(_ gate: any BiometricGate) async throws -> String {
        do {
            guard let secret = try await gate.unlock(reason: ClientText.biometricReason) else { throw SessionError.locked }
            return secret
        } catch BiometricGateError.invalidated {
            try await clear()
            throw SessionError.sessionEnded
        } catch let error as SessionError {
            throw error
        } catch {
            throw SessionError.locked
        }
    }

    private static func unlockSecret() -> String { UUID().uuidString + UUID().uuidString }

    /// Turns biometric unlock on: from now on a launch with a stored session opens only with
    /// the owner's biometry. Background work (a call answered on the lock screen, a
    /// notification button) still renews the session without a prompt.
    public func enableBiometricUnlock() async throws {
        guard let gate = biometricGate else { throw BiometricGateError.notEnabled }
        switch await gate.availability() {
        case .faceID, .touchID, .biometric: break
        case .notEnrolled, .unavailable: throw BiometricGateError.notEnabled
        }
        guard try secure.string(for: SessionKeys.refreshToken) != nil else { throw SessionError.notLoggedIn }
        try await gate.store(Self.unlockSecret())
        preferences.set(true, for: SessionKeys.biometricUnlock)
    }

    /// Turns biometric unlock off (an installation that kept the refresh token behind the
    /// gate prompts once to take it back).
    public func disableBiometricUnlock() async throws {
        guard biometricUnlockEnabled, let gate = biometricGate else { return }
        _ = try await readRefreshToken()
        try await gate.clear()
        preferences.set(false, for: SessionKeys.biometricUnlock)
    }

    /// The launch with a stored session and biometric unlock on: prompts, rotates the
    /// tokens, and the session is live again. Throws `SessionError.locked` when the user
    /// cancelled, `.sessionEnded` when only the password can help now.
    public func unlockWithBiometrics() async throws {
        guard biometricUnlockEnabled, let gate = biometricGate else { throw BiometricGateError.notEnabled }
        if try secure.string(for: SessionKeys.refreshToken) == nil {
            _ = try await readRefreshToken()   // kept behind the gate: that read is the prompt
        } else {
            _ = try await unlockGate(gate)
        }
        try await refresh()
    }

    /// An authenticated exchange that returns every answer (the caller reads statuses and
    /// headers such as `Idempotent-Replayed` and `Retry-After`). A 401 refreshes the
    /// tokens once and resends; the bearer and the selected company are added unless the
    /// request names its own `X-Company-Id`.
    /// - Throws: `APIClientError.transport` when there is no answer,
    ///   `SessionError.notLoggedIn` / `.sessionEnded` when there is no session to use.
    public func sendAuthorized(_ request: ClientHTTPRequest) async throws -> ClientHTTPResponse {
        guard let token = api.bearerToken else { throw SessionError.notLoggedIn }
        let first = try await api.exchange(authorized(request, token: token))
        guard first.status == 401 else { return first }
        try await refresh(replacing: token)
        guard let fresh = api.bearerToken else { throw SessionError.sessionEnded }
        return try await api.exchange(authorized(request, token: fresh))
    }

    private func authorized(_ request: ClientHTTPRequest, token: String) -> ClientHTTPRequest {
        var request = request
        request.headers["Authorization"] = "Bearer \(token)"
        if !request.headers.keys.contains(where: { $0.lowercased() == "x-company-id" }), let companyID = api.companyID {
            request.headers["X-Company-Id"] = companyID
        }
        return request
    }

    public func realtimeHeaders() throws -> [String: String] {
        guard let token = api.bearerToken else { throw SessionError.notLoggedIn }
        var headers = ["Authorization": "Bearer \(token)"]
        if let companyID = api.companyID { headers["X-Company-Id"] = companyID }
        return headers
    }

    public func realtimeRejected(_ headers: [String: String]) async throws {
        guard let used = headers["Authorization"]?.dropFirst("Bearer ".count) else { return try await refresh() }
        try await refresh(replacing: String(used))
    }

    /// `GET /v1/me`; remembers the company's time zone for pt-BR times.
    public func me() async throws -> MeResponse {
        let me = try await send(APIRoutes.me.endpoint)
        if let zone = me.company.timeZone, TimeZone(identifier: zone) != nil {
            preferences.set(zone, for: SessionKeys.timeZone(companyID: me.company.id))
        }
        return me
    }

    /// Ends the session on the server and forgets everything `login-ios.md` persists.
    /// (Unregistering the device is `DeviceRegistrar.unregister`, done before this while
    /// the access token still works.)
    ///
    /// Cleared: `jwt_token` and the refresh token (secure store and biometric item),
    /// `perms_user`, `selected_company`, `user_id`, `master`, `driver`, the company list and
    /// the biometric flag. Kept: the remembered username when the user asked for it, the
    /// installation id (per install, not per user), per-company time zones (not personal).
    public func logout() async throws {
        // With biometric unlock on, the refresh token is behind the gate; the server-side
        // logout is attempted with the access token's session either way (a 401 is fine).
        let token = try secure.string(for: SessionKeys.refreshToken)
        let _: NoBody? = try? await api.send(APIRoutes.logout.endpoint, LogoutRequest(refreshToken: token))
        try await clear()
        for key in SessionKeys.clearedAtLogout { preferences.remove(key) }
        if preferences.bool(for: SessionKeys.rememberMe) != true {
            preferences.remove(SessionKeys.rememberMe)
            preferences.remove(SessionKeys.rememberedUsername)
        }
        api.companyID = nil
        companies = []
    }

    private func clear() async throws {
        try secure.set(nil, for: SessionKeys.jwtToken)
        try secure.set(nil, for: SessionKeys.refreshToken)
        try? await biometricGate?.clear()
        preferences.remove(SessionKeys.permissions)
        preferences.remove(SessionKeys.biometricUnlock)
        api.bearerToken = nil
    }
}
