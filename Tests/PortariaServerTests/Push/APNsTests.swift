import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

@Suite("APNs against a local HTTP/2 fake", .serialized)
struct APNsTests {
    static let backends: [Backend] = Backend.underTest
    /// Runs `body` with the demo database, a fake APNs scripted with `script`, and a worker.
    static func with(_ backend: Backend = .sqlite, script: [String: [JSONValue]] = [:],
                     _ body: (PushFixture, APNsFixture, PushWorker, RecordingSink) async throws -> Void) async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let apns = try APNsFixture.make(pki: pki, script: script)
        defer { apns.stop() }
        try await PushFixture.with(backend) { fixture in
            let sink = RecordingSink()
            let worker = PushWorker(database: fixture.database,
                                    providers: PushProviders(apns: apns.provider, fcm: CountingProvider(), web: CountingProvider()),
                                    configuration: testWorkerConfiguration(), sink: sink)
            worker.start()
            do { try await body(fixture, apns, worker, sink) } catch {
                await worker.stop()
                throw error
            }
            await worker.stop()
        }
    }

    @Test("Maria's iPhone gets a VoIP ring for A-101 whose headers, JWT and payload follow Apple's rules", arguments: backends)
    func voipRing(backend: Backend) async throws {
        try await Self.with(backend) { fixture, apns, worker, sink in
            let device = try await fixture.register("maria")
            let deadline = Date().addingTimeInterval(20)
            let visitID = UUID().uuidString.lowercased()
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .visitRing,
                                                             message: ringMessage(visitID: visitID), deadline: deadline))
            worker.wake()
            #expect(jobs.count == 1)
            #expect(jobs.first?.tokenKind == .voip)
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            let pushID = jobs[0].pushID
            #expect(try rows[pushID]?.string("status") == "sent")

            let record = try #require(apns.server.records().last)
            #expect(record["status"]?.intValue == 200)
            #expect(record["path"]?.stringValue == "/3/device/\(device.voipToken!)")
            let headers = try #require(record["headers"])
            #expect(headers["apns-push-type"]?.stringValue == "voip")
            #expect(headers["apns-topic"]?.stringValue == APNsFixture.bundle + ".voip")
            #expect(headers["apns-priority"]?.stringValue == "10")
            // The deadline as the outbox stored it (whole milliseconds), then floored to seconds.
            #expect(headers["apns-expiration"]?.stringValue == String(Int(SQLValue.storedPrecision(deadline).timeIntervalSince1970)))
            #expect(headers["apns-id"]?.stringValue == pushID)
            #expect(record["jwt_header"]?["kid"]?.stringValue == APNsFixture.keyID)
            #expect(record["jwt_header"]?["alg"]?.stringValue == "ES256")
            #expect(record["jwt_claims"]?["iss"]?.stringValue == APNsFixture.teamID)
            let payload = try #require(record["payload"])
            #expect(payload["type"]?.stringValue == "visit.ring")
            #expect(payload["visit_id"]?.stringValue == visitID)
            #expect(payload["push_id"]?.stringValue == pushID)
            #expect(payload["caller_name"]?.stringValue == "Carlos Entregador")
            #expect(payload["unit_label"]?.stringValue == "A-101")
            #expect(payload["kind"]?.stringValue == "visit")
            #expect(payload["geofence"]?["status"]?.stringValue == "at_entrance")
            #expect(payload["expires_at"]?.stringValue == Timestamp.format(deadline))
            #expect((record["payload_size"]?.intValue ?? .max) <= 5120)
            #expect(sink.attempts.current.map(\.outcome) == ["accepted"])
            #expect(sink.attempts.current.first?.visitID == visitID)
        }
    }

    @Test("delivery is a time-sensitive alert in the DELIVERY category; cancellation a background push")
    func deliveryAndCancel() async throws {
        try await Self.with { fixture, apns, worker, _ in
            try await fixture.register("maria")
            let maria = try await fixture.userID("maria")
            var message = ringMessage()
            message.visitKind = .delivery
            message.carrier = "iFood"
            let delivery = try await fixture.enqueue(PushRequest(userID: maria, kind: .delivery, message: message, deadline: Date().addingTimeInterval(60)))
            var cancel = ringMessage()
            cancel.reason = .answeredElsewhere
            let cancelled = try await fixture.enqueue(PushRequest(userID: maria, kind: .ringCancelled, message: cancel, deadline: Date().addingTimeInterval(60)))
            worker.wake()
            let rows = try await waitForJobs(fixture.database, (delivery + cancelled).map(\.pushID))
            #expect(try rows.values.allSatisfy { try $0.string("status") == "sent" })
            let records = apns.server.records()
            let alert = try #require(records.first { $0["headers"]?["apns-id"]?.stringValue == delivery[0].pushID })
            #expect(alert["headers"]?["apns-push-type"]?.stringValue == "alert")
            #expect(alert["headers"]?["apns-topic"]?.stringValue == APNsFixture.bundle)
            #expect(alert["payload"]?["aps"]?["category"]?.stringValue == "DELIVERY")
            #expect(alert["payload"]?["aps"]?["interruption-level"]?.stringValue == "time-sensitive")
            #expect(alert["payload"]?["type"]?.stringValue == "delivery")
            let background = try #require(records.first { $0["headers"]?["apns-id"]?.stringValue == cancelled[0].pushID })
            #expect(background["headers"]?["apns-push-type"]?.stringValue == "background")
            #expect(background["headers"]?["apns-priority"]?.stringValue == "5")
            #expect(background["payload"]?["type"]?.stringValue == "visit.ring_cancelled")
            #expect(background["payload"]?["reason"]?.stringValue == "answered_elsewhere")
        }
    }

    @Test("410 Unregistered deactivates the token and the admin panel shows it failing", arguments: backends)
    func unregistered(backend: Backend) async throws {
        let voip = hexToken()
        try await Self.with(backend, script: [voip: [.object(["status": 410, "reason": "Unregistered"])]]) { fixture, apns, worker, sink in
            let device = try await fixture.register("maria", voipToken: voip)
            let maria = try await fixture.userID("maria")
            let jobs = try await fixture.enqueue(PushRequest(userID: maria, kind: .visitRing, message: ringMessage(),
                                                             deadline: Date().addingTimeInterval(20)))
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "failed")
            let stored = try #require(try await DeviceStore(database: fixture.database).device(id: device.id))
            #expect(stored.voipTokenStatus == "unregistered")
            #expect(stored.pushTokenStatus == "active")
            #expect(stored.lastError?.hasPrefix("Unregistered: token invalid since") == true)
            #expect(sink.attempts.current.map(\.outcome) == ["token_invalid"])
            #expect(sink.attempts.current.first?.httpStatus == 410)

            // No more rings to that token: the next ring is a time-sensitive alert on the
            // push token (an iPhone without a VoIP token still rings).
            let again = try await fixture.enqueue(PushRequest(userID: maria, kind: .visitRing, message: ringMessage(),
                                                              deadline: Date().addingTimeInterval(20)))
            #expect(again.map(\.tokenKind) == [.push])

            let health = try await PushReceipts(database: fixture.database).health(companyID: try await fixture.companyID("Residencial Demo"))
            let entry = try #require(health.devices.first)
            #expect(entry.deviceID == device.id)
            #expect(entry.status == "failing")
            #expect(entry.voipTokenStatus == "unregistered")
            #expect(entry.riskFlags.contains("token_unregistered"))
            #expect(entry.lastProviderError?.contains("Unregistered") == true)
            #expect(apns.server.records().filter { $0["path"]?.stringValue == "/3/device/\(voip)" }.count == 1)
        }
    }

    @Test("BadDeviceToken and DeviceTokenNotForTopic deactivate; BadTopic-style errors only fail", arguments: [
        ("BadDeviceToken", 400, "unregistered"), ("DeviceTokenNotForTopic", 400, "unregistered"), ("TopicDisallowed", 400, "active"),
    ])
    func otherReasons(reason: String, status: Int, expected: String) async throws {
        let voip = hexToken()
        try await Self.with(script: [voip: [.object(["status": .number(Double(status)), "reason": .string(reason)])]]) { fixture, _, worker, _ in
            let device = try await fixture.register("maria", voipToken: voip)
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .visitRing,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(20)))
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "failed")
            #expect(try await DeviceStore(database: fixture.database).device(id: device.id)?.voipTokenStatus == expected)
        }
    }

    @Test("429 TooManyRequests is retried with backoff, then delivered")
    func tooManyRequests() async throws {
        let voip = hexToken()
        try await Self.with(script: [voip: [.object(["status": 429, "reason": "TooManyRequests"])]]) { fixture, apns, worker, sink in
            try await fixture.register("maria", voipToken: voip)
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .visitRing,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(20)))
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "sent")
            #expect(try rows[jobs[0].pushID]?.int("attempts") == 2)
            #expect(sink.attempts.current.map(\.outcome) == ["retry", "accepted"])
            #expect(apns.server.records().map { $0["status"]?.intValue } == [429, 200])
        }
    }

    @Test("503 followed by GOAWAY: retried on a new connection")
    func serviceUnavailableGoaway() async throws {
        let voip = hexToken()
        try await Self.with(script: [voip: [.object(["status": 503, "reason": "ServiceUnavailable", "goaway": true])]]) { fixture, apns, worker, _ in
            try await fixture.register("maria", voipToken: voip)
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .visitRing,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(20)))
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "sent")
            let records = apns.server.records()
            #expect(records.map { $0["status"]?.intValue } == [503, 200])
            #expect(records[0]["connection"] != records[1]["connection"], "a new connection after GOAWAY")
        }
    }

    /// The fake answers 403 with the reason its script names: `expire_jwt` →
    /// ExpiredProviderToken, `reject_jwt` → InvalidProviderToken.
    @Test("ExpiredProviderToken or InvalidProviderToken: a new JWT is minted once and the push retried at once",
          arguments: ["expire_jwt", "reject_jwt"])
    func refusedProviderToken(script: String) async throws {
        let voip = hexToken()
        try await Self.with(script: [voip: [.object([script: true])]]) { fixture, apns, worker, sink in
            try await fixture.register("maria", voipToken: voip)
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .visitRing,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(20)))
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "sent")
            #expect(try rows[jobs[0].pushID]?.int("attempts") == 1)
            let records = apns.server.records()
            #expect(records.map { $0["status"]?.intValue } == [403, 200])
            try #require(records.count == 2)
            #expect(records[0]["jwt"] != records[1]["jwt"])
            #expect(apns.provider.tokens.minted.current == 2)
            #expect(sink.attempts.current.map(\.outcome) == ["accepted"])
        }
    }

    @Test("a key APNs keeps refusing (InvalidProviderToken): one fresh JWT is tried, later pushes fail without minting again, and the device keeps its token")
    func refusedProviderKey() async throws {
        let voip = hexToken()
        try await Self.with(script: [voip: [.object(["reject_jwt": true]), .object(["reject_jwt": true])]]) { fixture, apns, worker, _ in
            try await fixture.register("maria", voipToken: voip)
            let maria = try await fixture.userID("maria")
            var statuses: [String?] = []
            for _ in 0..<2 {
                let jobs = try await fixture.enqueue(PushRequest(userID: maria, kind: .visitRing, message: ringMessage(),
                                                                 deadline: Date().addingTimeInterval(20)))
                worker.wake()
                let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
                statuses.append(try rows[jobs[0].pushID]?.string("status"))
            }
            #expect(statuses == ["failed", "failed"])
            let records = apns.server.records()
            #expect(records.map { $0["status"]?.intValue } == [403, 403, 403])
            #expect(records.allSatisfy { $0["reason"]?.stringValue == "InvalidProviderToken" })
            #expect(apns.provider.tokens.minted.current == 2)
            let device = try await fixture.database.read { db in
                try db.queryOne("SELECT voip_token_status FROM devices WHERE voip_token = ?", .text(voip))
            }
            #expect(try device?.string("voip_token_status") == "active")
        }
    }

    @Test("100 concurrent pushes share one connection and one provider token")
    func multiplexing() async throws {
        try await Self.with { fixture, apns, worker, _ in
            var users: [String] = []
            for name in ["maria", "joao", "ana"] {
                users.append(try await fixture.userID(name))
                for _ in 0..<2 { try await fixture.register(name) }
            }
            var all: [EnqueuedPush] = []
            for _ in 0..<17 {
                all += try await fixture.enqueue(PushRequest(userIDs: users, kind: .test, message: PushMessage(text: "teste"),
                                                             deadline: Date().addingTimeInterval(60)))
            }
            worker.wake()
            #expect(all.count == 102)
            let rows = try await waitForJobs(fixture.database, all.map(\.pushID))
            #expect(try rows.values.filter { try $0.string("status") == "sent" }.count == 102)
            let records = apns.server.records()
            #expect(Set(records.compactMap { $0["connection"]?.intValue }).count == 1)
            #expect(Set(records.compactMap { $0["jwt"]?.stringValue }).count == 1)
            #expect(apns.provider.tokens.minted.current == 1)
            #expect(apns.provider.client.connectionsOpened.current == 1)
        }
    }

    @Test("a ring past its deadline is dropped, never sent late")
    func deadline() async throws {
        try await Self.with { fixture, apns, worker, sink in
            try await fixture.register("maria")
            let jobs = try await fixture.database.write { db in
                try PushOutbox.enqueue(db, PushRequest(userID: try db.queryOne("SELECT id FROM users WHERE username = 'maria'", [])!.string("id")!,
                                                       kind: .visitRing, message: ringMessage(), deadline: Date().addingTimeInterval(-1)),
                                       now: Date().addingTimeInterval(-30))
            }
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "expired")
            #expect(apns.server.records().isEmpty)
            #expect(sink.attempts.current.map(\.outcome) == ["expired"])
        }
    }

    @Test("the provider token is reused for 50 minutes and never for less than 20")
    func tokenLifetime() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let clock = Locked(Date(timeIntervalSince1970: 1_800_000_000))
        let key = try ProviderKey(pemFile: pki.apnsKey)
        let cache = try APNsTokenCache(key: key, keyID: "K", teamID: "T", lifetime: 50 * 60, now: { clock.current })
        let first = try cache.token()
        clock.withLock { $0 += 49 * 60 }
        #expect(try cache.token() == first)
        clock.withLock { $0 += 2 * 60 }
        let second = try cache.token()
        #expect(second != first)
        #expect(cache.minted.current == 2)
        // A refresh asked for by an old failure does not replace a newer token.
        #expect(try cache.refresh(replacing: first) == second)
        // Lifetimes outside Apple's window are clamped.
        let short = try APNsTokenCache(key: key, keyID: "K", teamID: "T", lifetime: 60, now: { clock.current })
        let a = try short.token()
        clock.withLock { $0 += 19 * 60 }
        #expect(try short.token() == a)
        // ES256 signatures are raw R‖S (64 bytes), header and claims as Apple lists them.
        let parts = second.split(separator: ".")
        #expect(parts.count == 3)
        #expect(Base64URL.decode(parts[2])?.count == 64)
        let header = try JSONCoding.decoder().decode(JSONValue.self, from: Data(Base64URL.decode(parts[0])!))
        #expect(header == .object(["alg": "ES256", "kid": "K"]))
    }

    @Test("payload limits are checked before sending")
    func payloadLimit() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let provider = try APNsProvider(configuration: APNsConfiguration(keyFile: pki.apnsKey, keyID: "K", teamID: "T", bundleID: "b",
                                                                         endpoint: "https://127.0.0.1:9", caFile: pki.caFile))
        defer { provider.shutdown() }
        let push = OutgoingPush(pushID: UUID().uuidString.lowercased(), kind: .delivery, platform: "ios", tokenKind: .push,
                                token: hexToken(), message: PushMessage(unitLabel: String(repeating: "A", count: 5000)),
                                deadline: Date().addingTimeInterval(60))
        let result = await provider.send(push)
        #expect(result.outcome == .failed)
        #expect(result.reason == "PayloadTooLarge")
    }
}
