#if canImport(Glibc)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PortariaCore
import PortariaWebSocket

/// `portaria-bench ws`: memory per idle WebSocket on the server and broadcast latency
/// to every socket. Figures only; the machine running it decides what is good.
struct WebSocketBenchmark {
    let baseURL: String
    let connections: Int
    let serverPID: Int?
    let broadcasts: Int
    let payloadBytes: Int
    let concurrency: Int
    /// The server's own fan-out time per broadcast, as the bench route reports it.
    private let serverFanout = Locked<[Double]>([])

    init(options: Options) throws {
        baseURL = try options.serverURL()
        connections = try options.int("connections", default: 10_000)
        serverPID = try options.optionalInt("server-pid")
        broadcasts = try options.int("broadcasts", default: 20)
        payloadBytes = try options.int("payload-bytes", default: 64)
        concurrency = try options.count("concurrency", default: 128)
    }

    func run() async throws {
        let fileLimit = ResourceLimits.raiseOpenFileLimit()
        if fileLimit < connections + 64 {
            print("warning: open file limit \(fileLimit) is below \(connections) connections")
        }
        let socketURL = baseURL.replacingOccurrences(of: "http://", with: "ws://") + "/v1/bench/ws"
        // The clients' own loop: one thread for all N sockets, like the server.
        let loop = EventLoop(name: "bench-clients", tickInterval: .seconds(1))
        let recorder = DeliveryRecorder()
        let handlers = WebSocketConnection.Handlers(
            onText: { _, text in recorder.record(text, at: MonotonicClock.now()) },
            onClose: { _, _, _ in recorder.noteClosed() })

        let residentBefore = serverPID.flatMap(residentKilobytes)
        let ownBefore = residentKilobytes(Int(getpid()))
        print("websocket fan-out: \(connections) idle connections to \(socketURL)")

        let (opened, _, _) = await openWebSockets(count: connections, url: socketURL, concurrency: concurrency,
                                                  loop: loop, handlers: handlers)
        guard !opened.isEmpty else { throw BenchError("no connection could be opened") }

        // A warm-up broadcast proves every socket has joined the server's hub.
        let expected = try await waitForAll(expected: opened.count, recorder: recorder)
        try await Task.sleep(for: .seconds(1))
        if let pid = serverPID, let before = residentBefore, let after = residentKilobytes(pid) {
            let perConnection = Double(after - before) * 1024 / Double(max(expected, 1))
            print(String(format: "  server RSS: %.1f MiB before, %.1f MiB with %d idle sockets → %.1f KiB per idle connection",
                         Double(before) / 1024, Double(after) / 1024, expected, perConnection / 1024))
            printResult(scenario: "ws-idle-memory", database: "-", String(format: "kib_per_connection=%.2f n=%d", perConnection / 1024, expected))
        } else {
            print("  server RSS: not measured (pass --server-pid PID)")
        }
        if let before = ownBefore, let after = residentKilobytes(Int(getpid())) {
            print(String(format: "  client RSS: %.1f KiB per connection (this process, wslay client mode)",
                         Double(after - before) / Double(max(opened.count, 1))))
        }

        // The measured broadcasts.
        var completions: [Double] = []
        let padding = String(repeating: "x", count: payloadBytes)
        for sequence in 1...max(1, broadcasts) {
            let sentAt = MonotonicClock.now()
            let reached = try await broadcast("seq=\(sequence);t=\(sentAt);\(padding)")
            let deadline = MonotonicClock.now() + 15_000_000_000
            while recorder.count(sequence) < reached && MonotonicClock.now() < deadline {
                try await Task.sleep(for: .milliseconds(2))
            }
            let received = recorder.count(sequence)
            if received < reached { print("  broadcast \(sequence): only \(received) of \(reached) arrived in 15 s") }
            completions.append(Double(recorder.lastArrival(sequence) - sentAt) / 1e6)
            try await Task.sleep(for: .milliseconds(100))
        }
        let deliveries = recorder.latencies()
        let fanouts = Array(serverFanout.current.suffix(completions.count))
        print("  \(broadcasts) broadcasts of \(payloadBytes + 30) bytes to \(expected) sockets (client-side clock, includes the HTTP POST):")
        print("    per delivery      " + summary(deliveries))
        print("    until all reached " + summary(completions))
        print("    server fan-out    " + summary(fanouts))
        print("  connections closed by the server during the run: \(recorder.closedCount)")
        printResult(scenario: "ws-broadcast-delivery", database: "-", Percentiles(deliveries).fields)
        printResult(scenario: "ws-broadcast-all", database: "-", Percentiles(completions).fields)

        for connection in opened { connection.close() }
        try await Task.sleep(for: .milliseconds(500))
    }

    /// Broadcasts until one reaches as many sockets as the server has (joining completes
    /// on the server's loop shortly after each 101).
    private func waitForAll(expected: Int, recorder: DeliveryRecorder) async throws -> Int {
        let deadline = MonotonicClock.now() + 30_000_000_000
        var reached = 0
        while MonotonicClock.now() < deadline {
            reached = try await broadcast("seq=0;t=\(MonotonicClock.now());warm-up")
            if reached >= expected { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        if reached < expected { print("  warning: the server counts \(reached) bench sockets, expected \(expected)") }
        let until = MonotonicClock.now() + 15_000_000_000
        while recorder.count(0) < reached && MonotonicClock.now() < until {
            try await Task.sleep(for: .milliseconds(5))
        }
        return reached
    }

    /// `POST /v1/bench/broadcast`; returns the number of sockets the server sent to.
    private func broadcast(_ payload: String) async throws -> Int {
        struct Body: Codable { var payload: String }
        struct Answer: Codable { var connections: Int; var fanout_ms: Double? }
        var request = URLRequest(url: URL(string: baseURL + "/v1/bench/broadcast")!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(Body(payload: payload))
        let (data, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw BenchError("broadcast answered \((response as? HTTPURLResponse)?.statusCode ?? 0): \(String(decoding: data, as: UTF8.self))")
        }
        let answer = try JSONDecoder().decode(Answer.self, from: data)
        if let fanout = answer.fanout_ms { serverFanout.withLock { $0.append(fanout) } }
        return answer.connections
    }
}

/// Arrival times of broadcast messages, written from the client loop thread and read by
/// the benchmark task.
final class DeliveryRecorder: Sendable {
    private struct State {
        var counts: [Int: Int] = [:]
        var last: [Int: UInt64] = [:]
        var latencies: [Double] = []
        var closed = 0
    }
    private let state = Locked(State())

    /// Parses `seq=K;t=NANOS;…` and records the one-way latency.
    func record(_ text: String, at now: UInt64) {
        let fields = text.split(separator: ";", maxSplits: 2)
        guard fields.count >= 2, let sequence = Int(fields[0].dropFirst(4)),
              let sentAt = UInt64(fields[1].dropFirst(2)) else { return }
        state.withLock { state in
            state.counts[sequence, default: 0] += 1
            state.last[sequence] = max(state.last[sequence] ?? 0, now)
            if sequence > 0 { state.latencies.append(Double(now &- sentAt) / 1e6) }
        }
    }

    func noteClosed() { state.withLock { $0.closed += 1 } }
    func count(_ sequence: Int) -> Int { state.withLock { $0.counts[sequence] ?? 0 } }
    func lastArrival(_ sequence: Int) -> UInt64 { state.withLock { $0.last[sequence] ?? 0 } }
    func latencies() -> [Double] { state.withLock { $0.latencies } }
    var closedCount: Int { state.withLock { $0.closed } }
}
#endif
