import Foundation

/// `portaria-bench <benchmark> [options]`: prints figures, asserts nothing.
enum BenchCommand {
    static let usage = """
        usage: portaria-bench ws --url http://127.0.0.1:PORT [--connections 10000]
                                 [--server-pid PID] [--broadcasts 20] [--payload-bytes 64]

        ws   opens N idle WebSockets to /v1/bench/ws (server started with
             --enable-bench-routes), reports the server's resident memory per idle
             connection (from /proc/PID/status) and the latency of broadcasts to all N.
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
