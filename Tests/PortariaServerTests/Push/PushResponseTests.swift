import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

/// What the push providers answer, read without a network: the inputs of fuzz/push-response
/// that broke its properties, and the tables they protect.
@Suite("Provider answers: status, headers and body read into an outcome")
struct PushResponseTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test("APNs deactivates a token only under 400 or 410; the same reason under 5xx is retried, under 3xx fails",
          arguments: [(400, "BadDeviceToken", PushResult.Outcome.tokenInvalid), (410, "Unregistered", .tokenInvalid),
                      (400, "DeviceTokenNotForTopic", .tokenInvalid), (410, "ExpiredToken", .tokenInvalid),
                      (500, "BadDeviceToken", .retry), (503, "Unregistered", .retry), (302, "Unregistered", .failed),
                      (200, "BadDeviceToken", .accepted)])
    func apnsTokenInvalidStatuses(status: Int, reason: String, outcome: PushResult.Outcome) {
        let result = APNsProvider.interpret(status: status, headers: [:], body: bytes(#"{"reason":"\#(reason)"}"#))
        #expect(result.outcome == outcome)
    }

    @Test("an APNs timestamp no date can hold is left out of the detail instead of trapping",
          arguments: ["1e300", "-1", "9.3e18", "253402300800000"])
    func apnsTimestampOutOfRange(timestamp: String) {
        let result = APNsProvider.interpret(status: 410, headers: [:], body: bytes(#"{"reason":"Unregistered","timestamp":\#(timestamp)}"#))
        #expect(result.outcome == .tokenInvalid)
        #expect(result.detail == nil)
        #expect(!result.description.isEmpty)
    }

    @Test("an APNs timestamp in range is shown as the date the token died")
    func apnsTimestampInRange() {
        let result = APNsProvider.interpret(status: 410, headers: [:], body: bytes(#"{"reason":"Unregistered","timestamp":1764680000000}"#))
        #expect(result.detail == "token invalid since 2025-12-02T12:53:20Z")
    }

    @Test("FCM deactivates a token only under the status Google answers its code with",
          arguments: [(404, "UNREGISTERED", PushResult.Outcome.tokenInvalid), (500, "UNREGISTERED", .retry),
                      (400, "UNREGISTERED", .failed), (403, "INVALID_ARGUMENT", .failed), (403, "SENDER_ID_MISMATCH", .tokenInvalid)])
    func fcmTokenInvalidStatuses(status: Int, code: String, outcome: PushResult.Outcome) {
        let body = #"{"error":{"code":\#(status),"status":"X","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(code)"}]}}"#
        #expect(FCMProvider.interpret(status: status, headers: [:], body: bytes(body)).outcome == outcome)
    }

    @Test("Retry-After is whole seconds or an HTTP date, at least 0 and at most six hours",
          arguments: [("120", 120.0 as TimeInterval?), (" 7 ", 7), ("-5", 0), ("99999999999999999999", nil), ("inf", nil),
                      ("nan", nil), ("1e308", nil), ("1.5", nil), ("86400", 6 * 3600), ("Wed, 02 Dec 2026 12:00:00 GMT", 600),
                      ("Fri, 31 Dec 9999 23:59:59 GMT", 6 * 3600), ("Wed, 02 Dec 2026 11:00:00 GMT", 0)])
    func retryAfter(value: String, seconds: TimeInterval?) throws {
        let now = try #require(Timestamp.parse("2026-12-02T11:50:00Z"))
        #expect(RetryAfter.parse(value, now: now) == seconds)
    }

    @Test("an HTTP date is an IMF-fixdate in GMT naming a day that exists",
          arguments: [("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777.0 as TimeInterval?), ("Thu, 29 Feb 2024 00:00:00 GMT", 1_709_164_800),
                      ("Thu, 01 Jan 1970 00:00:00 GMT", 0), ("Fri, 31 Dec 9999 23:59:60 GMT", 253_402_300_799),
                      ("Wed, 29 Feb 2023 00:00:00 GMT", nil), ("Wed, 02 Dec 2026 12:00:00 PST", nil), ("Wed,  2 Dec 2026 12:00:00 GMT", nil),
                      ("Wed, 02 Dec 2026 24:00:00 GMT", nil), ("Xyz, 02 Dec 2026 12:00:00 GMT", nil), ("Wed, 02 Dec 2026 12:00:00 GMT ", 1_796_212_800),
                      ("Wednesday, 02-Dec-26 12:00:00 GMT", nil), ("Wed, 02 Dec 2026 12:0a:00 GMT", nil)])
    func httpDate(value: String, epoch: TimeInterval?) {
        #expect(RetryAfterHeader.seconds(value, now: Date(timeIntervalSince1970: 0)) == epoch)
    }

    @Test("a 503 with Retry-After: inf is a retry with no delay of its own, and its description does not trap")
    func retryAfterInfinite() {
        for result in [APNsProvider.interpret(status: 503, headers: ["retry-after": "inf"], body: []),
                       WebPushProvider.interpret(status: 503, headers: ["retry-after": "1e999"], body: []),
                       FCMProvider.interpret(status: 503, headers: ["retry-after": "99999999999999999999"], body: [])] {
            #expect(result.outcome == .retry)
            #expect(result.retryAfter == nil)
            #expect(result.description.hasPrefix("retry 503"))
        }
        #expect(PushResult(outcome: .retry, retryAfter: .infinity).description == "retry retry after inf s")
    }

    @Test("a provider's reason, detail and id are cut to 300 bytes at a character boundary")
    func providerTextBounded() {
        let long = String(repeating: "é", count: 1000)
        let apns = APNsProvider.interpret(status: 400, headers: ["apns-id": long], body: bytes(#"{"reason":"\#(long)"}"#))
        #expect(apns.reason?.utf8.count == 300)
        #expect(apns.providerID?.utf8.count == 300)
        #expect(apns.reason?.allSatisfy { $0 == "é" } == true)
        let fcm = FCMProvider.interpret(status: 400, headers: [:], body: bytes(#"{"error":{"status":"X","message":"\#(long)"}}"#))
        #expect(fcm.detail?.utf8.count == 300)
        let web = WebPushProvider.interpret(status: 400, headers: [:], body: [UInt8](repeating: 0xFF, count: 1000))
        #expect((web.detail?.utf8.count ?? 0) <= 300)
    }

    @Test("an OAuth grant is a bearer token whose lifetime is clamped to 0…24 h")
    func oauthGrant() {
        func grant(_ body: String, status: Int = 200) -> FCMResponse.Grant? { try? FCMResponse.grant(status: status, body: bytes(body)).get() }
        #expect(grant(#"{"access_token":"ya29.a0-_~+/x==","expires_in":3599}"#) == .init(token: "ya29.a0-_~+/x==", lifetime: 3599))
        #expect(grant(#"{"access_token":"ya29.x"}"#)?.lifetime == 3600)
        #expect(grant(#"{"access_token":"ya29.x","expires_in":-5}"#)?.lifetime == 0)
        #expect(grant(#"{"access_token":"ya29.x","expires_in":1e300}"#)?.lifetime == FCMResponse.lifetimeLimit)
        #expect(grant(#"{"access_token":"ya29.x\r\nx-injected: 1","expires_in":3599}"#) == nil)
        #expect(grant(#"{"access_token":"","expires_in":3599}"#) == nil)
        #expect(grant(#"{"access_token":"=="}"#) == nil)
        #expect(grant(#"{"access_token":"a=b"}"#) == nil)
        #expect(grant(#"{"access_token":"ya29.x"}"#, status: 201) == nil)
        if case .failure(let error) = FCMResponse.grant(status: 200, body: bytes(#"{"access_token":"a b"}"#)) {
            #expect(error.description.contains("not a bearer token"))
        } else {
            Issue.record("a token with a space was granted")
        }
        let refused = FCMResponse.grant(status: 400, body: bytes(#"{"error":"\#(String(repeating: "x", count: 5000))"}"#))
        guard case .failure(let error) = refused else { Issue.record("a 400 granted a token"); return }
        #expect(error.description.utf8.count < 400)
    }

    @Test("the response parts keep a three-digit status, bounded headers, and a body up to its limit only")
    func responseParts() {
        func status(_ text: String) -> Int {
            var parts = HTTP2ResponseParts()
            Array(text.utf8).withUnsafeBufferPointer { value in
                Array(":status".utf8).withUnsafeBufferPointer { parts.header(name: $0, value: value) }
            }
            return parts.status
        }
        #expect(status("200") == 200)
        #expect(status("410") == 410)
        #expect(status("+20") == 0)
        #expect(status("099") == 0)
        #expect(status("2000") == 0)
        #expect(status("") == 0)

        var parts = HTTP2ResponseParts(bodyLimit: 10, headerLimit: 20)
        func header(_ name: String, _ value: String) {
            Array(name.utf8).withUnsafeBufferPointer { name in
                Array(value.utf8).withUnsafeBufferPointer { parts.header(name: name, value: $0) }
            }
        }
        header("apns-id", "abc")
        header(":path", "/x")
        header("retry-after", "12345678901")
        #expect(parts.headers == ["apns-id": "abc"])
        #expect(parts.headerBytes == 10)
        #expect([UInt8](repeating: 1, count: 6).withUnsafeBufferPointer { parts.append($0) })
        #expect(![UInt8](repeating: 2, count: 5).withUnsafeBufferPointer { parts.append($0) })
        #expect(parts.body == [UInt8](repeating: 1, count: 6))
        #expect([UInt8](repeating: 3, count: 4).withUnsafeBufferPointer { parts.append($0) })
        #expect(parts.body.count == 10)
    }
}
