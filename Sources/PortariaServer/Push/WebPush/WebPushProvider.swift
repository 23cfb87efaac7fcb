import Foundation
import PortariaCore

/// The server's VAPID identity (RFC 8292): a P-256 key pair browsers bind subscriptions to
/// (`applicationServerKey`), and the contact (`sub`) push services may write to.
public struct VAPIDKeys: Sendable {
    let signer: ProviderKey
    /// Uncompressed public point, 65 bytes.
    public let publicKey: [UInt8]
    public let subject: String

    public var publicKeyBase64URL: String { Base64URL.encode(publicKey) }

    /// From a PEM private key (P-256).
    public init(pem: String, subject: String) throws {
        let key = try P256Key(pem: pem)
        publicKey = try key.publicPoint()
        signer = try ProviderKey(pem: pem)
        guard signer.algorithm == .es256 else { throw ProviderKey.KeyError("the VAPID key must be EC P-256") }
        self.subject = subject
    }

    /// Where the key sits in `service_state`, as wrapping context.
    static let context = "service_state:vapid_private_key"

    /// `--vapid-key-file`, or the key kept in the database (`service_state`, wrapped with
    /// the secrets key), made at first start.
    public static func load(_ database: any SQLDatabase, keyFile: String?, secretsKey key: SecretsKey?, subject: String) async throws -> VAPIDKeys {
        if let keyFile {
            guard let data = FileManager.default.contents(atPath: keyFile), let pem = String(data: data, encoding: .utf8) else {
                throw ServerStartError("cannot read --vapid-key-file \(keyFile)")
            }
            do { return try VAPIDKeys(pem: pem, subject: subject) } catch {
                throw ServerStartError("--vapid-key-file \(keyFile) is not a P-256 private key in PEM")
            }
        }
        let fresh = try P256Key.generate().privatePEM()
        let context = Self.context
        let pem: [UInt8] = try await database.write { db in
            let stored = try VAPIDKeyStore.keepFirst(db, wrapped: ServiceSecrets.store(Array(fresh.utf8), context: context, key: key),
                                                     at: Date())
            // A plaintext key from an older database was wrapped by `ServiceSecrets.open`.
            return try ServiceSecrets.reveal(stored, context: context, key: key)
        }
        return try VAPIDKeys(pem: String(decoding: pem, as: UTF8.self), subject: subject)
    }
}

/// Web Push (RFC 8030) to the browsers' push services, as a third platform of the outbox:
/// the payload encrypted with `aes128gcm` (RFC 8291), a VAPID token per push service
/// origin (RFC 8292), `TTL` = what is left of the push's window, `Urgency: high` for
/// rings, deliveries and cancellations.
public final class WebPushProvider: PushProvider {
    public let name = "webpush"
    public let vapid: VAPIDKeys
    public let hosts: WebPushHosts
    public let client: HTTP2Client
    let now: @Sendable () -> Date
    /// One VAPID JWT per push service origin, reused for `tokenLifetime` (≤ 24 h, RFC 8292 §2).
    private let tokens = Locked<[String: (jwt: String, expires: Date)]>([:])
    public static let tokenLifetime: TimeInterval = 12 * 3600

    public init(vapid: VAPIDKeys, hosts: WebPushHosts, caFile: String? = nil, log: Log = .shared,
                now: @escaping @Sendable () -> Date = { Date() }) throws {
        self.vapid = vapid
        self.hosts = hosts
        self.now = now
        client = try HTTP2Client(caFile: caFile, label: "webpush", log: log)
    }

    public func shutdown() { client.shutdown() }

    /// The JSON the service worker decrypts: the FCM data message's fields (same names,
    /// same string values, one builder), so one decoder serves Android and the web.
    public static func payload(_ push: OutgoingPush) -> JSONValue {
        .object(FCMProvider.dataFields(push))
    }

    /// `vapid t=<JWT>, k=<public key>` for the endpoint's origin.
    func authorization(origin: String) throws -> String {
        let at = now()
        if let cached = tokens.withLock({ $0[origin] }), cached.expires.timeIntervalSince(at) > 3600 {
            return "vapid t=\(cached.jwt), k=\(vapid.publicKeyBase64URL)"
        }
        let expires = at.addingTimeInterval(Self.tokenLifetime)
        let jwt = try vapid.signer.jwt(header: ["typ": .string("JWT")], claims: [
            "aud": .string(origin), "exp": .int(Int64(expires.timeIntervalSince1970)), "sub": .string(vapid.subject),
        ])
        tokens.withLock { $0[origin] = (jwt, expires) }
        return "vapid t=\(jwt), k=\(vapid.publicKeyBase64URL)"
    }

    public func send(_ push: OutgoingPush) async -> PushResult {
        guard let subscription = WebPushSubscriptionRules.fromStoredToken(push.token) else {
            return PushResult(outcome: .tokenInvalid, reason: "NOT_A_SUBSCRIPTION", detail: "the device's token is not a web push subscription")
        }
        // Checked again at send time: the allow-list may have shrunk since registration.
        let checked: WebPushSubscriptionRules.Checked
        switch WebPushSubscriptionRules.check(subscription, hosts: hosts) {
        case .success(let value): checked = value
        case .failure(let invalid): return PushResult(outcome: .tokenInvalid, reason: "SUBSCRIPTION_REFUSED", detail: invalid.message)
        }
        let body: [UInt8]
        do {
            let plaintext = Array(Self.payload(push).jsonText.utf8)
            guard plaintext.count <= WebPushEncryption.maxPlaintext else {
                return PushResult(outcome: .failed, reason: "PAYLOAD_TOO_LARGE",
                                  detail: "\(plaintext.count) bytes > \(WebPushEncryption.maxPlaintext) (checked before sending)")
            }
            body = try WebPushEncryption.encrypt(plaintext, p256dh: checked.p256dh, auth: checked.auth)
        } catch {
            return PushResult(outcome: .failed, reason: "ENCRYPTION", detail: "\(error)")
        }
        guard let url = URLComponents(string: checked.endpoint), let scheme = url.scheme, let host = url.host else {
            return PushResult(outcome: .tokenInvalid, reason: "SUBSCRIPTION_REFUSED")
        }
        let origin = "\(scheme.lowercased())://\(host.lowercased())" + (url.port.map { ":\($0)" } ?? "")
        let vapidHeader: String
        do { vapidHeader = try authorization(origin: origin) } catch {
            return PushResult(outcome: .failed, reason: "VAPID", detail: "\(error)")
        }
        let ttl = max(0, Int(push.deadline.timeIntervalSince(now()).rounded(.down)))
        let urgency = push.kind == .test ? "normal" : "high"
        var headers: [(String, String)] = [
            ("authorization", vapidHeader), ("content-encoding", "aes128gcm"),
            ("content-type", "application/octet-stream"), ("ttl", String(ttl)), ("urgency", urgency),
        ]
        // One topic per visit: a cancellation still queued at the push service replaces
        // the ring it cancels (RFC 8030 §5.4) instead of arriving after it.
        if let visit = push.message.visitID {
            let topic = visit.replacingOccurrences(of: "-", with: "")
            if topic.count <= 32, topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) { headers.append(("topic", topic)) }
        }
        let request = OutboundRequest(method: "POST", url: checked.endpoint, headers: headers, body: body, timeout: 10)
        var response: OutboundResponse
        do {
            response = try await client.send(request)
        } catch {
            do { response = try await client.send(request) } catch {  // stale connection: once more on a new one
                return PushResult(outcome: .retry, reason: "transport", detail: "\(error)")
            }
        }
        return Self.interpret(status: response.status, headers: response.headers, body: response.body)
    }

    /// RFC 8030's answers: `WebPushResponse.interpret`.
    public static func interpret(status: Int, headers: [String: String], body: [UInt8]) -> PushResult {
        WebPushResponse.interpret(status: status, headers: headers, body: body)
    }
}
