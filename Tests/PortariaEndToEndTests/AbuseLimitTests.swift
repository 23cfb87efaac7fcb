import Foundation
import PortariaCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Issue 10 (abuse resistance), over real sockets against the real binary: each test
// is one attack and the answer it must get. docs/reliability.md ("Security") lists them.

/// Reads a stopped server's SQLite file with Python's sqlite3 module (a second process
/// must not open the file while the server holds it).
enum SQLiteProbe {
    static func rows(_ databasePath: String, _ sql: String) async throws -> [[String]] {
        let script = """
            import json, sqlite3, sys
            db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
            print(json.dumps([[None if v is None else str(v) for v in row] for row in db.execute(sys.argv[2])]))
            """
        let directory = try makeTemporaryDirectory("probe")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outPath = directory.appendingPathComponent("out").path
        let errPath = directory.appendingPathComponent("err").path
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, databasePath, sql]
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        try process.run()
        guard await waitForExit(process, within: .seconds(20)), process.terminationStatus == 0 else {
            throw HarnessError("sqlite probe failed: \((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")")
        }
        let output = try Data(contentsOf: URL(fileURLWithPath: outPath))
        let decoded = try JSONSerialization.jsonObject(with: output) as? [[Any]] ?? []
        return decoded.map { $0.map { ($0 as? String) ?? "NULL" } }
    }
}

extension TestServer {
    /// The SQLite file the harness gave this server.
    var databasePath: String { directory.appendingPathComponent("portaria.db").path }

    /// SIGTERM and wait for a clean exit, keeping the directory (and its database) for
    /// inspection; `discard()` removes it afterwards.
    func stopKeepingFiles() async -> Bool {
        if process.isRunning { signal(SIGTERM) }
        return await waitForExit(process, within: .seconds(15)) && process.terminationStatus == 0
    }

    func discard() { try? FileManager.default.removeItem(at: directory) }

    func get(_ path: String, bearer: String? = nil, company: String? = nil) async throws -> RawResponse {
        var headers: [(String, String)] = []
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        if let company { headers.append(("X-Company-Id", company)) }
        return try await request("GET", path, headers: headers)
    }

    func post(_ path: String, json: String? = nil, bytes: [UInt8]? = nil, bearer: String? = nil, company: String? = nil,
              idempotencyKey: String? = nil, contentType: String? = nil) async throws -> RawResponse {
        var headers: [(String, String)] = []
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        if let company { headers.append(("X-Company-Id", company)) }
        if let idempotencyKey { headers.append(("Idempotency-Key", idempotencyKey)) }
        if json != nil { headers.append(("Content-Type", "application/json")) }
        if let contentType { headers.append(("Content-Type", contentType)) }
        return try await request("POST", path, headers: headers, body: bytes ?? Array((json ?? "").utf8))
    }
}

@Suite("Abuse limits: gate tokens")
struct GateGuessingTests {
    static func randomToken() -> String { "guess-" + UUID().uuidString.lowercased().prefix(18) }

    @Test("unknown gate tokens count per address: 20 guesses get 404, then every gate request from that address is 429 with Retry-After, and refused attempts write nothing")
    func guessingIsLimitedPerAddress() async throws {
        let server = try await TestServer.start(["--demo"])
        defer { server.discard() }
        do {
            let unit = try await Self.unitID(server)
            for attempt in 1...20 {
                // Half views, half visits: both count in the same per-address bucket.
                let response = attempt % 2 == 0
                    ? try await server.get("/v1/gates/\(Self.randomToken())")
                    : try await server.post("/v1/gates/\(Self.randomToken())/visits",
                                            json: #"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Guess"}"#)
                #expect(response.status == 404, "guess \(attempt): \(response.status) \(response.text)")
            }
            let refused = try await server.get("/v1/gates/\(Self.randomToken())")
            #expect(refused.status == 429)
            #expect(try refused.errorEnvelope().code == .rateLimited)
            let retryAfter = Int(refused.header("retry-after") ?? "") ?? 0
            #expect((1...600).contains(retryAfter), "Retry-After \(refused.header("retry-after") ?? "none")")
            // A real token from that address is refused too: a 200 among 429s would tell
            // the guesser it found one.
            #expect(try await server.get("/v1/gates/demo-gate").status == 429)
            let post = try await server.post("/v1/gates/demo-gate/visits",
                                             json: #"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Guess"}"#)
            #expect(post.status == 429)
            for _ in 0..<30 {
                #expect(try await server.get("/v1/gates/\(Self.randomToken())").status == 429)
            }
        } catch {
            _ = await server.stopKeepingFiles()
            throw error
        }
        #expect(await server.stopKeepingFiles(), "the server did not exit cleanly:\n\(server.log.suffix(2000))")
        // Exactly the 20 counted guesses: the 33 refused requests committed nothing.
        let rows = try await SQLiteProbe.rows(server.databasePath,
                                              "SELECT bucket, count, expires_at IS NOT NULL FROM rate_limits WHERE bucket LIKE 'gate-unknown:%'")
        #expect(rows == [["gate-unknown:127.0.0.1", "20", "1"]], "\(rows)")
    }

    @Test("admin create-gate makes a random 128-bit token by default and refuses a short chosen one")
    func randomGateTokens() async throws {
        let directory = try makeTemporaryDirectory("gates")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = "sqlite://" + directory.appendingPathComponent("p.db").path
        let company = try await runPortaria(["admin", "create-company", "--name", "Edifício Teste", "--database", url, "--json"])
        #expect(company.status == 0, "\(company.stderr)")
        var tokens: Set<String> = []
        for _ in 0..<2 {
            let gate = try await runPortaria(["admin", "create-gate", "--company", "Edifício Teste", "--database", url, "--json"])
            #expect(gate.status == 0, "\(gate.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(gate.stdout.utf8)) as? [String: Any]
            let token = try #require(object?["token"] as? String)
            // 16 random bytes in base64url: 22 characters of 64 symbols (128 bits).
            #expect(token.count >= 22 && token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }, "\(token)")
            tokens.insert(token)
        }
        #expect(tokens.count == 2)
        let short = try await runPortaria(["admin", "create-gate", "--company", "Edifício Teste", "--token", "portao-1", "--database", url])
        #expect(short.status != 0)
        #expect(short.stderr.contains("at least 22"), "\(short.stderr)")

        // The new gate works at once.
        let token = try #require(tokens.first)
        let server = try await TestServer.start(["--database", url])
        let info = try? await server.get("/v1/gates/\(token)")
        await server.stop()
        #expect(info?.status == 200, "\(info?.status ?? 0) \(info?.text ?? "")")
        #expect((try info?.json()["company"] as? [String: Any])?["name"] as? String == "Edifício Teste")
    }

    static func unitID(_ server: TestServer, gate: String = "demo-gate", label: String = "A-101") async throws -> String {
        let gate = try await server.get("/v1/gates/\(gate)")
        let units = try #require(try gate.json()["units"] as? [[String: Any]])
        return try #require(units.first { $0["label"] as? String == label }?["id"] as? String)
    }
}

/// One HTTP/1.1 request over IPv6 loopback (`::1`), for a server started with `--host ::1`.
func requestOverIPv6(port: UInt16, _ method: String, _ path: String, timeout: Duration = .seconds(10)) async throws -> Int {
    try await offload {
        let descriptor = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        _ = inet_pton(AF_INET6, "::1", &address.sin6_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        guard connected == 0 else { throw HarnessError("connect [::1]:\(port): \(String(cString: strerror(errno)))") }
        let head = Array("\(method) \(path) HTTP/1.1\r\nHost: [::1]:\(port)\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".utf8)
        guard head.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == head.count else {
            throw HarnessError("send: \(String(cString: strerror(errno)))")
        }
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        var chunk = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) >= 0 else { break }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            if count > 0 { received += chunk[..<count] }
        }
        let statusLine = String(decoding: received.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw HarnessError("no HTTP status from [::1]:\(port): \(String(decoding: received.prefix(120), as: UTF8.self))")
        }
        return status
    }
}

@Suite("Abuse limits: IPv6 buckets")
struct IPv6BucketTests {
    static func ring(_ server: TestServer, unit: String, from client: String) async throws -> Int {
        try await server.request("POST", "/v1/gates/demo-gate/visits",
                                 headers: [("Content-Type", "application/json"), ("X-Forwarded-For", client)],
                                 body: Array(#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"IPv6"}"#.utf8)).status
    }

    @Test("per-address limits count an IPv6 client by its /64 and an IPv4-mapped address as its IPv4 address")
    func prefixesShareABucket() async throws {
        try await TestServer.with(["--demo", "--gate-limit", "1", "--trusted-proxies", "127.0.0.1"]) { server in
            let unit = try await GateGuessingTests.unitID(server)
            #expect(try await Self.ring(server, unit: unit, from: "2001:db8:1:2::1") == 201)
            // Another address of the same /64 is the same client.
            #expect(try await Self.ring(server, unit: unit, from: "2001:db8:1:2:ffff:ffff:ffff:fffe") == 429)
            #expect(try await Self.ring(server, unit: unit, from: "2001:0db8:0001:0002::77") == 429)
            // The next /64 is someone else.
            #expect(try await Self.ring(server, unit: unit, from: "2001:db8:1:3::1") == 201)
            #expect(try await Self.ring(server, unit: unit, from: "::ffff:198.51.100.1") == 201)
            #expect(try await Self.ring(server, unit: unit, from: "198.51.100.1") == 429)
        }
    }

    @Test("a server listening on ::1 limits gate guessing by the client's /64")
    func listensOnIPv6Loopback() async throws {
        let server = try await IPv6Server.start()
        defer { server.discard() }
        do {
            for attempt in 1...20 {
                let status = try await requestOverIPv6(port: server.port, "GET", "/v1/gates/\(GateGuessingTests.randomToken())")
                #expect(status == 404, "guess \(attempt)")
            }
            #expect(try await requestOverIPv6(port: server.port, "GET", "/v1/gates/\(GateGuessingTests.randomToken())") == 429)
            #expect(try await requestOverIPv6(port: server.port, "GET", "/v1/gates/demo-gate") == 429)
        } catch {
            _ = await server.stopKeepingFiles()
            throw error
        }
        #expect(await server.stopKeepingFiles())
        let rows = try await SQLiteProbe.rows(server.databasePath, "SELECT bucket, count FROM rate_limits WHERE bucket LIKE 'gate-unknown:%'")
        #expect(rows == [["gate-unknown:::/64", "20"]], "\(rows)")
    }
}

/// `portaria serve --host ::1` (the harness's health check speaks IPv4, so this waits on
/// the log line and an IPv6 `/healthz` itself).
struct IPv6Server {
    let process: Process
    let directory: URL
    let port: UInt16
    var databasePath: String { directory.appendingPathComponent("portaria.db").path }

    static func start() async throws -> IPv6Server {
        let binary = try PortariaBinary.require()
        let directory = try makeTemporaryDirectory("ipv6")
        let logPath = directory.appendingPathComponent("server.log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--host", "::1", "--port", "0", "--demo",
                             "--database", "sqlite://" + directory.appendingPathComponent("portaria.db").path,
                             "--data-dir", directory.appendingPathComponent("data").path]
        process.environment = PortariaBinary.environment()
        process.currentDirectoryURL = directory
        process.standardError = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var port: UInt16?
        _ = await eventually(within: .seconds(20)) {
            port = TestServer.boundPort(in: (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
            return port != nil || !process.isRunning
        }
        let server = IPv6Server(process: process, directory: directory, port: port ?? 0)
        guard let port, await eventually(within: .seconds(10), { (try? await requestOverIPv6(port: port, "GET", "/healthz")) == 200 }) else {
            _ = await server.stopKeepingFiles()
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            server.discard()
            throw HarnessError("portaria serve --host ::1 did not come up:\n\(log.suffix(2000))")
        }
        return server
    }

    func stopKeepingFiles() async -> Bool {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        return await waitForExit(process, within: .seconds(15)) && process.terminationStatus == 0
    }

    func discard() { try? FileManager.default.removeItem(at: directory) }
}
