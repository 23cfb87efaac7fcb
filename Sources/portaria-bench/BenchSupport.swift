import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PortariaCore
import PortariaWebSocket

// Pieces every benchmark shares: resident memory, percentile summaries, a closed-loop
// HTTP load driver and the parseable RESULT lines bench/run turns into its summary.

/// VmRSS of a process in KiB, from `/proc/PID/status`.
func residentKilobytes(_ pid: Int) -> Int? { processStatus(pid, "VmRSS") }

/// The number a `/proc/PID/status` line starts with (`VmRSS:\t  1234 kB` → 1234,
/// `Threads:\t12` → 12).
func processStatus(_ pid: Int, _ field: String) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return nil }
    return line.dropFirst(field.count + 1).split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) }
}

/// Milliseconds between two `MonotonicClock` readings.
func milliseconds(from start: UInt64, to end: UInt64) -> Double { Double(end &- start) / 1e6 }

/// Nearest-rank percentiles of a sample of milliseconds.
struct Percentiles: Sendable {
    let sorted: [Double]

    init(_ values: [Double]) { sorted = values.sorted() }

    var count: Int { sorted.count }
    var max: Double { sorted.last ?? .nan }

    func at(_ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        return sorted[Swift.max(0, Swift.min(sorted.count - 1, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))]
    }

    /// `p50 … p95 … p99 … max … (n=…)`, the line every benchmark prints.
    var line: String {
        guard !sorted.isEmpty else { return "no samples" }
        return String(format: "p50 %.2f ms  p95 %.2f ms  p99 %.2f ms  max %.2f ms  (n=%d)",
                      at(0.50), at(0.95), at(0.99), max, count)
    }

    /// `p50_ms=… p90_ms=… p95_ms=… p99_ms=… p999_ms=… max_ms=… n=…` for RESULT lines.
    var fields: String {
        String(format: "p50_ms=%.3f p90_ms=%.3f p95_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f n=%d",
               at(0.50), at(0.90), at(0.95), at(0.99), at(0.999), max, count)
    }
}

func summary(_ milliseconds: [Double]) -> String { Percentiles(milliseconds).line }

/// One line bench/run collects into its summary table (nothing else starts with RESULT).
func printResult(scenario: String, database: String, _ fields: String) {
    print("RESULT scenario=\(scenario) database=\(database) \(fields)")
}

/// A small HTTP/1.1 client over URLSession with as many connections per host as the load
/// needs (URLSession's default of 6 would queue a 50-client load inside the client).
struct BenchHTTP: Sendable {
    struct Reply: Sendable {
        var status: Int
        var body: Data
        var json: JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: body) }
    }

    let baseURL: String
    let session: URLSession

    init(baseURL: String, connections: Int) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = max(1, connections)
        configuration.timeoutIntervalForRequest = 60
        session = URLSession(configuration: configuration)
    }

    func send(_ method: String, _ path: String, headers: [String: String] = [:], json: String? = nil) async throws -> Reply {
        guard let url = URL(string: baseURL + path) else { throw BenchError("bad URL \(baseURL + path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(json.utf8)
        }
        let (data, response) = try await session.data(for: request)
        return Reply(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: data)
    }

    /// Signs in and returns the bearer token and the id of the company named `company`.
    func login(_ username: String, password: String, company: String) async throws -> (token: String, companyID: String) {
        let reply = try await send("POST", "/v1/auth/login",
                                   json: JSONValue.object(["username": .string(username), "password": .string(password)]).jsonText)
        guard reply.status == 200, let json = reply.json, let token = json["jwt_token"]?.stringValue,
              case .array(let companies)? = json["companies"],
              let id = companies.first(where: { $0["name"]?.stringValue == company })?["id"]?.stringValue else {
            throw BenchError("login as \(username) answered \(reply.status): \(String(decoding: reply.body.prefix(300), as: UTF8.self))")
        }
        return (token, id)
    }

    /// The id of the unit labelled `label` at the public gate `gate`.
    func unitID(gate: String, label: String) async throws -> String {
        let reply = try await send("GET", "/v1/gates/\(gate)")
        guard reply.status == 200, case .array(let units)? = reply.json?["units"],
              let id = units.first(where: { $0["label"]?.stringValue == label })?["id"]?.stringValue else {
            throw BenchError("GET /v1/gates/\(gate) answered \(reply.status) without unit \(label)")
        }
        return id
    }

    /// `POST /v1/gates/{gate}/visits` for a delivery; the new visit's id on 201.
    func createVisit(gate: String, unitID: String, name: String) async throws -> (status: Int, visitID: String?) {
        let body = JSONValue.object(["unit_id": .string(unitID), "kind": .string("delivery"),
                                     "visitor_name": .string(name), "carrier": .string("iFood")]).jsonText
        let reply = try await send("POST", "/v1/gates/\(gate)/visits", json: body)
        return (reply.status, reply.status == 201 ? reply.json?["visit"]?["id"]?.stringValue : nil)
    }
}

/// What a closed-loop run measured.
struct LoadResult: Sendable {
    var latencies: [Double]
    var seconds: Double
    var statuses: [Int: Int]
    var throughput: Double { Double(latencies.count) / max(seconds, 1e-9) }
    var percentiles: Percentiles { Percentiles(latencies) }

    func errors(expecting status: Int) -> Int { statuses.filter { $0.key != status }.values.reduce(0, +) }

    var statusText: String {
        statuses.sorted { $0.key < $1.key }.map { "\($0.key == -1 ? "error" : String($0.key))×\($0.value)" }.joined(separator: " ")
    }
}

/// `clients` workers, each sending its next request as soon as the previous one answered,
/// until `count` requests were sent. Latency is measured around each request; -1 counts
/// transport errors.
func closedLoop(clients: Int, count: Int, _ request: @escaping @Sendable (Int) async throws -> Int) async -> LoadResult {
    let next = Locked(0)
    let start = MonotonicClock.now()
    let samples = await withTaskGroup(of: [(Double, Int)].self) { group in
        for _ in 0..<max(1, clients) {
            group.addTask {
                var mine: [(Double, Int)] = []
                while true {
                    let index = next.withLock { value -> Int in defer { value += 1 }; return value }
                    guard index < count else { return mine }
                    let began = MonotonicClock.now()
                    let status = (try? await request(index)) ?? -1
                    mine.append((milliseconds(from: began, to: MonotonicClock.now()), status))
                }
            }
        }
        var all: [(Double, Int)] = []
        for await part in group { all += part }
        return all
    }
    var statuses: [Int: Int] = [:]
    for (_, status) in samples { statuses[status, default: 0] += 1 }
    return LoadResult(latencies: samples.map(\.0), seconds: milliseconds(from: start, to: MonotonicClock.now()) / 1000,
                      statuses: statuses)
}

#if canImport(Glibc)
/// Opens `count` WebSockets with `concurrency` handshakes in flight, all on `loop`.
/// `sourceAddresses`, when given, are used in turn as the sockets' local addresses (more
/// sockets to one server port than one address has ephemeral ports).
func openWebSockets(count: Int, url: String, headers: [(String, String)] = [], concurrency: Int, loop: EventLoop,
                    sourceAddresses: [String] = [],
                    handlers: WebSocketConnection.Handlers) async -> (opened: [WebSocketConnection], failures: [String: Int], seconds: Double) {
    let start = MonotonicClock.now()
    var opened: [WebSocketConnection] = []
    var failures: [String: Int] = [:]
    opened.reserveCapacity(count)
    await withTaskGroup(of: Result<WebSocketConnection, WebSocketClientError>.self) { group in
        var started = 0
        func startOne() {
            let source = sourceAddresses.isEmpty ? nil : sourceAddresses[started % sourceAddresses.count]
            group.addTask {
                do {
                    return .success(try await WebSocketClient.connect(url: url, headers: headers, configuration: .client,
                                                                      loop: loop, timeout: .seconds(30), sourceAddress: source,
                                                                      handlers: handlers))
                } catch let error as WebSocketClientError {
                    return .failure(error)
                } catch {
                    return .failure(.closed)
                }
            }
            started += 1
        }
        while started < min(max(1, concurrency), count) { startOne() }
        while let result = await group.next() {
            switch result {
            case .success(let connection): opened.append(connection)
            case .failure(let error): failures[error.description, default: 0] += 1
            }
            if started < count { startOne() }
        }
    }
    let seconds = milliseconds(from: start, to: MonotonicClock.now()) / 1000
    print(String(format: "  opened %d in %.2f s (%.0f handshakes/s)", opened.count, seconds, Double(opened.count) / max(seconds, 1e-9)))
    for (reason, number) in failures.sorted(by: { $0.value > $1.value }) { print("  failed: \(number) × \(reason)") }
    return (opened, failures, seconds)
}
#endif
