import Foundation
import PortariaClient
import PortariaCore
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Push receipts without a session, over the real binary: Maria's iPhone and Android phone
/// are rung through local APNs and FCM fakes (HTTP/2, TLS with a test CA), and each phone
/// acknowledges from nothing but the payload the fake received — as a Notification
/// Service Extension or an Android receiver woken hours later would (decision 0016).
@Suite("Push receipts with the payload's capability, end to end", .serialized)
struct PushReceiptEndToEndTests {
    static let root = Repository.root
    static let python = Repository.python
    static let apnsKeyID = "ABC123DEFG", apnsTeamID = "DEF123GHIJ", bundle = "br.com.portaria.app"
    static let fcmProject = "portaria-test", fcmClient = "push@portaria-test.iam.gserviceaccount.com"

    /// One of `scripts/testservers/fake_*.py`, recording every request as a JSON line.
    final class Fake: @unchecked Sendable {
        let process = Process()
        let record: String
        var port = 0

        init(_ name: String, _ arguments: [String], directory: URL) async throws {
            record = directory.appendingPathComponent("\(name).jsonl").path
            let script = directory.appendingPathComponent("\(name)-script.json").path
            try Data("{}".utf8).write(to: URL(fileURLWithPath: script))
            process.executableURL = URL(fileURLWithPath: PushReceiptEndToEndTests.python)
            process.arguments = [PushReceiptEndToEndTests.root + "/scripts/testservers/\(name).py", "--port", "0",
                                 "--script", script, "--record", record] + arguments
            let stdout = Pipe()
            process.standardOutput = stdout
            process.standardError = FileHandle.standardError
            try process.run()
            // The fake prints `READY <port>` once it listens.
            let handle = stdout.fileHandleForReading
            port = try await offload {
                var buffer = Data()
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { throw HarnessError("\(name) exited before it was ready: \(String(decoding: buffer, as: UTF8.self))") }
                    buffer.append(chunk)
                    let text = String(decoding: buffer, as: UTF8.self)
                    if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("READY ") }),
                       let port = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces)) { return port }
                }
            }
        }

        var url: String { "https://127.0.0.1:\(port)" }

        func records() -> [JSONValue] {
            guard let data = FileManager.default.contents(atPath: record) else { return [] }
            return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
                try? JSONCoding.decoder().decode(JSONValue.self, from: Data($0.utf8))
            }
        }

        func stop() {
            if process.isRunning {
                kill(process.processIdentifier, SIGTERM)
                for _ in 0..<200 where process.isRunning { usleep(10_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
            for _ in 0..<200 where process.isRunning { usleep(10_000) }
            reap(process)
        }
    }

    /// A test CA, APNs and FCM fakes, and the server arguments that point at them.
    struct Providers {
        let directory: URL
        let apns: Fake
        let fcm: Fake
        let arguments: [String]

        static func start() async throws -> Providers {
            let directory = try makeTemporaryDirectory("push-receipts")
            let pki = directory.appendingPathComponent("pki").path
            _ = try await offload {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/bash")
                process.arguments = [PushReceiptEndToEndTests.root + "/scripts/testservers/make-test-pki", pki]
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                process.waitUntilExit()
                guard process.terminationStatus == 0 else { throw HarnessError("make-test-pki failed") }
            }
            let tls = ["--cert", pki + "/server.pem", "--key", pki + "/server.key"]
            let apns = try await Fake("fake_apns", tls + ["--public-key", pki + "/apns.pub", "--key-id", apnsKeyID,
                                                          "--team-id", apnsTeamID, "--bundle", bundle], directory: directory)
            let fcm = try await Fake("fake_fcm", tls + ["--public-key", pki + "/fcm.pub", "--client-email", fcmClient,
                                                        "--project", fcmProject], directory: directory)
            let account: JSONValue = .object([
                "type": "service_account", "project_id": .string(fcmProject), "private_key_id": "0123456789abcdef",
                "private_key": .string(try String(contentsOfFile: pki + "/fcm.key", encoding: .utf8)),
                "client_email": .string(fcmClient), "token_uri": .string(fcm.url + "/token"),
            ])
            let accountFile = directory.appendingPathComponent("service-account.json").path
            try Data(account.jsonText.utf8).write(to: URL(fileURLWithPath: accountFile))
            return Providers(directory: directory, apns: apns, fcm: fcm, arguments: [
                "--apns-key-file", pki + "/apns.p8", "--apns-key-id", apnsKeyID, "--apns-team-id", apnsTeamID,
                "--apns-topic", bundle, "--apns-endpoint", apns.url,
                "--fcm-service-account", accountFile, "--fcm-endpoint", fcm.url, "--ca-file", pki + "/ca.pem",
            ])
        }

        func stop() {
            apns.stop()
            fcm.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// The ring payloads the fakes accepted for `visitID`: APNs' body and FCM's `data`.
        func ringPayloads(_ visitID: String) -> (apns: JSONValue?, fcm: JSONValue?) {
            let apnsPayload = apns.records().compactMap { $0["payload"] }
                .first { $0["type"]?.stringValue == "visit.ring" && $0["visit_id"]?.stringValue == visitID }
            let fcmData = fcm.records().compactMap { $0["message"]?["data"] }
                .first { $0["type"]?.stringValue == "visit.ring" && $0["visit_id"]?.stringValue == visitID }
            return (apnsPayload, fcmData)
        }
    }

    static func ack(_ server: TestServer, _ pushID: String, token: String) async throws -> RawResponse {
        try await HTTP.send("POST", server.baseURL.appendingPathComponent("/v1/push/\(pushID)/ack"), json: #"{"ack_token":"\#(token)"}"#)
    }

    static func health(_ admin: ClientDeviceEndToEndTests.Direct, _ deviceIDs: [String]) async throws -> [PushHealthDevice] {
        let answer = try await admin.send("GET", "/v1/admin/push_health")
        #expect(answer.status == 200)
        return try answer.decode(PushHealthReport.self).devices.filter { deviceIDs.contains($0.deviceID) }
    }

    static func receipts(_ maria: ClientDeviceEndToEndTests.Direct, _ visitID: String) async throws -> [VisitAttempt] {
        let visit = try (try await maria.send("GET", "/v1/visits/\(visitID)")).decode(Visit.self)
        return visit.attempts.filter { $0.kind == .pushReceipt }
    }

    static func run(database: [String]) async throws {
        let providers = try await Providers.start()
        defer { providers.stop() }
        try await TestServer.with(["--demo"] + providers.arguments + database) { server in
            let maria = try await ClientDeviceEndToEndTests.Direct.login(server, "maria")
            let admin = try await ClientDeviceEndToEndTests.Direct.login(server, "admin")
            var deviceIDs: [String] = []
            for body in [#"{"installation_id":"e2e-iphone","platform":"ios","push_token":"\#(hex())","voip_token":"\#(hex())"}"#,
                         #"{"installation_id":"e2e-android","platform":"android","push_token":"fcm-\#(hex())"}"#] {
                let registered = try await maria.send("POST", "/v1/devices", json: body)
                #expect(registered.status == 201, "\(registered.text)")
                deviceIDs.append(try #require(try registered.decode(DeviceView.self).id))
            }

            // A visitor rings A-101: Maria (first in the ring order) is rung on both phones.
            let visitID = try await ClientQueueEndToEndTests.arrive(server, kind: "visit", name: "Pedro")
            let rung = await eventually(within: .seconds(30)) {
                let payloads = providers.ringPayloads(visitID)
                return payloads.apns != nil && payloads.fcm != nil
            }
            #expect(rung, "APNs saw \(providers.apns.records().count) requests, FCM \(providers.fcm.records().count)")
            let (apnsPayload, fcmData) = providers.ringPayloads(visitID)
            let iphone = try PushPayload.decode(try #require(apnsPayload))
            let android = try PushPayload.decode(try #require(fcmData))
            let iphoneReceipt = try #require(iphone.receipt, "the VoIP payload carries push_id and ack_token")
            let androidReceipt = try #require(android.receipt, "the FCM data carries push_id and ack_token")
            #expect(iphoneReceipt.ackToken.count == 43 && androidReceipt.ackToken.count == 43)
            #expect(iphoneReceipt.ackToken != androidReceipt.ackToken)

            // Refusals: a wrong token, the other phone's token, an unknown push — one answer.
            let refusals = [
                try await Self.ack(server, iphoneReceipt.pushID, token: String(repeating: "A", count: 42) + "Q"),
                try await Self.ack(server, iphoneReceipt.pushID, token: androidReceipt.ackToken),
                try await Self.ack(server, UUID().uuidString.lowercased(), token: iphoneReceipt.ackToken),
            ]
            for refusal in refusals {
                #expect(refusal.status == 404)
                let error = try refusal.decode(ErrorEnvelope.self).error
                #expect(error.code.rawValue == "NOT_FOUND")
                #expect(error.message == "push not found")
            }
            // Nothing changed: no receipt on the timeline, no ack in push health.
            #expect(try await Self.receipts(maria, visitID).isEmpty)
            #expect(try await Self.health(admin, deviceIDs).allSatisfy { $0.lastAckAt == nil })

            // The iPhone's extension: the client core, from the payload alone (no session).
            let sender = PushReceiptSender(baseURL: server.baseURL)
            let first = await sender.acknowledge(iphone, deadline: Date().addingTimeInterval(30))
            guard case .acknowledged(let ackedAt) = first else { Issue.record("iPhone ack: \(first)"); return }
            let second = await sender.acknowledge(json: Data(try #require(apnsPayload).jsonText.utf8), deadline: Date().addingTimeInterval(30))
            #expect(second == .acknowledged(ackedAt: ackedAt), "a second ack answers with the first acked_at: \(first) then \(second)")
            // The Android receiver: a bare POST with the data message's token.
            let androidAck = try await Self.ack(server, androidReceipt.pushID, token: androidReceipt.ackToken)
            #expect(androidAck.status == 200)
            let ackBody = try androidAck.decode(JSONValue.self)
            #expect(ackBody["push_id"]?.stringValue == androidReceipt.pushID)
            #expect(ackBody["visit_id"] == nil && ackBody["caller_name"] == nil, "a receipt reveals no visit data")

            // Push health and the visit's timeline count both receipts.
            let health = try await Self.health(admin, deviceIDs)
            #expect(health.count == 2)
            #expect(health.allSatisfy { $0.lastAckAt != nil }, "\(health.map { ($0.platform, $0.lastAckAt as Any) })")
            #expect(health.allSatisfy { $0.unackedPushes == 0 })
            #expect(Set(try await Self.receipts(maria, visitID).compactMap(\.deviceID)) == Set(deviceIDs))

            // What a receipt costs, either way (repeated acks of an acknowledged push do
            // the whole check and answer the first acked_at).
            func median(_ label: String, _ body: () async throws -> Int) async throws {
                var samples: [Double] = []
                for _ in 0..<40 {
                    let start = ContinuousClock.now
                    #expect(try await body() == 200, "\(label)")
                    let elapsed = ContinuousClock.now - start
                    samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
                }
                samples.sort()
                print("push ack \(label): median \(String(format: "%.2f", samples[samples.count / 2])) ms, p90 \(String(format: "%.2f", samples[samples.count * 9 / 10])) ms (40 sequential, loopback)")
            }
            try await median("with ack_token") { try await Self.ack(server, androidReceipt.pushID, token: androidReceipt.ackToken).status }
            try await median("with bearer") { try await maria.send("POST", "/v1/push/\(androidReceipt.pushID)/ack").status }

            // Refusals count per address: 3 above, 17 more still answer 404, then 429 for
            // every capability ack from this address — even a right one. The bearer route
            // is not affected.
            for _ in 0..<17 {
                #expect(try await Self.ack(server, iphoneReceipt.pushID, token: androidReceipt.ackToken).status == 404)
            }
            let limited = try await Self.ack(server, iphoneReceipt.pushID, token: androidReceipt.ackToken)
            #expect(limited.status == 429)
            #expect(Int(limited.headers["retry-after"] ?? "") ?? 0 >= 1)
            #expect(try await Self.ack(server, iphoneReceipt.pushID, token: iphoneReceipt.ackToken).status == 429)
            #expect(try await maria.send("POST", "/v1/push/\(iphoneReceipt.pushID)/ack").status == 200)
        }
    }

    static func hex() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    @Test("SQLite: each phone acks its ring from the payload alone; wrong, other and unknown are one 404 and change nothing",
          .requires(.venv))
    func sqlite() async throws {
        try await Self.run(database: [])
    }

    @Test("PostgreSQL: each phone acks its ring from the payload alone; wrong, other and unknown are one 404 and change nothing",
          .requires(.venv, .postgres))
    func postgres() async throws {
        let database = try #require(try TestPostgres.createDatabase())
        defer { database.drop() }
        try await Self.run(database: ["--database", database.url])
    }
}
