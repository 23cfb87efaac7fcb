import Foundation

/// `portaria-bench <benchmark> [options]`: prints figures, asserts nothing.
enum BenchCommand {
    static let usage = """
        usage: portaria-bench ws --url http://127.0.0.1:PORT [--connections 10000]
                                 [--server-pid PID] [--broadcasts 20] [--payload-bytes 64]

               portaria-bench realtime --url http://127.0.0.1:PORT [--connections 5000] [--visits 20]
                                 [--second-url http://127.0.0.1:PORT2] [--server-pid PID]
                                 [--second-server-pid PID2] [--label sqlite|postgres]
                                 [--source-addresses N|A,B,…]
               portaria-bench visits --url http://127.0.0.1:PORT [--concurrency 50] [--requests 2000]
                                 [--warmup 100] [--label sqlite|postgres]

        ws        opens N idle WebSockets to /v1/bench/ws (server started with
                  --enable-bench-routes), reports the server's resident memory per idle
                  connection (from /proc/PID/status) and the latency of broadcasts to all N.
        realtime  the demo operator opens N sockets to /v1/realtime (server started with
                  --realtime-connections-per-user ≥ N and --gate-limit 1000000, and --unit-ring-limit and --gate-ring-limit as high); each visit
                  created at demo-gate is timed from before its POST to its visit.created
                  frame on every socket. --second-url: sockets on a second instance of the
                  same PostgreSQL database, visits created on the first (NOTIFY path).
                  --source-addresses: connect from 127.0.0.1…127.0.0.N (default one per
                  20,000 sockets; one address has ~28,000 ports to one server port).
        visits    /healthz, gate POST and resolve (fresh visit and Idempotency-Key each) at
                  C closed-loop clients: throughput, ratio to /healthz, percentiles.

        openloop  --url U [--rates 100,300,1000] [--seconds 10] [--limit-ms 25] [--max-in-flight 2000]
                  [--bisections 3] [--label sqlite|postgres]
                  [--buildings N --portaria BIN --database URL]: gate POSTs, then resolves, arriving
                  at fixed rates (open loop, latency from each arrival's due time): p50/p99/p999
                  per rate, and the highest rate whose p99 stays under --limit-ms. --buildings
                  spreads them over the demo building and N − 1 more like it, made on the
                  first run with `BIN admin … --database URL` (the server's database).

        soak      (scripts/soak) --url U --server-pid PID [--seconds 600] [--interval 60] [--warmup 30]
                  [--sockets 200] [--readers 16] [--visit-rate 10] [--renew-rate 2] [--bound-percent 5]:
                  realtime sockets held open and churned, residents' reads in a closed loop,
                  gate visits + resolves (+ replays) + device renewals at fixed rates, pushes to
                  the fakes; per interval: rates, read latency, errors, server RSS, descriptors.

        tokens    per-token cost of HS256 sign/verify, and of the full bearer check
                  (verify + session read, + company membership) on SQLite, in process.

        Lines starting with RESULT are for bench/run's summary.
        """

    static func run(_ arguments: [String]) async -> Int32 {
        guard let command = arguments.first else { print(usage); return 64 }
        do {
            // Each benchmark reads its own `--name value` options; the Linux-only ones
            // need epoll (and /proc for the soak).
            let options = { try Options(Array(arguments.dropFirst())) }
            switch command {
            case "tokens": try await TokenBenchmark(options: try options()).run()
            case "visits": try await VisitsBenchmark(options: try options()).run()
            case "openloop": try await OpenLoopBenchmark(options: try options()).run()
            #if canImport(Glibc)
            case "ws": try await WebSocketBenchmark(options: try options()).run()
            case "realtime": try await RealtimeBenchmark(options: try options()).run()
            case "soak": try await SoakBenchmark(options: try options()).run()
            #else
            case "ws", "realtime", "soak": throw BenchError("the \(command) benchmark needs Linux (epoll)")
            #endif
            case "help", "--help", "-h":
                print(usage)
                return 0
            default:
                throw BenchError("unknown benchmark '\(command)'")
            }
            return 0
        } catch {
            FileHandle.standardError.write(Data("portaria-bench: \(error)\n".utf8))
            return 1
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What a benchmark drives: the server at `--url`, with `serve --demo`'s data unless the
/// options name other (`--label` names the database in RESULT lines;
/// `--username`/`--password` log in).
struct DemoTarget {
    let baseURL: String
    let label: String
    let username: String
    let password: String
    let company: String
    let gate: String
    let unitLabel: String

    init(_ options: Options) throws {
        baseURL = try options.serverURL()
        label = options.string("label") ?? "-"
        username = options.string("username") ?? "portaria"
        password = options.string("password") ?? "demo1234"
        company = options.string("company") ?? "Residencial Demo"
        gate = options.string("gate") ?? "demo-gate"
        unitLabel = options.string("unit") ?? "A-101"
    }

    /// Maria and João, the two residents of the demo unit, logged in: the benchmarks that
    /// resolve visits take turns between them.
    func residents(_ http: BenchHTTP) async throws -> [(token: String, companyID: String)] {
        var residents: [(token: String, companyID: String)] = []
        for name in ["maria", "joao"] { residents.append(try await http.login(name, password: password, company: company)) }
        return residents
    }
}

/// `--name value` pairs.
struct Options {
    private var values: [String: String] = [:]

    init(_ arguments: [String]) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("--"), index + 1 < arguments.count else {
                throw BenchError("unexpected argument '\(argument)'")
            }
            values[String(argument.dropFirst(2))] = arguments[index + 1]
            index += 2
        }
    }

    func string(_ name: String) -> String? { values[name] }

    /// A server URL option without its trailing slash (paths are appended to it); nil
    /// when absent.
    func url(_ name: String) -> String? {
        values[name].map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    /// The required `--url` of the server under test.
    func serverURL() throws -> String {
        guard let url = url("url") else { throw BenchError("--url is required") }
        return url
    }

    func int(_ name: String, default value: Int) throws -> Int {
        try optionalInt(name) ?? value
    }

    /// A number that is absent unless given (a server's process id).
    func optionalInt(_ name: String) throws -> Int? {
        guard let text = values[name] else { return nil }
        guard let number = Int(text), number >= 0 else { throw BenchError("--\(name) must be a number") }
        return number
    }

    /// How many of something (clients, seconds, rounds): 0 is read as 1.
    func count(_ name: String, default value: Int) throws -> Int {
        max(1, try int(name, default: value))
    }
}
