import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs a command to completion; throws with its output when it fails.
@discardableResult
func runCommand(_ executable: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw FixtureError("\(executable) \(arguments.joined(separator: " ")) failed: \(output)") }
    return output
}

/// A throw-away PKI made with `openssl` at test time: local CA, server certificate for
/// 127.0.0.1, an APNs .p8 and an FCM RSA key.
struct TestPKI: Sendable {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    var serverCert: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    var apnsKey: String { directory + "/apns.p8" }
    var apnsPublicKey: String { directory + "/apns.pub" }
    var fcmKey: String { directory + "/fcm.key" }
    var fcmPublicKey: String { directory + "/fcm.pub" }

    /// Off the cooperative pool: key generation takes a while, and the pool has one
    /// thread per core — blocking it starves every in-process server of the test run.
    static func make() async throws -> TestPKI {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-pki-\(UUID().uuidString)").path
        _ = try await offload { try runCommand("/bin/bash", [Repository.root + "/scripts/testservers/make-test-pki", directory]) }
        return TestPKI(directory: directory)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// One fake provider (scripts/testservers/fake_*.py) running as a subprocess on a free port.
final class FakeServer: @unchecked Sendable {
    let process: Process
    let port: Int
    let recordFile: String
    let scriptFile: String

    /// `script`: per-token scripted answers (see the Python file's docstring).
    init(_ name: String, arguments: [String], script: [String: [JSONValue]] = [:], directory: String) throws {
        guard FileManager.default.isExecutableFile(atPath: Repository.python) else {
            throw FixtureError("\(Repository.python) is missing: run scripts/bootstrap (it creates .venv with scripts/testservers/requirements.txt)")
        }
        recordFile = directory + "/\(name)-\(UUID().uuidString).jsonl"
        scriptFile = directory + "/\(name)-script-\(UUID().uuidString).json"
        try Data(JSONValue.object(script.mapValues(JSONValue.array)).jsonText.utf8).write(to: URL(fileURLWithPath: scriptFile))
        process = Process()
        process.executableURL = URL(fileURLWithPath: Repository.python)
        process.arguments = [Repository.root + "/scripts/testservers/\(name).py", "--port", "0",
                             "--script", scriptFile, "--record", recordFile] + arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.standardError
        try process.run()
        // The server prints `READY <port>` once it listens.
        var buffer = Data()
        let deadline = Date().addingTimeInterval(20)
        var found: Int?
        while found == nil && Date() < deadline {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            let text = String(decoding: buffer, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("READY ") }) {
                found = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
            }
        }
        guard let found else {
            process.terminate()
            throw FixtureError("\(name) did not start: \(String(decoding: buffer, as: UTF8.self))")
        }
        port = found
    }

    var url: String { "https://127.0.0.1:\(port)" }

    /// Every request the fake saw, in order.
    func records() -> [JSONValue] {
        guard let data = FileManager.default.contents(atPath: recordFile) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONCoding.decoder().decode(JSONValue.self, from: Data($0.utf8))
        }
    }

    func stop() {
        // Not waitUntilExit() while it runs: on Linux it spins a run loop on the calling
        // (cooperative) thread. `reap` only once it has exited.
        defer { reap(process) }
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<100 where process.isRunning { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    deinit { stop() }
}

/// A fake APNs plus the provider configured against it through the local CA.
struct APNsFixture {
    static let keyID = "ABC123DEFG"
    static let teamID = "DEF123GHIJ"
    static let bundle = "br.com.portaria.app"

    let pki: TestPKI
    let server: FakeServer
    let provider: APNsProvider
    /// Kept up to date by the fake: TCP connections accepted, peak of open streams.
    let statsFile: String

    /// - Parameters:
    ///   - serverStreams: SETTINGS_MAX_CONCURRENT_STREAMS the fake announces.
    ///   - clientStreams: the provider's own limit of pushes in flight.
    static func make(pki: TestPKI, script: [String: [JSONValue]] = [:], serverStreams: Int = 1000,
                     clientStreams: Int = 100) throws -> APNsFixture {
        let statsFile = pki.directory + "/apns-stats-\(UUID().uuidString).json"
        let server = try FakeServer("fake_apns", arguments: [
            "--cert", pki.serverCert, "--key", pki.serverKey, "--public-key", pki.apnsPublicKey,
            "--key-id", keyID, "--team-id", teamID, "--bundle", bundle,
            "--max-concurrent-streams", String(serverStreams), "--stats", statsFile,
        ], script: script, directory: pki.directory)
        var configuration = APNsConfiguration(keyFile: pki.apnsKey, keyID: keyID, teamID: teamID,
                                              bundleID: bundle, endpoint: server.url, caFile: pki.caFile)
        configuration.maxConcurrentStreams = clientStreams
        let provider = try APNsProvider(configuration: configuration)
        return APNsFixture(pki: pki, server: server, provider: provider, statsFile: statsFile)
    }

    /// What the fake counted: TCP connections it accepted and the most streams one
    /// connection had open at once.
    func stats() -> (connectionsAccepted: Int, maxOpenStreams: Int) {
        guard let data = FileManager.default.contents(atPath: statsFile),
              let json = try? JSONCoding.decoder().decode(JSONValue.self, from: data) else { return (0, 0) }
        return (json["connections_accepted"]?.intValue ?? 0, json["max_open_streams"]?.intValue ?? 0)
    }

    func stop() {
        provider.shutdown()
        server.stop()
    }
}

/// A fake FCM + OAuth endpoint and the provider with a service-account file pointing at it.
struct FCMFixture {
    static let project = "portaria-test"
    static let clientEmail = "push@portaria-test.iam.gserviceaccount.com"

    let server: FakeServer
    let provider: FCMProvider

    static func make(pki: TestPKI, script: [String: [JSONValue]] = [:], tokenLifetime: Int = 3599) throws -> FCMFixture {
        let server = try FakeServer("fake_fcm", arguments: [
            "--cert", pki.serverCert, "--key", pki.serverKey, "--public-key", pki.fcmPublicKey,
            "--client-email", clientEmail, "--project", project, "--token-lifetime", String(tokenLifetime),
        ], script: script, directory: pki.directory)
        let keyPEM = try String(contentsOfFile: pki.fcmKey, encoding: .utf8)
        let account: JSONValue = .object([
            "type": "service_account", "project_id": .string(project), "private_key_id": "0123456789abcdef",
            "private_key": .string(keyPEM), "client_email": .string(clientEmail),
            "token_uri": .string(server.url + "/token"),
        ])
        let accountFile = pki.directory + "/service-account-\(UUID().uuidString).json"
        try Data(account.jsonText.utf8).write(to: URL(fileURLWithPath: accountFile))
        let provider = try FCMProvider(serviceAccountFile: accountFile, endpoint: server.url, caFile: pki.caFile)
        return FCMFixture(server: server, provider: provider)
    }

    func stop() {
        provider.shutdown()
        server.stop()
    }
}

/// Random hex tokens shaped like APNs device tokens.
func hexToken() -> String { Crypto.randomBytes(32).map { String(format: "%02x", $0) }.joined() }

extension JSONValue {
    var intValue: Int? {
        if case .number(let value) = self { return Int(value) }
        if case .string(let text) = self { return Int(text) }
        return nil
    }
}

/// Waits until every job of `ids` reached one of `statuses`; returns the rows.
func waitForJobs(_ database: any SQLDatabase, _ ids: [String], in statuses: Set<String> = ["sent", "failed", "expired", "cancelled"],
                 timeout: TimeInterval = 20) async throws -> [String: SQLRow] {
    var byID: [String: SQLRow] = [:]
    let finished = try await eventually(within: .seconds(timeout)) {
        let rows = try await database.read { db in try db.query("SELECT * FROM push_jobs", []) }
        byID = [:]
        for row in rows { if let id = try row.string("id") { byID[id] = row } }
        return try ids.allSatisfy({ try byID[$0].flatMap { try $0.string("status") }.map(statuses.contains) ?? false })
    }
    guard finished else {
        throw FixtureError("jobs not finished: " + (try ids.map { "\($0)=\(try byID[$0]?.string("status") ?? "missing")" }).joined(separator: ", "))
    }
    return byID
}

/// Waits until the sink saw `count` attempts.
func waitForAttempts(_ sink: RecordingSink, _ count: Int, timeout: TimeInterval = 20) async throws {
    guard await eventually(within: .seconds(timeout), { sink.attempts.current.count >= count }) else {
        throw FixtureError("only \(sink.attempts.current.count) attempts")
    }
}
