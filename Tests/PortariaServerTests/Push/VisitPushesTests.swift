import Foundation
@testable import PortariaCore
@testable import PortariaServer
import Testing

@Suite("Visit events → push jobs")
struct VisitPushesTests {
    @Test("answered elsewhere: every other phone stops, the answering user's other devices included, the answering device excluded")
    func answeredElsewhere() async throws {
        try await StorageFixture.with(.sqlite) { storage in
            let database = storage.database
            try await Migrator().migrate(database)
            try await DemoData.seedIfEmpty(database, log: Log(minimumLevel: .error))
            let maria = try await CrashRecoveryTests.waitForUser("maria", database)
            let joao = try await CrashRecoveryTests.waitForUser("joao", database)
            let devices = DeviceStore(database: database)
            for (user, installation) in [(maria, "maria-iphone"), (maria, "maria-ipad"), (joao, "joao-phone")] {
                _ = try await devices.register(userID: user, DeviceRegistration(installationID: installation, platform: "ios",
                                                                                 pushToken: hexToken(), voipToken: hexToken()))
            }
            let at = Date()
            func event(_ type: VisitEventType, _ data: [String: JSONValue]) -> EventRecord {
                var data = data
                data["visit_id"] = "visit-1"
                return EventRecord(seq: 1, companyID: "c", visitID: "visit-1", unitID: "u", type: type, data: .object(data), createdAt: at)
            }
            let mariaRef: JSONValue = .object(["id": .string(maria), "name": .string("Maria Souza")])
            let events = [
                event(.ringCancelled, ["reason": "answered_elsewhere", "user_ids": .array([.string(joao)]), "answered_by": mariaRef]),
                event(.answered, ["by": mariaRef, "device_id": "maria-iphone"]),
            ]
            try await database.write { db in _ = try VisitPushes.enqueue(db, for: events, at: at) }
            let cancelled = try await database.read { db in
                try db.query("""
                    SELECT d.installation_id FROM push_jobs j JOIN devices d ON d.id = j.device_id
                    WHERE j.kind = 'ring_cancelled' ORDER BY d.installation_id
                    """, []).compactMap { try $0.string("installation_id") }
            }
            #expect(cancelled == ["joao-phone", "maria-ipad"])
        }
    }
}
