import Foundation
import PortariaCore

/// APNs token-auth settings (`--apns-*`).
public struct APNsConfiguration: Sendable {
    public var keyFile: String
    public var keyID: String
    public var teamID: String
    /// The app's bundle id; VoIP pushes go to `<bundle>.voip`.
    public var bundleID: String
    /// `https://api.push.apple.com`, `https://api.sandbox.push.apple.com` or a test server.
    public var endpoint = "https://api.push.apple.com"
    public var caFile: String?
    /// How long one provider token is reused. Apple refuses tokens older than an hour and
    /// answers `TooManyProviderTokenUpdates` to providers that mint more often than every
    /// 20 minutes, so this is clamped to 20…55 minutes.
    public var tokenLifetime: TimeInterval = 50 * 60
    public var requestTimeout: TimeInterval = 10
    /// Pushes in flight on the one connection; more wait in the client (`HTTP2Client`).
    public var maxConcurrentStreams = 100
}

/// The ES256 provider token, minted once and shared by every request until it ages out.
public final class APNsTokenCache: Sendable {
    private let key: ProviderKey
    private let keyID: String
    private let teamID: String
    private let lifetime: TimeInterval
    private let now: @Sendable () -> Date
    /// The token and when it was minted; `answered` when it was minted because APNs refused
    /// the one before it (`refresh`).
    private let state = Locked<(token: String, issuedAt: Date, answered: Bool)?>(nil)
    /// Tokens minted so far (tests assert reuse).
    public let minted = Locked(0)

    public init(key: ProviderKey, keyID: String, teamID: String, lifetime: TimeInterval,
                now: @escaping @Sendable () -> Date = { Date() }) throws {
        guard key.algorithm == .es256 else { throw ProviderKey.KeyError("the APNs key must be an EC P-256 (.p8) key") }
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.lifetime = min(55 * 60, max(20 * 60, lifetime))
        self.now = now
    }

    /// The current token, minting a new one when there is none or it is `lifetime` old.
    public func token() throws -> String {
        let at = now()
        return try state.withLock { current in
            if let current, at.timeIntervalSince(current.issuedAt) < lifetime, at >= current.issuedAt { return current.token }
            let token = try mint(at)
            current = (token, at, false)
            return token
        }
    }

    /// Apple's shortest interval between two provider tokens of one key.
    static let minimumRefreshInterval: TimeInterval = 20 * 60

    /// After APNs refused `stale` (`ExpiredProviderToken`, `InvalidProviderToken`): a new
    /// token, unless a concurrent request already replaced it (then that one). Nil when
    /// `stale` was itself minted after a refusal less than 20 minutes ago: a key APNs keeps
    /// refusing must not mint a token per push, which earns `TooManyProviderTokenUpdates`.
    public func refresh(replacing stale: String) throws -> String? {
        let at = now()
        return try state.withLock { current in
            if let current, current.token != stale { return current.token }
            if let current, current.answered, at.timeIntervalSince(current.issuedAt) < Self.minimumRefreshInterval,
               at >= current.issuedAt {
                return nil
            }
            let token = try mint(at)
            current = (token, at, true)
            return token
        }
    }

    private func mint(_ at: Date) throws -> String {
        minted.withLock { $0 += 1 }
        // Apple: header {alg: ES256, kid}, claims {iss: team id, iat: seconds}; nothing else.
        return try key.jwt(header: ["kid": .string(keyID)],
                           claims: ["iss": .string(teamID), "iat": .int(Int64(at.timeIntervalSince1970))])
    }
}

/// Sends to APNs over one multiplexed HTTP/2 connection (`HTTP2Client`).
public final class APNsProvider: PushProvider {
    public let name = "apns"
    public let configuration: APNsConfiguration
    public let tokens: APNsTokenCache
    public let client: HTTP2Client
    let log: Log
    let now: @Sendable () -> Date
    /// `<endpoint>/3/device/`: each push's URL is this and its token.
    private let deviceURL: String

    /// VoIP payloads may be 5 KB; every other push type 4 KB (Apple's limits).
    public static let voipPayloadLimit = 5120
    public static let alertPayloadLimit = 4096

    public init(configuration: APNsConfiguration, log: Log = .shared, now: @escaping @Sendable () -> Date = { Date() }) throws {
        self.configuration = configuration
        self.log = log
        self.now = now
        deviceURL = configuration.endpoint.trimmingSuffix("/") + "/3/device/"
        let key = try ProviderKey(pemFile: configuration.keyFile)
        tokens = try APNsTokenCache(key: key, keyID: configuration.keyID, teamID: configuration.teamID,
                                    lifetime: configuration.tokenLifetime, now: now)
        client = try HTTP2Client(caFile: configuration.caFile, maxConcurrentStreams: configuration.maxConcurrentStreams,
                                 label: "apns", log: log)
    }

    public func shutdown() { client.shutdown() }

    /// The request APNs gets for a push (headers and body); public for tests and `push-test`.
    public struct Rendered: Sendable {
        public var pushType: String
        public var topic: String
        public var priority: Int
        public var expiration: Int64
        public var payload: [UInt8]
        public var limit: Int
        /// `apns-collapse-id`: the visit id for every alert about a visit, so a later alert
        /// replaces the earlier one on the phone instead of stacking beside it.
        public var collapseID: String? = nil
    }

    /// Apple limits `apns-collapse-id` to 64 bytes (a UUID is 36).
    static func collapseID(_ visitID: String?) -> String? {
        guard let visitID, !visitID.isEmpty, visitID.utf8.count <= 64 else { return nil }
        return visitID
    }

    /// An alert someone must act on (the alert ring, a delivery): time-sensitive with sound,
    /// so it breaks through Focus; the category's buttons; `mutable-content`, without which
    /// no Notification Service Extension runs — no photo and no receipt, so push health
    /// would call every iPhone failing; the visit as collapse id, so a later alert about the
    /// same visit replaces this one.
    private func actionableAlert(_ fields: [String: JSONValue], title: String, text: String, category: String,
                                 visitID: String?, expiration: Int64) -> Rendered {
        var body = fields
        body["aps"] = .object([
            "alert": .object(["title": .string(title), "body": .string(text)]),
            "category": .string(category),
            "interruption-level": "time-sensitive",
            "sound": "default",
            "mutable-content": .number(1),
        ])
        var rendered = Rendered(pushType: "alert", topic: configuration.bundleID, priority: 10, expiration: expiration,
                                payload: Array(JSONValue.object(body).jsonText.utf8), limit: Self.alertPayloadLimit)
        rendered.collapseID = Self.collapseID(visitID)
        return rendered
    }

    public func render(_ push: OutgoingPush) -> Rendered {
        let m = push.message
        let expiration = Int64(push.deadline.timeIntervalSince1970.rounded(.down))
        // The apps' payload type in APNs' shape; `ack_token` sits beside `aps`, so the
        // Notification Service Extension can acknowledge without a session (decision 0016).
        var body = push.payload(.apns).fields(.apns)
        switch push.kind {
        case .visitRing where push.tokenKind == .push:
            // An iPhone without a PushKit token (VoIP refused, old app): a time-sensitive
            // alert with sound breaks through Focus and the lock screen, which is the
            // nearest an alert gets to ringing. The VISIT category offers Atender / Negar;
            // the fields are the VoIP push's, so the app decodes it the same way.
            let caller = OutgoingPush.name(m.callerName ?? "Visitante")
            let badge = (m.geofence ?? .unknown).badge
            return actionableAlert(body, title: "\(caller) está na portaria",
                                   text: "Visita para \(m.unitLabel ?? "sua unidade") · \(badge)",
                                   category: NotificationCategoryID.visit, visitID: m.visitID, expiration: expiration)
        case .visitRing:
            // PushKit: the app must report the call to CallKit before any network call,
            // so everything the call screen shows travels in the payload.
            return Rendered(pushType: "voip", topic: configuration.bundleID + ".voip", priority: 10, expiration: expiration,
                            payload: Array(JSONValue.object(body).jsonText.utf8), limit: Self.voipPayloadLimit)
        case .ringCancelled:
            // A VoIP push can only mean "ring now" (iOS kills apps that do not report a
            // call for one), so the cancellation is a background push. Apple requires
            // priority 5 for background pushes.
            body["aps"] = .object(["content-available": .number(1)])
            return Rendered(pushType: "background", topic: configuration.bundleID, priority: 5, expiration: expiration,
                            payload: Array(JSONValue.object(body).jsonText.utf8), limit: Self.alertPayloadLimit)
        case .delivery:
            // The category names the three actions the app registered (authorize,
            // leave_at_concierge, deny). A later "Maria autorizou às 14:32" (same collapse
            // id) replaces this alert.
            return actionableAlert(body, title: Self.deliveryTitle(m), text: Self.deliveryBody(m),
                                   category: NotificationCategoryID.delivery, visitID: m.visitID, expiration: expiration)
        case .deliveryResolved, .automaticResolution:
            // Replaces the delivery alert (same collapse id) with one that has no actions,
            // so nobody taps a decided delivery. Someone else's decision is passive (no
            // sound, no screen wake); an automatic one is announced as a normal alert,
            // since nobody was asked — but silently, the courier needs nobody.
            body["aps"] = .object([
                "alert": .object(["title": .string(Self.deliveryTitle(m)), "body": body["text"] ?? .null]),
                "interruption-level": .string(push.kind == .deliveryResolved ? "passive" : "active"),
                "mutable-content": .number(1),
            ])
            var rendered = Rendered(pushType: "alert", topic: configuration.bundleID, priority: 10, expiration: expiration,
                                    payload: Array(JSONValue.object(body).jsonText.utf8), limit: Self.alertPayloadLimit)
            rendered.collapseID = Self.collapseID(m.visitID)
            return rendered
        case .test:
            body["aps"] = .object(["alert": .object(["title": "Portaria: teste de notificação",
                                                     "body": .string(m.text ?? OutgoingPush.testText)]),
                                   "sound": "default",
                                   // The extension's receipt proves the whole chain, not just APNs.
                                   "mutable-content": .number(1)])
            return Rendered(pushType: "alert", topic: configuration.bundleID, priority: 10, expiration: expiration,
                            payload: Array(JSONValue.object(body).jsonText.utf8), limit: Self.alertPayloadLimit)
        }
    }

    /// "Entrega para A-101".
    static func deliveryTitle(_ m: PushMessage) -> String {
        "Entrega para \(m.unitLabel ?? "sua unidade")"
    }

    /// "iFood — Rafael está na portaria"; "Um entregador está na portaria" without names.
    static func deliveryBody(_ m: PushMessage) -> String {
        let who = [m.carrier, m.callerName].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " — ")
        return who.isEmpty ? "Um entregador está na portaria" : "\(String(who.prefix(200))) está na portaria"
    }

    /// APNs' answers that refuse the provider token, not the push: a new token may pass.
    static let providerTokenRefused = APNsResponse.providerTokenRefused

    public func send(_ push: OutgoingPush) async -> PushResult { await start(push).result() }

    /// Renders the push and hands its request to the HTTP/2 client on the calling thread
    /// (decision 0131); what follows the answer — a retry on a fresh connection, a new
    /// provider token — happens when the result is awaited.
    public func start(_ push: OutgoingPush) -> StartedPush {
        let rendered = render(push)
        guard rendered.payload.count <= rendered.limit else {
            let result = PushResult(outcome: .failed, reason: "PayloadTooLarge",
                                    detail: "\(rendered.payload.count) bytes > \(rendered.limit) (checked before sending)")
            return StartedPush { result }
        }
        let token: String
        do { token = try tokens.token() } catch {
            let result = PushResult(outcome: .failed, reason: "ProviderTokenError", detail: "\(error)")
            return StartedPush { result }
        }
        let first = client.start(request(push, rendered, jwt: token))
        return StartedPush { [self] in await self.finish(push, rendered, jwt: token, first: first) }
    }

    private func finish(_ push: OutgoingPush, _ rendered: Rendered, jwt token: String, first: PendingResponse) async -> PushResult {
        var result = await outcome(of: first)
        if result.outcome == .retry, result.httpStatus == nil {
            // A transport failure on a reused connection (closed by GOAWAY or an idle
            // timeout we had not noticed yet): one immediate retry on a fresh connection.
            result = await exchange(push, rendered, jwt: token)
        }
        if let reason = result.reason, Self.providerTokenRefused.contains(reason) {
            // Our clock, the cached token or its signature is off: mint once and retry once
            // (decision 0130). Never loop: minting too often earns TooManyProviderTokenUpdates.
            log.warning("APNs refused the provider token: minting a new one", ["push_id": .string(push.pushID), "reason": .string(reason)])
            do {
                guard let fresh = try tokens.refresh(replacing: token) else {
                    result.outcome = .failed
                    return result
                }
                result = await exchange(push, rendered, jwt: fresh)
            } catch {
                return PushResult(outcome: .failed, reason: "ProviderTokenError", detail: "\(error)")
            }
            if let reason = result.reason, Self.providerTokenRefused.contains(reason) { result.outcome = .failed }
        }
        return result
    }

    private func exchange(_ push: OutgoingPush, _ rendered: Rendered, jwt: String) async -> PushResult {
        await outcome(of: client.start(request(push, rendered, jwt: jwt)))
    }

    private func outcome(of pending: PendingResponse) async -> PushResult {
        let response: OutboundResponse
        do { response = try await pending.value() } catch {
            return PushResult(outcome: .retry, reason: "transport", detail: "\(error)")
        }
        return Self.interpret(status: response.status, headers: response.headers, body: response.body)
    }

    private func request(_ push: OutgoingPush, _ rendered: Rendered, jwt: String) -> OutboundRequest {
        var request = OutboundRequest(method: "POST", url: deviceURL + push.token, headers: [
            ("authorization", "bearer \(jwt)"),
            ("apns-push-type", rendered.pushType),
            ("apns-topic", rendered.topic),
            ("apns-priority", String(rendered.priority)),
            ("apns-expiration", String(rendered.expiration)),
            ("apns-id", push.pushID),
            ("content-type", "application/json"),
        ], body: rendered.payload, timeout: configuration.requestTimeout)
        if let collapseID = rendered.collapseID { request.headers.append(("apns-collapse-id", collapseID)) }
        return request
    }

    /// Apple's response table: `APNsResponse.interpret`.
    public static func interpret(status: Int, headers: [String: String], body: [UInt8]) -> PushResult {
        APNsResponse.interpret(status: status, headers: headers, body: body)
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        var text = self
        while text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }
}
