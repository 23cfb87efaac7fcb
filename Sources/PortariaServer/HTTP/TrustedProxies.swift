import Foundation
import PortariaCore

/// Which proxies may tell us the client's address. Behind a TLS-terminating proxy every
/// request comes from the proxy, so per-IP limits (login, OTP, gate) would put all
/// residents in one bucket; `X-Forwarded-For` from a *trusted* peer restores the real
/// address. From anyone else the header is ignored: a client cannot choose its own bucket.
public struct TrustedProxies: Sendable {
    private let exact: Set<String>
    private let ipv4Networks: [(network: UInt32, mask: UInt32)]

    /// `addresses`: IPv4/IPv6 addresses and IPv4 CIDR blocks (`10.0.0.0/8`).
    public init(_ addresses: [String]) throws {
        var exact = Set<String>()
        var networks: [(UInt32, UInt32)] = []
        for entry in addresses.map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            if let slash = entry.firstIndex(of: "/") {
                guard let base = Self.ipv4(String(entry[..<slash])), let bits = Int(entry[entry.index(after: slash)...]),
                      (0...32).contains(bits) else {
                    throw ServerStartError("--trusted-proxies: '\(entry)' is not an IPv4 CIDR block")
                }
                let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - UInt32(bits))
                networks.append((base & mask, mask))
            } else {
                guard Self.ipv4(entry) != nil || entry.contains(":") else {
                    throw ServerStartError("--trusted-proxies: '\(entry)' is not an IP address")
                }
                exact.insert(entry)
            }
        }
        self.exact = exact
        ipv4Networks = networks
    }

    public static let none = try! TrustedProxies([])

    public var isEmpty: Bool { exact.isEmpty && ipv4Networks.isEmpty }

    public func trusts(_ address: String) -> Bool {
        if exact.contains(address) { return true }
        guard let value = Self.ipv4(address) else { return false }
        return ipv4Networks.contains { value & $0.mask == $0.network }
    }

    /// The client's address: the peer, or — when the peer is a trusted proxy — the
    /// rightmost address in `X-Forwarded-For` that is not itself a trusted proxy.
    public func clientAddress(peer rawPeer: String, forwardedFor: String?) -> String {
        // An IPv6 listener sees IPv4 peers as ::ffff:a.b.c.d.
        let peer = rawPeer.lowercased().hasPrefix("::ffff:") && Self.ipv4(String(rawPeer.dropFirst(7))) != nil
            ? String(rawPeer.dropFirst(7)) : rawPeer
        guard trusts(peer), let forwardedFor else { return peer }
        let hops = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for hop in hops.reversed() where !trusts(hop) {
            // Only something that looks like an address; anything else is the proxy's problem.
            if Self.ipv4(hop) != nil || Self.looksLikeIPv6(hop) { return hop }
            return peer
        }
        return hops.first ?? peer
    }

    /// Hex digits, colons and dots (an embedded IPv4), with a colon, in at most 45 bytes
    /// (the longest IPv6 text): the shape of an IPv6 address, so that what becomes a per-IP
    /// limit's key is short and is not any text a client chose.
    static func looksLikeIPv6(_ text: String) -> Bool {
        text.utf8.count <= 45 && text.contains(":") && text.allSatisfy { $0 == ":" || $0 == "." || $0.isASCIIHexDigit }
    }

    static func ipv4(_ text: String) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard let octet = UInt8(part), part.count <= 3 else { return nil }
            value = value << 8 | UInt32(octet)
        }
        return value
    }
}
