import Foundation
import PortariaCore

/// What an APNs answer means for the push: Apple's response table ("Handling notification
/// responses from APNs"). Pure, so fuzz/targets/PushResponseTarget.swift compiles it.
enum APNsResponse {
    /// Answers that refuse the provider token, not the push: a new token may pass.
    static let providerTokenRefused: Set<String> = ["ExpiredProviderToken", "InvalidProviderToken"]

    /// The latest `timestamp` (milliseconds since 1970) shown as a date: 9999-12-31T23:59:59Z.
    /// Apple sends the time it learnt the token was invalid; larger numbers are not dates.
    static let latestTimestamp: Double = 253_402_300_799_999

    static func interpret(status: Int, headers: [String: String], body: [UInt8]) -> PushResult {
        result(status: status, headers: headers, body: body).clippingProviderText()
    }

    private static func result(status: Int, headers: [String: String], body: [UInt8]) -> PushResult {
        let apnsID = headers["apns-id"]
        if status == 200 { return PushResult(outcome: .accepted, httpStatus: 200, providerID: apnsID) }
        let json = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(body))
        let reason = json?["reason"]?.stringValue ?? "HTTP \(status)"
        var detail: String?
        if case .number(let ms)? = json?["timestamp"], ms >= 0, ms <= latestTimestamp {
            // For 410: the last time APNs confirmed the token was no longer valid.
            detail = "token invalid since \(Timestamp.format(Date(timeIntervalSince1970: ms / 1000)))"
        }
        let retryAfter = headers["retry-after"].flatMap { RetryAfter.parse($0) }
        switch (status, reason) {
        case (410, _), (400, "Unregistered"), (400, "ExpiredToken"), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
            // Apple answers these with 400 (BadDeviceToken, DeviceTokenNotForTopic) or 410
            // (Unregistered, ExpiredToken). Deactivating a token stops a resident's rings, so
            // a reason under any other status (a proxy's 5xx page, a 3xx) does not.
            return PushResult(outcome: .tokenInvalid, httpStatus: status, reason: reason, providerID: apnsID, detail: detail)
        case (_, "ExpiredProviderToken"):
            return PushResult(outcome: .retry, httpStatus: status, reason: reason, providerID: apnsID)
        case (429, _), (_, "TooManyRequests"), (_, "TooManyProviderTokenUpdates"), (_, "IdleTimeout"),
             (_, "InternalServerError"), (_, "ServiceUnavailable"), (_, "Shutdown"), (500...599, _):
            return PushResult(outcome: .retry, httpStatus: status, reason: reason, retryAfter: retryAfter, providerID: apnsID)
        default:
            // BadCollapseId, BadExpirationDate, BadMessageId, BadPriority, BadTopic, DuplicateHeaders,
            // InvalidPushType, MissingDeviceToken, MissingTopic, PayloadEmpty, TopicDisallowed,
            // BadCertificate*, Forbidden, InvalidProviderToken, MissingProviderToken, BadPath,
            // MethodNotAllowed, PayloadTooLarge, …: our request or configuration is wrong, and
            // sending it again will not change the answer.
            return PushResult(outcome: .failed, httpStatus: status, reason: reason, providerID: apnsID, detail: detail)
        }
    }
}
