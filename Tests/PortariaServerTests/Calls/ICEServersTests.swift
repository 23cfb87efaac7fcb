import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

@Suite("ICE servers and TURN REST credentials")
struct ICEServersTests {
    @Test("HMAC-SHA1 matches the RFC 2202 test vectors")
    func hmacSHA1Vectors() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(Crypto.hmacSHA1(key: [UInt8](repeating: 0x0b, count: 20), data: Array("Hi There".utf8)))
                == "b617318655057264e28bc0b6fb378c8ef146be00")
        #expect(hex(Crypto.hmacSHA1(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8)))
                == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
    }

    @Test("the credential is base64(HMAC-SHA1(secret, 'expiry:subject'))")
    func credentialFormat() {
        let pair = ICEServerProvider.credential(secret: "Jefe", subject: "user-1", expiresAt: 1_700_000_600)
        #expect(pair.username == "1700000600:user-1")
        let mac = Crypto.hmacSHA1(key: Array("Jefe".utf8), data: Array("1700000600:user-1".utf8))
        #expect(pair.credential == Data(mac).base64EncodedString())
        #expect(Data(base64Encoded: pair.credential)?.count == 20)
        // coturn splits the username at ':'; a subject cannot add another one.
        #expect(ICEServerProvider.credential(secret: "s", subject: "a:b", expiresAt: 1).username == "1:a_b")
    }

    @Test("with TURN: a STUN entry and a TURN entry over UDP and TCP, expiring after the ttl")
    func listWithTURN() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000.7)
        let provider = ICEServerProvider(turn: try TURNSettings.parse(url: "turn:turn.example.org:3478", secret: "s3cret"),
                                         now: { now })
        let response = provider.iceServers(forSubject: "user-1")
        #expect(response.turnConfigured)
        #expect(response.ttl == 600)
        #expect(response.iceServers.count == 2)
        #expect(response.iceServers[0] == ICEServer(urls: ["stun:turn.example.org:3478"]))
        #expect(response.iceServers[1].urls == ["turn:turn.example.org:3478?transport=udp", "turn:turn.example.org:3478?transport=tcp"])
        #expect(response.iceServers[1].username == "1700000600:user-1")

        // The wire shape: snake_case, STUN entry without null username/credential.
        let json = String(decoding: try JSONCoding.encoder().encode(response), as: UTF8.self)
        #expect(json.hasPrefix(#"{"calls_available":true,"ice_servers":[{"urls":["stun:turn.example.org:3478"]},{"credential":""#))
        #expect(json.hasSuffix(#""ice_transport_policy":"relay","ttl":600,"turn_configured":true}"#))
        // The visitor's page gathers every kind; so does everyone with direct calls allowed.
        #expect(provider.iceServers(forSubject: "visitor-v", visitor: true).iceTransportPolicy == .all)
    }

    @Test("turns: lists only TURN over TLS; IPv6 hosts are bracketed")
    func secureAndIPv6() throws {
        let secure = ICEServerProvider(turn: try TURNSettings.parse(url: "turns:relay.example.org", secret: "s"))
            .iceServers(forSubject: "u")
        #expect(secure.iceServers.map(\.urls) == [["turns:relay.example.org:5349?transport=tcp"]])
        let v6 = ICEServerProvider(turn: try TURNSettings.parse(url: "[2001:db8::1]:3479", secret: "s")).iceServers(forSubject: "u")
        #expect(v6.iceServers[0].urls == ["stun:[2001:db8::1]:3479"])
    }

    @Test("without TURN: an empty list that says so, and that calls are unavailable unless direct calls are allowed")
    func listWithoutTURN() throws {
        let response = ICEServerProvider(turn: nil).iceServers(forSubject: "user-1")
        #expect(response == ICEServersResponse(iceServers: [], ttl: 600, turnConfigured: false, callsAvailable: false,
                                               iceTransportPolicy: .relay))
        let json = String(decoding: try JSONCoding.encoder().encode(response), as: UTF8.self)
        #expect(json == #"{"calls_available":false,"ice_servers":[],"ice_transport_policy":"relay","ttl":600,"turn_configured":false}"#)
        let direct = ICEServerProvider(turn: nil, allowsDirect: true).iceServers(forSubject: "user-1")
        #expect(direct.callsAvailable && direct.iceTransportPolicy == .all)
        // A server without the policy fields is read as one whose calls were available and direct.
        let older = try JSONCoding.decoder().decode(ICEServersResponse.self, from: Data(#"{"ice_servers":[],"ttl":600,"turn_configured":false}"#.utf8))
        #expect(older.callsAvailable && older.iceTransportPolicy == .all)
    }

    @Test("--turn-url forms", arguments: [
        ("turn:127.0.0.1:3478", "127.0.0.1", 3478, false),
        ("127.0.0.1", "127.0.0.1", 3478, false),
        ("TURN:Relay.Example.org:1234", "relay.example.org", 1234, false),
        ("turns:relay.example.org", "relay.example.org", 5349, true),
        ("[::1]:3478", "::1", 3478, false),
    ])
    func parseURL(url: String, host: String, port: Int, secure: Bool) throws {
        #expect(try TURNSettings.parse(url: url, secret: "s") == TURNSettings(host: host, port: port, secure: secure, secret: "s"))
    }

    @Test("bad --turn-url or empty secret fail at startup", arguments: [
        ("turn:host:0", "s"), ("turn:host:70000", "s"), ("turn:host:abc", "s"), ("turn:", "s"),
        ("turn:host?transport=udp", "s"), ("turn:user@host", "s"), ("http://host", "s"),
        ("turn:[::1", "s"), ("turn:host", ""), ("turn:ho st", "s"),
    ])
    func parseBadURL(url: String, secret: String) {
        #expect(throws: UsageError.self) { try TURNSettings.parse(url: url, secret: secret) }
    }

    @Test("serve options: --turn-url is validated with the rest of the configuration")
    func configuration() throws {
        let good = try ServerConfiguration.from(ParsedOptions(values: ["turn-url": "turn:127.0.0.1:3478", "turn-secret": "x"]))
        #expect(try ICEServerProvider(configuration: good).turn?.port == 3478)
        #expect(throws: UsageError.self) {
            try ServerConfiguration.from(ParsedOptions(values: ["turn-url": "turn:127.0.0.1:99999", "turn-secret": "x"]))
        }
        #expect(try ICEServerProvider(configuration: ServerConfiguration()).turn == nil)
    }
}
