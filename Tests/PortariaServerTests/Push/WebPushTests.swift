import Foundation
@testable import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// Web Push as the outbox's third platform: the encryption against RFC 8291's own test
/// vector, the strict subscription rules, and a ring reaching a browser subscription at a
/// local push service that verifies VAPID and decrypts like a browser.
@Suite("Web Push", .serialized)
struct WebPushTests {
    static func b64(_ text: String) throws -> [UInt8] { try #require(Base64URL.decode(text), "bad base64url \(text)") }

    @Test("aes128gcm with RFC 8291's keys and salt gives Appendix A's message byte for byte")
    func rfc8291Vector() throws {
        let sender = try P256Key(privateScalar: try Self.b64("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
        #expect(Base64URL.encode(try sender.publicPoint())
                == "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        let body = try WebPushEncryption.encrypt(
            Array("When I grow up, I want to be a watermelon".utf8),
            p256dh: try Self.b64("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"),
            auth: try Self.b64("BTBZMqHH6r4Tts7J_aSIgg"),
            salt: try Self.b64("DGv6ra1nlYgDCS1FRnbzlw"), serverKey: sender)
        #expect(Base64URL.encode(body) == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYW"
                + "AmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
        // The receiver's ECDH agrees with ours (the vector's private key).
        let receiver = try P256Key(privateScalar: try Self.b64("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"))
        #expect(try receiver.sharedSecret(with: sender) == sender.sharedSecret(with: P256Key(publicPoint: receiver.publicPoint())))
        // Too big for one 4096-byte message: refused before any crypto.
        #expect(throws: WebPushEncryption.EncryptionError.self) {
            try WebPushEncryption.encrypt([UInt8](repeating: 0x41, count: WebPushEncryption.maxPlaintext + 1),
                                          p256dh: try receiver.publicPoint(), auth: Crypto.randomBytes(16))
        }
    }

    static func subscription(endpoint: String = "https://fcm.googleapis.com/fcm/send/abc:def",
                             p256dh: [UInt8]? = nil, auth: [UInt8]? = nil) throws -> WebPushSubscription {
        let point = try p256dh ?? P256Key.generate().publicPoint()
        return WebPushSubscription(endpoint: endpoint, keys: .init(p256dh: Base64URL.encode(point),
                                                                   auth: Base64URL.encode(auth ?? Crypto.randomBytes(16))))
    }

    func field(_ subscription: WebPushSubscription, hosts: WebPushHosts = .browsers) -> String? {
        if case .failure(let invalid) = WebPushSubscriptionRules.check(subscription, hosts: hosts) { return invalid.field }
        return nil
    }

    @Test("Subscriptions: browsers' push services only, https, a point on the curve, a 16-byte secret")
    func subscriptionRules() throws {
        #expect(field(try Self.subscription()) == nil)
        for endpoint in ["https://updates.push.services.mozilla.com/wpush/v2/x", "https://wns2-par02p.notify.windows.com/w/?token=x",
                         "https://web.push.apple.com/QGuQ", "https://api.push.apple.com/x"] {
            #expect(field(try Self.subscription(endpoint: endpoint)) == nil, "\(endpoint)")
        }
        for endpoint in ["http://fcm.googleapis.com/fcm/send/x", "https://evil.example/push", "https://notify.windows.com/x",
                         "https://evilnotify.windows.com/x", "https://fcm.googleapis.com.evil.example/x",
                         "https://user:pw@fcm.googleapis.com/x", "https://127.0.0.1/push", "fcm.googleapis.com/x",
                         "https://fcm.googleapis.com/" + String(repeating: "a", count: 2100)] {
            #expect(field(try Self.subscription(endpoint: endpoint)) == "web_push.endpoint", "\(endpoint)")
        }
        // A test points the list at its local fake.
        #expect(field(try Self.subscription(endpoint: "https://127.0.0.1:4443/push/1"), hosts: WebPushHosts(["127.0.0.1"])) == nil)

        var offCurve = try P256Key.generate().publicPoint()
        offCurve[64] ^= 0x01
        #expect(field(try Self.subscription(p256dh: offCurve)) == "web_push.keys.p256dh")
        var compressed = try P256Key.generate().publicPoint()
        compressed[0] = 0x02
        #expect(field(try Self.subscription(p256dh: compressed)) == "web_push.keys.p256dh")
        #expect(field(try Self.subscription(p256dh: [UInt8](repeating: 4, count: 64))) == "web_push.keys.p256dh")
        #expect(field(try Self.subscription(auth: Crypto.randomBytes(15))) == "web_push.keys.auth")
        #expect(field(try Self.subscription(auth: Crypto.randomBytes(32))) == "web_push.keys.auth")
        var padded = try Self.subscription()
        padded.keys.auth += "=="
        #expect(field(padded) == "web_push.keys.auth")

        // Stored as canonical JSON, read back the same.
        let subscription = try Self.subscription()
        let token = WebPushSubscriptionRules.storedToken(subscription)
        #expect(WebPushSubscriptionRules.fromStoredToken(token) == subscription)
        #expect(WebPushSubscriptionRules.fromStoredToken("https://push.example/sub/1") == nil)
        #expect(throws: UsageError.self) { try WebPushHosts.parse(" , ") }
        #expect(throws: UsageError.self) { try WebPushHosts.parse("*.*.example") }
        #expect(try WebPushHosts.parse("127.0.0.1, *.push.example").allows(host: "a.push.example"))
    }

    /// A browser's side of a subscription: its key pair and secret, registered at the fake.
    struct Browser {
        let id: String
        let key: P256Key
        let auth: [UInt8]
        func subscription(_ fake: String) throws -> WebPushSubscription {
            WebPushSubscription(endpoint: "\(fake)/push/\(id)", keys: .init(p256dh: Base64URL.encode(try key.publicPoint()), auth: Base64URL.encode(auth)))
        }
    }

    @Test("A visit to A-101 reaches Maria's browser (VAPID verified, payload decrypted); João's 410 deactivates his subscription")
    func ringReachesTheBrowser() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let maria = Browser(id: "maria-chrome", key: try P256Key.generate(), auth: Crypto.randomBytes(16))
        let joao = Browser(id: "joao-firefox", key: try P256Key.generate(), auth: Crypto.randomBytes(16))
        let subscriptionsFile = pki.directory + "/subscriptions.json"
        let subscriptions: JSONValue = .object(Dictionary(uniqueKeysWithValues: try [maria, joao].map {
            ($0.id, JSONValue.object(["private_key_pem": .string(try $0.key.privatePEM()), "auth": .string(Base64URL.encode($0.auth))]))
        }))
        try Data(subscriptions.jsonText.utf8).write(to: URL(fileURLWithPath: subscriptionsFile))
        let fake = try FakeServer("fake_webpush", arguments: [
            "--cert", pki.serverCert, "--key", pki.serverKey, "--subscriptions", subscriptionsFile,
        ], script: [joao.id: [.object(["status": 410])]], directory: pki.directory)
        defer { fake.stop() }

        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.databaseURL = "sqlite://\(pki.directory)/webpush.db"
        configuration.dataDirectory = pki.directory + "/data"
        configuration.seedDemo = true
        configuration.caFile = pki.caFile
        configuration.webPushHosts = WebPushHosts(["127.0.0.1"])
        configuration.vapidSubject = "mailto:portaria@example.com"
        let application = try await Application(configuration: configuration, log: Log(minimumLevel: .error))
        try await application.start()
        let database = application.database

        let mariaID = try await CrashRecoveryTests.waitForUser("maria", database)
        let joaoID = try await CrashRecoveryTests.waitForUser("joao", database)
        let devices = DeviceStore(database: database)
        for (user, browser) in [(mariaID, maria), (joaoID, joao)] {
            let subscription = try browser.subscription(fake.url)
            _ = try await devices.register(userID: user, DeviceRegistration(
                installationID: browser.id, platform: "web", pushToken: WebPushSubscriptionRules.storedToken(subscription),
                webPush: subscription))
        }
        try await database.write { db in try db.execute("UPDATE units SET ring_mode = 'simultaneous' WHERE label = 'A-101'", []) }
        let unit = try #require(try await database.read { db in try db.queryOne("SELECT id FROM units WHERE label = 'A-101'", [])?.string("id") })
        let created = try await application.visits.service.createVisit(
            gateToken: "demo-gate", request: CreateVisitRequest(unitID: unit, kind: .visit, visitorName: "Rafael Entregas"))
        let visitID = created.visit.id

        try await waitUntil(within: .seconds(20)) {
            fake.records().contains { $0["path"]?.stringValue == "/push/\(maria.id)" && $0["status"]?.intValue == 201 }
        }
        let record = try #require(fake.records().first { $0["path"]?.stringValue == "/push/\(maria.id)" && $0["status"]?.intValue == 201 })
        // The push service's checks passed (it answers 401 otherwise); here is what it saw.
        #expect(record["jwt_claims"]?["aud"]?.stringValue == fake.url)
        #expect(record["jwt_claims"]?["sub"]?.stringValue == "mailto:portaria@example.com")
        #expect(record["vapid_key"]?.stringValue == Base64URL.encode(application.vapidPublicKey))
        #expect(record["headers"]?["urgency"]?.stringValue == "high")
        #expect(record["headers"]?["content-encoding"]?.stringValue == "aes128gcm")
        let ttl = try #require(record["headers"]?["ttl"]?.stringValue.flatMap(Int.init))
        #expect(ttl > 0 && ttl <= 600, "TTL \(ttl) is not the ring's remaining seconds")
        let payload = try #require(record["payload"])
        #expect(payload["type"]?.stringValue == "visit.ring")
        #expect(payload["visit_id"]?.stringValue == visitID)
        #expect(payload["caller_name"]?.stringValue == "Rafael Entregas")
        #expect(payload["unit_label"]?.stringValue == "A-101")
        #expect(payload["geofence_status"]?.stringValue == "unknown")
        let pushID = try #require(payload["push_id"]?.stringValue)
        // The payload's ack_token proves the receipt with no session (the tab is closed).
        let ackToken = try #require(payload["ack_token"]?.stringValue)
        let ack = try await PushReceipts(database: database).acknowledge(pushID: pushID, ackToken: ackToken, address: "127.0.0.1")
        if case .failure(let refusal) = ack { Issue.record("the web payload's ack_token was refused: \(refusal)") }

        // João's browser unsubscribed (410): his device is deactivated and the panel says so.
        try await waitUntil(within: .seconds(20)) {
            try await database.read { db in
                try db.queryOne("SELECT push_token_status FROM devices WHERE installation_id = ?", .text(joao.id))?.string("push_token_status")
            } == "unregistered"
        }
        let companyID = try #require(try await database.read { db in
            try db.queryOne("SELECT company_id FROM units WHERE id = ?", .text(unit))?.string("company_id")
        })
        let health = try await PushReceipts(database: database).health(companyID: companyID)
        let joaoEntry = try #require(health.devices.first { $0.user.id == joaoID })
        #expect(joaoEntry.status == "failing")
        #expect(joaoEntry.riskFlags.contains("token_unregistered"))
        #expect(joaoEntry.platform == "web")
        await application.shutdown()
    }
}
