import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real `portaria serve` binary, killed with SIGKILL mid-push: no job is lost.
@Suite("Outbox survives kill -9", .serialized)
struct CrashRecoveryTests {
    static var binary: String { PortariaBinary.path }

    static func serve(_ arguments: [String], log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve"] + arguments
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }

    @Test("a push in flight when the server is killed is delivered after restart; jobs queued while down too",
          .requires(.portaria))
    func killMinus9() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let slow = hexToken(), queuedWhileDown = hexToken()
        // The first answer for `slow` takes 5 s: the server is killed while waiting for it.
        let fake = try FakeServer("fake_apns", arguments: [
            "--cert", pki.serverCert, "--key", pki.serverKey, "--public-key", pki.apnsPublicKey,
            "--key-id", APNsFixture.keyID, "--team-id", APNsFixture.teamID, "--bundle", APNsFixture.bundle,
        ], script: [slow: [.object(["status": 200, "delay": 5])]], directory: pki.directory)
        defer { fake.stop() }
        let databaseURL = "sqlite://\(pki.directory)/crash.db"
        let log = pki.directory + "/serve.log"
        let arguments = ["--demo", "--port", "0", "--database", databaseURL, "--push-lease-seconds", "3",
                         "--apns-key-file", pki.apnsKey, "--apns-key-id", APNsFixture.keyID, "--apns-team-id", APNsFixture.teamID,
                         "--apns-topic", APNsFixture.bundle, "--apns-endpoint", fake.url, "--ca-file", pki.caFile]
        var server = try Self.serve(arguments, log: log)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }

        // Wait for the schema and demo data, then register Maria's iPhone and queue a ring.
        let database = try await DatabaseFactory.open(url: databaseURL)
        defer { Task { await database.close() } }
        let maria = try await Self.waitForUser("maria", database)
        let devices = DeviceStore(database: database)
        _ = try await devices.register(userID: maria, DeviceRegistration(installationID: "crash-1", platform: "ios",
                                                                          pushToken: hexToken(), voipToken: slow))
        let first = try await database.write { db in
            try PushOutbox.enqueue(db, PushRequest(userID: maria, kind: .visitRing, message: ringMessage(), deadline: Date().addingTimeInterval(60)))
        }
        // Once the request is on the wire (the fake has seen it), kill -9.
        try await waitUntil(within: .seconds(20)) { fake.records().contains { $0["headers"]?["apns-id"]?.stringValue == first[0].pushID } }
        kill(server.processIdentifier, SIGKILL)
        _ = await waitForExit(server, within: .seconds(10))
        let sending = try await database.read { db in try db.queryOne("SELECT status FROM push_jobs WHERE id = ?", .text(first[0].pushID)) }
        #expect(try sending?.string("status") == "sending")

        // While the server is down another device is registered and rung.
        _ = try await devices.register(userID: try await Self.waitForUser("joao", database),
                                       DeviceRegistration(installationID: "crash-2", platform: "ios", pushToken: hexToken(), voipToken: queuedWhileDown))
        let second = try await database.write { db in
            try PushOutbox.enqueue(db, PushRequest(userID: try db.queryOne("SELECT id FROM users WHERE username = 'joao'", [])!.string("id")!,
                                                   kind: .visitRing, message: ringMessage(), deadline: Date().addingTimeInterval(60)))
        }
        server = try Self.serve(arguments, log: log)
        let rows = try await waitForJobs(database, (first + second).map(\.pushID), timeout: 30)
        #expect(try rows[first[0].pushID]?.string("status") == "sent")
        // Claimed again after its lease ran out. On a loaded machine the slow fake can hold
        // the second attempt past another lease, so a third claim is tolerated (the app
        // de-duplicates by push_id); what must not happen is no re-claim at all.
        #expect((try rows[first[0].pushID]?.int("attempts") ?? 0) >= 2, "claimed again after its lease ran out")
        #expect(try rows[second[0].pushID]?.string("status") == "sent")
        kill(server.processIdentifier, SIGTERM)
        _ = await waitForExit(server, within: .seconds(10))
    }

    @Test("a ring claimed inside the gate POST's own transaction and killed on the wire is sent again at restart — at once on SQLite, not a lease later (decision 0058)",
          .requires(.portaria))
    func killMinus9AfterHandOff() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let voip = hexToken()
        // The first answer takes 30 s: the server is killed while the ring is on the wire.
        let fake = try Self.apnsFake(pki, holdingFirstAnswerTo: voip, seconds: 30)
        defer { fake.stop() }
        let databaseURL = "sqlite://\(pki.directory)/handoff.db"
        let log = pki.directory + "/serve.log"
        // A lease far longer than the test: only the restart's release can free the job.
        let arguments = ["--demo", "--port", "0", "--database", databaseURL, "--push-lease-seconds", "600",
                         "--apns-key-file", pki.apnsKey, "--apns-key-id", APNsFixture.keyID, "--apns-team-id", APNsFixture.teamID,
                         "--apns-topic", APNsFixture.bundle, "--apns-endpoint", fake.url, "--ca-file", pki.caFile]
        var server = try Self.serve(arguments, log: log)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let database = try await DatabaseFactory.open(url: databaseURL)
        defer { Task { await database.close() } }
        let port = try await Self.listeningPort(log: log)
        // The ring is on the wire: kill -9. It was claimed by the gate POST (attempt 1, sending).
        let id = try await Self.ringOnTheWire(port: port, database: database, voip: voip, fake: fake)
        kill(server.processIdentifier, SIGKILL)
        _ = await waitForExit(server, within: .seconds(10))
        let claimed = try await database.read { db in try db.queryOne("SELECT status, attempts FROM push_jobs WHERE id = ?", .text(id)) }
        #expect(try claimed?.string("status") == "sending")
        #expect(try claimed?.int("attempts") == 1)

        server = try Self.serve(arguments, log: log)
        let rows = try await waitForJobs(database, [id], timeout: 30)
        #expect(try rows[id]?.string("status") == "sent")
        #expect(try rows[id]?.int("attempts") == 2, "sent again by the restarted server, its lease released")
        #expect(fake.records().filter { $0["headers"]?["apns-id"]?.stringValue == id }.count >= 2)
        kill(server.processIdentifier, SIGTERM)
        _ = await waitForExit(server, within: .seconds(10))
    }

    @Test("PostgreSQL: the instance that claimed a ring in its gate POST is killed on the wire; the other instance sends it within seconds, not a lease later (decision 0058)",
          .requires(.portaria, .postgres))
    func killMinus9OneOfTwoInstances() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let voip = hexToken()
        // The first answer takes 30 s: instance A is killed while the ring is on the wire.
        let fake = try Self.apnsFake(pki, holdingFirstAnswerTo: voip, seconds: 30)
        defer { fake.stop() }
        try await StorageFixture.with(.postgres) { fixture in
            let database = fixture.database
            // A lease far longer than the test: only the dead instance's vanished
            // connections can free the job in time.
            let arguments = ["--demo", "--port", "0", "--database", fixture.url, "--push-lease-seconds", "600",
                             "--apns-key-file", pki.apnsKey, "--apns-key-id", APNsFixture.keyID, "--apns-team-id", APNsFixture.teamID,
                             "--apns-topic", APNsFixture.bundle, "--apns-endpoint", fake.url, "--ca-file", pki.caFile]
            let logA = pki.directory + "/serve-a.log", logB = pki.directory + "/serve-b.log"
            let a = try Self.serve(arguments, log: logA)
            defer { if a.isRunning { kill(a.processIdentifier, SIGKILL) } }
            let portA = try await Self.listeningPort(log: logA)
            let b = try Self.serve(arguments, log: logB)
            defer { if b.isRunning { kill(b.processIdentifier, SIGKILL) } }
            _ = try await Self.listeningPort(log: logB)
            // A claimed the ring in the gate POST (attempt 1) and it is on the wire: kill -9.
            let id = try await Self.ringOnTheWire(port: portA, database: database, voip: voip, fake: fake)
            let owner = try await database.read { db in try db.queryOne("SELECT lease_owner, attempts FROM push_jobs WHERE id = ?", .text(id)) }
            let ownerA = try #require(try owner?.string("lease_owner"))
            #expect(ownerA.hasPrefix(InstanceName.prefix), "leased under the name its connections carry: \(ownerA)")
            #expect(try owner?.int("attempts") == 1)
            let killedAt = ContinuousClock.now
            kill(a.processIdentifier, SIGKILL)
            _ = await waitForExit(a, within: .seconds(10))

            // B sends it again (attempt 2) long before the 600 s lease would have let it.
            let rows = try await waitForJobs(database, [id], timeout: 30)
            let waited = ContinuousClock.now - killedAt
            #expect(try rows[id]?.string("status") == "sent")
            #expect(try rows[id]?.int("attempts") == 2, "sent again by the other instance")
            let second = try await database.read { db in
                try db.queryOne("SELECT instance FROM push_attempts WHERE push_id = ? AND attempt = 2", .text(id))?.string("instance")
            }
            #expect(second != nil && second != ownerA, "attempt 2 by B: \(second ?? "none")")
            print("PostgreSQL: a dead instance's ring went out again \(waited) after kill -9 (lease 600 s)")
            kill(b.processIdentifier, SIGTERM)
            _ = await waitForExit(b, within: .seconds(10))
        }
    }

    /// The APNs fake, answering `voip`'s first push after `seconds` (and at once after that).
    static func apnsFake(_ pki: TestPKI, holdingFirstAnswerTo voip: String, seconds: Int) throws -> FakeServer {
        try FakeServer("fake_apns", arguments: [
            "--cert", pki.serverCert, "--key", pki.serverKey, "--public-key", pki.apnsPublicKey,
            "--key-id", APNsFixture.keyID, "--team-id", APNsFixture.teamID, "--bundle", APNsFixture.bundle,
        ], script: [voip: [.object(["status": 200, "delay": .number(Double(seconds))])]], directory: pki.directory)
    }

    /// Registers Maria's iPhone with `voip`, rings A-101 from the demo gate of the server on
    /// `port` and waits until the ring reaches `fake`; returns the ring's push id.
    static func ringOnTheWire(port: Int, database: any SQLDatabase, voip: String, fake: FakeServer) async throws -> String {
        let maria = try await waitForUser("maria", database)
        _ = try await DeviceStore(database: database).register(userID: maria, DeviceRegistration(
            installationID: "handoff-\(voip.prefix(8))", platform: "ios", pushToken: hexToken(), voipToken: voip))
        let unit = try await database.read { db in try db.queryOne("SELECT id FROM units WHERE label = 'A-101'", [])?.string("id") }
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/gates/demo-gate/visits")!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"unit_id":"\#(try #require(unit))","kind":"visit","visitor_name":"Pedro Visitante"}"#.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 201)
        let pushID = try await database.read { db in
            try db.queryOne("SELECT id FROM push_jobs WHERE token = ?", .text(voip))?.string("id")
        }
        let id = try #require(pushID)
        try await waitUntil(within: .seconds(20)) { fake.records().contains { $0["headers"]?["apns-id"]?.stringValue == id } }
        return id
    }

    /// The port of the last `{"msg":"listening","port":N}` line in the server's log.
    static func listeningPort(log: String) async throws -> Int {
        var port: Int?
        try await waitUntil(within: .seconds(60)) {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.contains(#""msg":"listening""#) {
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                   let value = (object["port"] as? NSNumber)?.intValue, value > 0 { port = value }
            }
            return port != nil
        }
        return port!
    }

    static func waitForUser(_ username: String, _ database: any SQLDatabase) async throws -> String {
        var id: String?
        try await waitUntil(within: .seconds(30)) {
            id = try? await database.read { db in try db.queryOne("SELECT id FROM users WHERE username = ?", .text(username))?.string("id") }
            return id != nil
        }
        return id!
    }
}
