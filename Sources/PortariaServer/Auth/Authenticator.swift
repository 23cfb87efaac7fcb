import Foundation
import PortariaCore

/// The caller of an authenticated request, in the company the request is about.
public struct Caller: Sendable {
    public var user: UserRecord
    public var sessionID: String
    public var membership: CompanyMembership
    public var permissions: Set<String>

    public var companyID: String { membership.company.id }
    /// The caller's own units (a resident's household). Typed: a path value that is not
    /// an id never reaches a comparison with them.
    public var unitIDs: Set<UnitID> { Set(membership.units.compactMap { UnitID(rawValue: $0.id) }) }
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
    /// The bearer checks' answers (decision 0043); `SessionCache.disabled` reads every time.
    let sessionCache: SessionCache

    public init(database: any SQLDatabase, jwt: JWTCodec) {
        self.init(database: database, jwt: jwt, sessionCache: .disabled)
    }

    init(database: any SQLDatabase, jwt: JWTCodec, sessionCache: SessionCache) {
        self.database = database
        self.jwt = jwt
        self.accounts = AccountStore(database: database)
        self.sessions = SessionStore(database: database)
        self.sessionCache = sessionCache
    }

    /// The cache for `database`: on SQLite on at once (its watcher sees every commit), on
    /// PostgreSQL off until the listener says it is connected (`SessionCache.setArmed`).
    /// `entries` 0 turns it off.
    static func sessionCache(for database: any SQLDatabase, entries: Int) throws -> SessionCache {
        guard entries > 0 else { return .disabled }
        if let sqlite = database as? SQLiteDatabase {
            return SessionCache(capacity: entries, armed: true, watcher: try SQLiteAuthWatcher(path: sqlite.path))
        }
        return SessionCache(capacity: entries, armed: false)
    }

    /// Forgets what is cached for a session this instance just ended, before the ending
    /// request answers (other instances hear of it through `portaria_auth`).
    public func sessionEnded(_ sessionID: String) {
        sessionCache.forget(session: sessionID)
    }

    /// The verified token's user and session; the session must still be live, so logout
    /// and reuse detection take effect at once rather than when the token expires.
    public func authenticate(_ request: HTTPRequest) async throws -> (UserRecord, sessionID: String) {
        let claims = try verifiedClaims(request)
        guard let user = try await sessions.liveUser(sessionID: claims.sid, userID: claims.sub, at: now()) else {
            throw HTTPError.unauthorized("session ended")
        }
        return (user, claims.sid)
    }

    /// The bearer's claims, checked (signature, expiry) but not yet against the session.
    private func verifiedClaims(_ request: HTTPRequest) throws -> AccessClaims {
        guard let header = request.header("authorization") else { throw HTTPError.unauthorized() }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw HTTPError.unauthorized("Authorization must be 'Bearer <jwt_token>'")
        }
        do { return try verified.verify(String(parts[1]), with: jwt, now: now()) } catch {
            throw HTTPError.unauthorized(error == .expired ? "token expired" : "invalid token")
        }
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
    /// has. A company the user is not in answers 404, as if it did not exist. The session
    /// and the membership are read in one `database.read`: two hand-offs to the read pool
    /// per authenticated request were a tenth of `GET /v1/me`'s CPU (decision 0051).
    public func caller(_ request: HTTPRequest, requiring permission: String? = nil) async throws -> Caller {
        let claims = try verifiedClaims(request)
        let sessionID = claims.sid
        let requested = request.header("x-company-id").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let at = now()
        let key = SessionCache.Key(sessionID: sessionID, company: requested)
        let (cached, ticket) = await sessionCache.lookup(key, userID: claims.sub, now: at)
        let facts: CallerFacts?
        if let cached {
            facts = cached
        } else {
            facts = try await database.read { db -> CallerFacts? in
                // An ended session reads nothing more: its answer is the 401 whatever the company.
                guard let (user, expiresAt) = try SessionStore.liveUserAndExpiry(db, sessionID: claims.sid, userID: claims.sub, at: at) else {
                    return nil
                }
                var requestedID = requested
                var companies: [String]?
                if requestedID == nil {
                    let all = try AccountStore.companyIDs(db, userID: user.id)
                    companies = all
                    requestedID = all.count == 1 ? all[0] : nil
                }
                guard let requestedID, let companyID = CompanyID(rawValue: requestedID) else {
                    return CallerFacts(user: user, companies: companies, membership: nil, sessionExpiresAt: expiresAt)
                }
                return CallerFacts(user: user, companies: companies,
                                   membership: try AccountStore.memberships(db, userID: user.id, companyID: companyID.rawValue).first,
                                   sessionExpiresAt: expiresAt)
            }
            // An ended session is not cached: it is never live again, and its 401 is cheap.
            if let facts, let ticket { sessionCache.store(facts, for: key, ticket: ticket, now: at) }
        }
        guard let facts else { throw HTTPError.unauthorized("session ended") }
        let (user, companies, membership) = (facts.user, facts.companies, facts.membership)
        if requested == nil, let companies, companies.count != 1 {
            throw HTTPError(status: 400, code: .companyRequired,
                            message: companies.isEmpty ? "user belongs to no company"
                                : "user belongs to several companies: send X-Company-Id",
                            details: ["field": .string("X-Company-Id")])
        }
        guard let membership else { throw HTTPError.notFound("company not found") }
        let caller = Caller(user: user, sessionID: sessionID, membership: membership,
                            permissions: membership.effectivePermissions)
        if let permission, !caller.has(permission) {
            throw HTTPError.forbidden("missing permission \(permission)")
        }
        return caller
    }
}
