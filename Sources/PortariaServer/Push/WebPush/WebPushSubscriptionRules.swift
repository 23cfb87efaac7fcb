import Foundation
import PortariaCore

/// Which push services a browser subscription may point at. A subscription's endpoint is
/// a URL chosen by the client, and the server will POST to it: without this list any
/// resident could make the server send requests to any host (SSRF).
public struct WebPushHosts: Sendable, Equatable {
    /// Exact host names, and `*.suffix` entries matching any name under the suffix.
    public let patterns: [String]

    /// The browsers' push services: Chrome/Edge-on-Android (FCM), Firefox (autopush),
    /// Edge on Windows (WNS), Safari (Apple).
    public static let browsers = WebPushHosts(["fcm.googleapis.com", "updates.push.services.mozilla.com",
                                               "*.notify.windows.com", "*.push.apple.com", "web.push.apple.com"])

    public init(_ patterns: [String]) {
        self.patterns = patterns.map { $0.lowercased() }
    }

    /// Parses `--web-push-hosts HOST,…` (a name, `*.suffix`, or an IP literal for tests).
    public static func parse(_ text: String) throws -> WebPushHosts {
        let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !items.isEmpty else { throw UsageError("--web-push-hosts needs at least one host") }
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:[]")
        for item in items {
            let name = item.hasPrefix("*.") ? String(item.dropFirst(2)) : item
            guard !name.isEmpty, !name.contains("*"), name.unicodeScalars.allSatisfy(allowed.contains) else {
                throw UsageError("--web-push-hosts: '\(item)' is not a host name or *.suffix")
            }
        }
        return WebPushHosts(items)
    }

    public func allows(host: String) -> Bool {
        let host = host.lowercased()
        return patterns.contains { pattern in
            if pattern.hasPrefix("*.") {
                let suffix = String(pattern.dropFirst(1))  // ".notify.windows.com"
                return host.hasSuffix(suffix) && host.count > suffix.count
            }
            return host == pattern
        }
    }
}

/// The checks a browser subscription passes before it is stored (strict: a 400 naming the
/// field, nothing written), and its canonical stored form.
public enum WebPushSubscriptionRules {
    public static let maxEndpointLength = 2048

    public struct Invalid: Error, Equatable {
        public let field: String
        public let message: String
    }

    /// A validated subscription: the endpoint URL and the decoded keys.
    public struct Checked: Sendable, Equatable {
        public var endpoint: String
        public var host: String
        public var p256dh: [UInt8]
        public var auth: [UInt8]
    }

    public static func check(_ subscription: WebPushSubscription, hosts: WebPushHosts) -> Result<Checked, Invalid> {
        let endpoint = subscription.endpoint
        guard !endpoint.isEmpty, endpoint.utf8.count <= maxEndpointLength,
              endpoint.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }),
              let url = URLComponents(string: endpoint), url.scheme?.lowercased() == "https",
              let host = url.host, !host.isEmpty, url.user == nil, url.password == nil, url.fragment == nil else {
            return .failure(Invalid(field: "web_push.endpoint", message: "web_push.endpoint must be an https URL of at most \(maxEndpointLength) characters"))
        }
        guard hosts.allows(host: host) else {
            return .failure(Invalid(field: "web_push.endpoint", message: "web_push.endpoint must be a browser push service (\(hosts.patterns.joined(separator: ", ")))"))
        }
        guard subscription.keys.p256dh.utf8.count == 87, let p256dh = Base64URL.decode(subscription.keys.p256dh), p256dh.count == 65,
              (try? P256Key(publicPoint: p256dh)) != nil else {
            return .failure(Invalid(field: "web_push.keys.p256dh", message: "web_push.keys.p256dh must be an uncompressed P-256 point on the curve, base64url (65 bytes)"))
        }
        guard subscription.keys.auth.utf8.count == 22, let auth = Base64URL.decode(subscription.keys.auth), auth.count == 16 else {
            return .failure(Invalid(field: "web_push.keys.auth", message: "web_push.keys.auth must be 16 bytes, base64url"))
        }
        return .success(Checked(endpoint: endpoint, host: host, p256dh: p256dh, auth: auth))
    }

    /// What `devices.push_token` holds for a web device: the subscription as canonical JSON
    /// (sorted keys), so the unique index on `push_token` sees one subscription as one token.
    public static func storedToken(_ subscription: WebPushSubscription) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(subscription), as: UTF8.self)) ?? ""
    }

    /// The subscription back from `devices.push_token`; nil for anything else (rows written
    /// before web push existed hold an opaque token and are never sent to).
    public static func fromStoredToken(_ token: String) -> WebPushSubscription? {
        guard token.hasPrefix("{") else { return nil }
        return try? JSONDecoder().decode(WebPushSubscription.self, from: Data(token.utf8))
    }
}
