import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PortariaCore
@_exported import PortariaTestSupport
import PortariaWebSocket
import Testing
#if canImport(Glibc)
import Glibc
#endif

// A small harness for end-to-end tests: it starts the real `portaria` binary on a
// free loopback port with its own temporary directory and SQLite database, and talks
// to it over real sockets. Blocking socket and process work runs on Dispatch threads
// (`offload`) so Swift's small cooperative pool stays free for the tests themselves.

/// What one run of the CLI did.
struct CommandResult: Sendable {
    var status: Int32
    var signaled: Bool
    var stdout: String
    var stderr: String
    var elapsed: Duration
    var stderrLines: [Substring] { stderr.split(separator: "\n", omittingEmptySubsequences: true) }
}

/// Runs `portaria arguments…` to completion (killing it after `timeout`).
func runPortaria(_ arguments: [String], environment: [String: String] = [:],
                 timeout: Duration = .seconds(20)) async throws -> CommandResult {
    let started = ContinuousClock.now
    let command = try CapturedProcess.start(try PortariaBinary.require(), arguments,
                                            environment: PortariaBinary.environment(environment), label: "cli")
    defer { command.remove() }
    let process = command.process
    let exited = await waitForExit(process, within: timeout)
    let elapsed = ContinuousClock.now - started
    if !exited {
        kill(process.processIdentifier, SIGKILL)
        _ = await waitForExit(process, within: .seconds(5))
    }
    return CommandResult(
        status: process.terminationStatus,
        signaled: process.terminationReason == .uncaughtSignal || !exited,
        stdout: command.stdout,
        stderr: command.stderr,
        elapsed: elapsed)
}

/// One `portaria serve` process on a free port with its own directory and database.
final class TestServer: @unchecked Sendable {
    let process: Process
    let directory: URL
    let port: UInt16
    let logPath: String
    /// What it was started with, for `restart()`.
    let arguments: [String]
    let environment: [String: String]

    private init(process: Process, directory: URL, port: UInt16, logPath: String,
                 arguments: [String], environment: [String: String]) {
        self.process = process
        self.directory = directory
        self.port = port
        self.logPath = logPath
        self.arguments = arguments
        self.environment = environment
    }

    /// The log as it was when `stop()` removed the directory.
    private(set) var finalLog = ""

    /// `http://127.0.0.1:PORT`, for URLSession clients (`HTTP.send`).
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The server's log (JSON lines on stderr) so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    var isRunning: Bool { process.isRunning }

    /// Starts the server and returns once `/healthz` answers 200. `--port 0` lets the
    /// kernel pick a free port (no race with other tests); the server logs the port it bound.
    /// - Parameter directory: reuse a directory (and so its SQLite database and media), as
    ///   `restart()` does; a new one by default. Later `arguments` override the defaults
    ///   (`--database postgres://…`).
    static func start(_ arguments: [String] = [], environment: [String: String] = [:],
                      directory existing: URL? = nil) async throws -> TestServer {
        let binary = try PortariaBinary.require()
        let directory = try existing ?? makeTemporaryDirectory("server")
        let logPath = directory.appendingPathComponent("server.log").path
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0",
                             "--database", "sqlite://" + directory.appendingPathComponent("portaria.db").path,
                             "--data-dir", directory.appendingPathComponent("data").path]
            + (try Self.sharedKeyArguments(arguments, environment: environment)) + arguments
        // Tests read the per-request lines, which --demo otherwise writes at debug level.
        process.environment = PortariaBinary.environment(["PORTARIA_REQUEST_LOG": "info"].merging(environment) { $1 })
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle(forWritingAtPath: directory.appendingPathComponent("stdout").path)
            ?? FileHandle.nullDevice
        let logOffset = (FileManager.default.contents(atPath: logPath) ?? Data()).count
        let logHandle = FileHandle(forWritingAtPath: logPath)
        _ = try? logHandle?.seekToEnd()   // a restart appends to the same log
        process.standardError = logHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()

        func fail(_ message: String) async -> HarnessError {
            kill(process.processIdentifier, SIGKILL)
            _ = await waitForExit(process, within: .seconds(5))
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: directory)
            return HarnessError("\(message)\n--- server log ---\n\(log)")
        }

        var port: UInt16?
        // Generous: a loaded 2-core machine seeding the demo (six argon2id hashes) while
        // fifty suites start at once took longer than 20 s.
        _ = await eventually(within: .seconds(60)) {
            // Only this process's lines: a restart appends to its predecessor's log.
            let log = FileManager.default.contents(atPath: logPath) ?? Data()
            port = Self.boundPort(in: String(decoding: log.dropFirst(logOffset), as: UTF8.self))
            return port != nil || !process.isRunning
        }
        guard let port else { throw await fail("portaria serve did not report a listening port") }
        let server = TestServer(process: process, directory: directory, port: port, logPath: logPath,
                                arguments: arguments, environment: environment)
        let healthy = await eventually(within: .seconds(30)) {
            (try? await server.request("GET", "/healthz", timeout: .seconds(2)))?.status == 200
        }
        guard healthy else { throw await fail("/healthz did not answer 200 on port \(port)") }
        return server
    }

    /// The port from the `{"msg":"listening","port":N,…}` log line.
    static func boundPort(in log: String) -> UInt16? {
        for line in log.split(separator: "\n") where line.contains(#""msg":"listening""#) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let port = (object["port"] as? NSNumber)?.intValue, port > 0, port < 65536 else { continue }
            return UInt16(port)
        }
        return nil
    }

    /// A raw connection, from `source` (a loopback address such as `127.0.0.2`) when given.
    func connect(from source: String? = nil) async throws -> RawConnection {
        let port = port
        return try await offload { try RawConnection(port: port, from: source) }
    }

    /// One request on a fresh connection (from `source` when given, as `connect`).
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = [],
                 timeout: Duration = .seconds(15), from source: String? = nil) async throws -> RawResponse {
        let connection = try await connect(from: source)
        defer { connection.close() }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + body
        return try await offload {
            // A server may answer before it has read the whole body (a 413, an early 4xx)
            // and close: the rest of the send then fails, and what it answered is still
            // there to read, as an HTTP client reads it.
            do {
                try connection.send(bytes)
            } catch {
                guard let early = try? connection.readResponse(timeout: timeout, isHead: method == "HEAD") else { throw error }
                return early
            }
            guard let response = try connection.readResponse(timeout: timeout, isHead: method == "HEAD") else {
                throw HarnessError("connection closed without a response to \(method) \(path)")
            }
            return response
        }
    }

    func postJSON(_ path: String, _ json: String, contentType: String = "application/json") async throws -> RawResponse {
        try await request("POST", path, headers: [("Content-Type", contentType)], body: Array(json.utf8))
    }

    /// Sends a signal (SIGTERM by default).
    func signal(_ number: Int32 = SIGTERM) {
        kill(process.processIdentifier, number)
    }

    /// `kill -9`: no shutdown, no flush — what a crash looks like. The directory stays.
    func kill9() async {
        signal(SIGKILL)
        _ = await waitForExit(process, within: .seconds(10))
    }

    /// A new process on the same directory, database and arguments (after `kill9()`).
    func restart() async throws -> TestServer {
        if process.isRunning { await kill9() }
        return try await TestServer.start(arguments, environment: environment, directory: directory)
    }

    /// Stops the server (SIGTERM, then SIGKILL after `grace`) and removes its directory.
    /// Returns the exit status, or nil if it had to be killed.
    @discardableResult
    func stop(grace: Duration = .seconds(10)) async -> Int32? {
        if process.isRunning { signal(SIGTERM) }
        var status: Int32?
        if await waitForExit(process, within: grace) {
            status = process.terminationReason == .exit ? process.terminationStatus : nil
        } else {
            signal(SIGKILL)
            _ = await waitForExit(process, within: .seconds(5))
        }
        finalLog = log
        try? FileManager.default.removeItem(at: directory)
        return status
    }

    /// Starts a server, runs `body`, and always stops it; checks the server survived.
    static func with(_ arguments: [String] = [], environment: [String: String] = [:],
                     sourceLocation: SourceLocation = #_sourceLocation,
                     _ body: (TestServer) async throws -> Void) async throws {
        let server = try await start(arguments, environment: environment)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        #expect(server.isRunning, "the server died during the test:\n\(server.log.suffix(4000))", sourceLocation: sourceLocation)
        let stopping = ContinuousClock.now
        let status = await server.stop(grace: .seconds(30))
        let log = server.finalLog
        // Nothing is in flight at the end of a test, so shutdown must not wait out its
        // grace period: asserted from what the server says it waited for, not from a clock
        // a loaded machine stretches.
        for waited in ["requests still running after grace period", "waiting for running handlers",
                       "upgraded sockets not handed back"] {
            #expect(!log.contains(waited), "shutdown waited (\(waited)), took \(ContinuousClock.now - stopping)",
                    sourceLocation: sourceLocation)
        }
        let detail = "reason \(server.process.terminationReason.rawValue), status \(server.process.terminationStatus)"
        #expect(status == 0, "the server did not exit cleanly on SIGTERM (\(detail)):\n\(log.suffix(3000))",
                sourceLocation: sourceLocation)
    }

    /// Asserts the server is alive and answers a fresh connection promptly.
    func expectHealthy(sourceLocation: SourceLocation = #_sourceLocation) async {
        #expect(isRunning, "the server process died:\n\(log.suffix(4000))", sourceLocation: sourceLocation)
        do {
            let response = try await request("GET", "/healthz", timeout: .seconds(3))
            #expect(response.status == 200, sourceLocation: sourceLocation)
        } catch {
            Issue.record("GET /healthz failed: \(error)", sourceLocation: sourceLocation)
        }
    }
}

extension RawResponse {
    /// The `error` object of the envelope (docs/contract.md §2), checking the media type.
    func errorEnvelope(sourceLocation: SourceLocation = #_sourceLocation) throws -> ErrorBody {
        #expect(header("content-type")?.hasPrefix("application/json") == true, "Content-Type \(header("content-type") ?? "none")",
                sourceLocation: sourceLocation)
        return try JSONCoding.decoder().decode(ErrorEnvelope.self, from: Data(body)).error
    }
}

// MARK: A URLSession client (how an app speaks HTTP), and throw-away PostgreSQL databases

extension RawResponse {
    /// The body as an open JSON value (`.null` when it is not JSON).
    var document: JSONValue { (try? JSONCoding.decoder().decode(JSONValue.self, from: Data(body))) ?? .null }

    /// The body decoded as the server's own contract type.
    func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T { try JSONCoding.decoder().decode(T.self, from: Data(body)) }
}

enum HTTP {
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        // Catches a hung server, not a slow one: a PostgreSQL login (argon2) took over 10 s
        // once at load 24 on 2 cores.
        configuration.timeoutIntervalForRequest = 60
        return URLSession(configuration: configuration)
    }()

    /// One request the way an app sends it (URLSession), answered as the raw client sees it.
    static func send(_ method: String, _ url: URL, headers: [String: String] = [:], json: String? = nil) async throws -> RawResponse {
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
        return RawResponse(status: http.statusCode, headers: headers, body: Array(data))
    }
}

extension TestServer {
    /// Every instance of one PostgreSQL database must wrap its secrets with the same key
    /// (docs/ops.md), and each test server has its own data directory: a server given a
    /// `postgres://` database and no key of its own gets `--secrets-key-file` of a key file
    /// kept per database name (deterministic, so every instance writes the same bytes).
    static func sharedKeyArguments(_ arguments: [String], environment: [String: String]) throws -> [String] {
        guard !arguments.contains("--secrets-key-file"), environment["PORTARIA_SECRETS_KEY_FILE"] == nil,
              let url = arguments.last(where: { $0.hasPrefix("postgres://") || $0.hasPrefix("postgresql://") }),
              let name = URLComponents(string: url)?.path.split(separator: "/").last else { return [] }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-e2e-keys")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let file = directory.appendingPathComponent("\(name).key")
        let bytes = Array(String(repeating: String(name), count: 32 / max(name.utf8.count, 1) + 1).utf8.prefix(32))
        try Data(bytes.map { String(format: "%02x", $0) }.joined().utf8).write(to: file, options: .atomic)
        return ["--secrets-key-file", file.path]
    }
}

/// Two `portaria serve` instances on one fresh PostgreSQL database, dropped at the end:
/// `a` seeds the demo data (`--demo`) and `b` joins the same database, each with its own
/// extra arguments. Both are stopped whether `body` returns or throws (and `a` too when
/// `b` fails to start).
enum TwoInstances {
    static func with(a extraA: [String] = [], b extraB: [String] = [],
                     _ body: (_ a: TestServer, _ b: TestServer) async throws -> Void) async throws {
        let database = try #require(try TestPostgres.createDatabase())
        defer { database.drop() }
        let a = try await TestServer.start(["--demo", "--database", database.url] + extraA)
        let b: TestServer
        do {
            b = try await TestServer.start(["--database", database.url] + extraB)
        } catch {
            await a.stop()
            throw error
        }
        do {
            try await body(a, b)
        } catch {
            await a.stop()
            await b.stop()
            throw error
        }
        await a.stop()
        await b.stop()
    }
}
