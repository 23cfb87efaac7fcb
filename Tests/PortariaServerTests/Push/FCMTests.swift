import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

@Suite("FCM v1 against a local HTTP/2 fake", .serialized)
struct FCMTests {
    static func with(script: [String: [JSONValue]] = [:],
                     _ body: (PushFixture, FCMFixture, PushWorker, RecordingSink) async throws -> Void) async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let fcm = try FCMFixture.make(pki: pki, script: script)
        defer { fcm.stop() }
        try await PushFixture.with(.sqlite) { fixture in
            let sink = RecordingSink()
            let worker = PushWorker(database: fixture.database,
                                    providers: PushProviders(apns: CountingProvider(), fcm: fcm.provider, web: CountingProvider()),
                                    configuration: testWorkerConfiguration(), sink: sink)
            worker.start()
            do { try await body(fixture, fcm, worker, sink) } catch {
                await worker.stop()
                throw error
            }
            await worker.stop()
        }
    }

    @discardableResult
    static func android(_ fixture: PushFixture, token: String, manufacturer: String = "Google") async throws -> DeviceRecord {
        try await fixture.register("joao", platform: "android", pushToken: token,
                                   capabilities: DeviceCapabilities(notificationsEnabled: true, fullScreenIntentAllowed: true,
                                                                    ignoringBatteryOptimizations: true, manufacturer: manufacturer))
    }

    @Test("a ring is a HIGH data message with string values and a ttl; the OAuth token is fetched once")
    func ring() async throws {
        try await Self.with { fixture, fcm, worker, _ in
            let token = "fcm-" + UUID().uuidString
            try await Self.android(fixture, token: token)
            let joao = try await fixture.userID("joao")
            let deadline = Date().addingTimeInterval(20)
            var jobs: [EnqueuedPush] = []
            for _ in 0..<3 {
                jobs += try await fixture.enqueue(PushRequest(userID: joao, kind: .visitRing, message: ringMessage(), deadline: deadline))
            }
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows.values.allSatisfy { try $0.string("status") == "sent" })
            #expect(try rows[jobs[0].pushID]?.string("provider_id")?.hasPrefix("projects/\(FCMFixture.project)/messages/") == true)
            let records = fcm.server.records()
            let grants = records.filter { $0["path"]?.stringValue == "/token" }
            #expect(grants.count == 1)
            #expect(grants.first?["jwt_header"]?["alg"]?.stringValue == "RS256")
            #expect(grants.first?["jwt_claims"]?["iss"]?.stringValue == FCMFixture.clientEmail)
            #expect(await fcm.provider.accessTokensFetched() == 1)
            let sends = records.filter { $0["path"]?.stringValue == "/v1/projects/\(FCMFixture.project)/messages:send" }
            #expect(sends.count == 3)
            let message = try #require(sends.first?["message"])
            #expect(message["token"]?.stringValue == token)
            #expect(message["android"]?["priority"]?.stringValue == "HIGH")
            let ttl = message["android"]?["ttl"]?.stringValue ?? ""
            #expect(ttl.hasSuffix("s") && (Int(ttl.dropLast()) ?? 0) > 0 && (Int(ttl.dropLast()) ?? 99) <= 20)
            #expect(message["data"]?["type"]?.stringValue == "visit.ring")
            #expect(message["data"]?["unit_label"]?.stringValue == "A-101")
            #expect(message["data"]?["geofence_status"]?.stringValue == "at_entrance")
            #expect(message["data"]?["geofence_distance_m"]?.stringValue == "12")
            #expect(jobs.map(\.pushID).contains(message["data"]?["push_id"]?.stringValue ?? ""))
            #expect(Set(sends.compactMap { $0["connection"]?.intValue }).count == 1)
        }
    }

    @Test("UNREGISTERED, INVALID_ARGUMENT and SENDER_ID_MISMATCH deactivate the token", arguments: [
        ("UNREGISTERED", 404), ("INVALID_ARGUMENT", 400), ("SENDER_ID_MISMATCH", 403),
    ])
    func deactivation(code: String, status: Int) async throws {
        let token = "fcm-" + UUID().uuidString
        try await Self.with(script: [token: [.object(["status": .number(Double(status)), "errorCode": .string(code)])]]) { fixture, _, worker, sink in
            let device = try await Self.android(fixture, token: token)
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("joao"), kind: .delivery,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(60)))
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "failed")
            let stored = try #require(try await DeviceStore(database: fixture.database).device(id: device.id))
            #expect(stored.pushTokenStatus == "unregistered")
            #expect(stored.lastError?.hasPrefix(code) == true)
            #expect(sink.attempts.current.map(\.outcome) == ["token_invalid"])
        }
    }

    @Test("UNAVAILABLE is retried after Retry-After, then delivered")
    func unavailable() async throws {
        let token = "fcm-" + UUID().uuidString
        try await Self.with(script: [token: [.object(["status": 503, "errorCode": "UNAVAILABLE", "retry_after": 1])]]) { fixture, fcm, worker, sink in
            try await Self.android(fixture, token: token)
            let started = Date()
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("joao"), kind: .delivery,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(60)))
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "sent")
            #expect(try rows[jobs[0].pushID]?.int("attempts") == 2)
            #expect(Date().timeIntervalSince(started) >= 1, "Retry-After: 1 honoured")
            #expect(sink.attempts.current.map(\.outcome) == ["retry", "accepted"])
        }
    }

    @Test("QUOTA_EXCEEDED backs off at least 60 seconds")
    func quota() async throws {
        let token = "fcm-" + UUID().uuidString
        try await Self.with(script: [token: [.object(["status": 429, "errorCode": "QUOTA_EXCEEDED", "retry_after": 5])]]) { fixture, _, worker, sink in
            try await Self.android(fixture, token: token)
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("joao"), kind: .delivery,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(600)))
            worker.wake()
            try await waitForAttempts(sink, 1)
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID), in: ["pending"])
            let next = try #require(try rows[jobs[0].pushID]?.date("next_attempt_at"))
            #expect(next.timeIntervalSinceNow > 55)
            #expect(sink.attempts.current.first?.reason?.hasPrefix("QUOTA_EXCEEDED") == true)
        }
    }

    @Test("a revoked access token is replaced once and the send retried")
    func revokedAccessToken() async throws {
        let token = "fcm-" + UUID().uuidString
        try await Self.with(script: [token: [.object(["revoke_access_token": true])]]) { fixture, fcm, worker, _ in
            try await Self.android(fixture, token: token)
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("joao"), kind: .test,
                                                             message: PushMessage(text: "oi"), deadline: Date().addingTimeInterval(60)))
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "sent")
            #expect(try rows[jobs[0].pushID]?.int("attempts") == 1)
            #expect(await fcm.provider.accessTokensFetched() == 2)
        }
    }

    @Test("the error table", arguments: [
        (404, "UNREGISTERED", PushResult.Outcome.tokenInvalid), (400, "INVALID_ARGUMENT", .tokenInvalid),
        (403, "SENDER_ID_MISMATCH", .tokenInvalid), (503, "UNAVAILABLE", .retry), (500, "INTERNAL", .retry),
        (429, "QUOTA_EXCEEDED", .retry), (401, "THIRD_PARTY_AUTH_ERROR", .failed),
    ])
    func errorTable(status: Int, code: String, outcome: PushResult.Outcome) {
        let body = #"{"error":{"code":\#(status),"message":"m","status":"X","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(code)"}]}}"#
        let result = FCMProvider.interpret(status: status, headers: ["retry-after": "7"], body: Array(body.utf8))
        #expect(result.outcome == outcome)
        #expect(result.reason == code)
        if code == "QUOTA_EXCEEDED" { #expect(result.retryAfter == 60) }
        if code == "UNAVAILABLE" { #expect(result.retryAfter == 7) }
    }
}
