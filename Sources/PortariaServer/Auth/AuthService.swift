import Foundation
import PortariaCore

/// Login by password and by SMS code, refresh rotation with reuse detection, logout.
/// Every rule here comes from docs/contract.md §4 "Security rules" (ASVS 5.0, RFC 8725, RFC 9700).
/// It speaks the domain: request bodies in, `LoginResponse`s out, refusals as `AuthError`;
/// the SQL lives in the stores (`AccountStore`, `SessionStore`, `OTPStore`, `RateLimiter`).
public struct AuthService: Sendable {
    public let database: any SQLDatabase
    public let accounts: AccountStore
    let sessions: SessionStore
    let codes: OTPStore
    public let limiter: RateLimiter
    public let secrets: ServiceSecrets
    public let hasher: PasswordHasher
    public let sms: any SmsSender
    public let log: Log
    public var loginLimitPerAccount: Int
    public var now: @Sendable () -> Date = { Date() }
    /// Told when a session ends here (logout, refresh-token reuse), so live sockets of
    /// that session close at once instead of at the next periodic check.
    public let sessionEnded: @Sendable (String) -> Void
    /// SMS codes being looked up, stored and sent after the answer; shutdown drains them
    /// before the database closes.
    let deliveries = TrackedTasks()

    public static let accessTokenLifetime: TimeInterval = 15 * 60
    public static let sessionLifetime: TimeInterval = 30 * 24 * 3600
    public static let loginWindow: TimeInterval = 15 * 60
    public static let otpLifetime: TimeInterval = 10 * 60
    public static let otpMaxAttempts = 5
    public static let otpTokenLifetime: TimeInterval = 5 * 60
    public static let otpSendWindow: TimeInterval = 10 * 60
    public static let otpSendsPerIP = 10
    public static let otpVerifiesPerIP = 30
    public static let day: TimeInterval = 86_400

    /// Limits of SMS codes (decisions 0013 and 0073). None of them lets a stranger who
    /// knows a phone number lock its owner out: wrong codes count per (phone, address), so
    /// only the guessing address is refused, and sends to a phone slow down to one an hour
    /// but never stop for the day. Guessing stays bounded per phone by the codes
    /// themselves: each dies after `otpMaxAttempts` tries, and a phone gets at most
    /// `sendsPerPhonePerDay` codes at the doubling gap, then one an hour.
    public struct OTPLimits: Sendable {
        /// Codes sent to one phone per 24 h at the doubling gap; past them, one an hour.
        public var sendsPerPhonePerDay = 10
        /// The wait before the second code of the day; it doubles with each further code,
        /// up to an hour (0 turns the doubling gap off; tests only).
        public var firstResendGap: TimeInterval = 30
        /// Wrong (or code-less) verifications of one phone from one address per 24 h; past
        /// that the address gets 429 for that phone — even with the right code — until the
        /// window ends. Other addresses (the owner's phone) are not affected.
        public var failuresPerPhonePerDay = 10
        public init() {}

        /// The longest wait between two codes to one phone.
        static let longestGap: TimeInterval = 3600

        /// The wait required after the `sent`-th code of the day before the next one.
        func gap(afterSends sent: Int) -> TimeInterval {
            if sent >= sendsPerPhonePerDay { return Self.longestGap }
            guard sent > 0, firstResendGap > 0 else { return 0 }
            return min(firstResendGap * pow(2, Double(min(sent - 1, 20))), Self.longestGap)
        }
    }
    public var otpLimits = OTPLimits()
    /// The country of a national phone number typed without `+` (`--default-country-code`).
    public var defaultCountryCode: Int

    public init(database: any SQLDatabase, secrets: ServiceSecrets, sms: any SmsSender,
                loginLimitPerAccount: Int = 10, otpLimits: OTPLimits = OTPLimits(), defaultCountryCode: Int = 55, log: Log = .shared,
                sessionEnded: @escaping @Sendable (String) -> Void = { _ in }) {
        self.database = database
        self.accounts = AccountStore(database: database)
        self.sessions = SessionStore(database: database)
        self.codes = OTPStore(database: database)
        self.limiter = RateLimiter(database: database)
        self.secrets = secrets
        self.hasher = PasswordHasher()
        self.sms = sms
        self.loginLimitPerAccount = loginLimitPerAccount
        self.otpLimits = otpLimits
        self.defaultCountryCode = defaultCountryCode
        self.log = log
        self.sessionEnded = sessionEnded
    }

    /// Failed logins from one address before 429: many people share a building's NAT,
    /// so this is wider than the per-account limit.
    var loginLimitPerIP: Int { loginLimitPerAccount * 10 }

    /// The first step-up pause; it doubles with each further `loginLimitPerAccount`
    /// failures of the account in the window, up to `maxStepUpDelay`.
    public var stepUpDelay: Duration = .seconds(1)
    public static let maxStepUpDelay: Duration = .seconds(8)

    // MARK: Password login

    /// Password login, throttled three ways (decision 0013):
    /// - per (account, address): `loginLimitPerAccount` failures per 15 min, then 429 from
    ///   that address only — a stranger who knows a username cannot lock its owner out;
    /// - per address: 10 × that, then 429 (one source guessing many accounts);
    /// - per account, across addresses: past `loginLimitPerAccount` failures the account
    ///   is *stepped up*, not refused: every attempt on it waits before its password is
    ///   checked (1 s, doubling up to 8 s), so the owner still gets in with the right
    ///   password from anywhere while guessing gets slower.
    /// Limits are checked with reads first (a refused attempt writes nothing), then the
    /// attempt is counted in one commit before the password check, so parallel guesses
    /// cannot outrun the count; a success takes its attempt back.
    public func login(_ body: LoginRequest, clientAddress: String) async throws -> LoginResponse {
        try require(!body.username.isEmpty, field: "username", "username is required")
        try require(body.username.utf8.count <= 128, field: "username", "username is too long")
        try require(!body.password.isEmpty, field: "password", "password is required")
        try require(body.password.utf8.count <= 1024, field: "password", "password is too long")
        let username = body.username.lowercased()
        let pairBucket = "login:user-ip:" + username + "|" + clientAddress
        let accountBucket = "login:user:" + username
        let ipBucket = "login:ip:" + clientAddress
        let pairLimit = loginLimitPerAccount
        let ipLimit = loginLimitPerIP

        let at = now()
        for (bucket, limit) in [(pairBucket, pairLimit), (ipBucket, ipLimit)] {
            let seen = try await limiter.peek(bucket, window: Self.loginWindow, now: at)
            if seen.count >= limit { throw Self.rateLimited(retryAfter: seen.retryAfter) }
        }
        let accountFailures = try await database.write { db -> Int in
            let pair = try RateLimiter.hit(db, pairBucket, window: Self.loginWindow, now: at)
            let address = try RateLimiter.hit(db, ipBucket, window: Self.loginWindow, now: at)
            // A parallel guess that got past the reads above: refused, and not counted.
            if pair.count > pairLimit { throw Self.rateLimited(retryAfter: pair.retryAfter) }
            if address.count > ipLimit { throw Self.rateLimited(retryAfter: address.retryAfter) }
            return try RateLimiter.hit(db, accountBucket, window: Self.loginWindow, now: at).count
        }
        if accountFailures > loginLimitPerAccount {
            let doublings = min((accountFailures - 1) / loginLimitPerAccount - 1, 3)
            let pause = min(stepUpDelay * (1 << doublings), Self.maxStepUpDelay)
            log.info("login step-up: account has many failed logins", ["pause_ms": .number(Double(pause.components.seconds * 1000 + pause.components.attoseconds / 1_000_000_000_000_000))])
            try await Task.sleep(for: pause)
        }

        let user = try await accounts.user(username: username)
        let usable = user.flatMap { $0.disabled ? nil : $0.passwordHash }
        let valid = await hasher.verify(body.password, against: usable)
        guard valid, let user else {
            log.info("login failed", ["ip": .string(clientAddress)])
            // The account it aimed at, when there is one: an admin sees guesses at a member.
            let failed = AuditEntry(actorUserID: nil, actorRole: "anonymous", action: "auth.login_failed", subjectUserID: user?.id,
                                    address: clientAddress, detail: ["method": .string("password")], at: at)
            try await database.write { db in try AuditLog.append(db, failed) }
            throw AuthError.invalidCredentials
        }
        try await limiter.forgive(reset: [pairBucket], undo: [ipBucket, accountBucket])
        return try await issueSession(for: user, method: "password", address: clientAddress)
    }

    static func rateLimited(retryAfter: Int) -> AuthError { .rateLimited(retryAfter: retryAfter) }

    /// Starts a session (refresh-token family) and answers with the login body.
    func issueSession(for user: UserRecord, method: String, address: String) async throws -> LoginResponse {
        let sessionID = UUID().uuidString.lowercased()
        let refresh = Crypto.opaqueToken()
        let issuedAt = now()
        let audit = AuditEntry(actorUserID: user.id, actorRole: "user", action: "auth.login", objectType: "session", objectID: sessionID,
                               address: address, detail: ["method": .string(method)], at: issuedAt)
        try await sessions.start(sessionID: sessionID, userID: user.id, refreshTokenHash: Crypto.tokenHash(refresh),
                                 at: issuedAt, lifetime: Self.sessionLifetime, audit: audit)
        return try await loginBody(user: user, sessionID: sessionID, refreshToken: refresh, issuedAt: issuedAt)
    }

    func loginBody(user: UserRecord, sessionID: String, refreshToken: String, issuedAt: Date) async throws -> LoginResponse {
        LoginResponse(jwtToken: accessToken(userID: user.id, sessionID: sessionID, issuedAt: issuedAt),
                      refreshToken: refreshToken, expiresIn: Int(Self.accessTokenLifetime),
                      userID: user.id, master: user.master, driver: user.driver,
                      companies: try await accounts.companyGrants(userID: user.id))
    }

    func accessToken(userID: String, sessionID: String, issuedAt: Date) -> String {
        secrets.jwt.sign(.issued(to: userID, session: sessionID, at: issuedAt, lifetime: Self.accessTokenLifetime,
                                 jti: Base64URL.encode(Crypto.randomBytes(12))))
    }

    // MARK: Refresh rotation (RFC 9700 §4.14.2)

    public func refresh(_ body: RefreshRequest) async throws -> LoginResponse {
        try require(!body.refreshToken.isEmpty && body.refreshToken.utf8.count <= 512, field: "refresh_token",
                    "refresh_token is invalid")
        let presented = Crypto.tokenHash(body.refreshToken)
        let next = Crypto.opaqueToken()
        let at = now()
        let outcome = try await sessions.rotate(presented: presented, next: Crypto.tokenHash(next), at: at)
        switch outcome {
        case .invalid:
            throw AuthError.invalidRefreshToken
        case .reused(let sessionID):
            log.warning("refresh token reuse: session revoked")
            sessionEnded(sessionID)
            throw AuthError.refreshTokenReused
        case .rotated(let userID, let sessionID):
            guard let user = try await accounts.user(id: userID) else { throw AuthError.invalidRefreshToken }
            return try await loginBody(user: user, sessionID: sessionID, refreshToken: next, issuedAt: at)
        }
    }

    // MARK: Logout

    /// `address`: a person's logout from that address, recorded in the audit trail;
    /// nil for the server's own revocations.
    public func revokeSession(id: String, reason: String, address: String? = nil) async throws {
        let at = now()
        let audit = address.map { address in
            AuditEntry(actorUserID: nil, actorRole: "user", action: "auth.logout", objectType: "session", objectID: id,
                       address: address, at: at)
        }
        try await sessions.revoke(sessionID: id, reason: reason, at: at, audit: audit)
        sessionEnded(id)
    }

    /// The session a refresh token belongs to (spent or not), for logout.
    public func sessionID(forRefreshToken token: String) async throws -> String? {
        try await sessions.sessionID(forRefreshTokenHash: Crypto.tokenHash(token))
    }

    /// Ends the session a refresh token belongs to (logout by body); a token this server
    /// never issued is `AuthError.unknownRefreshToken`.
    public func revokeSession(forRefreshToken token: String, reason: String, address: String? = nil) async throws {
        guard let sessionID = try await sessionID(forRefreshToken: token) else { throw AuthError.unknownRefreshToken }
        try await revokeSession(id: sessionID, reason: reason, address: address)
    }

    // MARK: SMS one-time codes

    /// `+5511999990001` form: digits with an optional leading `+`, separators removed. A
    /// national number — 10 or 11 digits without `+`, as people write "(11) 99999-0001" —
    /// is read in `defaultCountryCode` (`--default-country-code`, 55); 12–15 digits without
    /// `+` already carry their country code. Anything else is not a phone (nil).
    static func normalizePhone(_ raw: String, defaultCountryCode: Int = 55) -> String? {
        let trimmed = raw.filter { !" -().".contains($0) }
        let international = trimmed.hasPrefix("+")
        let digits = international ? String(trimmed.dropFirst()) : trimmed
        // No country code and no area code starts with 0 (a trunk prefix is not part of the number).
        guard (10...15).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }), !digits.hasPrefix("0") else { return nil }
        if !international && digits.count <= 11 {
            // The whole E.164 number stays within 15 digits.
            let country = String(defaultCountryCode)
            guard (1...999).contains(defaultCountryCode), country.count + digits.count <= 15 else { return nil }
            return "+" + country + digits
        }
        return "+" + digits
    }

    func codeHash(phone: String, code: String) -> String {
        Crypto.hmacSHA256(key: secrets.otpPepper, data: Array("\(phone):\(code)".utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Answers the same — in body *and time* — whether or not the phone belongs to someone:
    /// the limits, the only work on the answer path, are the same for every phone; looking
    /// the phone up, storing the code and sending the SMS happen after the answer, in the
    /// background (decision 0013). An accepted send that fails there is only logged; the
    /// user asks for another code.
    public func sendOTP(_ body: OTPSendRequest, clientAddress: String) async throws {
        guard body.phone.count <= 32, let phone = Self.normalizePhone(body.phone, defaultCountryCode: defaultCountryCode) else {
            throw AuthError.invalidPhone("phone must be a phone number: +5511999990001, or a national number with area code such as (11) 99999-0001")
        }
        let at = now()
        let limits = otpLimits
        let ipBucket = "otp:send:ip:" + clientAddress
        let dayBucket = "otp:send:day:" + phone
        let gapBucket = "otp:send:gap:" + phone
        // Reads first: a refused send costs no write.
        let perIP = try await limiter.peek(ipBucket, window: Self.otpSendWindow, now: at)
        if perIP.count >= Self.otpSendsPerIP { throw Self.rateLimited(retryAfter: perIP.retryAfter) }
        // An address that guessed this phone's codes too often gets no new one either.
        let failures = try await limiter.peek(Self.failureBucket(phone: phone, address: clientAddress), window: Self.day, now: at)
        if failures.count >= limits.failuresPerPhonePerDay { throw Self.rateLimited(retryAfter: failures.retryAfter) }
        let today = try await limiter.peek(dayBucket, window: Self.day, now: at)
        let gap = limits.gap(afterSends: today.count)
        if gap > 0 {
            let last = try await limiter.peek(gapBucket, window: gap, now: at)
            if last.count > 0 { throw Self.rateLimited(retryAfter: last.retryAfter) }
        }
        // One commit counts the send everywhere; a concurrent send to the same phone that
        // got there first makes this one a 429 (the transaction rolls back).
        try await database.write { db in
            _ = try RateLimiter.hit(db, dayBucket, window: Self.day, now: at)
            let spaced = try RateLimiter.hit(db, gapBucket, window: max(gap, 1), now: at)
            let address = try RateLimiter.hit(db, ipBucket, window: Self.otpSendWindow, now: at)
            if gap > 0 && spaced.count > 1 { throw Self.rateLimited(retryAfter: spaced.retryAfter) }
            if address.count > Self.otpSendsPerIP { throw Self.rateLimited(retryAfter: address.retryAfter) }
        }
        let service = self
        deliveries.run { await service.deliverOTP(to: phone, at: at) }
    }

    /// The part of a send that depends on whether the phone is someone's: after the answer.
    func deliverOTP(to phone: String, at: Date) async {
        do {
            guard let user = try await accounts.user(phone: phone), !user.disabled else { return }
            let code = Self.randomCode()
            // A new code replaces any earlier one for this phone.
            try await codes.replaceCode(phone: phone, codeHash: codeHash(phone: phone, code: code), at: at, lifetime: Self.otpLifetime)
            try await sms.send(to: phone, message: "Portaria: seu código de acesso é \(code). Ele expira em 10 minutos. Não compartilhe.")
        } catch {
            log.error("sms code not delivered", ["error": .string(String(describing: error))])
        }
    }

    /// Wrong codes of one phone from one address (`OTPLimits.failuresPerPhonePerDay`).
    static func failureBucket(phone: String, address: String) -> String {
        "otp:verify:phone:" + phone + ":" + address
    }

    /// Six uniformly random digits (rejection sampling avoids modulo bias).
    static func randomCode() -> String {
        while true {
            let bytes = Crypto.randomBytes(4)
            let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if value < 4_294_000_000 { return String(format: "%06u", value % 1_000_000) }
        }
    }

    public func verifyOTP(_ body: OTPVerifyRequest, clientAddress: String) async throws -> OTPVerifyResponse {
        guard body.phone.count <= 32, let phone = Self.normalizePhone(body.phone, defaultCountryCode: defaultCountryCode) else {
            throw AuthError.invalidPhone("phone must be a phone number with country code")
        }
        try require(body.code.count == 6 && body.code.allSatisfy { $0.isASCII && $0.isNumber }, field: "code",
                    "code must be 6 digits")
        let at = now()
        let perIP = try await limiter.admit("otp:verify:ip:" + clientAddress, max: Self.otpVerifiesPerIP, window: Self.otpSendWindow, now: at)
        if !perIP.allowed { throw Self.rateLimited(retryAfter: perIP.window.retryAfter) }
        // Counted before the check (parallel guesses cannot outrun it) and taken back on
        // success; an address at its daily count for this phone is refused, right code or
        // not — the owner, from another address, is not.
        let phoneBucket = Self.failureBucket(phone: phone, address: clientAddress)
        let perPhone = try await limiter.admit(phoneBucket, max: otpLimits.failuresPerPhonePerDay, window: Self.day, now: at)
        if !perPhone.allowed {
            log.warning("otp verification refused to an address after too many failures for a phone")
            throw Self.rateLimited(retryAfter: perPhone.window.retryAfter)
        }
        let presented = codeHash(phone: phone, code: body.code)
        guard try await codes.consumeCode(phone: phone, presented: presented, at: at, maxAttempts: Self.otpMaxAttempts),
              let user = try await accounts.user(phone: phone), !user.disabled else {
            let subject = try await accounts.user(phone: phone)?.id
            let failed = AuditEntry(actorUserID: nil, actorRole: "anonymous", action: "auth.login_failed", subjectUserID: subject,
                                    address: clientAddress, detail: ["method": .string("otp")], at: at)
            try await database.write { db in try AuditLog.append(db, failed) }
            throw AuthError.invalidOTPCode
        }
        try await limiter.undo(phoneBucket)
        let token = Crypto.opaqueToken()
        try await codes.issueToken(hash: Crypto.tokenHash(token), userID: user.id, expiresAt: at.addingTimeInterval(Self.otpTokenLifetime))
        return OTPVerifyResponse(otpToken: token)
    }

    public func generateAccessToken(_ body: GenerateAccessTokenRequest, clientAddress: String = "") async throws -> LoginResponse {
        try require(!body.otpToken.isEmpty && body.otpToken.utf8.count <= 512, field: "otp_token", "otp_token is invalid")
        let hash = Crypto.tokenHash(body.otpToken)
        let at = now()
        guard let userID = try await codes.redeemToken(hash: hash, at: at),
              let user = try await accounts.user(id: userID), !user.disabled else {
            throw AuthError.invalidOTPToken
        }
        return try await issueSession(for: user, method: "otp", address: clientAddress)
    }
}
