import Foundation
import PortariaCore

/// Where the TURN relay is and the secret it shares with us (`--turn-url`,
/// `--turn-secret`), for coturn's `use-auth-secret` mode.
public struct TURNSettings: Sendable, Equatable {
    /// Host name or IP literal (IPv6 without brackets).
    public var host: String
    public var port: Int
    /// `turns:` (TLS to the relay) rather than `turn:`.
    public var secure: Bool = false
    /// coturn's `static-auth-secret`, used as the HMAC key byte for byte.
    public var secret: String

    /// Reads `turn:host[:port]`, `turns:host[:port]` or a bare `host[:port]`
    /// (`[v6]:port` for IPv6). The port defaults to 3478 (5349 for `turns:`).
    /// Throws `UsageError` naming the problem, so a typo fails `serve` at startup
    /// rather than every call at the gate.
    public static func parse(url: String, secret: String) throws -> TURNSettings {
        guard !secret.isEmpty else { throw UsageError("--turn-secret must not be empty") }
        var rest = Substring(url.trimmingCharacters(in: .whitespaces))
        var secure = false
        if rest.lowercased().hasPrefix("turns:") { secure = true; rest = rest.dropFirst(6) }
        else if rest.lowercased().hasPrefix("turn:") { rest = rest.dropFirst(5) }
        // The credential is the server's to mint and the transports are ours to list:
        // a URL carrying either would be silently ignored, so it is refused.
        guard !rest.contains("?"), !rest.contains("@"), !rest.contains("/") else {
            throw UsageError("--turn-url must be turn:host[:port] (no path, user or ?transport), got '\(url.prefix(80))'")
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw UsageError("--turn-url has an unclosed '[' in '\(url.prefix(80))'") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw UsageError("--turn-url: expected ':port' after ']' in '\(url.prefix(80))'") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        host = Substring(host.lowercased())
        guard !host.isEmpty, host.utf8.count <= 253,
              host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":") }) else {
            throw UsageError("--turn-url needs a host name or IP address, got '\(url.prefix(80))'")
        }
        var port = secure ? 5349 : 3478
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw UsageError("--turn-url port must be 1…65535, got '\(portText.prefix(10))'")
            }
            port = value
        }
        return TURNSettings(host: String(host), port: port, secure: secure, secret: secret)
    }

    /// `host:port` as it goes into a STUN/TURN URI (RFC 7064/7065), brackets for IPv6.
    var authority: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Mints the ICE server list of `GET /v1/calls/ice_servers` with TURN REST API
/// credentials: username `<expiry>:<subject>`, credential base64(HMAC-SHA1(secret,
/// username)). coturn (`use-auth-secret`) recomputes the HMAC from its copy of the
/// secret, so nothing is stored and any instance can mint them.
public struct ICEServerProvider: Sendable {
    /// How long a credential can start an allocation: 10 minutes.
    ///
    /// The credential ends up in a web page's JavaScript (the visitor's gate page) and
    /// in app memory, so it must be worthless soon after a leak; coturn checks the
    /// expiry only when an allocation is created, so an ongoing call is not cut when it
    /// passes (clients fetch a fresh list for each call and each ICE restart). Ten
    /// minutes covers the ring window, answering from a locked phone and a slow ICE
    /// gathering with a wide margin for clock skew between us and the relay.
    public static let defaultLifetime = 600

    public let turn: TURNSettings?
    public let lifetime: Int
    /// `--calls-allow-direct`: residents' direct candidates may reach the visitor.
    public let allowsDirect: Bool
    private let now: @Sendable () -> Date

    /// Whether calls can connect: through TURN, or directly when that is allowed.
    public var callsAvailable: Bool { turn != nil || allowsDirect }

    public init(turn: TURNSettings?, lifetime: Int = ICEServerProvider.defaultLifetime, allowsDirect: Bool = false,
                now: @escaping @Sendable () -> Date = { Date() }) {
        precondition(lifetime > 0, "a TURN credential lifetime must be positive")
        self.turn = turn
        self.lifetime = lifetime
        self.allowsDirect = allowsDirect
        self.now = now
    }

    /// From `--turn-url` / `--turn-secret`; nil settings when neither is given.
    public init(configuration: ServerConfiguration, now: @escaping @Sendable () -> Date = { Date() }) throws {
        var turn: TURNSettings?
        if let url = configuration.turnURL, let secret = configuration.turnSecret {
            turn = try TURNSettings.parse(url: url, secret: secret)
        }
        self.init(turn: turn, allowsDirect: configuration.callsAllowDirect, now: now)
    }

    /// The list for one participant. `subject` identifies who the relay serves, for
    /// coturn's logs and per-user quotas: a user id for residents and operators,
    /// `visitor-<visit id>` for a visitor page. It must not carry personal data (it
    /// is readable in the credential); a ':' in it (coturn's separator) becomes '_'.
    ///
    /// Without TURN configured the list is empty and `turn_configured` false: we run
    /// no STUN server of our own then, and pointing clients at a public one would
    /// hand residents' and visitors' IP addresses to a third party. `calls_available`
    /// and `ice_transport_policy` tell the client what the server enforces (decision
    /// 0066): a resident or operator (`visitor` false) gathers relay candidates only
    /// unless direct calls are allowed; the visitor's page gathers every kind.
    public func iceServers(forSubject subject: String, visitor: Bool = false) -> ICEServersResponse {
        let policy: ICETransportPolicy = visitor || allowsDirect ? .all : .relay
        guard let turn else {
            return ICEServersResponse(iceServers: [], ttl: lifetime, turnConfigured: false, callsAvailable: allowsDirect,
                                      iceTransportPolicy: policy)
        }
        let (username, credential) = Self.credential(secret: turn.secret, subject: subject,
                                                     expiresAt: Int(now().timeIntervalSince1970.rounded(.down)) + lifetime)
        var servers: [ICEServer] = []
        let relay: [String]
        if turn.secure {
            // TURN over TLS runs on TCP only (DTLS is not offered by browsers for TURN).
            relay = ["turns:\(turn.authority)?transport=tcp"]
        } else {
            // coturn answers STUN Binding on its TURN port; listing it saves the
            // client an authenticated allocation just to learn its public address.
            servers.append(ICEServer(urls: ["stun:\(turn.authority)"]))
            // TCP as well as UDP: gate networks and corporate Wi-Fi often block UDP.
            relay = ["turn:\(turn.authority)?transport=udp", "turn:\(turn.authority)?transport=tcp"]
        }
        servers.append(ICEServer(urls: relay, username: username, credential: credential))
        return ICEServersResponse(iceServers: servers, ttl: lifetime, turnConfigured: true, callsAvailable: true,
                                  iceTransportPolicy: policy)
    }

    /// The TURN REST API pair for `subject` valid until `expiresAt` (Unix seconds).
    public static func credential(secret: String, subject: String, expiresAt: Int) -> (username: String, credential: String) {
        let cleaned = String(subject.map { $0 == ":" ? "_" : $0 })
        let username = "\(expiresAt):\(cleaned)"
        let mac = Crypto.hmacSHA1(key: Array(secret.utf8), data: Array(username.utf8))
        return (username, Data(mac).base64EncodedString())
    }
}
