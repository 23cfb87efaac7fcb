#if canImport(Glibc)
import Foundation
import PortariaCore
import PortariaWebSocket

/// `portaria-bench realtime`: the product's own fan-out. The demo operator opens
/// N sockets to `/v1/realtime`; each measured visit is created at the public gate and timed
/// from just before its POST to the arrival of its `visit.created` frame on every socket.
/// With `--second-url`, the same again with the sockets on a second instance sharing the
/// PostgreSQL database (delivery through NOTIFY), and the difference between the two.
struct RealtimeBenchmark {
    let secondURL: String?
    let connections: Int
    let visits: Int
    let serverPID: Int?
    let secondServerPID: Int?
    let concurrency: Int
    let target: DemoTarget
    /// Local addresses the sockets connect from, in turn (`--source-addresses`).
    let sourceAddresses: [String]

    init(options: Options) throws {
        secondURL = options.url("second-url")
        connections = try options.count("connections", default: 5000)
        visits = try options.count("visits", default: 20)
        serverPID = try options.optionalInt("server-pid")
        secondServerPID = try options.optionalInt("second-server-pid")
        concurrency = try options.count("concurrency", default: 128)
        target = try DemoTarget(options)
        sourceAddresses = try Self.sourceAddresses(options.string("source-addresses"), connections: connections)
    }

    /// `--source-addresses N` spreads the sockets over 127.0.0.1 … 127.0.0.N (loopback
    /// only: all of 127/8 is on `lo`); a comma-separated list names them. By default, one
    /// loopback address per 20,000 sockets, since one address reaches one server port
    /// through at most the ephemeral port range (about 28,000 ports).
    static func sourceAddresses(_ option: String?, connections: Int) throws -> [String] {
        if let option, option.contains(".") || option.contains(":") {
            return option.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        }
        let count: Int
        if let option {
            guard let number = Int(option), (0...250).contains(number) else {
                throw BenchError("--source-addresses takes a count (1–250) or a list of addresses")
            }
            count = number
        } else {
            count = connections > 20_000 ? (connections + 19_999) / 20_000 : 0
        }
        return count == 0 ? [] : (1...count).map { "127.0.0.\($0)" }
    }

    struct Phase {
        var deliveries: [Double] = []
        var completions: [Double] = []
        var kibPerConnection: Double?
    }

    func run() async throws {
        let fileLimit = ResourceLimits.raiseOpenFileLimit()
        if fileLimit < connections + 64 { print("warning: open file limit \(fileLimit) is below \(connections) connections") }
        let http = BenchHTTP(baseURL: target.baseURL, connections: 4)
        let (token, companyID) = try await http.login(target.username, password: target.password, company: target.company)
        let unitID = try await http.unitID(gate: target.gate, label: target.unitLabel)
        let context = Context(http: http, token: token, companyID: companyID, unitID: unitID)

        print("realtime fan-out (\(target.label)): \(connections) sockets of '\(target.username)', \(visits) visits at \(target.gate) for \(target.unitLabel)")
        let single = try await phase(name: "single instance", socketsAt: target.baseURL, pid: serverPID, context)
        report(single, scenario: "realtime")
        guard let secondURL else { return }
        let cross = try await phase(name: "cross-instance (sockets on \(secondURL))", socketsAt: secondURL, pid: secondServerPID, context)
        report(cross, scenario: "realtime-cross")
        let a = Percentiles(single.deliveries), b = Percentiles(cross.deliveries)
        print(String(format: "  cross-instance minus single-instance, per delivery: p50 %+.2f ms  p95 %+.2f ms  p99 %+.2f ms",
                     b.at(0.5) - a.at(0.5), b.at(0.95) - a.at(0.95), b.at(0.99) - a.at(0.99)))
        printResult(scenario: "realtime-cross-extra", database: target.label,
                    String(format: "p50_ms=%.3f p95_ms=%.3f p99_ms=%.3f", b.at(0.5) - a.at(0.5), b.at(0.95) - a.at(0.95), b.at(0.99) - a.at(0.99)))
    }

    struct Context {
        let http: BenchHTTP
        let token: String
        let companyID: String
        let unitID: String
    }

    private func report(_ phase: Phase, scenario: String) {
        print("    per delivery       " + summary(phase.deliveries))
        print("    until all received " + summary(phase.completions))
        printResult(scenario: "\(scenario)-delivery", database: target.label, Percentiles(phase.deliveries).fields)
        printResult(scenario: "\(scenario)-all", database: target.label, Percentiles(phase.completions).fields)
        if let kib = phase.kibPerConnection {
            printResult(scenario: "\(scenario)-idle-memory", database: target.label,
                        String(format: "kib_per_connection=%.2f n=%d", kib, connections))
        }
    }

    private func phase(name: String, socketsAt socketBase: String, pid: Int?, _ context: Context) async throws -> Phase {
        print("  \(name):")
        let socketURL = socketBase.replacingOccurrences(of: "http://", with: "ws://") + "/v1/realtime"
        let loop = EventLoop(name: "bench-realtime", tickInterval: .seconds(1))
        defer { loop.stop() }
        let recorder = FrameRecorder()
        let handlers = WebSocketConnection.Handlers(
            onText: { connection, text in recorder.record(ObjectIdentifier(connection), text, at: MonotonicClock.now()) },
            onClose: { _, _, _ in recorder.noteClosed() })
        let residentBefore = pid.flatMap(residentKilobytes)
        // The sockets come from loopback addresses: only where the server is on loopback.
        let local = socketURL.hasPrefix("ws://127.")
        let (opened, _, _) = await openWebSockets(
            count: connections, url: socketURL,
            headers: [("Authorization", "Bearer \(context.token)"), ("X-Company-Id", context.companyID)],
            concurrency: concurrency, loop: loop, sourceAddresses: local ? sourceAddresses : [], handlers: handlers)
        guard !opened.isEmpty else { throw BenchError("no realtime socket could be opened") }
        defer { for connection in opened { connection.close() } }

        // Joining completes on the server's feed after each 101: warm-up visits until one
        // reaches every socket (a socket joined after an event does not get it live).
        var result = Phase()
        var reached = 0
        for attempt in 1...6 {
            let (_, _, sockets) = try await measureVisit(name: "Warm-up \(attempt)", context, recorder: recorder, expected: opened.count,
                                                          patience: .seconds(10))
            reached = sockets
            if reached >= opened.count { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        if reached < opened.count { print("  warning: the warm-up visit reached \(reached) of \(opened.count) sockets") }
        if recorder.closedCount > 0 { print("  warning: the server closed \(recorder.closedCount) sockets (connections per user limit?)") }
        try await Task.sleep(for: .seconds(1))
        if let pid, let before = residentBefore, let after = residentKilobytes(pid) {
            let kib = Double(after - before) / Double(opened.count)
            result.kibPerConnection = kib
            print(String(format: "    server RSS: %.1f MiB before, %.1f MiB with %d idle realtime sockets → %.1f KiB per idle connection",
                         Double(before) / 1024, Double(after) / 1024, opened.count, kib))
        }

        for index in 1...visits {
            let (deliveries, completion, sockets) = try await measureVisit(name: "Bench \(index)", context, recorder: recorder,
                                                                           expected: opened.count, patience: .seconds(15))
            if sockets < opened.count { print("    visit \(index): only \(sockets) of \(opened.count) sockets received it in 15 s") }
            result.deliveries += deliveries
            result.completions.append(completion)
        }
        print("    \(visits) visits to \(opened.count) sockets; closed by the server during the run: \(recorder.closedCount)")
        return result
    }

    /// Creates one visit and waits until its `visit.created` frame reached `expected`
    /// sockets (or `patience` ran out); resolves it afterwards so its ring steps do not
    /// fan out during later measurements. Returns per-socket latencies (ms), the time
    /// until the last socket received it, and how many sockets did.
    private func measureVisit(name: String, _ context: Context, recorder: FrameRecorder, expected: Int,
                              patience: Duration) async throws -> ([Double], Double, Int) {
        recorder.reset()
        let sentAt = MonotonicClock.now()
        let (status, visitID) = try await context.http.createVisit(gate: target.gate, unitID: context.unitID, name: name)
        guard status == 201, let visitID else { throw BenchError("gate POST answered \(status)") }
        let deadline = MonotonicClock.now() + UInt64(patience.components.seconds) * 1_000_000_000
        var arrivals: [ObjectIdentifier: UInt64] = [:]
        var parsed: [String: String?] = [:]
        while true {
            for (socket, text, at) in recorder.drain() {
                let id: String?
                if let known = parsed[text] {
                    id = known
                } else {
                    id = Self.createdVisitID(text)
                    parsed[text] = id
                }
                if id == visitID, arrivals[socket] == nil { arrivals[socket] = at }
            }
            if arrivals.count >= expected || MonotonicClock.now() > deadline { break }
            try await Task.sleep(for: .milliseconds(2))
        }
        _ = try? await context.http.send("POST", "/v1/visits/\(visitID)/resolve",
                                         headers: ["Authorization": "Bearer \(context.token)", "X-Company-Id": context.companyID,
                                                   "Idempotency-Key": UUID().uuidString],
                                         json: #"{"action":"leave_at_concierge"}"#)
        try await Task.sleep(for: .milliseconds(200))
        let latencies = arrivals.values.map { milliseconds(from: sentAt, to: $0) }
        return (latencies, latencies.max() ?? .nan, arrivals.count)
    }

    /// `data.visit_id` of a `visit.created` frame, nil for any other frame.
    static func createdVisitID(_ text: String) -> String? {
        guard let frame = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)),
              frame["type"]?.stringValue == "visit.created" else { return nil }
        return frame["data"]?["visit_id"]?.stringValue
    }
}

/// Frames as they arrive, stamped on the client loop thread (which only appends: parsing
/// there would delay the sockets behind it) and drained by the benchmark task.
final class FrameRecorder: Sendable {
    private struct State {
        var frames: [(ObjectIdentifier, String, UInt64)] = []
        var closed = 0
    }
    private let state = Locked(State())

    func record(_ socket: ObjectIdentifier, _ text: String, at now: UInt64) {
        state.withLock { $0.frames.append((socket, text, now)) }
    }

    func drain() -> [(ObjectIdentifier, String, UInt64)] {
        state.withLock { state in defer { state.frames.removeAll(keepingCapacity: true) }; return state.frames }
    }

    func reset() { _ = drain() }
    func noteClosed() { state.withLock { $0.closed += 1 } }
    var closedCount: Int { state.withLock { $0.closed } }
}
#endif
