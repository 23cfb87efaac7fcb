import Foundation
import PortariaCore
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--metrics-listen` against the real binary, checked by Prometheus's own tools: `promtool`
/// parses the scrape and the shipped alert rules, and a real Prometheus server scrapes it.
/// Both come from Debian's `prometheus` package (scripts/bootstrap); a missing one fails
/// the test rather than skipping it.
@Suite("Prometheus metrics")
struct MetricsEndToEndTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// An executable on PATH (or /usr/bin), required.
    static func tool(_ name: String) throws -> String {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin"]
        let found = directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
        return try #require(found, "\(name) is not installed (scripts/bootstrap installs Debian's prometheus package)")
    }

    /// Runs a tool to completion; (status, stdout + stderr).
    static func run(_ path: String, _ arguments: [String], stdin: String? = nil) async throws -> (Int32, String) {
        let directory = try makeTemporaryDirectory("tool")
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("output").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let stdin {
            let input = directory.appendingPathComponent("input").path
            try stdin.write(toFile: input, atomically: true, encoding: .utf8)
            process.standardInput = FileHandle(forReadingAtPath: input)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        let handle = FileHandle(forWritingAtPath: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        guard await waitForExit(process, within: .seconds(60)) else {
            kill(process.processIdentifier, SIGKILL)
            throw HarnessError("\(path) \(arguments) did not finish")
        }
        return (process.terminationStatus, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    /// The metrics listener's port, from its `metrics listening` log line.
    static func metricsPort(_ server: TestServer) async throws -> UInt16 {
        var port: UInt16?
        _ = await eventually(within: .seconds(20)) {
            for line in server.log.split(separator: "\n") where line.contains(#""msg":"metrics listening""#) {
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                port = (object?["port"] as? NSNumber).map { UInt16($0.intValue) }
            }
            return port != nil
        }
        return try #require(port, "no metrics listening line:\n\(server.log.suffix(3000))")
    }

    static func scrape(port: UInt16) async throws -> RawResponse {
        let connection = try await offload { try RawConnection(port: port) }
        defer { connection.close() }
        return try await offload {
            try connection.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
            return try #require(try connection.readResponse(timeout: .seconds(15)))
        }
    }

    /// The value of the one sample line that starts with `series` (name and labels, exactly).
    static func sample(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last!) }
    }

    @Test("the metrics listener answers promtool-valid text that counts a gate POST, its ring push and an open realtime socket")
    func scrapeIsValidAndCounts() async throws {
        let promtool = try Self.tool("promtool")
        try await TestServer.with(["--demo", "--metrics-listen", "127.0.0.1:0"]) { server in
            let port = try await Self.metricsPort(server)
            let maria = try await RealtimeTests.login(server, "maria")
            let device = try await server.post("/v1/devices", json: #"{"installation_id":"metrics-phone","platform":"android","push_token":"metrics-push"}"#,
                                               bearer: maria.token, company: maria.companyID)
            try #require(device.status == 201, "\(device.status) \(device.text)")
            let socket = try await RealtimeTests.subscribe(server, maria)
            _ = socket
            let (visit, _) = try await RealtimeTests.ring(server)
            // The ring is handed to the (log-only) FCM sender after the gate POST's commit.
            let rang = await eventually(within: .seconds(20)) { server.log.contains("push NOT sent") && server.log.contains(visit) }
            #expect(rang)
            var text = ""
            // The push's outcome is recorded after the send returns: scrape until it is in.
            _ = try await eventually(within: .seconds(20)) {
                text = try await Self.scrape(port: port).text
                return (Self.sample(text, #"portaria_push_sends_total{provider="log",outcome="accepted",reason=""}"#) ?? 0) >= 1
            }
            let response = try await Self.scrape(port: port)
            #expect(response.status == 200)
            #expect(response.header("content-type") == "text/plain; version=0.0.4; charset=utf-8")
            text = response.text
            let (status, output) = try await Self.run(promtool, ["check", "metrics"], stdin: text)
            #expect(status == 0, "promtool check metrics:\n\(output)\n--- scrape ---\n\(text)")
            #expect(Self.sample(text, #"portaria_http_requests_total{method="POST",route="/v1/gates/{gate_token}/visits",status="201"}"#) == 1)
            #expect(Self.sample(text, #"portaria_http_request_duration_seconds_count{method="POST",route="/v1/gates/{gate_token}/visits"}"#) == 1)
            #expect(Self.sample(text, #"portaria_http_requests_total{method="POST",route="/v1/auth/login",status="200"}"#) == 1)
            #expect(Self.sample(text, #"portaria_push_sends_total{provider="log",outcome="accepted",reason=""}"#) == 1)
            #expect(Self.sample(text, "portaria_ring_push_seconds_count") == 1)
            #expect(Self.sample(text, "portaria_realtime_sockets") == 1)
            #expect(Self.sample(text, "portaria_database_up") == 1)
            #expect(Self.sample(text, "portaria_push_queue_depth") != nil)
            // Raw paths never become labels: the visit id is nowhere in the scrape.
            #expect(!text.contains(visit))
        }
    }

    @Test("the public port has no /metrics, and --metrics-listen on the public address is refused at start")
    func neverOnThePublicPort() async throws {
        try await TestServer.with(["--metrics-listen", "127.0.0.1:0"]) { server in
            let status = try await server.request("GET", "/metrics").status
            #expect(status == 404)
        }
        let refused = try await runPortaria(["serve", "--host", "127.0.0.1", "--port", "18437",
                                             "--metrics-listen", "127.0.0.1:18437"])
        #expect(refused.status == 64, "\(refused.status) \(refused.stderr)")
        #expect(refused.stderr.contains("--metrics-listen"))
        let wildcard = try await runPortaria(["serve", "--host", "0.0.0.0", "--port", "18437"],
                                             environment: ["PORTARIA_METRICS_LISTEN": "127.0.0.1:18437"])
        #expect(wildcard.status == 64, "\(wildcard.status) \(wildcard.stderr)")
    }

    @Test("docs/prometheus/alerts.yml passes promtool check rules and names only metrics the server exports")
    func alertRules() async throws {
        let promtool = try Self.tool("promtool")
        let rules = Self.repositoryRoot.appendingPathComponent("docs/prometheus/alerts.yml").path
        let (status, output) = try await Self.run(promtool, ["check", "rules", rules])
        #expect(status == 0, "promtool check rules:\n\(output)")
        let scrapeConfig = Self.repositoryRoot.appendingPathComponent("docs/prometheus/prometheus.yml").path
        let (configStatus, configOutput) = try await Self.run(promtool, ["check", "config", "--syntax-only", scrapeConfig])
        #expect(configStatus == 0, "promtool check config:\n\(configOutput)")
        let text = try String(contentsOfFile: rules, encoding: .utf8)
        let named = Set(text.matches(of: /portaria_[a-z_]+/).map { String($0.output) })
        #expect(!named.isEmpty)
        try await TestServer.with(["--metrics-listen", "127.0.0.1:0"]) { server in
            let scraped = try await Self.scrape(port: try await Self.metricsPort(server)).text
            let families = Set(scraped.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) })
            for name in named {
                let family = ["_bucket", "_sum", "_count"].reduce(name) { name, suffix in
                    name.hasSuffix(suffix) ? String(name.dropLast(suffix.count)) : name
                }
                #expect(families.contains(family), "alerts.yml names \(name), which the server does not export")
            }
        }
    }

    @Test("a real Prometheus scrapes the metrics listener and its query API shows the gate POST counter move")
    func realPrometheus() async throws {
        let prometheus = try Self.tool("prometheus")
        try await TestServer.with(["--demo", "--metrics-listen", "127.0.0.1:0"]) { server in
            let target = try await Self.metricsPort(server)
            let directory = try makeTemporaryDirectory("prometheus")
            defer { try? FileManager.default.removeItem(at: directory) }
            let config = directory.appendingPathComponent("prometheus.yml")
            try """
                global:
                  scrape_interval: 1s
                scrape_configs:
                  - job_name: portaria
                    static_configs:
                      - targets: ['127.0.0.1:\(target)']
                """.write(to: config, atomically: true, encoding: .utf8)
            let webPort = try LoopbackPort(listening: false).port
            let process = Process()
            process.executableURL = URL(fileURLWithPath: prometheus)
            process.arguments = ["--config.file=\(config.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
                                 "--web.listen-address=127.0.0.1:\(webPort)"]
            let log = directory.appendingPathComponent("prometheus.log").path
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            process.standardOutput = FileHandle(forWritingAtPath: log)
            process.standardError = FileHandle(forWritingAtPath: log)
            try process.run()
            defer {
                // Waited for, not polled: Foundation keeps a process it has not seen exit
                // (LeakSanitizer reports it), and a SIGKILLed one exits at once.
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            let api = URL(string: "http://127.0.0.1:\(webPort)/api/v1/query")!
            func query(_ expression: String) async -> Double? {
                var components = URLComponents(url: api, resolvingAgainstBaseURL: false)!
                components.queryItems = [URLQueryItem(name: "query", value: expression)]
                guard let exchange = try? await HTTP.send("GET", components.url!), exchange.status == 200,
                      case .array(let results)? = exchange.document["data"]?["result"], let first = results.first,
                      case .array(let pair)? = first["value"], pair.count == 2, case .string(let value) = pair[1] else { return nil }
                return Double(value)
            }
            let gatePosts = #"sum(portaria_http_requests_total{route="/v1/gates/{gate_token}/visits",status="201"}) or vector(0)"#
            let scraping = await eventually(within: .seconds(60), every: .milliseconds(250)) {
                await query(#"up{job="portaria"}"#) == 1
            }
            try #require(scraping, "Prometheus never scraped the target:\n\((try? String(contentsOfFile: log, encoding: .utf8))?.suffix(3000) ?? "")")
            let before = await query(gatePosts)
            #expect(before == 0)
            _ = try await RealtimeTests.ring(server)
            let moved = await eventually(within: .seconds(60), every: .milliseconds(250)) { await query(gatePosts) == 1 }
            #expect(moved, "the gate POST counter never reached 1 in Prometheus")
        }
    }
}
