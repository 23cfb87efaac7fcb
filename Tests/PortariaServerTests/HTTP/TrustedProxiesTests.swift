import Testing
@testable import PortariaServer

@Suite("Trusted proxies and X-Forwarded-For")
struct TrustedProxiesTests {
    @Test func untrustedPeersCannotChooseTheirAddress() throws {
        let proxies = try TrustedProxies(["10.0.0.5"])
        #expect(proxies.clientAddress(peer: "203.0.113.9", forwardedFor: "198.51.100.1") == "203.0.113.9")
        #expect(TrustedProxies.none.clientAddress(peer: "127.0.0.1", forwardedFor: "198.51.100.1") == "127.0.0.1")
    }

    @Test func theRightmostUntrustedHopIsTheClient() throws {
        let proxies = try TrustedProxies(["10.0.0.0/8", "127.0.0.1"])
        // A client may prepend anything; only what our proxies appended counts.
        #expect(proxies.clientAddress(peer: "10.1.2.3", forwardedFor: "1.2.3.4, 198.51.100.7, 10.9.9.9") == "198.51.100.7")
        #expect(proxies.clientAddress(peer: "127.0.0.1", forwardedFor: "198.51.100.7") == "198.51.100.7")
        #expect(proxies.clientAddress(peer: "127.0.0.1", forwardedFor: nil) == "127.0.0.1")
        #expect(proxies.clientAddress(peer: "127.0.0.1", forwardedFor: "not-an-address") == "127.0.0.1")
        #expect(proxies.clientAddress(peer: "127.0.0.1", forwardedFor: "2001:db8::1") == "2001:db8::1")
        // An IPv6 listener sees the IPv4 proxy as ::ffff:a.b.c.d.
        #expect(proxies.clientAddress(peer: "::ffff:10.1.2.3", forwardedFor: "198.51.100.7") == "198.51.100.7")
    }

    /// What a per-IP limit counts by is an address, not text a client chose: a hop with a
    /// colon is taken only in the shape of an IPv6 address and its length.
    @Test func onlyAnAddressShapedHopIsTaken() throws {
        let proxies = try TrustedProxies(["127.0.0.1"])
        let combining = "2001:db8::1" + String(repeating: "\u{301}", count: 40)
        for hop in ["a:b c", "x:y", "::" + String(repeating: "0", count: 44), combining, "fe80::1%eth0", "[2001:db8::1]"] {
            #expect(proxies.clientAddress(peer: "127.0.0.1", forwardedFor: hop) == "127.0.0.1", "\(hop)")
        }
        for hop in ["::1", "2001:DB8::7", "::ffff:198.51.100.7", "0000:0000:0000:0000:0000:ffff:255.255.255.255"] {
            #expect(proxies.clientAddress(peer: "127.0.0.1", forwardedFor: hop) == hop)
        }
    }

    @Test func cidrBlocksMatchByPrefix() throws {
        let proxies = try TrustedProxies(["192.168.0.0/16"])
        #expect(proxies.trusts("192.168.44.1"))
        #expect(!proxies.trusts("192.169.0.1"))
        #expect(!proxies.trusts("::1"))
    }

    @Test func badEntriesAreRefused() {
        for entry in ["10.0.0.0/33", "300.1.1.1", "proxy.local", "10.0.0/8"] {
            #expect(throws: ServerStartError.self) { _ = try TrustedProxies([entry]) }
        }
    }
}
