import Foundation
@testable import PortariaCore
@testable import PortariaServer
import Testing

/// What an iPhone needs from the server, through the production path: a
/// visit written by the visits module (gate POST, resolve, the ring scheduler on a manual
/// clock) → the outbox rows of the same transaction → the push worker → HTTP/2 → the
/// local APNs and FCM fakes, on SQLite and PostgreSQL.
@Suite("iPhone pushes: delivery alerts, replacements, automatic resolutions, the alert ring", .serialized)
struct IPhonePushTests {
    /// The demo companies run on São Paulo time; Manaus (UTC−4, no daylight saving) makes
    /// a sentence in the phone's or the server's zone fail the test.
    static let zone = "America/Manaus"
    /// `VisitsFixture`'s clock (2027-01-15T08:00:00Z) in Manaus.
    static let clockInManaus = "04:00"

    /// The visits fixture with iPhones for Maria and João (A-101), the company in Manaus,
    /// a fake APNs (and FCM) and a worker on the fixture's clock.
    static func with(_ backend: Backend, androidForJoao: Bool = false,
                     _ body: (VisitsFixture, APNsFixture, FCMFixture, PushWorker, [String: DeviceRecord]) async throws -> Void) async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let apns = try APNsFixture.make(pki: pki)
        defer { apns.stop() }
        let fcm = try FCMFixture.make(pki: pki)
        defer { fcm.stop() }
        try await VisitsFixture.with(backend) { f in
            try await f.database.write { db in
                try db.execute("UPDATE companies SET timezone = ? WHERE id = ?", .text(zone), .text(f.demo))
            }
            let store = DeviceStore(database: f.database)
            var devices: [String: DeviceRecord] = [:]
            devices["maria"] = try await store.register(userID: f.users["maria"]!, DeviceRegistration(
                installationID: "maria-iphone", platform: "ios", pushToken: hexToken(), voipToken: hexToken())).0
            devices["joao"] = try await store.register(userID: f.users["joao"]!, androidForJoao
                ? DeviceRegistration(installationID: "joao-android", platform: "android", pushToken: "fcm-" + UUID().uuidString)
                : DeviceRegistration(installationID: "joao-iphone", platform: "ios", pushToken: hexToken(), voipToken: hexToken())).0
            let clock = f.clock
            let worker = PushWorker(database: f.database, providers: PushProviders(apns: apns.provider, fcm: fcm.provider, web: CountingProvider()),
                                    configuration: testWorkerConfiguration(), now: { clock.now() })
            worker.start()
            do { try await body(f, apns, fcm, worker, devices) } catch {
                await worker.stop()
                throw error
            }
            await worker.stop()
        }
    }

    static func settings(_ f: VisitsFixture, rule: String, mode: String = "simultaneous") async throws {
        let reply = await f.call("PUT", "/v1/units/\(f.units["A-101"]!)/settings", as: "maria", company: f.demo,
                                 json: #"{"delivery_rule":"\#(rule)","ring_order":["\#(f.users["maria"]!)","\#(f.users["joao"]!)"],"ring_mode":"\#(mode)"}"#)
        try #require(reply.status == 200, "settings answered \(reply.status)")
    }

    /// The jobs of `visitID`: (kind, user, push id), oldest first.
    static func jobs(_ f: VisitsFixture, _ visitID: String) async throws -> [(kind: String, user: String, id: String)] {
        try await f.database.read { db in
            try db.query("SELECT id, kind, user_id FROM push_jobs WHERE visit_id = ? ORDER BY created_at, kind, user_id", .text(visitID))
                .map { (try $0.string("kind") ?? "", try $0.string("user_id") ?? "", try $0.string("id") ?? "") }
        }
    }

    static func record(_ server: FakeServer, pushID: String) throws -> JSONValue {
        try #require(server.records().first { $0["headers"]?["apns-id"]?.stringValue == pushID }, "APNs never saw \(pushID)")
    }

    @Test("a courier at the gate: an actionable alert the extension can see, collapse id = visit id; Maria authorizes and João's alert is replaced, passively, in the building's time zone",
          arguments: VisitsFixture.backends)
    func deliveryAndReplacement(backend: Backend) async throws {
        try await Self.with(backend) { f, apns, _, worker, devices in
            try await Self.settings(f, rule: "ask")
            let (visitID, _) = try await f.ring(kind: .delivery, name: "Rafael", carrier: "iFood")
            // The gate's "Entrega" is a delivery push, never a ring (no VoIP push, no CallKit).
            var jobs = try await Self.jobs(f, visitID)
            #expect(jobs.map(\.kind) == ["delivery", "delivery"])
            worker.wake()
            _ = try await waitForJobs(f.database, jobs.map(\.id))
            for job in jobs {
                let record = try Self.record(apns.server, pushID: job.id)
                #expect(record["status"]?.intValue == 200)
                #expect(record["headers"]?["apns-push-type"]?.stringValue == "alert")
                #expect(record["headers"]?["apns-collapse-id"]?.stringValue == visitID)
                let aps = try #require(record["payload"]?["aps"])
                #expect(aps["mutable-content"]?.intValue == 1)
                #expect(aps["category"]?.stringValue == "DELIVERY")
                #expect(aps["interruption-level"]?.stringValue == "time-sensitive")
                #expect(aps["alert"]?["title"]?.stringValue == "Entrega para A-101")
                #expect(aps["alert"]?["body"]?.stringValue == "iFood — Rafael está na portaria")
            }

            #expect(await f.resolve(visitID, as: "maria").status == 200)
            jobs = try await Self.jobs(f, visitID)
            let notices = jobs.filter { $0.kind == "delivery_resolved" }
            // Only João: Maria's own tap already answered on her phone.
            #expect(notices.map(\.user) == [f.users["joao"]!])
            worker.wake()
            _ = try await waitForJobs(f.database, notices.map(\.id))
            let record = try Self.record(apns.server, pushID: try #require(notices.first?.id))
            #expect(record["status"]?.intValue == 200)
            #expect(record["path"]?.stringValue == "/3/device/\(devices["joao"]!.pushToken!)")
            #expect(record["headers"]?["apns-push-type"]?.stringValue == "alert")
            #expect(record["headers"]?["apns-topic"]?.stringValue == APNsFixture.bundle)
            #expect(record["headers"]?["apns-collapse-id"]?.stringValue == visitID)
            let aps = try #require(record["payload"]?["aps"])
            #expect(aps["alert"]?["body"]?.stringValue == "Maria autorizou às \(Self.clockInManaus)")
            #expect(aps["alert"]?["title"]?.stringValue == "Entrega para A-101")
            #expect(aps["interruption-level"]?.stringValue == "passive")
            #expect(aps["mutable-content"]?.intValue == 1)
            // No actions on a decided delivery, and no sound for news nobody must act on.
            #expect(aps["category"] == nil)
            #expect(aps["sound"] == nil)
            let decoded = try PushPayload.decode(try #require(record["payload"]))
            // Like every payload, it carries its per-push capability (decision 0016).
            let ackToken = try #require(decoded.ackToken)
            #expect(ackToken.count == 43)
            #expect(decoded == .deliveryResolved(DeliveryResolvedPush(
                pushID: notices[0].id, visitID: visitID, unitLabel: "A-101", action: .authorize, resolvedByName: "Maria Souza",
                resolvedAt: f.clock.now(), via: .app, text: "Maria autorizou às \(Self.clockInManaus)", ackToken: ackToken)))
        }
    }

    @Test("a visitor at the gate is a VoIP ring; a courier a delivery alert (gate kind → push kind)", arguments: VisitsFixture.backends)
    func gateKindMapsToPushKind(backend: Backend) async throws {
        try await Self.with(backend) { f, _, _, _, _ in
            try await Self.settings(f, rule: "ask")
            let (visit, _) = try await f.ring(kind: .visit, name: "Pedro")
            let (delivery, _) = try await f.ring(kind: .delivery, name: "Rafael", carrier: "Loggi")
            let visitJobs = try await f.database.read { db in
                try db.query("SELECT kind, token_kind FROM push_jobs WHERE visit_id = ?", .text(visit)).map { "\(try $0.string("kind")!)/\(try $0.string("token_kind")!)" }
            }
            let deliveryJobs = try await f.database.read { db in
                try db.query("SELECT kind, token_kind FROM push_jobs WHERE visit_id = ?", .text(delivery)).map { "\(try $0.string("kind")!)/\(try $0.string("token_kind")!)" }
            }
            #expect(visitJobs == ["visit_ring/voip", "visit_ring/voip"])
            #expect(deliveryJobs == ["delivery/push", "delivery/push"])
        }
    }

    @Test("leave_at_concierge: nobody is asked, every resident to notify gets an informational alert (iPhone) or data message (Android)",
          arguments: VisitsFixture.backends)
    func leftAtConciergeAtOnce(backend: Backend) async throws {
        try await Self.with(backend, androidForJoao: true) { f, apns, fcm, worker, devices in
            try await Self.settings(f, rule: "leave_at_concierge")
            let (visitID, _) = try await f.ring(kind: .delivery, name: "Rafael", carrier: "iFood")
            let jobs = try await Self.jobs(f, visitID)
            #expect(jobs.map(\.kind) == ["automatic_resolution", "automatic_resolution"])
            #expect(Set(jobs.map(\.user)) == [f.users["maria"]!, f.users["joao"]!])
            worker.wake()
            let rows = try await waitForJobs(f.database, jobs.map(\.id))
            #expect(try rows.values.allSatisfy { try $0.string("status") == "sent" })

            let maria = try #require(jobs.first { $0.user == f.users["maria"]! })
            let record = try Self.record(apns.server, pushID: maria.id)
            #expect(record["headers"]?["apns-push-type"]?.stringValue == "alert")
            #expect(record["headers"]?["apns-collapse-id"]?.stringValue == visitID)
            let aps = try #require(record["payload"]?["aps"])
            #expect(aps["alert"]?["body"]?.stringValue == "Deixado na portaria automaticamente às \(Self.clockInManaus)")
            #expect(aps["interruption-level"]?.stringValue == "active")
            #expect(aps["category"] == nil)
            #expect(record["payload"]?["via"]?.stringValue == "auto")
            #expect(record["payload"]?["resolved_by_name"] == nil)

            let joao = try #require(jobs.first { $0.user == f.users["joao"]! })
            let sends = fcm.server.records().filter { $0["message"]?["token"]?.stringValue == devices["joao"]!.pushToken }
            let message = try #require(sends.first?["message"], "FCM never saw João's message (\(joao.id))")
            #expect(message["data"]?["type"]?.stringValue == "delivery.resolved")
            #expect(message["data"]?["push_id"]?.stringValue == joao.id)
            #expect(message["data"]?["text"]?.stringValue == "Deixado na portaria automaticamente às \(Self.clockInManaus)")
            #expect(message["data"]?["action"]?.stringValue == "leave_at_concierge")
            #expect(message["android"]?["collapse_key"]?.stringValue == visitID)
        }
    }

    @Test("ask_then_concierge: nobody answers, the rule decides; the rung resident's alert is replaced and the others are told, once each",
          arguments: VisitsFixture.backends)
    func askThenConcierge(backend: Backend) async throws {
        try await Self.with(backend) { f, apns, _, worker, _ in
            // Sequential: only Maria is rung in the first step.
            try await Self.settings(f, rule: "ask_then_concierge", mode: "sequential")
            let (visitID, _) = try await f.ring(kind: .delivery, name: "Rafael", carrier: "Mercado Livre")
            var jobs = try await Self.jobs(f, visitID)
            #expect(jobs.map(\.kind) == ["delivery"])
            worker.wake()
            _ = try await waitForJobs(f.database, jobs.map(\.id))
            await f.advance(60)
            #expect(try await f.visit(visitID).status == .resolved)
            jobs = try await Self.jobs(f, visitID)
            let notices = jobs.filter { $0.kind == "automatic_resolution" }
            #expect(notices.map(\.user).sorted() == [f.users["maria"]!, f.users["joao"]!].sorted())
            #expect(!jobs.contains { $0.kind == "delivery_resolved" })
            worker.wake()
            _ = try await waitForJobs(f.database, notices.map(\.id))
            for notice in notices {
                let record = try Self.record(apns.server, pushID: notice.id)
                #expect(record["headers"]?["apns-collapse-id"]?.stringValue == visitID)
                // The window closed a minute after the ring.
                #expect(record["payload"]?["aps"]?["alert"]?["body"]?.stringValue == "Deixado na portaria automaticamente às 04:01")
            }
        }
    }

    @Test("an iPhone without a VoIP token is rung by a time-sensitive alert in the VISIT category; push health still flags voip_token_missing",
          arguments: APNsTests.backends)
    func alertRingWithoutVoIPToken(backend: Backend) async throws {
        try await APNsTests.with(backend) { fixture, apns, worker, _ in
            let maria = try await fixture.userID("maria")
            let pushToken = hexToken()
            _ = try await DeviceStore(database: fixture.database).register(userID: maria, DeviceRegistration(
                installationID: "maria-old-iphone", platform: "ios", pushToken: pushToken, voipToken: nil))
            let visitID = UUID().uuidString.lowercased()
            let deadline = Date().addingTimeInterval(20)
            let jobs = try await fixture.enqueue(PushRequest(userID: maria, kind: .visitRing, message: ringMessage(visitID: visitID), deadline: deadline))
            #expect(jobs.map(\.tokenKind) == [.push])
            worker.wake()
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID))
            #expect(try rows[jobs[0].pushID]?.string("status") == "sent")
            let record = try Self.record(apns.server, pushID: jobs[0].pushID)
            #expect(record["status"]?.intValue == 200)
            #expect(record["path"]?.stringValue == "/3/device/\(pushToken)")
            let headers = try #require(record["headers"])
            #expect(headers["apns-push-type"]?.stringValue == "alert")
            #expect(headers["apns-topic"]?.stringValue == APNsFixture.bundle)
            #expect(headers["apns-priority"]?.stringValue == "10")
            #expect(headers["apns-collapse-id"]?.stringValue == visitID)
            // The deadline as the outbox stored it (whole milliseconds), then floored to seconds.
            #expect(headers["apns-expiration"]?.stringValue == String(Int(SQLValue.storedPrecision(deadline).timeIntervalSince1970)))
            let aps = try #require(record["payload"]?["aps"])
            #expect(aps["interruption-level"]?.stringValue == "time-sensitive")
            #expect(aps["category"]?.stringValue == "VISIT")
            #expect(aps["sound"]?.stringValue == "default")
            #expect(aps["mutable-content"]?.intValue == 1)
            #expect(aps["alert"]?["title"]?.stringValue == "Carlos Entregador está na portaria")
            #expect(aps["alert"]?["body"]?.stringValue == "Visita para A-101 · ✓ Na entrada")
            // The app reads it with the same type as a VoIP ring.
            guard case .ring(let ring) = try PushPayload.decode(try #require(record["payload"])) else {
                Issue.record("not a ring payload")
                return
            }
            #expect(ring.visitID == visitID)
            #expect(ring.pushID == jobs[0].pushID)

            let company = try await fixture.companyID("Residencial Demo")
            let health = try await PushReceipts(database: fixture.database).health(companyID: company)
            let entry = try #require(health.devices.first { $0.user.id == maria })
            #expect(entry.riskFlags.contains("voip_token_missing"))
            #expect(entry.voipTokenStatus == "missing")
        }
    }

    @Test("delivery alert text: carrier and name, either alone, or neither")
    func deliveryAlertText() {
        func body(carrier: String?, name: String?) -> String {
            APNsProvider.deliveryBody(PushMessage(visitID: "v", callerName: name, unitLabel: "A-101", visitKind: .delivery, carrier: carrier))
        }
        #expect(body(carrier: "iFood", name: "Rafael") == "iFood — Rafael está na portaria")
        #expect(body(carrier: nil, name: "Rafael") == "Rafael está na portaria")
        #expect(body(carrier: "Loggi", name: "") == "Loggi está na portaria")
        #expect(body(carrier: nil, name: nil) == "Um entregador está na portaria")
        #expect(APNsProvider.deliveryTitle(PushMessage(unitLabel: "B-201")) == "Entrega para B-201")
        #expect(APNsProvider.deliveryTitle(PushMessage()) == "Entrega para sua unidade")
    }

    @Test("resolution sentences: who, what, when — in the given zone")
    func noticeText() throws {
        let at = try #require(Timestamp.parse("2026-11-30T17:32:00Z"))
        let saoPaulo = try #require(TimeZone(identifier: "America/Sao_Paulo"))
        let maria = PersonRef(id: "u", name: "Maria Souza")
        #expect(ResolutionText.notice(VisitResolution(action: .authorize, by: maria, at: at, via: .notification), timeZone: saoPaulo)
                == "Maria autorizou às 14:32")
        #expect(ResolutionText.notice(VisitResolution(action: .deny, by: maria, at: at, via: .app), timeZone: saoPaulo)
                == "Maria negou às 14:32")
        #expect(ResolutionText.notice(VisitResolution(action: .leaveAtConcierge, by: maria, at: at, via: .app), timeZone: saoPaulo)
                == "Maria pediu para deixar na portaria às 14:32")
        #expect(ResolutionText.notice(VisitResolution(action: .leaveAtConcierge, by: .automatic, at: at, via: .auto), timeZone: saoPaulo)
                == "Deixado na portaria automaticamente às 14:32")
        #expect(ResolutionText.notice(VisitResolution(action: .authorize, by: maria, at: at, via: .app),
                                      timeZone: try #require(TimeZone(identifier: "America/Manaus"))) == "Maria autorizou às 13:32")
    }

    @Test("migration 10 keeps queued jobs, their ack hashes and their attempts, and accepts the new kinds", arguments: VisitsFixture.backends)
    func migrationKeepsJobs(backend: Backend) async throws {
        try await StorageFixture.with(backend) { storage in
            let database = storage.database
            try await Migrator(migrations: Schema.migrations.filter { $0.version <= 9 }).migrate(database)
            try await DemoData.seedIfEmpty(database, log: Log(minimumLevel: .error))
            let maria = try await CrashRecoveryTests.waitForUser("maria", database)
            let device = try await DeviceStore(database: database).register(userID: maria, DeviceRegistration(
                installationID: "i", platform: "ios", pushToken: hexToken(), voipToken: hexToken())).0
            let old = try await database.write { db in try PushOutbox.enqueue(db, PushRequest(userID: maria, kind: .delivery, message: ringMessage(),
                                                                                           deadline: Date().addingTimeInterval(60))) }
            try await database.write { db in
                try db.execute("""
                    INSERT INTO push_attempts (id, push_id, device_id, attempt, at, provider, outcome, instance)
                    VALUES ('a-1', ?, ?, 1, 0, 'apns', 'retry', 'x')
                    """, .text(old[0].pushID), .text(device.id))
                // Migration 9's column must survive the rebuild (a lost hash = a refused receipt).
                try db.execute("UPDATE push_jobs SET ack_token_hashes = 'h1 h2' WHERE id = ?", .text(old[0].pushID))
            }
            // Before: the new kinds are refused by the CHECK (so the test can fail).
            await #expect(throws: (any Error).self) {
                try await database.write { db in
                    try PushOutbox.enqueue(db, PushRequest(userID: maria, kind: .deliveryResolved, message: ringMessage(), deadline: Date().addingTimeInterval(60)))
                }
            }
            try await Migrator().migrate(database)
            let kept = try await database.read { db in
                (try db.queryOne("SELECT COUNT(*) AS n FROM push_jobs WHERE id = ?", .text(old[0].pushID))?.int("n"),
                 try db.queryOne("SELECT COUNT(*) AS n FROM push_attempts WHERE push_id = ?", .text(old[0].pushID))?.int("n"))
            }
            #expect(kept.0 == 1 && kept.1 == 1)
            let hashes = try await database.read { db in
                try db.queryOne("SELECT ack_token_hashes FROM push_jobs WHERE id = ?", .text(old[0].pushID))?.string("ack_token_hashes")
            }
            #expect(hashes == "h1 h2")
            for kind in [PushKind.deliveryResolved, .automaticResolution] {
                let jobs = try await database.write { db in
                    try PushOutbox.enqueue(db, PushRequest(userID: maria, kind: kind, message: ringMessage(), deadline: Date().addingTimeInterval(60)))
                }
                #expect(jobs.count == 1)
            }
            // Attempts still cascade with their job, as before the rebuild.
            try await database.write { db in try db.execute("DELETE FROM push_jobs WHERE id = ?", .text(old[0].pushID)) }
            let orphans = try await database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM push_attempts", [])?.int("n") }
            #expect(orphans == 0)
        }
    }
}
