import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PortariaCore
import Testing

/// Figures, not a timed test: runs only with PORTARIA_BENCH=1 and prints percentiles
/// and throughput as ratios to /healthz in the same run.
@Suite("Visits benchmark", .serialized, .enabled(if: ProcessInfo.processInfo.environment["PORTARIA_BENCH"] == "1"))
struct VisitsBenchmark {
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// Runs `count` requests on `clients` concurrent workers; returns latencies (ms) and requests/s.
    static func load(clients: Int, count: Int, _ request: @escaping @Sendable (Int) async throws -> Int) async -> ([Double], Double, [Int: Int]) {
        let latencies = Locked<[Double]>([])
        let statuses = Locked<[Int: Int]>([:])
        let next = Locked(0)
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    while true {
                        let index = next.withLock { value -> Int in defer { value += 1 }; return value }
                        guard index < count else { return }
                        let began = ContinuousClock.now
                        let status = (try? await request(index)) ?? -1
                        let elapsed = ContinuousClock.now - began
                        latencies.withLock { $0.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000) }
                        statuses.withLock { $0[status, default: 0] += 1 }
                    }
                }
            }
        }
        let total = ContinuousClock.now - start
        let seconds = Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18
        return (latencies.current, Double(count) / seconds, statuses.current)
    }

    @Test("resolve at 50 concurrent clients and gate POST, vs /healthz", arguments: VisitsCrashTests.databases)
    func bench(database: VisitsCrashTests.Database) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var drop: () -> Void = {}
        let url: String
        switch database {
        case .sqlite: url = "sqlite://" + directory.appendingPathComponent("portaria.db").path
        case .postgres:
            let created = try #require(try EndToEndPostgres.create())
            url = created.url
            drop = created.drop
        }
        defer { drop() }
        let server = VisitsServer(databaseURL: url, dataDirectory: directory.path)
        try await server.start()
        defer { server.stop() }
        let base = server.baseURL
        let login = try await HTTP.send("POST", base.appendingPathComponent("v1/auth/login"), json: #"{"username":"joao","password":"demo1234"}"#)
        let token = try #require(login.json["jwt_token"]?.stringValue)
        let units = try JSONCoding.decoder().decode(GateInfo.self, from: try await HTTP.send("GET", base.appendingPathComponent("v1/gates/demo-gate")).body).units
        let a101 = try #require(units.first { $0.label == "A-101" }).id
        let count = 1000

        let health = await Self.load(clients: 50, count: count) { _ in try await HTTP.send("GET", base.appendingPathComponent("healthz")).status }
        let ids = Locked<[Int: String]>([:])
        let gate = await Self.load(clients: 50, count: count) { index in
            let reply = try await HTTP.send("POST", base.appendingPathComponent("v1/gates/demo-gate/visits"),
                                            json: #"{"unit_id":"\#(a101)","kind":"delivery","visitor_name":"Bench \#(index)","carrier":"iFood"}"#)
            if let id = reply.json["visit"]?["id"]?.stringValue { ids.withLock { $0[index] = id } }
            return reply.status
        }
        let visits = ids.current
        let resolve = await Self.load(clients: 50, count: count) { index in
            try await HTTP.send("POST", base.appendingPathComponent("v1/visits/\(visits[index] ?? "none")/resolve"),
                                headers: ["Authorization": "Bearer \(token)", "Idempotency-Key": "bench-\(index)"],
                                json: #"{"action":"authorize"}"#).status
        }
        func line(_ name: String, _ result: ([Double], Double, [Int: Int])) -> String {
            String(format: "%@ %@: p50 %.1f ms, p99 %.1f ms, %.0f req/s (%.2f× healthz), statuses %@", database.rawValue, name,
                   Self.percentile(result.0, 0.5), Self.percentile(result.0, 0.99), result.1, result.1 / health.1, "\(result.2)")
        }
        print("BENCH " + line("healthz", health))
        print("BENCH " + line("gate POST", gate))
        print("BENCH " + line("resolve", resolve))
        #expect(resolve.2[200] == count && gate.2[201] == count)
    }
}
