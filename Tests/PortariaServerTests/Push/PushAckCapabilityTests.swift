import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

/// `POST /v1/push/{push_id}/ack` with the payload's `ack_token` instead of a bearer
/// (decision 0016): what an extension woken hours later can do, and nothing more.
@Suite("Push receipts with a per-push capability", .serialized)
struct PushAckCapabilityTests {
    static let backends: [Backend] = Backend.underTest

    /// Claims every due job once, as a worker about to render them would: the tokens the
    /// payloads would carry, by push id.
    static func claimTokens(_ fixture: PushFixture, now: Date = Date()) async throws -> [String: String] {
        let worker = PushWorker(database: fixture.database, providers: CountingProvider().providers,
                                configuration: testWorkerConfiguration(), now: { now })
        var tokens: [String: String] = [:]
        for job in try await worker.claim(limit: 10) { tokens[job.push.pushID] = job.push.ackToken }
        return tokens
    }

    /// A push about no visit: a receipt for a visit writes to its timeline, which needs a
    /// real visit (the end-to-end test has one).
    static let noVisit = PushMessage(callerName: "Pedro", unitLabel: "A-101")

    static func ack(_ fixture: PushFixture, _ pushID: String, token: String) async -> (status: Int, body: JSONValue) {
        await fixture.client.call("POST", "/v1/push/\(pushID)/ack", json: #"{"ack_token":"\#(token)"}"#)
    }

    static func job(_ fixture: PushFixture, _ pushID: String) async throws -> SQLRow? {
        try await fixture.database.read { db in try db.queryOne("SELECT * FROM push_jobs WHERE id = ?", .text(pushID)) }
    }

    @Test("the payload's token acknowledges its push without a session; idempotent; push health counts it", arguments: backends)
    func acknowledges(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            let device = try await fixture.register("maria")
            let maria = try await fixture.userID("maria")
            let jobs = try await fixture.enqueue(PushRequest(userID: maria, kind: .delivery, message: Self.noVisit, deadline: Date().addingTimeInterval(60)))
            let tokens = try await Self.claimTokens(fixture)
            let token = try #require(tokens[jobs[0].pushID])
            #expect(token.count == 43 && !token.contains("=") && Base64URL.decode(token)?.count == 32)

            // Only the hash is stored: the raw token is nowhere in the row.
            let row = try #require(try await Self.job(fixture, jobs[0].pushID))
            #expect(try row.string("ack_token_hashes") == Crypto.tokenHash(token))
            #expect(!row.values.contains { "\($0)".contains(token) })

            let first = await Self.ack(fixture, jobs[0].pushID, token: token)
            #expect(first.status == 200)
            #expect(first.body["push_id"]?.stringValue == jobs[0].pushID)
            // A receipt, not a view: nothing about the visit comes back.
            guard case .object(let fields) = first.body else { Issue.record("not an object: \(first.body)"); return }
            #expect(Set(fields.keys) == ["push_id", "acked_at"])
            let second = await Self.ack(fixture, jobs[0].pushID, token: token)
            #expect(second.status == 200)
            #expect(second.body["acked_at"] == first.body["acked_at"])

            var receipts = PushReceipts(database: fixture.database)
            receipts.now = { Date().addingTimeInterval(600) }
            let health = try await receipts.health(companyID: try await fixture.companyID("Residencial Demo"))
            let entry = try #require(health.devices.first { $0.deviceID == device.id })
            #expect(entry.lastAckAt != nil)
            #expect(entry.unackedPushes == 0)
        }
    }

    @Test("unknown push, wrong token, another push's token, an expired capability: one 404, nothing changes", arguments: backends)
    func refusals(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            let device = try await fixture.register("maria")
            try await fixture.register("joao")
            let maria = try await fixture.userID("maria"), joao = try await fixture.userID("joao")
            let mine = try await fixture.enqueue(PushRequest(userID: maria, kind: .delivery, message: Self.noVisit, deadline: Date().addingTimeInterval(60)))
            let other = try await fixture.enqueue(PushRequest(userID: joao, kind: .delivery, message: Self.noVisit, deadline: Date().addingTimeInterval(60)))
            let tokens = try await Self.claimTokens(fixture)
            let mineID = mine[0].pushID
            let otherToken = try #require(tokens[other[0].pushID])
            let wrong = Base64URL.encode(Crypto.randomBytes(32))

            var answers: [(status: Int, body: JSONValue)] = []
            answers.append(await Self.ack(fixture, mineID, token: wrong))
            answers.append(await Self.ack(fixture, mineID, token: otherToken))
            answers.append(await Self.ack(fixture, UUID().uuidString.lowercased(), token: try #require(tokens[mineID])))
            for answer in answers {
                #expect(answer.status == 404)
                #expect(answer.body["error"]?["code"]?.stringValue == "NOT_FOUND")
            }
            // The same envelope, word for word: no oracle.
            #expect(Set(answers.map { $0.body.jsonText }).count == 1)

            // A week later the right token is refused the same way.
            var later = PushReceipts(database: fixture.database)
            later.now = { Date().addingTimeInterval(7 * 86_400 + 60) }
            #expect(try await later.acknowledge(pushID: mineID, ackToken: try #require(tokens[mineID]), address: "10.0.0.9") == .failure(.notFound))

            let row = try #require(try await Self.job(fixture, mineID))
            #expect(try row.date("acked_at") == nil)
            let deviceRow = try await fixture.database.read { db in try db.queryOne("SELECT last_ack_at FROM devices WHERE id = ?", .text(device.id)) }
            #expect(try deviceRow?.date("last_ack_at") == nil)

            // Malformed tokens and bodies are bad input (400/413), and a request with no
            // credential at all is still 401.
            #expect(await Self.ack(fixture, mineID, token: "short").status == 400)
            #expect(await Self.ack(fixture, mineID, token: wrong + "=").status == 400)
            #expect(await fixture.client.call("POST", "/v1/push/\(mineID)/ack", json: #"{"ack_token":42}"#).status == 400)
            #expect(await fixture.client.call("POST", "/v1/push/\(mineID)/ack", json: #"{"ack_token":"\#(String(repeating: "A", count: 2000))"}"#).status == 413)
            #expect(await fixture.client.call("POST", "/v1/push/\(mineID)/ack").status == 401)
            #expect(try await Self.job(fixture, mineID)?.date("acked_at") == nil)
        }
    }

    @Test("every attempt's token acknowledges the push: a retry on another worker does not strand the first payload", arguments: backends)
    func everyAttempt(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            try await fixture.register("maria")
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .visitRing,
                                                             message: Self.noVisit, deadline: Date().addingTimeInterval(600)))
            let first = try #require(try await Self.claimTokens(fixture)[jobs[0].pushID])
            // The first worker died holding the lease; another claims the job after it ran out.
            let second = try #require(try await Self.claimTokens(fixture, now: Date().addingTimeInterval(120))[jobs[0].pushID])
            #expect(first != second)
            #expect(try await Self.job(fixture, jobs[0].pushID)?.string("ack_token_hashes")
                    == [first, second].map(Crypto.tokenHash).joined(separator: " "))
            // The first attempt's payload may be the one that reached the phone.
            let ack = await Self.ack(fixture, jobs[0].pushID, token: first)
            #expect(ack.status == 200)
            #expect(await Self.ack(fixture, jobs[0].pushID, token: second).body["acked_at"] == ack.body["acked_at"])
        }
    }

    @Test("an address refused too often is told to wait, even with a right token; the bearer route is unaffected", arguments: backends)
    func rateLimited(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            try await fixture.register("maria")
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .delivery,
                                                             message: Self.noVisit, deadline: Date().addingTimeInterval(60)))
            let token = try #require(try await Self.claimTokens(fixture)[jobs[0].pushID])
            var receipts = PushReceipts(database: fixture.database)
            receipts.refusalLimit = 3
            for _ in 0..<3 {
                #expect(try await receipts.acknowledge(pushID: jobs[0].pushID, ackToken: Base64URL.encode(Crypto.randomBytes(32)),
                                                       address: "203.0.113.7") == .failure(.notFound))
            }
            guard case .failure(.rateLimited(let retryAfter)) = try await receipts.acknowledge(pushID: jobs[0].pushID, ackToken: token, address: "203.0.113.7") else {
                Issue.record("a fourth try from the refused address was not limited")
                return
            }
            #expect(retryAfter >= 1 && retryAfter <= 600)
            #expect(try await Self.job(fixture, jobs[0].pushID)?.date("acked_at") == nil)
            // Another address (another phone) is not punished for the guesser.
            guard case .success = try await receipts.acknowledge(pushID: jobs[0].pushID, ackToken: token, address: "198.51.100.4") else {
                Issue.record("another address was refused")
                return
            }
        }
    }

    @Test("APNs and FCM payloads carry ack_token beside push_id; the apps' types read it")
    func rendered() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let apns = try APNsFixture.make(pki: pki)
        defer { apns.stop() }
        let fcm = try FCMFixture.make(pki: pki)
        defer { fcm.stop() }
        let token = Base64URL.encode(Crypto.randomBytes(32))
        for kind in PushKind.allCases {
            let push = OutgoingPush(pushID: "p-\(kind.rawValue)", kind: kind, platform: "ios", tokenKind: .push, token: "t",
                                    message: ringMessage(visitID: "v-1"), deadline: Date().addingTimeInterval(30), ackToken: token)
            let apnsPayload = try JSONCoding.decoder().decode(JSONValue.self, from: Data(apns.provider.render(push).payload))
            #expect(apnsPayload["ack_token"]?.stringValue == token, "APNs \(kind)")
            #expect(apnsPayload["aps"]?["ack_token"] == nil)
            let fcmData = try #require(fcm.provider.render(push)["message"]?["data"])
            #expect(fcmData["ack_token"]?.stringValue == token, "FCM \(kind)")
            for payload in [apnsPayload, fcmData] {
                let decoded = try PushPayload.decode(payload)
                #expect(decoded.ackToken == token)
                #expect(decoded.receipt == PushReceiptCapability(pushID: push.pushID, ackToken: token))
            }
        }
    }

    @Test("a receipt half a millisecond before a whole second answers the same acked_at the first time and when repeated",
          arguments: backends)
    func ackedAtIsWhatTheRowSays(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            try await fixture.register("maria")
            let maria = try await fixture.userID("maria")
            let jobs = try await fixture.enqueue(PushRequest(userID: maria, kind: .delivery, message: Self.noVisit, deadline: Date().addingTimeInterval(60)))
            var receipts = PushReceipts(database: fixture.database)
            // Stored as whole milliseconds (rounded: …06.000); the clock said …05.9996.
            receipts.now = { Date(timeIntervalSince1970: 1_800_000_005.9996) }
            let first = try #require(try await receipts.acknowledge(pushID: jobs[0].pushID, userID: maria))
            let again = try #require(try await receipts.acknowledge(pushID: jobs[0].pushID, userID: maria))
            #expect(first.ackedAt == again.ackedAt)
            #expect(Timestamp.format(first.ackedAt) == Timestamp.format(again.ackedAt), "\(first.ackedAt) vs \(again.ackedAt)")
        }
    }
}
