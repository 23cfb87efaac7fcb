import Foundation
import PortariaCore
import Testing

/// Someone who only knows a phone number cannot lock its owner's SMS login (decision
/// 0073): wrong codes count per (phone, address), and sends slow down to one an hour but
/// never stop for the day.
@Suite("SMS login: a stranger with the phone number cannot lock the owner out")
struct OTPOwnerLockoutTests {
    typealias OTP = SecuritySuites.OTPAbuseTests

    static func verify(_ server: TestServer, _ phone: String, _ code: String, from address: String) async throws -> RawResponse {
        try await server.request("POST", "/v1/auth/otp/verify",
                                 headers: [("Content-Type", "application/json"), ("X-Forwarded-For", address)],
                                 body: Array(#"{"phone":"\#(phone)","code":"\#(code)"}"#.utf8))
    }

    @Test("ten wrong codes from a stranger's address lock that address only: the owner, from another address, gets a code and signs in")
    func wrongCodesLockOnlyTheGuesser() async throws {
        try await TestServer.with(["--demo", "--trusted-proxies", "127.0.0.1"]) { server in
            let stranger = "198.51.100.66", owner = "203.0.113.5"
            for attempt in 1...10 {
                let guess = try await Self.verify(server, OTP.maria, String(format: "%06d", attempt * 7919), from: stranger)
                #expect(guess.status == 401, "guess \(attempt)")
            }
            #expect(try await Self.verify(server, OTP.maria, "123456", from: stranger).status == 429)
            #expect(try await OTP.send(server, OTP.maria, from: stranger).status == 429)

            #expect(try await OTP.send(server, OTP.maria, from: owner).status == 202)
            let code = try await OTP.loggedCode(server, phone: OTP.maria)
            let verified = try await Self.verify(server, OTP.maria, code, from: owner)
            #expect(verified.status == 200, "\(verified.status) \(verified.text.prefix(200))")
            let token = try #require(try verified.json()["otp_token"] as? String)
            #expect(try await server.postJSON("/v1/auth/generate_access_token", #"{"otp_token":"\#(token)"}"#).status == 200)
        }
    }

    @Test("a stranger's ten sends to a phone make the owner wait at most an hour for the next code, not the rest of the day")
    func sendsThrottleButDoNotLock() async throws {
        try await TestServer.with(["--demo", "--otp-resend-gap-seconds", "0", "--trusted-proxies", "127.0.0.1"]) { server in
            for index in 1...10 {
                #expect(try await OTP.send(server, OTP.maria, from: "198.51.100.\(index)").status == 202, "send \(index)")
            }
            let owner = try await OTP.send(server, OTP.maria, from: "203.0.113.5")
            #expect(owner.status == 429)
            let wait = Int(owner.header("retry-after") ?? "") ?? 0
            #expect((1...3600).contains(wait), "the owner must wait \(wait) s")
        }
    }
}
