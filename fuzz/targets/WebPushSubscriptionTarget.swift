import Foundation
import PortariaCore

// fuzz/web-push-subscription: the checks a browser's push subscription passes at
// POST /v1/devices (WebPushSubscriptionRules.check: URL, host allow-list, base64url,
// the P-256 point parsed by OpenSSL), the stored form, and encryption to what passed.
// The raw input is also tried as a point and as a host name.

/// `WebPushHosts.parse` throws the server's UsageError (Config/Options.swift, not compiled here).
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let fuzzHosts = WebPushHosts.browsers + ["127.0.0.1"]

extension WebPushHosts {
    static func + (hosts: WebPushHosts, extra: [String]) -> WebPushHosts { WebPushHosts(hosts.patterns + extra) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebPushSubscription(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    if let subscription = try? JSONDecoder().decode(WebPushSubscription.self, from: Data(bytes)),
       case .success(let checked) = WebPushSubscriptionRules.check(subscription, hosts: fuzzHosts) {
        invariant(checked.p256dh.count == 65 && checked.auth.count == 16, "accepted keys of the wrong size")
        invariant(checked.endpoint.hasPrefix("https://") || checked.endpoint.hasPrefix("HTTPS://") || checked.endpoint.lowercased().hasPrefix("https://"),
                  "accepted a non-https endpoint: \(checked.endpoint)")
        invariant(fuzzHosts.allows(host: checked.host), "accepted a host off the list: \(checked.host)")
        let token = WebPushSubscriptionRules.storedToken(subscription)
        invariant(WebPushSubscriptionRules.fromStoredToken(token) == subscription, "stored form does not round-trip")
        // What passed can be encrypted to (the point is on the curve).
        let sealed = try? WebPushEncryption.encrypt(Array("{}".utf8), p256dh: checked.p256dh, auth: checked.auth)
        invariant(sealed?.count == WebPushEncryption.overhead + 2, "cannot encrypt to an accepted subscription")
    }
    // Raw bytes as a peer's point: refused or accepted, never a crash.
    if let key = try? P256Key(publicPoint: bytes) {
        invariant((try? key.publicPoint()) == bytes, "a parsed point re-encodes differently")
    }
    _ = fuzzHosts.allows(host: String(decoding: bytes.prefix(300), as: UTF8.self))
    _ = try? WebPushHosts.parse(String(decoding: bytes.prefix(1000), as: UTF8.self))
    return 0
}
