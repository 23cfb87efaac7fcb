import Foundation

/// A provider's answer, reduced to what the outbox must do next.
public struct PushResult: Sendable, Equatable, CustomStringConvertible {
    public enum Outcome: String, Sendable {
        /// The provider took it. Delivery is proven only by the app's receipt.
        case accepted
        /// The token is dead for good (Unregistered, BadDeviceToken, UNREGISTERED, …): deactivate it.
        case tokenInvalid = "token_invalid"
        /// Worth trying again later (429, 5xx, connection lost).
        case retry
        /// Refused for a reason retrying will not fix (payload, configuration).
        case failed
    }

    public var outcome: Outcome
    public var httpStatus: Int?
    /// The provider's reason string (`Unregistered`, `QUOTA_EXCEEDED`, …) or a transport error.
    public var reason: String?
    /// The soonest the provider wants to hear from us again.
    public var retryAfter: TimeInterval?
    /// `apns-id` or the FCM message name.
    public var providerID: String?
    /// Extra detail for the log and the admin panel (e.g. APNs' `timestamp` of an Unregistered token).
    public var detail: String?

    public var description: String {
        var text = outcome.rawValue
        if let httpStatus { text += " \(httpStatus)" }
        if let reason { text += " \(reason)" }
        if let detail { text += " (\(detail))" }
        if let retryAfter { text += " retry after \(Int(exactly: retryAfter.rounded(.down)).map(String.init) ?? "\(retryAfter)") s" }
        return text
    }

    /// The most bytes of a provider's text (reason, detail, id) a result carries: they are
    /// stored with the attempt and the device and shown in the admin panel. Apple's and
    /// Google's reasons and ids are under 100 bytes; a body may be 1 MiB.
    static let providerTextLimit = 300

    /// `text` cut to at most `providerTextLimit` bytes of UTF-8, at a scalar boundary.
    static func providerText(_ text: String) -> String {
        guard text.utf8.count > providerTextLimit else { return text }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > providerTextLimit { break }
            kept.append(scalar)
        }
        return String(kept)
    }

    /// This result with its reason, detail and provider id cut by `providerText`.
    func clippingProviderText() -> PushResult {
        var result = self
        result.reason = reason.map(Self.providerText)
        result.detail = detail.map(Self.providerText)
        result.providerID = providerID.map(Self.providerText)
        return result
    }
}
