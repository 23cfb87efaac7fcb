import Foundation
@testable import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// A visit rung at the gate reaches the residents' phones: the whole server (Application,
/// in process, on a real port) against the local APNs fake, through the production path
/// (visit transaction → outbox → worker → HTTP/2 → fake APNs).
@Suite("Ring pushes", .serialized)
struct RingPushTests {
    @Test("A-101 rings Maria's iPhone with a VoIP push; João's Unregistered token is deactivated; receipts and attempts land in the timeline")
    func ringReachesThePhone() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let mariaVoIP = hexToken(), joaoVoIP = hexToken()
        let apns = try FakeServer("fake_apns", arguments: [
            "--cert", pki.serverCert, "--key", pki.serverKey, "--public-key", pki.apnsPublicKey,
            "--key-id", APNsFixture.keyID, "--team-id", APNsFixture.teamID, "--bundle", APNsFixture.bundle,
        ], script: [joaoVoIP: [.object(["status": 410, "reason": "Unregistered"])]], directory: pki.directory)
        defer { apns.stop() }

        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.databaseURL = "sqlite://\(pki.directory)/ring.db"
        configuration.dataDirectory = pki.directory + "/data"
        configuration.seedDemo = true
        configuration.apnsKeyFile = pki.apnsKey
        configuration.apnsKeyID = APNsFixture.keyID
        configuration.apnsTeamID = APNsFixture.teamID
        configuration.apnsTopic = APNsFixture.bundle
        configuration.apnsEndpoint = apns.url
        configuration.caFile = pki.caFile
        let application = try await Application(configuration: configuration, log: Log(minimumLevel: .error))
        try await application.start()
        let database = application.database

        // Both residents of A-101 have an iPhone; the unit rings everyone at once.
        let maria = try await CrashRecoveryTests.waitForUser("maria", database)
        let joao = try await CrashRecoveryTests.waitForUser("joao", database)
        let devices = DeviceStore(database: database)
        _ = try await devices.register(userID: maria, DeviceRegistration(installationID: "maria-iphone", platform: "ios",
                                                                          pushToken: hexToken(), voipToken: mariaVoIP))
        _ = try await devices.register(userID: joao, DeviceRegistration(installationID: "joao-iphone", platform: "ios",
                                                                         pushToken: hexToken(), voipToken: joaoVoIP))
        try await database.write { db in try db.execute("UPDATE units SET ring_mode = 'simultaneous' WHERE label = 'A-101'", []) }
        let unit = try #require(try await database.read { db in try db.queryOne("SELECT id FROM units WHERE label = 'A-101'", [])?.string("id") })

        let created = try await application.visits.service.createVisit(
            gateToken: "demo-gate", request: CreateVisitRequest(unitID: unit, kind: .visit, visitorName: "Rafael Entregas"))
        let visitID = created.visit.id

        // The VoIP push reaches the (fake) APNs with Apple's headers and a payload that lets
        // the phone report the call before any network call.
        try await waitUntil(within: .seconds(20)) {
            apns.records().contains { $0["path"]?.stringValue == "/3/device/\(mariaVoIP)" }
        }
        let record = try #require(apns.records().first { $0["path"]?.stringValue == "/3/device/\(mariaVoIP)" })
        #expect(record["status"]?.intValue == 200)
        #expect(record["headers"]?["apns-push-type"]?.stringValue == "voip")
        #expect(record["headers"]?["apns-topic"]?.stringValue == APNsFixture.bundle + ".voip")
        #expect(record["headers"]?["apns-priority"]?.stringValue == "10")
        let payload = try #require(record["payload"])
        #expect(payload["type"]?.stringValue == "visit.ring")
        #expect(payload["visit_id"]?.stringValue == visitID)
        #expect(payload["caller_name"]?.stringValue == "Rafael Entregas")
        #expect(payload["unit_label"]?.stringValue == "A-101")
        let pushID = try #require(payload["push_id"]?.stringValue)

        // João's token answered 410 Unregistered: deactivated, and the panel shows him failing.
        try await waitUntil(within: .seconds(20)) {
            try await database.read { db in
                try db.queryOne("SELECT voip_token_status FROM devices WHERE installation_id = 'joao-iphone'", [])?.string("voip_token_status")
            } != "active"
        }
        let companyID = try #require(try await database.read { db in
            try db.queryOne("SELECT company_id FROM units WHERE id = ?", .text(unit))?.string("company_id")
        })
        let health = try await PushReceipts(database: database).health(companyID: companyID)
        let joaoEntry = try #require(health.devices.first { $0.user.id == joao })
        #expect(joaoEntry.status == "failing")

        // Maria's phone acknowledges; the timeline shows the ring, the push and the receipt.
        #expect(try await PushReceipts(database: database).acknowledge(pushID: pushID, userID: maria) != nil)
        // The worker records Maria's attempt once APNs has answered: wait for it.
        var kinds: [String] = []
        try await waitUntil(within: .seconds(20)) {
            kinds = try await database.read { db in
                try db.query("SELECT kind FROM visit_attempts WHERE visit_id = ? ORDER BY id", .text(visitID)).compactMap { try $0.string("kind") }
            }
            return kinds.filter { $0 == "push_sent" }.count >= 2
        }
        #expect(kinds.contains("ring") && kinds.contains("push_receipt"), "\(kinds)")

        await application.shutdown()
    }
}
