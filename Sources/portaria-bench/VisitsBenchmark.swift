import Foundation
import PortariaCore

/// `portaria-bench visits`: at `--concurrency` closed-loop clients,
///  1. `GET /healthz` — the baseline: the same client, the same concurrency, one database read;
///  2. `POST /v1/gates/{gate}/visits` → 201 (visit, ring plan and ring job in one commit),
///     which also creates the visits the next step resolves;
///  3. `POST /v1/visits/{id}/resolve`, each on a fresh visit with a fresh Idempotency-Key,
///     alternately as Maria and João (both residents of the unit).
/// Throughput is also printed as a ratio to /healthz measured in the same run, so runs on
/// a loaded machine stay comparable.
struct VisitsBenchmark {
    let concurrency: Int
    let requests: Int
    let warmup: Int
    let target: DemoTarget

    init(options: Options) throws {
        concurrency = try options.count("concurrency", default: 50)
        requests = try options.count("requests", default: 2000)
        warmup = try options.int("warmup", default: 100)
        target = try DemoTarget(options)
    }

    func run() async throws {
        let http = BenchHTTP(baseURL: target.baseURL, connections: concurrency + 4)
        let unitID = try await http.unitID(gate: target.gate, label: target.unitLabel)
        let people = try await target.residents(http)
        print("visits (\(target.label)): \(requests) requests per scenario, \(concurrency) concurrent clients, unit \(target.unitLabel)")

        @Sendable func healthz(_: Int) async throws -> Int { try await http.send("GET", "/healthz").status }
        let created = Locked<[Int: String]>([:])
        let gateName = target.gate
        @Sendable func createVisit(_ index: Int) async throws -> Int {
            let (status, id) = try await http.createVisit(gate: gateName, unitID: unitID, name: "Bench \(index)")
            if let id { created.withLock { $0[index] = id } }
            return status
        }
        @Sendable func resolve(_ visitID: String, by index: Int) async throws -> Int {
            let person = people[index % people.count]
            return try await http.send("POST", "/v1/visits/\(visitID)/resolve",
                                       headers: ["Authorization": "Bearer \(person.token)", "X-Company-Id": person.companyID,
                                                 "Idempotency-Key": "bench-\(UUID().uuidString)"],
                                       json: #"{"action":"authorize"}"#).status
        }

        // Warm-up: connections opened, caches and statements prepared, outside the figures.
        if warmup > 0 {
            _ = await closedLoop(clients: concurrency, count: warmup, healthz)
            _ = await closedLoop(clients: concurrency, count: warmup, createVisit)
            let warm = created.withLock { all in defer { all.removeAll() }; return Array(all.values) }
            _ = await closedLoop(clients: concurrency, count: warm.count) { try await resolve(warm[$0], by: $0) }
        }

        let health = await closedLoop(clients: concurrency, count: requests, healthz)
        report("GET /healthz", health, expecting: 200, baseline: health)
        let gatePost = await closedLoop(clients: concurrency, count: requests, createVisit)
        report("gate POST → 201", gatePost, expecting: 201, baseline: health)
        let visitIDs = created.withLock { all in (0..<requests).compactMap { all[$0] } }
        guard !visitIDs.isEmpty else { throw BenchError("no visit was created") }
        let resolved = await closedLoop(clients: concurrency, count: visitIDs.count) { try await resolve(visitIDs[$0], by: $0) }
        report("resolve → 200", resolved, expecting: 200, baseline: health)
    }

    private func report(_ name: String, _ result: LoadResult, expecting status: Int, baseline: LoadResult) {
        let ratio = result.throughput / max(baseline.throughput, 1e-9)
        print("  " + name.padding(toLength: 16, withPad: " ", startingAt: 0)
              + String(format: " %7.0f req/s (%.2f× healthz)  ", result.throughput, ratio)
              + result.percentiles.line + "  [\(result.statusText)]")
        let scenario = switch name {
        case let text where text.hasPrefix("GET"): "visits-healthz"
        case let text where text.hasPrefix("gate"): "gate-post"
        default: "resolve"
        }
        printResult(scenario: scenario, database: target.label,
                    String(format: "rps=%.1f healthz_ratio=%.3f ", result.throughput, ratio) + result.percentiles.fields
                        + " errors=\(result.errors(expecting: status))")
    }
}
