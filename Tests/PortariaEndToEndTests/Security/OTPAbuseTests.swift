import Foundation
@testable import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension SecuritySuites {
    @Suite("Abuse limits: SMS codes", .serialized)
    struct OTPAbuseTests {
        static let maria = "+5511999990001"

        /// The code of the latest logged SMS to `phone` (no --sms-webhook: codes are logged).
        static func loggedCode(_ server: TestServer, phone: String, after skip: Int = 0) async throws -> String {
            var code: String?
            // The SMS goes out after the answer: generous, it returns as soon as the line is there
            // (5 s ran out once at load 24).
            _ = await eventually(within: .seconds(30)) {
                let lines = server.log.split(separator: "\n").filter { $0.contains("\"to\":\"\(phone)\"") && $0.contains("sms") }
                guard lines.count > skip, let line = lines.last,
                      let range = line.range(of: #"\d{6}"#, options: .regularExpression) else { return false }
                code = String(line[range])
                return true
            }
            return try #require(code, "no SMS to \(phone) in the log")
        }

        static func send(_ server: TestServer, _ phone: String, from address: String? = nil) async throws -> RawResponse {
            var headers = [("Content-Type", "application/json")]
            if let address { headers.append(("X-Forwarded-For", address)) }
            return try await server.request("POST", "/v1/auth/otp/send", headers: headers, body: Array(#"{"phone":"\#(phone)"}"#.utf8))
        }

        static func verify(_ server: TestServer, _ phone: String, _ code: String) async throws -> RawResponse {
            try await server.postJSON("/v1/auth/otp/verify", #"{"phone":"\#(phone)","code":"\#(code)"}"#)
        }

        @Test("SMS bombing: a phone's second code waits (429 + Retry-After ≤ 30 s) and past 10 a day it gets one an hour")
        func sendsBackOffAndStopForTheDay() async throws {
            try await TestServer.with(["--demo"]) { server in
                #expect(try await Self.send(server, Self.maria).status == 202)
                let again = try await Self.send(server, Self.maria)
                #expect(again.status == 429)
                #expect((1...30).contains(Int(again.header("retry-after") ?? "") ?? 0), "Retry-After \(again.header("retry-after") ?? "none")")
                // An unknown phone is answered the same way.
                #expect(try await Self.send(server, "+5511900001111").status == 202)
                #expect(try await Self.send(server, "+5511900001111").status == 429)
            }
            // Without the doubling gap (a test knob), past the daily count the eleventh waits an
            // hour, from any address — a wait, not a lock for the rest of the day.
            try await TestServer.with(["--demo", "--otp-resend-gap-seconds", "0", "--trusted-proxies", "127.0.0.1"]) { server in
                for index in 1...10 {
                    #expect(try await Self.send(server, Self.maria, from: "198.51.100.\(index)").status == 202, "send \(index)")
                }
                let eleventh = try await Self.send(server, Self.maria, from: "203.0.113.9")
                #expect(eleventh.status == 429)
                #expect((1...3600).contains(Int(eleventh.header("retry-after") ?? "") ?? 0), "Retry-After \(eleventh.header("retry-after") ?? "none")")
            }
        }

        @Test("brute force: after its daily count of wrong codes for a phone, the guessing address is refused even the right code (429) and gets no new code")
        func lockoutAfterWrongCodes() async throws {
            // Defaults: ten wrong codes a day per (phone, address), then 429 for that address.
            try await TestServer.with(["--demo"]) { server in
                for attempt in 1...10 {
                    #expect(try await Self.verify(server, Self.maria, String(format: "%06d", attempt * 7919)).status == 401, "guess \(attempt)")
                }
                let locked = try await Self.verify(server, Self.maria, "123456")
                #expect(locked.status == 429)
                #expect((Int(locked.header("retry-after") ?? "") ?? 0) > 80_000)
                #expect(try await Self.send(server, Self.maria).status == 429)
            }
            // With a smaller count (a test knob) a live code is still there when it locks.
            try await TestServer.with(["--demo", "--otp-failures-per-day", "3"]) { server in
                #expect(try await Self.send(server, Self.maria).status == 202)
                let code = try await Self.loggedCode(server, phone: Self.maria)
                let wrong = code == "000000" ? "111111" : "000000"
                for attempt in 1...3 {
                    let response = try await Self.verify(server, Self.maria, wrong)
                    #expect(response.status == 401, "wrong code \(attempt)")
                }
                let right = try await Self.verify(server, Self.maria, code)
                #expect(right.status == 429)
                #expect(try right.errorEnvelope().code == .rateLimited)
                #expect((Int(right.header("retry-after") ?? "") ?? 0) > 80_000)
                #expect(try await Self.send(server, Self.maria).status == 429)
                // Another phone is not affected.
                #expect(try await Self.send(server, "+5511999990002").status == 202)
            }
        }

        /// Timing cannot be compared reliably on a shared machine, so the test makes the one
        /// difference between the two kinds of phone — storing a code — wait as long as the
        /// test likes: it locks `otp_codes` on PostgreSQL and releases the lock only after
        /// both answers came. An answer that waited on the lock would never come (the request
        /// times out) — observed without a clock.
        @Test("timing: the answer to a send never waits on work that depends on the phone being registered (code table locked, 202 while it still is)",
              .requires(.postgres))
        func sendAnswersBeforeStoringTheCode() async throws {
            let database = try #require(try TestPostgres.createDatabase())
            defer { database.drop() }
            try await TestServer.with(["--demo", "--database", database.url]) { server in
                let locker = try TestPostgres.start(database.url + "?application_name=otp_locker", """
                    BEGIN;
                    LOCK TABLE otp_codes IN ACCESS EXCLUSIVE MODE;
                    SELECT pg_sleep(600);
                    COMMIT;
                    """)
                defer { TestPostgres.finish(locker) }
                let lockHeld = {
                    (try? TestPostgres.query(database.url, """
                        SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                        WHERE c.relname = 'otp_codes' AND l.mode = 'AccessExclusiveLock' AND l.granted
                        """)) == "1"
                }
                try #require(await eventually(within: .seconds(10)) { lockHeld() }, "the lock on otp_codes was not taken")
                for phone in [Self.maria, "+5511900002222"] {
                    let response = try await Self.send(server, phone)
                    #expect(response.status == 202)
                    #expect(lockHeld(), "\(phone): answered only once the code table was free")
                }
                #expect(!server.log.contains("SMS not sent"), "a code was stored while otp_codes was locked")
                try TestPostgres.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'otp_locker'")
                _ = await waitForExit(locker, within: .seconds(15))
                // Once the table is free the code is stored and sent, and it works.
                let code = try await Self.loggedCode(server, phone: Self.maria)
                #expect(try await Self.verify(server, Self.maria, code).status == 200)
            }
        }
    }
}
