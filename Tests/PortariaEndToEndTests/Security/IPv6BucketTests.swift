import Foundation
@testable import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

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

extension SecuritySuites {
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
