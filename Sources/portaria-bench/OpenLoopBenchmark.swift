import Foundation
import PortariaCore
import PortariaWebSocket

/// `portaria-bench openloop`: gate POSTs, then resolves, arriving at a
/// fixed rate whatever the server does — the way visitors and residents arrive. A closed
/// loop (`visits`) slows down with the server and so hides its queueing; here a slow answer
/// does not delay the next arrival, and latency is measured from when the request was
/// *due*, not from when the client got round to sending it (no coordinated omission).
///
/// For each rate: `--seconds` of gate POSTs (fresh visitor each), then as many resolves of
/// those visits (fresh Idempotency-Key each, Maria and João alternately) at the same rate.
/// Then the highest rate whose p99 stays under `--limit-ms` is narrowed by bisection
/// between the last rate that held and the first that did not.
///
/// `--buildings N` spreads the arrivals over N buildings in turn (`BenchBuildings`): one
/// building's visits all take its company's event-log lock, many buildings' do not.
///
/// The generator's own limit is printed beside the figures: `late` is how far behind its
/// schedule the client was when it sent (p99), so a figure where the client, not the
/// server, fell behind is visible as such.
struct OpenLoopBenchmark {
    let rates: [Int]
    let seconds: Double
    let limitMilliseconds: Double
    let maxInFlight: Int
    let bisections: Int
    let target: DemoTarget
    let buildings: BenchBuildings

    init(options: Options) throws {
        let rateList = options.string("rates") ?? "100,300,1000"
        let parsed = rateList.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !parsed.isEmpty, parsed.allSatisfy({ (1...100_000).contains($0) }) else {
            throw BenchError("--rates must be a comma-separated list of arrivals per second (1–100000)")
        }
        rates = parsed.sorted()
        seconds = Double(try options.count("seconds", default: 10))
        limitMilliseconds = Double(try options.count("limit-ms", default: 25))
        maxInFlight = try options.count("max-in-flight", default: 2000)
        bisections = max(0, try options.int("bisections", default: 3))
        target = try DemoTarget(options)
        buildings = try BenchBuildings(options: options)
    }

    /// One scenario at one rate.
    struct Outcome {
        var rate: Int
        var latencies: Percentiles
        var lateness: Percentiles
        var achievedRate: Double
        var errors: Int
        var refusedByClient: Int
    }

    func run() async throws {
        let http = BenchHTTP(baseURL: target.baseURL, connections: 256)
        let places = try await buildings.prepare(http, demo: target)
        print("openloop (\(target.label)): \(places.count) building\(places.count == 1 ? "" : "s"), \(Int(seconds)) s per rate, "
              + "p99 limit \(Int(limitMilliseconds)) ms, rates \(rates.map(String.init).joined(separator: ", "))/s")

        // Warm-up outside the figures: connections, prepared statements, the first visits
        // (of every building).
        _ = await arrive(rate: 50, seconds: max(1, Double(places.count) / 50)) { index in
            let place = places[index % places.count]
            return try await http.createVisit(gate: place.gate, unitID: place.unitID, name: "Warm \(index)").status == 201
        }

        func measure(_ rate: Int, seconds: Double) async -> (gate: Outcome, resolve: Outcome) {
            let created = Locked<[(visit: String, building: Int)]>([])
            let gateOutcome = await arrive(rate: rate, seconds: seconds) { index in
                let building = index % places.count
                let place = places[building]
                let (status, id) = try await http.createVisit(gate: place.gate, unitID: place.unitID, name: "Open \(rate)-\(index)")
                if let id { created.withLock { $0.append((id, building)) } }
                return status == 201
            }
            let visits = created.withLock { $0 }
            let resolveOutcome = await arrive(rate: rate, seconds: Double(visits.count) / Double(rate)) { index in
                guard index < visits.count else { return false }
                let residents = places[visits[index].building].residents
                let person = residents[(index / places.count) % residents.count]
                return try await http.send("POST", "/v1/visits/\(visits[index].visit)/resolve",
                                           headers: ["Authorization": "Bearer \(person.token)", "X-Company-Id": person.companyID,
                                                     "Idempotency-Key": "open-\(UUID().uuidString)"],
                                           json: #"{"action":"authorize"}"#).status == 200
            }
            return (gateOutcome, resolveOutcome)
        }

        var held: Int?
        var failed: Int?
        for rate in rates {
            let (gateOutcome, resolveOutcome) = await measure(rate, seconds: seconds)
            report("gate POST", gateOutcome)
            report("resolve", resolveOutcome)
            if holds(gateOutcome) && holds(resolveOutcome) { held = rate } else if failed == nil { failed = rate }
        }
        // Narrow the highest rate that holds (shorter runs: a bound, not a figure to quote).
        if var low = held, var high = failed, low < high {
            for _ in 0..<bisections where high - low > max(10, low / 10) {
                let middle = (low + high) / 2
                let (gateOutcome, resolveOutcome) = await measure(middle, seconds: max(3, seconds / 2))
                report("gate POST", gateOutcome)
                report("resolve", resolveOutcome)
                if holds(gateOutcome) && holds(resolveOutcome) { low = middle } else { high = middle }
            }
            held = low
            failed = high
        }
        let verdict = switch (held, failed) {
        case (let held?, let failed?): "highest rate with p99 < \(Int(limitMilliseconds)) ms: \(held)/s (\(failed)/s did not hold)"
        case (let held?, nil): "every rate held p99 < \(Int(limitMilliseconds)) ms, up to \(held)/s"
        case (nil, _): "no rate held p99 < \(Int(limitMilliseconds)) ms"
        }
        print("  " + verdict)
        printResult(scenario: "openloop-max-rate", database: target.label,
                    "buildings=\(buildings.count) limit_ms=\(Int(limitMilliseconds)) rate=\(held ?? 0) failed_rate=\(failed ?? 0)")
    }

    private func holds(_ outcome: Outcome) -> Bool {
        outcome.errors == 0 && outcome.refusedByClient == 0 && outcome.latencies.count > 0
            && outcome.latencies.at(0.99) < limitMilliseconds
    }

    private func report(_ name: String, _ outcome: Outcome) {
        print("  " + "\(name) @ \(outcome.rate)/s".padding(toLength: 22, withPad: " ", startingAt: 0)
              + String(format: " p50 %.2f  p99 %.2f  p999 %.2f  max %.2f ms  (n=%d, %.0f/s achieved, client late p99 %.2f ms",
                       outcome.latencies.at(0.5), outcome.latencies.at(0.99), outcome.latencies.at(0.999), outcome.latencies.max,
                       outcome.latencies.count, outcome.achievedRate, outcome.lateness.at(0.99))
              + (outcome.errors > 0 ? ", \(outcome.errors) errors" : "")
              + (outcome.refusedByClient > 0 ? ", \(outcome.refusedByClient) not sent: \(maxInFlight) in flight" : "") + ")")
        let scenario = name.hasPrefix("gate") ? "openloop-gate-post" : "openloop-resolve"
        printResult(scenario: scenario, database: target.label,
                    "buildings=\(buildings.count) rate=\(outcome.rate) " + String(format: "achieved=%.1f ", outcome.achievedRate) + outcome.latencies.fields
                        + String(format: " late_p99_ms=%.3f", outcome.lateness.at(0.99))
                        + " errors=\(outcome.errors) not_sent=\(outcome.refusedByClient)")
    }

    /// Fires `request(i)` at `start + i / rate` for `seconds`, each in its own task, never
    /// waiting for earlier answers. Latency counts from the due time; an arrival beyond
    /// `maxInFlight` unanswered requests is counted, not sent (the client's own bound).
    private func arrive(rate: Int, seconds: Double, _ request: @escaping @Sendable (Int) async throws -> Bool) async -> Outcome {
        let total = max(1, Int((Double(rate) * seconds).rounded()))
        let interval = 1e9 / Double(rate)
        let inFlight = Locked(0)
        let refused = Locked(0)
        let start = MonotonicClock.now() &+ 5_000_000 // 5 ms to set up the first arrival
        let samples = await withTaskGroup(of: (latency: Double, late: Double, ok: Bool)?.self) { group in
            for index in 0..<total {
                let due = start &+ UInt64(Double(index) * interval)
                let now = MonotonicClock.now()
                if due > now {
                    try? await Task.sleep(for: .nanoseconds(Int64(due - now)))
                }
                let admitted = inFlight.withLock { count -> Bool in
                    guard count < maxInFlight else { return false }
                    count += 1
                    return true
                }
                guard admitted else {
                    refused.withLock { $0 += 1 }
                    continue
                }
                group.addTask {
                    let sent = MonotonicClock.now()
                    let ok = (try? await request(index)) ?? false
                    let answered = MonotonicClock.now()
                    inFlight.withLock { $0 -= 1 }
                    return (milliseconds(from: due, to: answered), milliseconds(from: due, to: max(sent, due)), ok)
                }
            }
            var all: [(latency: Double, late: Double, ok: Bool)] = []
            for await sample in group { if let sample { all.append(sample) } }
            return all
        }
        let elapsed = milliseconds(from: start, to: MonotonicClock.now()) / 1000
        return Outcome(rate: rate, latencies: Percentiles(samples.map(\.latency)), lateness: Percentiles(samples.map(\.late)),
                       achievedRate: Double(samples.count) / max(elapsed, 1e-9),
                       errors: samples.filter { !$0.ok }.count, refusedByClient: refused.withLock { $0 })
    }
}
