#if canImport(Glibc)
import Foundation
import Glibc
import PortariaCore
import PortariaWebSocket

/// `portaria-bench soak`: a building's day compressed, for `--seconds`, against
/// a `portaria serve --demo` whose APNs/FCM point at the local fakes (scripts/soak):
///
/// - `--sockets` realtime sockets held open (half with a bearer, half with a one-time
///   ticket), one of them closed and reopened every second (descriptor churn);
/// - `--readers` closed-loop clients reading what residents read: `GET /v1/visits?status=history`,
///   `?status=pending` and `/v1/me` — their throughput is what the soak watches;
/// - `--visit-rate` gate visits per second (rings: VoIP/alert pushes to Maria's iPhone,
///   FCM to João's Android, Ana's iPhone), each resolved with an `Idempotency-Key` (every
///   fifth resolve replayed), which cancels the ring (more pushes);
/// - `--renew-rate` device renewals per second (`POST /v1/devices`, new push token).
///
/// After `--warmup` seconds it prints one line per `--interval`: request rates, read
/// latency, errors, the server's RSS and open descriptors (from /proc, so the server must
/// run on this machine) and realtime frames; at the end a table per operation and the
/// first and last interval compared. Figures only, plus a verdict line against `--bound`.
struct SoakBenchmark {
    let baseURL: String
    let serverPID: Int
    let seconds: Int
    let interval: Int
    let warmup: Int
    let sockets: Int
    let readers: Int
    let visitRate: Double
    let renewRate: Double
    let bound: Double

    init(options: Options) throws {
        baseURL = try options.serverURL()
        guard let serverPID = try options.optionalInt("server-pid") else { throw BenchError("--server-pid is required (RSS and descriptors)") }
        self.serverPID = serverPID
        seconds = try options.count("seconds", default: 600)
        interval = try options.count("interval", default: 60)
        warmup = try options.int("warmup", default: 30)
        sockets = try options.int("sockets", default: 200)
        readers = try options.count("readers", default: 16)
        visitRate = Double(try options.int("visit-rate", default: 10))
        renewRate = Double(try options.int("renew-rate", default: 2))
        bound = Double(try options.int("bound-percent", default: 5)) / 100
        walFile = options.string("wal-file")
    }

    /// The SQLite `-wal` file, whose size is printed per interval (checkpoint starvation
    /// under constant readers makes it grow, and every read pays for its length).
    let walFile: String?

    /// One signed-in demo user.
    struct Person: Sendable {
        let name: String
        let token: String
        let companyID: String
        var headers: [String: String] { ["Authorization": "Bearer \(token)", "X-Company-Id": companyID] }
    }

    enum Operation: String, CaseIterable, Sendable {
        case history = "GET /v1/visits?status=history"
        case pending = "GET /v1/visits?status=pending"
        case me = "GET /v1/me"
        case gate = "POST gate visit"
        case resolve = "POST resolve"
        case replay = "POST resolve (replay)"
        case renew = "POST /v1/devices (renewal)"
        case ticket = "POST /v1/realtime/tickets"

        var isRead: Bool { self == .history || self == .pending || self == .me }

        /// The scenario name of RESULT lines.
        var slug: String {
            switch self {
            case .history: "history"
            case .pending: "pending"
            case .me: "me"
            case .gate: "gate-visit"
            case .resolve: "resolve"
            case .replay: "resolve-replay"
            case .renew: "device-renewal"
            case .ticket: "realtime-ticket"
            }
        }
    }

    func run() async throws {
        _ = ResourceLimits.raiseOpenFileLimit()
        let http = BenchHTTP(baseURL: baseURL, connections: readers + 32)
        let company = "Residencial Demo"
        var people: [String: Person] = [:]
        for name in ["maria", "joao", "ana", "portaria"] {
            let (token, companyID) = try await http.login(name, password: "demo1234", company: company)
            people[name] = Person(name: name, token: token, companyID: companyID)
        }
        let maria = people["maria"]!, joao = people["joao"]!, ana = people["ana"]!, operatorPerson = people["portaria"]!
        let unitA = try await http.unitID(gate: "demo-gate", label: "A-101")
        let unitB = try await http.unitID(gate: "demo-gate", label: "B-201")

        // Phones: Maria's and João's iPhones (VoIP + alert, APNs), Ana's Android (FCM).
        let devices: [(Person, String, String)] = [(maria, "soak-maria-iphone", "ios"), (joao, "soak-joao-iphone", "ios"),
                                                  (ana, "soak-ana-android", "android")]
        @Sendable func register(_ person: Person, _ installation: String, _ platform: String) async throws -> Int {
            var body: [String: JSONValue] = ["installation_id": .string(installation), "platform": .string(platform),
                                             "app_version": .string("1.0.0")]
            if platform == "ios" {
                body["push_token"] = .string(Self.hexToken())
                body["voip_token"] = .string(Self.hexToken())
            } else {
                body["push_token"] = .string("fcm-" + UUID().uuidString)
            }
            return try await http.send("POST", "/v1/devices", headers: person.headers, json: JSONValue.object(body).jsonText).status
        }
        for (person, installation, platform) in devices {
            let status = try await register(person, installation, platform)
            guard status == 200 || status == 201 else { throw BenchError("device registration answered \(status)") }
        }

        let stats = SoakStats()
        let loop = EventLoop(name: "soak-sockets", tickInterval: .seconds(1))
        defer { loop.stop() }
        let socketURL = baseURL.replacingOccurrences(of: "http://", with: "ws://") + "/v1/realtime"
        let handlers = WebSocketConnection.Handlers(
            onText: { _, _ in stats.frames.withLock { $0 += 1 } },
            onClose: { _, code, _ in stats.socketsClosed.withLock { $0[code.rawValue, default: 0] += 1 } })
        let socketOwners = [operatorPerson, maria, ana]
        @Sendable func openSocket(_ index: Int) async -> WebSocketConnection? {
            let person = socketOwners[index % socketOwners.count]
            do {
                if index % 2 == 0 {
                    let headers = [("Authorization", "Bearer \(person.token)"), ("X-Company-Id", person.companyID)]
                    return try await WebSocketClient.connect(url: socketURL, headers: headers, loop: loop, handlers: handlers)
                }
                let began = MonotonicClock.now()
                let reply = try await http.send("POST", "/v1/realtime/tickets", headers: person.headers)
                stats.record(.ticket, milliseconds(from: began, to: MonotonicClock.now()), ok: reply.status == 201)
                guard reply.status == 201, let ticket = reply.json?["ticket"]?.stringValue else { return nil }
                return try await WebSocketClient.connect(url: "\(socketURL)?ticket=\(ticket)", loop: loop, handlers: handlers)
            } catch {
                stats.socketFailures.withLock { $0 += 1 }
                return nil
            }
        }
        let open = Locked<[WebSocketConnection]>([])
        await withTaskGroup(of: WebSocketConnection?.self) { group in
            for index in 0..<sockets { group.addTask { await openSocket(index) } }
            for await connection in group { if let connection { open.withLock { $0.append(connection) } } }
        }
        say("soak: \(seconds) s after \(warmup) s warm-up; \(open.current.count)/\(sockets) realtime sockets, \(readers) readers, "
              + "\(Int(visitRate)) visits/s, \(Int(renewRate)) renewals/s; server pid \(serverPID)")

        let start = ContinuousClock.now
        let end = start + .seconds(warmup + seconds)

        // Readers: closed loop, the figure the soak watches.
        let readPlan: [(Operation, String, Person)] = [(.history, "/v1/visits?status=history", maria),
                                                       (.pending, "/v1/visits?status=pending", ana),
                                                       (.history, "/v1/visits?status=history", joao), (.me, "/v1/me", joao)]
        // Gate visits, resolves and replays, at a fixed rate: the same work every minute.
        let residents = [(unitA, maria), (unitB, ana), (unitA, joao)]
        @Sendable func visitAndResolve(_ index: Int) async {
            let (unit, resident) = residents[index % residents.count]
            let kind = index % 3 == 0 ? "delivery" : "visit"
            let body = JSONValue.object(["unit_id": .string(unit), "kind": .string(kind), "visitor_name": .string("Soak \(index)"),
                                         "carrier": kind == "delivery" ? .string("iFood") : .null]).jsonText
            var began = MonotonicClock.now()
            guard let created = try? await http.send("POST", "/v1/gates/demo-gate/visits", json: body) else {
                stats.record(.gate, milliseconds(from: began, to: MonotonicClock.now()), ok: false); return
            }
            stats.record(.gate, milliseconds(from: began, to: MonotonicClock.now()), ok: created.status == 201)
            guard created.status == 201, let visitID = created.json?["visit"]?["id"]?.stringValue else { return }
            let action = ["authorize", "deny", "leave_at_concierge"][index % 3]
            let key = "soak-\(UUID().uuidString)"
            var headers = resident.headers
            headers["Idempotency-Key"] = key
            for attempt in 0..<(index % 5 == 0 ? 2 : 1) {
                began = MonotonicClock.now()
                let reply = try? await http.send("POST", "/v1/visits/\(visitID)/resolve", headers: headers,
                                                 json: #"{"action":"\#(action)"}"#)
                stats.record(attempt == 0 ? .resolve : .replay, milliseconds(from: began, to: MonotonicClock.now()),
                             ok: reply?.status == 200)
            }
        }
        @Sendable func renew(_ index: Int) async {
            let (person, installation, platform) = devices[index % devices.count]
            let began = MonotonicClock.now()
            let status = (try? await register(person, installation, platform)) ?? -1
            stats.record(.renew, milliseconds(from: began, to: MonotonicClock.now()), ok: status == 200 || status == 201)
        }

        await withTaskGroup(of: Void.self) { group in
            for reader in 0..<readers {
                group.addTask {
                    var step = reader
                    while ContinuousClock.now < end {
                        let (operation, path, person) = readPlan[step % readPlan.count]
                        step += 1
                        let began = MonotonicClock.now()
                        let reply = try? await http.send("GET", path, headers: person.headers)
                        stats.record(operation, milliseconds(from: began, to: MonotonicClock.now()), ok: reply?.status == 200)
                    }
                }
            }
            group.addTask { await Self.paced(rate: visitRate, until: end) { index in await visitAndResolve(index) } }
            group.addTask { await Self.paced(rate: renewRate, until: end) { index in await renew(index) } }
            // Descriptor churn: one socket closed and a new one opened every second.
            group.addTask {
                await Self.paced(rate: 1, until: end) { index in
                    let victim = open.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                    victim?.close()
                    if let replacement = await openSocket(index) { open.withLock { $0.append(replacement) } }
                }
            }
            group.addTask {
                try? await Task.sleep(until: start + .seconds(warmup), clock: .continuous)
                _ = stats.takeInterval()
                var rows: [IntervalRow] = []
                let intervals = (seconds + interval - 1) / interval
                say(IntervalRow.header)
                var previousEnd = ContinuousClock.now
                var previousCPU = IntervalRow.cpuSeconds(serverPID) ?? 0
                for number in 1...intervals {
                    let intervalEnd = min(start + .seconds(warmup + number * interval), end)
                    try? await Task.sleep(until: intervalEnd, clock: .continuous)
                    let now = ContinuousClock.now
                    let length = now - previousEnd
                    previousEnd = now
                    let cpu = IntervalRow.cpuSeconds(serverPID) ?? 0
                    let row = IntervalRow(number: number, snapshot: stats.takeInterval(), pid: serverPID,
                                          openSockets: open.current.count,
                                          seconds: Double(length.components.seconds) + Double(length.components.attoseconds) / 1e18,
                                          cpuSeconds: cpu - previousCPU, walFile: walFile)
                    previousCPU = cpu
                    say(row.line)
                    rows.append(row)
                }
                stats.rows.withLock { $0 = rows }
            }
        }
        for connection in open.current { connection.close() }
        summarize(stats)
    }

    /// Calls `work` `rate` times a second (each call in its own task) until `end`.
    static func paced(rate: Double, until end: ContinuousClock.Instant, _ work: @escaping @Sendable (Int) async -> Void) async {
        guard rate > 0 else { return }
        let period = Duration.nanoseconds(Int64(1e9 / rate))
        var next = ContinuousClock.now
        var index = 0
        await withTaskGroup(of: Void.self) { group in
            while next < end {
                let current = index
                group.addTask { await work(current) }
                index += 1
                next += period
                try? await Task.sleep(until: next, clock: .continuous)
            }
        }
    }

    static func hexToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    private func summarize(_ stats: SoakStats) {
        let rows = stats.rows.current
        let total = stats.total.current
        say("\nper operation over the whole run (after warm-up):")
        for operation in Operation.allCases {
            guard let entry = total[operation], !entry.latencies.isEmpty || entry.errors > 0 else { continue }
            let rate = Double(entry.latencies.count) / Double(seconds)
            say("  " + operation.rawValue.padding(toLength: 32, withPad: " ", startingAt: 0)
                  + String(format: "%9.1f/s  ", rate) + Percentiles(entry.latencies).line + "  errors \(entry.errors)")
            sayResult(scenario: "soak-" + operation.slug, database: "sqlite", String(format: "rps=%.2f ", rate) + Percentiles(entry.latencies).fields
                            + " errors=\(entry.errors)")
        }
        let closes = stats.socketsClosed.current.sorted { $0.key < $1.key }.map { "\($0.value)×\($0.key)" }.joined(separator: " ")
        say("  realtime frames received \(stats.frames.current), socket closes by code [\(closes)], "
              + "socket opens failed \(stats.socketFailures.current)")
        guard let first = rows.first, let last = rows.last, rows.count >= 2 else { return }
        let throughputChange = last.readRate / max(first.readRate, 1e-9) - 1
        let rssChange = Double(last.rssKiB) / Double(max(first.rssKiB, 1)) - 1
        let errors = rows.reduce(0) { $0 + $1.errors }
        say(String(format: "\nfirst → last interval: reads %.0f → %.0f req/s (%+.1f %%), RSS %.1f → %.1f MiB (%+.1f %%), "
                     + "descriptors %d → %d, errors %d", first.readRate, last.readRate, throughputChange * 100,
                     Double(first.rssKiB) / 1024, Double(last.rssKiB) / 1024, rssChange * 100, first.descriptors,
                     last.descriptors, errors))
        sayResult(scenario: "soak-drift", database: "sqlite",
                    String(format: "first_rps=%.1f last_rps=%.1f rps_change=%.4f first_rss_kib=%d last_rss_kib=%d rss_change=%.4f "
                           + "first_fds=%d last_fds=%d errors=%d", first.readRate, last.readRate, throughputChange,
                           first.rssKiB, last.rssKiB, rssChange, first.descriptors, last.descriptors, errors))
        let within = abs(throughputChange) <= bound && rssChange <= bound && errors == 0
        say("VERDICT \(within ? "PASS" : "FAIL"): throughput and RSS within \(Int(bound * 100)) % between the first and last "
              + "interval, no errors")
    }
}

/// Writes a line at once (`print` is block-buffered into a pipe such as `tee`, and the soak
/// prints one line a minute that should show when it is measured).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// ``printResult(scenario:database:_:)`` through ``say(_:)``.
func sayResult(scenario: String, database: String, _ fields: String) {
    say("RESULT scenario=\(scenario) database=\(database) \(fields)")
}

/// Counters shared by every task of the soak.
final class SoakStats: Sendable {
    struct Entry: Sendable {
        var latencies: [Double] = []
        var errors = 0
    }

    let interval = Locked<[SoakBenchmark.Operation: Entry]>([:])
    let total = Locked<[SoakBenchmark.Operation: Entry]>([:])
    let measuring = Locked(false)
    let frames = Locked(0)
    /// Socket closes by close code (1000: our own churn).
    let socketsClosed = Locked<[UInt16: Int]>([:])
    let socketFailures = Locked(0)
    let rows = Locked<[IntervalRow]>([])

    func record(_ operation: SoakBenchmark.Operation, _ milliseconds: Double, ok: Bool) {
        interval.withLock { entries in
            if ok { entries[operation, default: Entry()].latencies.append(milliseconds) }
            else { entries[operation, default: Entry()].errors += 1 }
        }
    }

    /// The interval's samples (also added to the total once measuring has started).
    func takeInterval() -> [SoakBenchmark.Operation: Entry] {
        let taken = interval.withLock { entries in defer { entries = [:] }; return entries }
        let counting = measuring.withLock { value in defer { value = true }; return value }
        if counting {
            total.withLock { total in
                for (operation, entry) in taken {
                    total[operation, default: Entry()].latencies += entry.latencies
                    total[operation, default: Entry()].errors += entry.errors
                }
            }
        }
        return taken
    }
}

/// One printed line of the soak: an interval's figures and the server's resources at its end.
struct IntervalRow: Sendable {
    let number: Int
    let readRate: Double
    let writeRate: Double
    let readLatency: Percentiles
    let errors: Int
    let rssKiB: Int
    let descriptors: Int
    let threads: Int
    let openSockets: Int
    let seconds: Double
    /// Server CPU (user + system) per request of the interval: unlike throughput, barely
    /// moved by other load on a shared machine.
    let cpuMicrosecondsPerRequest: Double
    let walKiB: Int

    static let header = "interval   reads/s  writes/s   read p50 ms   p99 ms  errors  CPU µs/req   RSS MiB   fds  threads  sockets  WAL KiB"

    init(number: Int, snapshot: [SoakBenchmark.Operation: SoakStats.Entry], pid: Int, openSockets: Int, seconds: Double,
         cpuSeconds: Double, walFile: String?) {
        self.number = number
        let length = max(seconds, 1e-3)
        self.seconds = length
        var reads: [Double] = [], writes = 0, errors = 0
        for (operation, entry) in snapshot {
            if operation.isRead { reads += entry.latencies } else { writes += entry.latencies.count }
            errors += entry.errors
        }
        readLatency = Percentiles(reads)
        readRate = Double(reads.count) / length
        writeRate = Double(writes) / length
        self.errors = errors
        cpuMicrosecondsPerRequest = cpuSeconds * 1e6 / Double(max(1, reads.count + writes))
        walKiB = walFile.flatMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }.map { $0 / 1024 } ?? -1
        rssKiB = residentKilobytes(pid) ?? 0
        descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        threads = processStatus(pid, "Threads") ?? -1
        self.openSockets = openSockets
    }

    var line: String {
        String(format: "%8d %9.0f %9.1f %13.2f %8.2f %7d %11.1f %9.1f %5d %8d %8d %8d", number, readRate, writeRate,
               readLatency.at(0.5), readLatency.at(0.99), errors, cpuMicrosecondsPerRequest, Double(rssKiB) / 1024,
               descriptors, threads, openSockets, walKiB)
    }

    /// utime + stime of a process, from `/proc/PID/stat` (clock ticks of 1/100 s).
    static func cpuSeconds(_ pid: Int) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
#endif
