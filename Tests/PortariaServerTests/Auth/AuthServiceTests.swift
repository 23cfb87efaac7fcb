import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

/// Captures SMS instead of sending them.
final class RecordingSmsSender: SmsSender {
    let messages = Locked<[(phone: String, message: String)]>([])
    func send(to phone: String, message: String) async throws {
        messages.withLock { $0.append((phone, message)) }
    }

    /// The six-digit code of the latest SMS to `phone`, waiting briefly for the background send.
    func code(for phone: String) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if let message = messages.current.last(where: { $0.phone == phone })?.message,
               let range = message.range(of: #"\d{6}"#, options: .regularExpression) {
                return String(message[range])
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw HTTPError.notFound("no SMS to \(phone)")
    }
}

/// An auth stack over a freshly seeded demo database.
struct AuthFixture {
    let storage: StorageFixture
    let auth: AuthService
    let authenticator: Authenticator
    let sms: RecordingSmsSender

    /// Gives `body` the auth stack over a fresh demo database of `backend`, removed afterwards.
    static func with(_ backend: Backend, loginLimit: Int = 10, _ body: (AuthFixture) async throws -> Void) async throws {
        try await StorageFixture.with(backend) { storage in
            try await Migrator().migrate(storage.database)
            try await DemoData.seedIfEmpty(storage.database)
            let secrets = try await ServiceSecrets.loadOrCreate(storage.database)
            let sms = RecordingSmsSender()
            let auth = AuthService(database: storage.database, secrets: secrets, sms: sms, loginLimitPerAccount: loginLimit)
            try await body(AuthFixture(storage: storage, auth: auth,
                                       authenticator: Authenticator(database: storage.database, jwt: secrets.jwt), sms: sms))
        }
    }

    func request(token: String, company: String? = nil) -> HTTPRequest {
        var headers = ["authorization": "Bearer \(token)"]
        if let company { headers["x-company-id"] = company }
        return HTTPRequest(method: "GET", path: "/v1/me", headers: headers)
    }
}

func httpError(_ body: () async throws -> Void) async -> HTTPError? {
    do { try await body(); return nil } catch let error as any RenderableError { return HTTPError(rendering: error) } catch { return nil }
}

@Suite("Accounts and login", .serialized)
struct AuthServiceTests {
    static let backends: [Backend] = TestPostgres.isConfigured ? [.sqlite, .postgres] : [.sqlite]

    @Test("maria logs in and sees both demo companies with their grants", arguments: backends)
    func loginMaria(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let body = try await fixture.auth.login(LoginRequest(username: "maria", password: "demo1234"), clientAddress: "10.0.0.1")
            #expect(body.expiresIn == 900)
            #expect(!body.master && !body.driver)
            #expect(Set(body.companies.map(\.name)) == ["Residencial Demo", "Condomínio Azul"])
            for company in body.companies {
                #expect(company.effectivePermissions.contains("visits.resolve"))
                #expect(!company.effectivePermissions.contains("admin.users"))
            }
            // Each company selected yields its own /v1/me view.
            for company in body.companies {
                let caller = try await fixture.authenticator.caller(fixture.request(token: body.jwtToken, company: company.id))
                #expect(caller.companyID == company.id)
                #expect(caller.membership.units.map(\.label) == [company.name == "Residencial Demo" ? "A-101" : "101"])
            }
        }
    }

    @Test("unknown user and wrong password get the same answer", arguments: backends)
    func sameAnswer(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let wrong = await httpError { _ = try await fixture.auth.login(LoginRequest(username: "maria", password: "wrong-pass"), clientAddress: "a") }
            let unknown = await httpError { _ = try await fixture.auth.login(LoginRequest(username: "nobody", password: "wrong-pass"), clientAddress: "a") }
            let lookalike = await httpError { _ = try await fixture.auth.login(LoginRequest(username: "mаria", password: "demo1234"), clientAddress: "a") } // Cyrillic а
            for error in [wrong, unknown, lookalike] {
                #expect(error?.status == 401)
                #expect(error?.body.code == .invalidCredentials)
                #expect(error?.body.message == wrong?.body.message)
            }
        }
    }

    @Test("bad login input is a 400 naming the field", arguments: backends)
    func badInput(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let cases: [(LoginRequest, String)] = [
                (LoginRequest(username: "", password: "x"), "username"),
                (LoginRequest(username: String(repeating: "a", count: 10_240), password: "demo1234"), "username"),
                (LoginRequest(username: "maria", password: ""), "password"),
            ]
            for (request, field) in cases {
                let error = await httpError { _ = try await fixture.auth.login(request, clientAddress: "a") }
                #expect(error?.status == 400)
                #expect(error?.body.field == field)
            }
        }
    }

    @Test("a phone that is no phone number is a 400 naming the field, on send and on verify", arguments: backends)
    func badPhone(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let send = await httpError { try await fixture.auth.sendOTP(OTPSendRequest(phone: "not a phone"), clientAddress: "10.5.0.1") }
            #expect(send?.status == 400)
            #expect(send?.body == HTTPError.invalidRequest(
                "phone must be a phone number: +5511999990001, or a national number with area code such as (11) 99999-0001",
                field: "phone").body)
            let verify = await httpError {
                _ = try await fixture.auth.verifyOTP(OTPVerifyRequest(phone: "not a phone", code: "123456"), clientAddress: "10.5.0.1")
            }
            #expect(verify?.status == 400)
            #expect(verify?.body == HTTPError.invalidRequest("phone must be a phone number with country code", field: "phone").body)
        }
    }

    @Test("failed logins past the limit get 429 with Retry-After, per account and address", arguments: backends)
    func throttling(backend: Backend) async throws {
        try await AuthFixture.with(backend, loginLimit: 3) { fixture in
            for _ in 0..<3 {
                let error = await httpError { _ = try await fixture.auth.login(LoginRequest(username: "joao", password: "nope-nope"), clientAddress: "10.1.1.1") }
                #expect(error?.status == 401)
            }
            // That address is done with this account for now, even with the right password.
            let throttled = await httpError { _ = try await fixture.auth.login(LoginRequest(username: "joao", password: "demo1234"), clientAddress: "10.1.1.1") }
            #expect(throttled?.status == 429)
            #expect(throttled?.body.code == .rateLimited)
            let retryAfter = Int(throttled?.headers.first { $0.0 == "Retry-After" }?.1 ?? "") ?? 0
            #expect(retryAfter > 0 && retryAfter <= 900)
            // Another account from that address is unaffected.
            _ = try await fixture.auth.login(LoginRequest(username: "ana", password: "demo1234"), clientAddress: "10.1.1.1")
        }
    }

    @Test("a known username cannot be locked out: after failures elsewhere, the right password from a new address gets in after a step-up pause", arguments: backends)
    func stepUpInsteadOfLockout(backend: Backend) async throws {
        try await AuthFixture.with(backend, loginLimit: 3) { fixture in
            var auth = fixture.auth
            auth.stepUpDelay = .milliseconds(300)
            for index in 0..<6 {
                let error = await httpError { _ = try await auth.login(LoginRequest(username: "joao", password: "guess-\(index)"), clientAddress: "10.4.0.\(index % 2)") }
                #expect(error?.status == 401, "guess \(index)")
            }
            let started = ContinuousClock.now
            let body = try await auth.login(LoginRequest(username: "joao", password: "demo1234"), clientAddress: "10.4.9.9")
            #expect(!body.jwtToken.isEmpty)
            #expect(ContinuousClock.now - started >= .milliseconds(300), "the account under attack was not stepped up")
        }
    }

    @Test("parallel guesses from one address cannot outrun the limit: at most N are checked", arguments: backends)
    func parallelGuesses(backend: Backend) async throws {
        try await AuthFixture.with(backend, loginLimit: 3) { fixture in
            let auth = fixture.auth
            let statuses = await withTaskGroup(of: Int.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        do {
                            _ = try await auth.login(LoginRequest(username: "joao", password: "guess-\(index)"), clientAddress: "10.9.0.1")
                            return 200
                        } catch let error as any RenderableError { return error.status } catch { return 0 }
                    }
                }
                return await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 401 }.count <= 3, "\(statuses)")
            #expect(statuses.filter { $0 == 429 }.count >= 17, "\(statuses)")
        }
    }

    @Test("refresh rotates; a spent token revokes the whole family", arguments: backends)
    func refreshReuse(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let first = try await fixture.auth.login(LoginRequest(username: "ana", password: "demo1234"), clientAddress: "a")
            let second = try await fixture.auth.refresh(RefreshRequest(refreshToken: first.refreshToken))
            #expect(second.refreshToken != first.refreshToken)
            #expect(second.userID == first.userID)
            _ = try await fixture.authenticator.caller(fixture.request(token: second.jwtToken))

            let reuse = await httpError { _ = try await fixture.auth.refresh(RefreshRequest(refreshToken: first.refreshToken)) }
            #expect(reuse?.status == 401)
            #expect(reuse?.body.code == .refreshTokenReused)
            // The family is gone: the newest refresh token and every access token of the session.
            let after = await httpError { _ = try await fixture.auth.refresh(RefreshRequest(refreshToken: second.refreshToken)) }
            #expect(after?.status == 401)
            let access = await httpError { _ = try await fixture.authenticator.caller(fixture.request(token: second.jwtToken)) }
            #expect(access?.status == 401)
            // Another session of the same user lives on.
            let other = try await fixture.auth.login(LoginRequest(username: "ana", password: "demo1234"), clientAddress: "a")
            _ = try await fixture.authenticator.caller(fixture.request(token: other.jwtToken))
        }
    }

    @Test("two concurrent refreshes of one token: exactly one wins", arguments: backends)
    func concurrentRefresh(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let login = try await fixture.auth.login(LoginRequest(username: "ana", password: "demo1234"), clientAddress: "a")
            let auth = fixture.auth
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask { (try? await auth.refresh(RefreshRequest(refreshToken: login.refreshToken))) != nil }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
        }
    }

    @Test("logout revokes the session at once", arguments: backends)
    func logout(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let login = try await fixture.auth.login(LoginRequest(username: "ana", password: "demo1234"), clientAddress: "a")
            let (_, session) = try await fixture.authenticator.authenticate(fixture.request(token: login.jwtToken))
            try await fixture.auth.revokeSession(id: session, reason: "logout")
            #expect(await httpError { _ = try await fixture.authenticator.authenticate(fixture.request(token: login.jwtToken)) }?.status == 401)
            #expect(await httpError { _ = try await fixture.auth.refresh(RefreshRequest(refreshToken: login.refreshToken)) }?.body.code == .invalidRefreshToken)
        }
    }

    @Test("company context: required when several, 404 when not a member", arguments: backends)
    func companyContext(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let maria = try await fixture.auth.login(LoginRequest(username: "maria", password: "demo1234"), clientAddress: "a")
            let carlos = try await fixture.auth.login(LoginRequest(username: "carlos", password: "demo1234"), clientAddress: "a")
            let demo = try #require(maria.companies.first { $0.name == "Residencial Demo" })
            #expect(await httpError { _ = try await fixture.authenticator.caller(fixture.request(token: maria.jwtToken)) }?.body.code == .companyRequired)
            let cross = await httpError { _ = try await fixture.authenticator.caller(fixture.request(token: carlos.jwtToken, company: demo.id)) }
            #expect(cross?.status == 404)
            // Carlos has one company: no header needed.
            let own = try await fixture.authenticator.caller(fixture.request(token: carlos.jwtToken))
            #expect(own.membership.company.name == "Condomínio Azul")
        }
    }

    @Test("SMS code: login, single use, five tries, unknown phone", arguments: backends)
    func otp(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let phone = "+55 (11) 99999-0002" // João, written with separators
            try await fixture.auth.sendOTP(OTPSendRequest(phone: phone), clientAddress: "10.2.0.1")
            let code = try await fixture.sms.code(for: "+5511999990002")
            let wrongCode = code == "000000" ? "111111" : "000000"
            #expect(await httpError { _ = try await fixture.auth.verifyOTP(OTPVerifyRequest(phone: phone, code: wrongCode), clientAddress: "b") }?.body.code == .invalidOTP)
            let verified = try await fixture.auth.verifyOTP(OTPVerifyRequest(phone: phone, code: code), clientAddress: "b")
            // The code is spent.
            #expect(await httpError { _ = try await fixture.auth.verifyOTP(OTPVerifyRequest(phone: phone, code: code), clientAddress: "b") }?.status == 401)
            let body = try await fixture.auth.generateAccessToken(GenerateAccessTokenRequest(otpToken: verified.otpToken))
            let caller = try await fixture.authenticator.caller(fixture.request(token: body.jwtToken))
            #expect(caller.user.username == "joao")
            // The otp_token is single use.
            #expect(await httpError { _ = try await fixture.auth.generateAccessToken(GenerateAccessTokenRequest(otpToken: verified.otpToken)) }?.body.code == .invalidOTP)

            // Five wrong tries kill a code: the right one is refused afterwards.
            try await fixture.auth.sendOTP(OTPSendRequest(phone: "+5511999990003"), clientAddress: "10.2.0.2")
            let anaCode = try await fixture.sms.code(for: "+5511999990003")
            let other = anaCode == "123456" ? "654321" : "123456"
            for _ in 0..<5 { _ = await httpError { _ = try await fixture.auth.verifyOTP(OTPVerifyRequest(phone: "+5511999990003", code: other), clientAddress: "c") } }
            #expect(await httpError { _ = try await fixture.auth.verifyOTP(OTPVerifyRequest(phone: "+5511999990003", code: anaCode), clientAddress: "c") }?.body.code == .invalidOTP)

            // An unknown phone: same answer, nothing sent.
            let before = fixture.sms.messages.current.count
            try await fixture.auth.sendOTP(OTPSendRequest(phone: "+5511988887777"), clientAddress: "10.2.0.3")
            try await Task.sleep(for: .milliseconds(100))
            #expect(fixture.sms.messages.current.count == before)
        }
    }

    @Test("SMS sends are limited per phone: a gap after each send, then one an hour past the daily count", arguments: backends)
    func otpSendLimit(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            try await fixture.auth.sendOTP(OTPSendRequest(phone: "+5511999990001"), clientAddress: "10.3.0.1")
            let limited = await httpError { try await fixture.auth.sendOTP(OTPSendRequest(phone: "+5511999990001"), clientAddress: "10.3.1.1") }
            #expect(limited?.status == 429)
            #expect(limited?.headers.first { $0.0 == "Retry-After" }.flatMap { Int($0.1) }.map { (1...30).contains($0) } == true)
            var gapless = fixture.auth
            gapless.otpLimits.firstResendGap = 0
            for index in 1..<gapless.otpLimits.sendsPerPhonePerDay {
                try await gapless.sendOTP(OTPSendRequest(phone: "+5511999990001"), clientAddress: "10.3.2.\(index)")
            }
            let daily = await httpError { try await gapless.sendOTP(OTPSendRequest(phone: "+5511999990001"), clientAddress: "10.3.3.1") }
            #expect(daily?.status == 429)
            // Throttled to one an hour, not locked for the day (decision 0073).
            #expect(daily?.headers.first { $0.0 == "Retry-After" }.flatMap { Int($0.1) }.map { (1...3600).contains($0) } == true)
            #expect(await httpError { try await fixture.auth.sendOTP(OTPSendRequest(phone: "12"), clientAddress: "x") }?.body.field == "phone")
            #expect(await httpError { _ = try await fixture.auth.verifyOTP(OTPVerifyRequest(phone: "+5511999990001", code: "12ab56"), clientAddress: "x") }?.body.field == "code")
        }
    }

    @Test("a national number typed as people write it, (11) 99999-0002, is read in the default country; one that cannot be a phone is a 400 naming the field", arguments: backends)
    func nationalPhoneNumbers(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            try await fixture.auth.sendOTP(OTPSendRequest(phone: "(11) 99999-0002"), clientAddress: "10.4.0.1")
            let code = try await fixture.sms.code(for: "+5511999990002")
            let verified = try await fixture.auth.verifyOTP(OTPVerifyRequest(phone: "11 99999-0002", code: code), clientAddress: "10.4.0.1")
            #expect(!verified.otpToken.isEmpty)
            // Another configured country reads the same digits as its own.
            var portugal = fixture.auth
            portugal.defaultCountryCode = 351
            #expect(AuthService.normalizePhone("(11) 99999-0002", defaultCountryCode: 351) == "+35111999990002")
            #expect(AuthService.normalizePhone("+55 11 99999-0002", defaultCountryCode: 351) == "+5511999990002")
            #expect(AuthService.normalizePhone("5511999990002") == "+5511999990002")
            // The option (and its environment variable) that sets the country; 55 unsaid.
            #expect(try ServerConfiguration.from(ParsedOptions(values: [:])).defaultCountryCode == 55)
            #expect(try ServerConfiguration.from(ParsedOptions(values: ["default-country-code": "351"])).defaultCountryCode == 351)
            #expect(throws: (any Error).self) { try ServerConfiguration.from(ParsedOptions(values: ["default-country-code": "0"])) }
            let parsed = try ParsedOptions.parse([], specs: ServerConfiguration.serveOptions, environment: ["PORTARIA_DEFAULT_COUNTRY_CODE": "1"])
            #expect(try ServerConfiguration.from(parsed).defaultCountryCode == 1)
            for bad in ["12", "(11) 9999", "011 99999-0002", "abc1199999000", "+1234567890123456", ""] {
                let error = await httpError { try await portugal.sendOTP(OTPSendRequest(phone: bad), clientAddress: "10.4.0.2") }
                #expect(error?.status == 400 && error?.body.code == .invalidRequest && error?.body.field == "phone", "\(bad)")
            }
        }
    }
}
