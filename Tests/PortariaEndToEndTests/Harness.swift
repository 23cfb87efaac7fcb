import Foundation
import PortariaCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

// A small harness for end-to-end tests: it starts the real `portaria` binary on a
// free loopback port with its own temporary directory and SQLite database, and talks
// to it over real sockets. Blocking socket and process work runs on Dispatch threads
// (`offload`) so Swift's small cooperative pool stays free for the tests themselves.

/// Runs blocking work on a Dispatch thread.
func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        // A serial queue of its own: on Linux the global concurrent pool has one thread per
        // core and blocking calls there would stall each other (and the code under test).
        DispatchQueue(label: "portaria.tests.offload").async { continuation.resume(with: Result { try body() }) }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Where the binary under test is: `PORTARIA_BIN`, else `.build/debug/portaria` of this package.
enum PortariaBinary {
    static let path: String = {
        if let path = ProcessInfo.processInfo.environment["PORTARIA_BIN"], !path.isEmpty { return path }
        // …/Tests/PortariaEndToEndTests/Harness.swift → package root
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/portaria").path
    }()

    static func require() throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw HarnessError("no portaria binary at \(path): run `swift build` first (or set PORTARIA_BIN)")
        }
        return path
    }

    /// The environment for a child: ours without any PORTARIA_* setting (so a developer's
    /// exported `PORTARIA_DATABASE` cannot leak into a test), plus `extra`.
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PORTARIA_") }
        environment.merge(extra) { $1 }
        return environment
    }
}

func makeTemporaryDirectory(_ label: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-e2e-\(label)-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

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
    let binary = try PortariaBinary.require()
    let directory = try makeTemporaryDirectory("cli")
    defer { try? FileManager.default.removeItem(at: directory) }
    let outPath = directory.appendingPathComponent("stdout").path
    let errPath = directory.appendingPathComponent("stderr").path
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = arguments
    process.environment = PortariaBinary.environment(environment)
    process.currentDirectoryURL = directory
    process.standardOutput = FileHandle(forWritingAtPath: outPath)
    process.standardError = FileHandle(forWritingAtPath: errPath)
    process.standardInput = FileHandle.nullDevice
    let started = ContinuousClock.now
    try process.run()
    let exited = await waitForExit(process, within: timeout)
    let elapsed = ContinuousClock.now - started
    if !exited {
        kill(process.processIdentifier, SIGKILL)
        _ = await waitForExit(process, within: .seconds(5))
    }
    return CommandResult(
        status: process.terminationStatus,
        signaled: process.terminationReason == .uncaughtSignal || !exited,
        stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "",
        elapsed: elapsed)
}

/// Polls until `process` has exited; false if it is still running at the deadline.
func waitForExit(_ process: Process, within timeout: Duration) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while process.isRunning {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}

/// Polls `condition` until it holds or the deadline passes.
func eventually(within timeout: Duration, every interval: Duration = .milliseconds(20),
                _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// One `portaria serve` process on a free port with its own directory and database.
final class TestServer: @unchecked Sendable {
    let process: Process
    let directory: URL
    let port: UInt16
    let logPath: String

    private init(process: Process, directory: URL, port: UInt16, logPath: String) {
        self.process = process
        self.directory = directory
        self.port = port
        self.logPath = logPath
    }

    /// The server's log (JSON lines on stderr) so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    var isRunning: Bool { process.isRunning }

    /// Starts the server and returns once `/healthz` answers 200. `--port 0` lets the
    /// kernel pick a free port (no race with other tests); the server logs the port it bound.
    static func start(_ arguments: [String] = [], environment: [String: String] = [:]) async throws -> TestServer {
        let binary = try PortariaBinary.require()
        let directory = try makeTemporaryDirectory("server")
        let logPath = directory.appendingPathComponent("server.log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0",
                             "--database", "sqlite://" + directory.appendingPathComponent("portaria.db").path,
                             "--data-dir", directory.appendingPathComponent("data").path] + arguments
        process.environment = PortariaBinary.environment(environment)
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle(forWritingAtPath: directory.appendingPathComponent("stdout").path)
            ?? FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: logPath)
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
        _ = await eventually(within: .seconds(20)) {
            port = Self.boundPort(in: (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
            return port != nil || !process.isRunning
        }
        guard let port else { throw await fail("portaria serve did not report a listening port") }
        let server = TestServer(process: process, directory: directory, port: port, logPath: logPath)
        let healthy = await eventually(within: .seconds(10)) {
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

    func connect() async throws -> RawConnection {
        let port = port
        return try await offload { try RawConnection(port: port) }
    }

    /// One request on a fresh connection.
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = [],
                 timeout: Duration = .seconds(15)) async throws -> RawResponse {
        let connection = try await connect()
        defer { connection.close() }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + body
        return try await offload {
            try connection.send(bytes)
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
        try? FileManager.default.removeItem(at: directory)
        return status
    }

    /// Starts a server, runs `body`, and always stops it; checks the server survived.
    static func with(_ arguments: [String] = [], sourceLocation: SourceLocation = #_sourceLocation,
                     _ body: (TestServer) async throws -> Void) async throws {
        let server = try await start(arguments)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        #expect(server.isRunning, "the server died during the test:\n\(server.log.suffix(4000))", sourceLocation: sourceLocation)
        let log = server.log
        let stopping = ContinuousClock.now
        let status = await server.stop(grace: .seconds(15))
        // Nothing is in flight at the end of a test, so shutdown must be prompt (the
        // server's own grace period for in-flight requests is 10 s).
        #expect(ContinuousClock.now - stopping < .seconds(5), "shutdown took \(ContinuousClock.now - stopping)",
                sourceLocation: sourceLocation)
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

/// A parsed HTTP/1.1 response.
struct RawResponse: Sendable {
    var status: Int
    /// Header names lowercased.
    var headers: [String: String]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers[name.lowercased()] }
    var text: String { String(decoding: body, as: UTF8.self) }

    func json() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw HarnessError("body is not a JSON object: \(text.prefix(200))")
        }
        return object
    }

    /// The `error` object of the envelope (DESIGN §3), checking the media type.
    func errorEnvelope(sourceLocation: SourceLocation = #_sourceLocation) throws -> ErrorBody {
        #expect(header("content-type")?.hasPrefix("application/json") == true, "Content-Type \(header("content-type") ?? "none")",
                sourceLocation: sourceLocation)
        return try JSONCoding.decoder().decode(ErrorEnvelope.self, from: Data(body)).error
    }
}

/// A blocking TCP connection to the server on 127.0.0.1, for traffic a normal client
/// would never send. Used by one task at a time.
final class RawConnection: @unchecked Sendable {
    private var descriptor: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw HarnessError("connect to port \(port): \(message)")
        }
    }

    deinit { close() }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    /// Closes with a reset (SO_LINGER 0), which the server notices even when it is not
    /// reading; a plain close after a half-close can go unnoticed until the idle timeout.
    func abort() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    /// Shrinks the kernel's send buffer so that a send blocks until the server has read
    /// the bytes before it (a slow uplink): a server that stops reading makes it fail.
    /// A send that makes no progress for `timeout` fails instead of hanging the test.
    func limitSendBuffer(to bytes: Int32, timeout: Duration = .seconds(10)) {
        var value = bytes
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &value, socklen_t(MemoryLayout<Int32>.size))
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Half-closes: the server sees end of input but can still answer.
    func shutdownWrite() { _ = Glibc.shutdown(descriptor, Int32(SHUT_WR)) }

    /// Sends everything; throws when the peer has gone (EPIPE/ECONNRESET).
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                throw HarnessError("send: \(String(cString: strerror(errno)))")
            }
            offset += sent
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads more bytes into the buffer; false at end of stream or on reset.
    private func fill(until deadline: ContinuousClock.Instant) throws -> Bool {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw HarnessError("timed out waiting for the server") }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&poller, 1, max(1, milliseconds))
        if ready == 0 { throw HarnessError("timed out waiting for the server") }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return false } // closed or reset
        buffer += chunk[..<count]
        return true
    }

    /// True when the server closes (or resets) the connection before `timeout`.
    func waitForClose(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        do {
            while try fill(until: deadline) { buffer.removeAll(keepingCapacity: true) }
            return true
        } catch {
            return false
        }
    }

    /// Reads one response, skipping interim 1xx answers unless told not to. Nil if the
    /// connection closed before any byte.
    func readResponse(timeout: Duration = .seconds(5), isHead: Bool = false, skipInterim: Bool = true) throws -> RawResponse? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let separator: [UInt8] = Array("\r\n\r\n".utf8)
            var headEnd: Int?
            while headEnd == nil {
                headEnd = buffer.firstRange(of: separator)?.upperBound
                if headEnd == nil {
                    guard try fill(until: deadline) else {
                        if buffer.isEmpty { return nil }
                        throw HarnessError("connection closed inside a response head: \(String(decoding: buffer, as: UTF8.self).prefix(200))")
                    }
                }
            }
            let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
            buffer.removeFirst(headEnd!)
            var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
            let statusLine = lines.removeFirst()
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
                throw HarnessError("bad status line: \(statusLine)")
            }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers[name] = headers[name].map { $0 + ", " + value } ?? value
            }
            if (100..<200).contains(status) {
                if skipInterim { continue }
                return RawResponse(status: status, headers: headers, body: [])
            }
            var body: [UInt8] = []
            if isHead || status == 204 || status == 304 {
                // no body
            } else if let length = headers["content-length"].flatMap(Int.init) {
                while buffer.count < length {
                    guard try fill(until: deadline) else { throw HarnessError("connection closed inside a body") }
                }
                body = Array(buffer[..<length])
                buffer.removeFirst(length)
            } else if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
                body = try readChunked(until: deadline)
            } else {
                while try fill(until: deadline) {}
                body = buffer
                buffer = []
            }
            return RawResponse(status: status, headers: headers, body: body)
        }
    }

    private func readChunked(until deadline: ContinuousClock.Instant) throws -> [UInt8] {
        var body: [UInt8] = []
        let crlf: [UInt8] = [13, 10]
        while true {
            var lineEnd = buffer.firstRange(of: crlf)
            while lineEnd == nil {
                guard try fill(until: deadline) else { throw HarnessError("closed inside chunked body") }
                lineEnd = buffer.firstRange(of: crlf)
            }
            let sizeText = String(decoding: buffer[..<lineEnd!.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw HarnessError("bad chunk size \(sizeText)")
            }
            buffer.removeFirst(lineEnd!.upperBound)
            while buffer.count < size + 2 {
                guard try fill(until: deadline) else { throw HarnessError("closed inside chunk") }
            }
            body += buffer[..<size]
            buffer.removeFirst(size + 2)
            if size == 0 { return body }
        }
    }
}
