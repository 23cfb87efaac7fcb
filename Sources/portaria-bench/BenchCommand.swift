import Foundation

/// `portaria-bench <benchmark> [options]`: prints figures, asserts nothing.
enum BenchCommand {
    static let usage = """
        usage: portaria-bench ws --url http://127.0.0.1:PORT [--connections 10000]
                                 [--server-pid PID] [--broadcasts 20] [--payload-bytes 64]

               portaria-bench realtime --url http://127.0.0.1:PORT [--connections 5000] [--visits 20]
                                 [--second-url http://127.0.0.1:PORT2] [--server-pid PID]
                                 [--second-server-pid PID2] [--label sqlite|postgres]
               portaria-bench visits --url http://127.0.0.1:PORT [--concurrency 50] [--requests 2000]
                                 [--warmup 100] [--label sqlite|postgres]

        ws        opens N idle WebSockets to /v1/bench/ws (server started with
                  --enable-bench-routes), reports the server's resident memory per idle
                  connection (from /proc/PID/status) and the latency of broadcasts to all N.
        realtime  the demo operator opens N sockets to /v1/realtime (server started with
                  --realtime-connections-per-user ≥ N and --gate-limit 1000000); each visit
                  created at demo-gate is timed from before its POST to its visit.created
                  frame on every socket. --second-url: sockets on a second instance of the
                  same PostgreSQL database, visits created on the first (NOTIFY path).
        visits    /healthz, gate POST and resolve (fresh visit and Idempotency-Key each) at
                  C closed-loop clients: throughput, ratio to /healthz, percentiles.

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
            switch command {
            case "ws":
                #if canImport(Glibc)
                try await WebSocketBenchmark(options: try Options(Array(arguments.dropFirst()))).run()
                return 0
                #else
                throw BenchError("the WebSocket benchmark needs Linux (epoll)")
                #endif
            case "tokens":
                try await TokenBenchmark(options: try Options(Array(arguments.dropFirst()))).run()
                return 0
            case "realtime":
                #if canImport(Glibc)
                try await RealtimeBenchmark(options: try Options(Array(arguments.dropFirst()))).run()
                return 0
                #else
                throw BenchError("the realtime benchmark needs Linux (epoll)")
                #endif
            case "soak":
                #if canImport(Glibc)
                try await SoakBenchmark(options: try Options(Array(arguments.dropFirst()))).run()
                return 0
                #else
                throw BenchError("the soak needs Linux (/proc, epoll)")
                #endif
            case "visits":
                try await VisitsBenchmark(options: try Options(Array(arguments.dropFirst()))).run()
                return 0
            case "help", "--help", "-h":
                print(usage)
                return 0
            default:
                throw BenchError("unknown benchmark '\(command)'")
            }
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

    func int(_ name: String, default value: Int) throws -> Int {
        guard let text = values[name] else { return value }
        guard let number = Int(text), number >= 0 else { throw BenchError("--\(name) must be a number") }
        return number
    }
}
