import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 nobody listens on right now (the kernel picked it).
func unusedPort() throws -> Int {
    let probe = try LoopbackPort(listening: false)
    return Int(probe.port)
}

/// `nghttpd` (Debian's nghttp2-server) serving `directory` over TLS with the test PKI.
final class NGHTTPD: @unchecked Sendable {
    let process: Process
    let port: Int

    init(pki: TestPKI, directory: String, arguments: [String]) async throws {
        var started: (Process, Int)?
        for _ in 0..<5 where started == nil {
            let port = try unusedPort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/nghttpd")
            process.arguments = arguments + ["-d", directory, String(port), pki.serverKey, pki.serverCert]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Listening once a TCP connect succeeds; exited means the port was taken.
            let up = await eventually(within: .seconds(20)) {
                !process.isRunning || Self.accepts(port)
            }
            if up && process.isRunning { started = (process, port) } else { process.terminate(); reap(process) }
        }
        guard let started else { throw FixtureError("nghttpd did not start") }
        (process, port) = started
    }

    static func accepts(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for _ in 0..<200 where process.isRunning { usleep(10_000) }
        reap(process)
    }
}

/// The scripted HTTP/2 server (scripts/testservers/h2_scenarios.py) and what it recorded.
struct ScenarioServer {
    let server: FakeServer

    init(pki: TestPKI, mode: String, count: Int = 10, port: Int = 0) throws {
        server = try FakeServer("h2_scenarios", arguments: ["--cert", pki.serverCert, "--key", pki.serverKey, "--mode", mode,
                                                            "--count", String(count), "--port", String(port)],
                                directory: pki.directory)
    }

    func events(_ kind: String) -> [JSONValue] { server.records().filter { $0["event"]?.stringValue == kind } }
}

func request(_ url: String, id: String = UUID().uuidString, body: [UInt8] = Array("{}".utf8), timeout: TimeInterval = 30) -> OutboundRequest {
    OutboundRequest(method: "POST", url: url, headers: [("x-request-id", id), ("content-type", "application/json")],
                    body: body, timeout: timeout)
}

/// The HTTP/2 client on libnghttp2 against real servers: nghttpd for the stream limit and
/// flow control, a scripted h2 server for GOAWAY, a peer that dies, and PING.
@Suite("HTTP/2 client: one connection per origin, stream limit, GOAWAY, dead peers", .serialized)
struct HTTP2ClientTests {
    static func sink(_ pki: TestPKI, _ arguments: [String]) async throws -> (NGHTTPD, String) {
        let directory = pki.directory + "/htdocs-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/3/device", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: directory + "/3/device/token"))
        let server = try await NGHTTPD(pki: pki, directory: directory, arguments: arguments)
        return (server, "https://127.0.0.1:\(server.port)/3/device/token")
    }

    static func sendAll(_ client: HTTP2Client, _ requests: [OutboundRequest]) async -> [Result<OutboundResponse, any Error>] {
        await withTaskGroup(of: Result<OutboundResponse, any Error>.self) { group in
            for item in requests {
                group.addTask {
                    do { return .success(try await client.send(item)) } catch { return .failure(error) }
                }
            }
            var results: [Result<OutboundResponse, any Error>] = []
            for await result in group { results.append(result) }
            return results
        }
    }

    @Test("100 requests to an nghttpd announcing 10 streams: all answered over one connection, never more than 10 in flight")
    func streamLimitQueues() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let (server, url) = try await Self.sink(pki, ["-m", "10"])
        defer { server.stop() }
        let client = try HTTP2Client(caFile: pki.caFile, maxConcurrentStreams: 100)
        defer { client.shutdown() }
        let results = await Self.sendAll(client, (0..<100).map { _ in request(url) })
        let statuses: [Int] = results.compactMap { try? $0.get().status }
        #expect(statuses == Array(repeating: 200, count: 100))
        #expect(client.connectionsOpened.current == 1, "load queues, it does not open connections")
        #expect(client.peakStreams.current <= 10, "the peer's SETTINGS_MAX_CONCURRENT_STREAMS")
        #expect(client.peakStreams.current > 1, "requests were multiplexed")
    }

    @Test("a body far larger than the peer's stream window is sent whole as the peer opens the window")
    func flowControl() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        // 2^10 - 1 bytes of stream window: a 200 KiB body needs ~200 WINDOW_UPDATEs.
        let (server, url) = try await Self.sink(pki, ["-w", "10", "-W", "10"])
        defer { server.stop() }
        let client = try HTTP2Client(caFile: pki.caFile)
        defer { client.shutdown() }
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 200 * 1024)
        let results = await Self.sendAll(client, (0..<4).map { _ in request(url, body: body) })
        let statuses: [Int] = results.compactMap { try? $0.get().status }
        #expect(statuses == [200, 200, 200, 200], "\(results)")
        let bodies: [[UInt8]] = results.compactMap { try? $0.get().body }
        #expect(bodies == Array(repeating: Array("{}".utf8), count: 4))
    }

    @Test("GOAWAY with requests in flight: those at or below its last stream id are answered once, the rest go again on a new connection")
    func goawayRetriesOnlyUnprocessed() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let scenario = try ScenarioServer(pki: pki, mode: "goaway-at", count: 10)
        defer { scenario.server.stop() }
        let client = try HTTP2Client(caFile: pki.caFile)
        defer { client.shutdown() }
        let ids = (0..<10).map { "request-\($0)" }
        let results = await Self.sendAll(client, ids.map { request(scenario.server.url + "/push", id: $0) })
        let bodies: [String] = results.compactMap { result in (try? result.get()).map { String(decoding: $0.body, as: UTF8.self) } }
        #expect(Set(bodies) == Set(ids), "every request answered: \(results)")
        let answered = scenario.events("answered").compactMap { $0["id"]?.stringValue }
        #expect(answered.count == 10 && Set(answered) == Set(ids), "each request processed exactly once: \(answered)")
        let first = scenario.events("answered").filter { $0["connection"]?.intValue == 1 }
        #expect(first.count == 5, "the first connection answered the streams up to last_stream_id")
        #expect(client.connectionsOpened.current == 2)
    }

    @Test("a peer killed with requests in flight: those fail (never resent), and the next request opens a new connection that works")
    func deadPeer() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let holding = try ScenarioServer(pki: pki, mode: "hold")
        let port = holding.server.port
        let client = try HTTP2Client(caFile: pki.caFile)
        defer { client.shutdown() }
        let url = holding.server.url + "/push"
        async let inFlight = Self.sendAll(client, (0..<5).map { request(url, id: "held-\($0)") })
        #expect(await eventually(within: .seconds(30)) { holding.events("received").count == 5 })
        kill(holding.server.process.processIdentifier, SIGKILL)
        let failed = await inFlight
        let transportErrors = failed.filter { result in
            guard case .failure(let error) = result else { return false }
            return error is OutboundHTTPError
        }
        #expect(transportErrors.count == 5, "\(failed)")
        holding.server.stop()

        let answering = try ScenarioServer(pki: pki, mode: "answer", port: port)
        defer { answering.server.stop() }
        let response = try await client.send(request(url, id: "after"))
        #expect(response.status == 200 && response.body == Array("after".utf8))
        #expect(answering.events("received").map { $0["id"]?.stringValue } == ["after"], "the held requests were not sent again")
        #expect(client.connectionsOpened.current == 2)
    }

    @Test("an idle connection is checked with PING and stays the one connection")
    func pingOnIdle() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let scenario = try ScenarioServer(pki: pki, mode: "answer")
        defer { scenario.server.stop() }
        let client = try HTTP2Client(caFile: pki.caFile, pingInterval: .milliseconds(200))
        defer { client.shutdown() }
        let url = scenario.server.url + "/push"
        #expect(try await client.send(request(url)).status == 200)
        #expect(await eventually(within: .seconds(30)) { scenario.events("ping").count >= 2 })
        #expect(try await client.send(request(url)).status == 200)
        #expect(client.connectionsOpened.current == 1)
    }

    @Test("a PING the peer never answers closes the connection, and the next request goes on a new one and is answered")
    func unansweredPing() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        // The first connection answers one request, then reads and drops everything.
        let scenario = try ScenarioServer(pki: pki, mode: "mute")
        defer { scenario.server.stop() }
        let client = try HTTP2Client(caFile: pki.caFile, pingInterval: .milliseconds(200), pingTimeout: .milliseconds(500))
        defer { client.shutdown() }
        let url = scenario.server.url + "/push"
        #expect(try await client.send(request(url)).status == 200)
        // The idle connection's PING reached the peer and went unanswered; the client closed it.
        #expect(await eventually(within: .seconds(30)) { !scenario.events("ignored").isEmpty })
        #expect(await eventually(within: .seconds(30)) { scenario.events("closed").contains { $0["connection"]?.intValue == 1 } })
        #expect(try await client.send(request(url)).status == 200)
        #expect(client.connectionsOpened.current == 2)
        #expect(scenario.events("answered").map { $0["connection"]?.intValue } == [1, 2])
    }

    @Test("a request whose answer does not come before its timeout fails as a transport error")
    func timeoutInFlight() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let scenario = try ScenarioServer(pki: pki, mode: "hold")
        defer { scenario.server.stop() }
        let client = try HTTP2Client(caFile: pki.caFile)
        defer { client.shutdown() }
        await #expect(throws: OutboundHTTPError.self) { try await client.send(request(scenario.server.url + "/push", timeout: 0.3)) }
    }

    @Test("the peer's certificate must name the host: 127.0.0.2 is refused, and no CA file means the system CAs only")
    func peerVerification() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let (server, url) = try await Self.sink(pki, [])
        defer { server.stop() }
        let client = try HTTP2Client(caFile: pki.caFile)
        defer { client.shutdown() }
        #expect(try await client.send(request(url)).status == 200)
        await #expect(throws: OutboundHTTPError.self) {
            try await client.send(request("https://127.0.0.2:\(server.port)/3/device/token"))
        }
        #expect(try await client.send(request("https://localhost:\(server.port)/3/device/token")).status == 200)
        let systemOnly = try HTTP2Client()
        defer { systemOnly.shutdown() }
        await #expect(throws: OutboundHTTPError.self) { try await systemOnly.send(request(url)) }
    }

    @Test("URLs are split into origin and path; anything but https is refused")
    func urlSplitting() {
        let (origin, path) = Origin.split("https://api.push.apple.com/3/device/abc?x=1")!
        #expect(origin == Origin(host: "api.push.apple.com", port: 443, authority: "api.push.apple.com"))
        #expect(path == "/3/device/abc?x=1")
        let (local, root) = Origin.split("https://127.0.0.1:8443")!
        #expect(local.port == 8443 && local.host == "127.0.0.1" && root == "/")
        let (v6, _) = Origin.split("https://[::1]:9000/p")!
        #expect(v6.host == "::1" && v6.port == 9000 && v6.authority == "[::1]:9000")
        #expect(Origin.split("http://example.com/") == nil)
        #expect(Origin.split("https://example.com:99999/") == nil)
        #expect(Origin.split("https://user@example.com/") == nil)
    }
}
