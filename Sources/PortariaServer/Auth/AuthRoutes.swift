import Foundation
import PortariaCore

/// `/v1/auth/*` and `/v1/me`.
struct AuthRoutes {
    let auth: AuthService
    let authenticator: Authenticator

    func register(on router: Router) {
        router.post("/v1/auth/login") { request in
            .json(try await auth.login(try request.decode(LoginRequest.self), clientAddress: request.limitAddress))
        }
        router.post("/v1/auth/otp/send") { request in
            try await auth.sendOTP(try request.decode(OTPSendRequest.self), clientAddress: request.limitAddress)
            return .json(JSONValue.object(["status": .string("accepted"), "expires_in": .number(AuthService.otpLifetime)]), status: 202)
        }
        router.post("/v1/auth/otp/verify") { request in
            .json(try await auth.verifyOTP(try request.decode(OTPVerifyRequest.self), clientAddress: request.limitAddress))
        }
        router.post("/v1/auth/generate_access_token") { request in
            .json(try await auth.generateAccessToken(try request.decode(GenerateAccessTokenRequest.self)))
        }
        router.post("/v1/auth/refresh") { request in
            .json(try await auth.refresh(try request.decode(RefreshRequest.self)))
        }
        router.post("/v1/auth/logout") { request in
            var revoked = false
            if request.header("authorization") != nil {
                let (_, sessionID) = try await authenticator.authenticate(request)
                try await auth.revokeSession(id: sessionID, reason: "logout")
                revoked = true
            }
            if !request.body.isEmpty {
                let body = try request.decode(LogoutRequest.self)
                if let token = body.refreshToken {
                    try await auth.revokeSession(forRefreshToken: token, reason: "logout")
                    revoked = true
                }
            }
            guard revoked else { throw HTTPError.unauthorized("send a bearer token or a refresh_token to log out") }
            return .noContent()
        }
        router.get("/v1/me") { request in
            let caller = try await authenticator.caller(request)
            let me = MeResponse(
                user: UserSummary(id: caller.user.id, name: caller.user.name, username: caller.user.username),
                company: caller.membership.company,
                profile: Profile.decide(permissions: caller.permissions),
                units: caller.membership.units,
                permissions: Permissions.sorted(caller.permissions))
            // Written by hand, not JSONEncoder: same bytes, a fifth of the CPU (decision 0051).
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: me.jsonBytes)
        }
    }
}
