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
    }

    private var api: APIClient
    private let secure: any SecureStore
    private let preferences: any PreferenceStore
    private var companies: [CompanyGrant] = []
    private var refreshing: Task<Void, any Error>?

    public init(api: APIClient, secure: any SecureStore, preferences: any PreferenceStore) {
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
    /// The server this session talks to.
    public nonisolated var baseURL: URL { baseURLValue }
    private nonisolated let baseURLValue: URL

    /// The company's time zone as `GET /v1/me` last said (`company.time_zone`), if known.
    public func timeZone(companyID: String) -> TimeZone? {
        preferences.string(for: SessionKeys.timeZone(companyID: companyID)).flatMap(TimeZone.init(identifier:))
    }

    public func login(username: String, password: String) async throws -> LoginResult {
        let body: LoginResponse = try await api.send("POST", "/v1/auth/login", body: LoginRequest(username: username, password: password))
        return try store(body)
    }

    public func requestCode(phone: String) async throws {
        let _: JSONValue = try await api.send("POST", "/v1/auth/otp/send", body: OTPSendRequest(phone: phone))
    }

    public func verifyCode(phone: String, code: String) async throws -> LoginResult {
        let verified: OTPVerifyResponse = try await api.send("POST", "/v1/auth/otp/verify", body: OTPVerifyRequest(phone: phone, code: code))
        let body: LoginResponse = try await api.send("POST", "/v1/auth/generate_access_token",
                                                     body: GenerateAccessTokenRequest(otpToken: verified.otpToken))
        return try store(body)
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

    private func store(_ body: LoginResponse) throws -> LoginResult {
        try secure.set(body.jwtToken, for: SessionKeys.jwtToken)
        try secure.set(body.refreshToken, for: SessionKeys.refreshToken)
        preferences.set(body.userID, for: SessionKeys.userID)
        preferences.set(body.master ? "true" : "false", for: SessionKeys.master)
        preferences.set(body.driver ? "true" : "false", for: SessionKeys.driver)
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
        guard let token = try secure.string(for: SessionKeys.refreshToken) else { throw SessionError.notLoggedIn }
        do {
            let body: LoginResponse = try await api.send("POST", "/v1/auth/refresh", body: RefreshRequest(refreshToken: token))
            _ = try store(body)
        } catch APIClientError.server(let status, _) where status == 401 {
            try clear()
            throw SessionError.sessionEnded
        }
    }

    /// An authenticated call; on 401 it refreshes once and retries.
    public func send<Response: Decodable & Sendable>(_ method: String, _ path: String, body: (any Encodable & Sendable)? = nil,
                                                     headers: [String: String] = [:], as type: Response.Type = Response.self) async throws -> Response {
        do {
            return try await api.send(method, path, body: body, headers: headers)
        } catch APIClientError.server(let status, _) where status == 401 {
            try await refresh()
            return try await api.send(method, path, body: body, headers: headers)
        }
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
        let me: MeResponse = try await send("GET", "/v1/me")
        if let zone = me.company.timeZone, TimeZone(identifier: zone) != nil {
            preferences.set(zone, for: SessionKeys.timeZone(companyID: me.company.id))
        }
        return me
    }

    /// Ends the session on the server and forgets everything `login-ios.md` persists.
    /// (Unregistering the device is `DeviceRegistrar.unregister`, done before this while
    /// the access token still works.)
    public func logout() async throws {
        let token = try secure.string(for: SessionKeys.refreshToken)
        _ = try? await api.raw("POST", "/v1/auth/logout", body: LogoutRequest(refreshToken: token))
        try clear()
        for key in [SessionKeys.userID, SessionKeys.master, SessionKeys.driver, SessionKeys.selectedCompany, SessionKeys.companies] {
            preferences.set(nil, for: key)
        }
        api.companyID = nil
        companies = []
    }

    private func clear() throws {
        try secure.set(nil, for: SessionKeys.jwtToken)
        try secure.set(nil, for: SessionKeys.refreshToken)
        preferences.set([], for: SessionKeys.permissions)
        api.bearerToken = nil
    }
}
