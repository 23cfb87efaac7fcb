import Foundation
import PortariaCore

/// The caller of an authenticated request, in the company the request is about.
public struct Caller: Sendable {
    public var user: UserRecord
    public var sessionID: String
    public var membership: CompanyMembership
    public var permissions: Set<String>

    public var companyID: String { membership.company.id }
    public var unitIDs: Set<String> { Set(membership.units.map(\.id)) }
    public func has(_ permission: String) -> Bool { permissions.contains(permission) }
}

/// Turns `Authorization: Bearer …` and `X-Company-Id` into a `Caller`, or a 401/404.
public struct Authenticator: Sendable {
    public let database: any SQLDatabase
    public let jwt: JWTCodec
    public let accounts: AccountStore
    let sessions: SessionStore
    public var now: @Sendable () -> Date = { Date() }
    let verified = VerifiedTokenCache()

    public init(database: any SQLDatabase, jwt: JWTCodec) {
        self.database = database
        self.jwt = jwt
        self.accounts = AccountStore(database: database)
        self.sessions = SessionStore(database: database)
    }

    /// The verified token's user and session; the session must still be live, so logout
    /// and reuse detection take effect at once rather than when the token expires.
    public func authenticate(_ request: HTTPRequest) async throws -> (UserRecord, sessionID: String) {
        guard let header = request.header("authorization") else { throw HTTPError.unauthorized() }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw HTTPError.unauthorized("Authorization must be 'Bearer <jwt_token>'")
        }
        let claims: AccessClaims
        do { claims = try verified.verify(String(parts[1]), with: jwt, now: now()) } catch {
            throw HTTPError.unauthorized(error == .expired ? "token expired" : "invalid token")
        }
        guard let user = try await sessions.liveUser(sessionID: claims.sid, userID: claims.sub, at: now()) else {
            throw HTTPError.unauthorized("session ended")
        }
        return (user, claims.sid)
    }

    /// Whether the bearer is a visitor token (the gate page) rather than a JWT: visitor
    /// tokens are base64url and never contain the dots that separate a JWT's parts.
    public static func bearerIsVisitorToken(_ request: HTTPRequest) -> Bool {
        let credential = request.header("authorization")?.split(separator: " ", maxSplits: 1).last ?? ""
        return !credential.isEmpty && !credential.contains(".")
    }

    /// Whether a session is still usable (not revoked, not expired, user not disabled).
    public func sessionIsLive(_ sessionID: String) async throws -> Bool {
        try await sessions.isLive(sessionID: sessionID, at: now())
    }

    /// Authenticates and selects the company: `X-Company-Id`, or the only company the user
    /// has. A company the user is not in answers 404, as if it did not exist.
    public func caller(_ request: HTTPRequest, requiring permission: String? = nil) async throws -> Caller {
        let (user, sessionID) = try await authenticate(request)
        let requestedID: String
        if let requested = request.header("x-company-id") {
            requestedID = requested.trimmingCharacters(in: .whitespaces).lowercased()
        } else {
            let companies = try await accounts.companyIDs(userID: user.id)
            guard companies.count == 1 else {
                throw HTTPError(status: 400, code: .companyRequired,
                                message: companies.isEmpty ? "user belongs to no company"
                                    : "user belongs to several companies: send X-Company-Id",
                                details: ["field": .string("X-Company-Id")])
            }
            requestedID = companies[0]
        }
        guard let companyID = CompanyID(rawValue: requestedID),
              let membership = try await accounts.membership(userID: user.id, companyID: companyID.rawValue) else {
            throw HTTPError.notFound("company not found")
        }
        let caller = Caller(user: user, sessionID: sessionID, membership: membership,
                            permissions: membership.effectivePermissions)
        if let permission, !caller.has(permission) {
            throw HTTPError.forbidden("missing permission \(permission)")
        }
        return caller
    }
}
