import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import PortariaCore

/// A minimal harness for the visits end-to-end tests: runs the real `portaria` binary
/// on loopback and speaks HTTP to it with URLSession. (The shared Harness is being
/// written elsewhere; this one stays small on purpose.)
final class VisitsServer: @unchecked Sendable {
    let databaseURL: String
    let dataDirectory: String
    private(set) var process: Process?
    private(set) var port: Int = 0
    private let output = Locked("")

    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// `PORTARIA_BINARY` (e.g. a release build for benchmarks), else the debug build.
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["PORTARIA_BINARY"], !path.isEmpty { return URL(fileURLWithPath: path) }
        let candidates = [".build/debug/portaria", ".build/x86_64-unknown-linux-gnu/debug/portaria", ".build/release/portaria"]
        return candidates.map { packageRoot.appendingPathComponent($0) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? packageRoot.appendingPathComponent(candidates[0])
    }

    init(databaseURL: String, dataDirectory: String) {
        self.databaseURL = databaseURL
        self.dataDirectory = dataDirectory
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Starts the server and waits for its "listening" line (which carries the port).
    func start() async throws {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--database", databaseURL, "--demo",
                             "--data-dir", dataDirectory, "--gate-limit", "100000"]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        let output = output
        output.withLock { $0 = "" }
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { output.withLock { $0 += String(decoding: data, as: UTF8.self) } }
        }
        try process.run()
        self.process = process
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let text = output.current
            if let range = text.range(of: #""msg":"listening"[^\n]*"#, options: .regularExpression) ??
                text.range(of: #"[^\n]*"msg":"listening""#, options: .regularExpression),
               let portRange = text[range].range(of: #""port":\d+"#, options: .regularExpression) {
                port = Int(text[portRange].dropFirst(7)) ?? 0
                if port > 0 { return }
            }
            guard process.isRunning else { throw HarnessError("portaria exited: \(text.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HarnessError("portaria did not start: \(output.current.suffix(2000))")
    }

    /// `kill -9`: no shutdown, no flush — what a crash looks like.
    func kill9() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
        self.process = nil
    }

    var log: String { output.current }
}

/// One HTTP exchange as the test sees it.
struct Exchange: Sendable {
    var status: Int
    var body: Data
    var headers: [String: String]
    var json: JSONValue { (try? JSONCoding.decoder().decode(JSONValue.self, from: body)) ?? .null }
}

enum HTTP {
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForRequest = 10
        return URLSession(configuration: configuration)
    }()

    static func send(_ method: String, _ url: URL, headers: [String: String] = [:], json: String? = nil) async throws -> Exchange {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw HarnessError("not HTTP") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return Exchange(status: http.statusCode, body: data, headers: headers)
    }
}

/// Creates and drops a throw-away PostgreSQL database when the run has a cluster.
enum EndToEndPostgres {
    static var url: String? {
        let value = ProcessInfo.processInfo.environment["PORTARIA_TEST_POSTGRES_URL"]
        return value?.isEmpty == false ? value : nil
    }

    static func psql(_ sql: String) throws {
        guard let url else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: (ProcessInfo.processInfo.environment["PG_BIN"] ?? "/usr/lib/postgresql/15/bin") + "/psql")
        process.arguments = [url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw HarnessError("psql failed: \(sql)") }
    }

    /// A new database's URL on the same cluster.
    static func create() throws -> (url: String, drop: () -> Void)? {
        guard let base = url, var components = URLComponents(string: base) else { return nil }
        let name = "portaria_e2e_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased())"
        try psql("CREATE DATABASE \(name)")
        components.path = "/" + name
        return (components.string!, { try? psql("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") })
    }
}
