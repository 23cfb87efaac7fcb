import Foundation
import PortariaCore

/// The fields of a Google service-account JSON file that FCM v1 needs.
public struct FCMServiceAccount: Decodable, Sendable {
    public var projectID: String
    public var clientEmail: String
    public var privateKey: String
    public var privateKeyID: String?
    /// Where the OAuth2 JWT-bearer grant is posted (Google's is https://oauth2.googleapis.com/token).
    public var tokenURI: String

    enum CodingKeys: String, CodingKey {
        case projectID = "project_id"
        case clientEmail = "client_email"
        case privateKey = "private_key"
        case privateKeyID = "private_key_id"
        case tokenURI = "token_uri"
    }

    public static func load(path: String) throws -> FCMServiceAccount {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ProviderKey.KeyError("cannot read FCM service account \(path)")
        }
        do { return try JSONDecoder().decode(FCMServiceAccount.self, from: data) } catch {
            throw ProviderKey.KeyError("FCM service account \(path) lacks project_id, client_email, private_key or token_uri")
        }
    }
}

/// An OAuth2 access token for FCM, fetched with a signed JWT (RFC 7523) and reused until
/// shortly before it expires. One fetch at a time: concurrent sends wait for the same one.
actor FCMAccessTokens {
    private let account: FCMServiceAccount
    private let key: ProviderKey
    private let client: HTTP2Client
    private let now: @Sendable () -> Date
    private var cached: (token: String, expiresAt: Date)?
    private var pending: Task<(String, Date), any Error>?
    private(set) var fetched = 0
    /// Refresh this long before `expires_in` runs out, so no send carries a token that
    /// expires in flight.
    static let margin: TimeInterval = 300

    init(account: FCMServiceAccount, key: ProviderKey, client: HTTP2Client, now: @escaping @Sendable () -> Date) {
        self.account = account
        self.key = key
        self.client = client
        self.now = now
    }

    func token() async throws -> String {
        if let cached, now() < cached.expiresAt.addingTimeInterval(-Self.margin) { return cached.token }
        if let pending { return try await pending.value.0 }
        let task = Task { try await self.fetch() }
        pending = task
        defer { pending = nil }
        let (token, expiresAt) = try await task.value
        cached = (token, expiresAt)
        return token
    }

    /// After a 401: forget `stale` so the next `token()` fetches.
    func invalidate(_ stale: String) {
        if cached?.token == stale { cached = nil }
    }

    private func fetch() async throws -> (String, Date) {
        fetched += 1
        let issued = now()
        let iat = Int64(issued.timeIntervalSince1970)
        var header: [String: JSONValueLike] = ["typ": .string("JWT")]
        if let kid = account.privateKeyID { header["kid"] = .string(kid) }
        let assertion = try key.jwt(header: header, claims: [
            "iss": .string(account.clientEmail),
            "scope": .string("https://www.googleapis.com/auth/firebase.messaging"),
            "aud": .string(account.tokenURI),
            "iat": .int(iat),
            "exp": .int(iat + 3600),
        ])
        let form = "grant_type=" + formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + formEncode(assertion)
        let response = try await client.send(OutboundRequest(method: "POST", url: account.tokenURI,
                                                             headers: [("content-type", "application/x-www-form-urlencoded")],
                                                             body: Array(form.utf8), timeout: 10))
        let grant = try FCMResponse.grant(status: response.status, body: response.body).get()
        return (grant.token, issued.addingTimeInterval(grant.lifetime))
    }

    private func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// FCM HTTP v1 (`POST {endpoint}/v1/projects/{project}/messages:send`) over HTTP/2.
public final class FCMProvider: PushProvider {
    public let name = "fcm"
    public let account: FCMServiceAccount
    public let endpoint: String
    public let client: HTTP2Client
    let tokens: FCMAccessTokens
    let now: @Sendable () -> Date
    /// FCM's limit on a message's data payload.
    public static let dataLimit = 4096
    /// Google asks for at least a minute's pause after QUOTA_EXCEEDED.
    public static let quotaBackoff = FCMResponse.quotaBackoff

    public init(serviceAccountFile: String, endpoint: String = "https://fcm.googleapis.com", caFile: String? = nil,
                log: Log = .shared, now: @escaping @Sendable () -> Date = { Date() }) throws {
        account = try FCMServiceAccount.load(path: serviceAccountFile)
        let key = try ProviderKey(pem: account.privateKey)
        guard key.algorithm == .rs256 else { throw ProviderKey.KeyError("the FCM service account key must be RSA") }
        self.endpoint = endpoint.trimmingSuffix("/")
        self.now = now
        client = try HTTP2Client(caFile: caFile, label: "fcm", log: log)
        tokens = FCMAccessTokens(account: account, key: key, client: client, now: now)
    }

    public func shutdown() { client.shutdown() }

    /// OAuth token fetches so far (tests assert caching).
    public func accessTokensFetched() async -> Int { await tokens.fetched }

    /// The data fields every platform without its own payload format gets — FCM's data
    /// message and the Web Push payload (decision 0025) — with string values only, so the
    /// Android app and the service worker decode the same thing (`PushPayload`).
    public static func dataFields(_ push: OutgoingPush) -> [String: JSONValue] {
        push.payload(.data).fields(.data)
    }

    /// The `message` object: a data message (the app builds the CallStyle or actionable
    /// notification itself), HIGH priority so Doze delivers it now, `ttl` = what is left of
    /// the window. FCM requires every data value to be a string.
    public func render(_ push: OutgoingPush) -> JSONValue {
        let data = Self.dataFields(push)
        let m = push.message
        let ttl = max(1, Int(push.deadline.timeIntervalSince(now()).rounded(.down)))
        var android: [String: JSONValue] = ["priority": "HIGH", "ttl": .string("\(ttl)s")]
        if [.delivery, .deliveryResolved, .automaticResolution].contains(push.kind), let visit = m.visitID {
            // A phone that was offline gets only the latest of a delivery's messages.
            android["collapse_key"] = .string(visit)
        }
        return .object(["message": .object([
            "token": .string(push.token),
            "data": .object(data),
            "android": .object(android),
        ])])
    }

    public func send(_ push: OutgoingPush) async -> PushResult {
        let body = render(push)
        if case .object(let data)? = body["message"]?["data"] {
            let size = data.reduce(0) { $0 + $1.key.utf8.count + ($1.value.stringValue?.utf8.count ?? 0) }
            guard size <= Self.dataLimit else {
                return PushResult(outcome: .failed, reason: "PAYLOAD_TOO_LARGE", detail: "\(size) bytes > \(Self.dataLimit) (checked before sending)")
            }
        }
        let payload = Array(body.jsonText.utf8)
        var result = await exchange(payload)
        if result.outcome == .retry, result.httpStatus == nil, result.reason == "transport" {
            result = await exchange(payload)  // stale connection (GOAWAY): once more on a new one
        }
        return result
    }

    private func exchange(_ payload: [UInt8], reauthorized: Bool = false) async -> PushResult {
        let accessToken: String
        do { accessToken = try await tokens.token() } catch {
            return PushResult(outcome: .retry, reason: "OAUTH", detail: "\(error)")
        }
        let url = "\(endpoint)/v1/projects/\(account.projectID)/messages:send"
        let response: OutboundResponse
        do {
            response = try await client.send(OutboundRequest(method: "POST", url: url, headers: [
                ("authorization", "Bearer \(accessToken)"), ("content-type", "application/json; UTF-8"),
            ], body: payload, timeout: 10))
        } catch {
            return PushResult(outcome: .retry, reason: "transport", detail: "\(error)")
        }
        if !reauthorized, FCMResponse.unauthenticated(status: response.status, body: response.body) {
            // Our access token was revoked or expired early: fetch a new one, once.
            await tokens.invalidate(accessToken)
            return await exchange(payload, reauthorized: true)
        }
        return Self.interpret(status: response.status, headers: response.headers, body: response.body)
    }

    /// FCM v1's error table: `FCMResponse.interpret`.
    public static func interpret(status: Int, headers: [String: String], body: [UInt8]) -> PushResult {
        FCMResponse.interpret(status: status, headers: headers, body: body)
    }
}
