// fuzz/forwarded-for: TrustedProxies.clientAddress, which reads `X-Forwarded-For` from a
// trusted proxy (the proxy appends the real peer, but passes on whatever the client put
// before it) and picks the address every per-IP limit counts. The first byte chooses the
// trusted list, the second the peer (trusted or not, bare or as ::ffff:a.b.c.d), the third
// whether the header is there; the rest is the header.
// Properties: from an untrusted peer, or with no header, the answer is the peer; otherwise
// it is the peer or one of the header's hops, never longer than 45 bytes unless it is the
// peer; an untrusted answer looks like an address; a trusted hop appended after the others
// changes nothing; an IPv4 the parser accepts is printed back to the same value.

let trustedLists: [[String]] = [[], ["127.0.0.1"], ["10.0.0.0/8", "127.0.0.1"], ["192.168.0.0/16", "::1"], ["0.0.0.0/0"]]
let peers = ["127.0.0.1", "::ffff:127.0.0.1", "::FFFF:10.1.2.3", "10.9.8.7", "198.51.100.7", "::1", "2001:db8::1", "192.168.1.1"]
let trustedProxiesByList = trustedLists.map { try! TrustedProxies($0) }

let ipv6Bytes = Set("0123456789abcdefABCDEF:.".utf8)

func looksLikeAddress(_ text: String) -> Bool {
    TrustedProxies.ipv4(text) != nil || (text.utf8.count <= 45 && text.utf8.allSatisfy(ipv6Bytes.contains))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzForwardedFor(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard bytes.count >= 3 else { return 0 }
    let list = Int(bytes[0]) % trustedLists.count
    let proxies = trustedProxiesByList[list]
    let rawPeer = peers[Int(bytes[1]) % peers.count]
    let header: String? = bytes[2] & 1 == 0 ? nil : String(decoding: bytes.dropFirst(3), as: UTF8.self)
    let answer = proxies.clientAddress(peer: rawPeer, forwardedFor: header)

    let peer = proxies.clientAddress(peer: rawPeer, forwardedFor: nil)
    invariant(!peer.lowercased().hasPrefix("::ffff:") || TrustedProxies.ipv4(String(peer.dropFirst(7))) == nil,
              "the peer \(rawPeer) kept its IPv4-mapped prefix: \(peer)")
    guard proxies.trusts(peer), let header else {
        invariant(answer == peer, "an untrusted peer or no header, yet \(answer) instead of \(peer)")
        return 0
    }
    let hops = header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    invariant(answer == peer || hops.contains(answer), "\(answer) is neither the peer nor a hop of \(header)")
    invariant(answer == peer || answer.utf8.count <= 45, "a \(answer.utf8.count)-byte address from \(header)")
    invariant(proxies.trusts(answer) || looksLikeAddress(answer), "\(answer) does not look like an address")
    if !hops.isEmpty, let lastTrusted = trustedLists[list].first(where: { !$0.contains("/") }) {
        let appended = proxies.clientAddress(peer: rawPeer, forwardedFor: header + ", " + lastTrusted)
        invariant(appended == answer, "appending the trusted \(lastTrusted) changed \(answer) to \(appended)")
    }

    let text = String(decoding: bytes.dropFirst(3).prefix(20), as: UTF8.self)
    if let value = TrustedProxies.ipv4(text) {
        let printed = [24, 16, 8, 0].map { String(value >> UInt32($0) & 0xff) }.joined(separator: ".")
        invariant(TrustedProxies.ipv4(printed) == value, "\(text) read as \(printed), which reads differently")
    }
    return 0
}
