import Foundation
import PortariaCore

/// `/healthz` and the served contract.
struct SystemRoutes {
    let database: any SQLDatabase
    let openAPIPath: String

    struct Health: Codable, Sendable {
        var status: String
        var database: String
    }

    /// `docs/openapi.yaml` next to the working directory, or next to the executable's
    /// checkout (`.build/<config>/portaria` → `../../docs`).
    static func defaultOpenAPIPath() -> String {
        let candidates = [
            FileManager.default.currentDirectoryPath + "/docs/openapi.yaml",
            URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
                .deletingLastPathComponent().appendingPathComponent("../../../docs/openapi.yaml").standardized.path,
            URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
                .deletingLastPathComponent().appendingPathComponent("../../docs/openapi.yaml").standardized.path,
            "/usr/share/portaria/openapi.yaml",
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0) } ?? candidates[0]
    }

    func register(on router: Router) {
        router.get("/healthz") { _ in
            do {
                try await database.ping()
                return .json(Health(status: "ok", database: "ok"))
            } catch {
                var response = HTTPResponse.json(Health(status: "unavailable", database: "unreachable"), status: 503)
                response.headers.append(("Retry-After", "5"))
                return response
            }
        }
        let path = openAPIPath
        let cached = Locked<[UInt8]?>(nil)
        router.get("/v1/openapi.yaml") { _ in
            if let body = cached.current { return HTTPResponse(status: 200, headers: [("Content-Type", "application/yaml")], body: body) }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw HTTPError.notFound("the OpenAPI document is not installed on this server")
            }
            let body = Array(data)
            cached.withLock { $0 = body }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/yaml")], body: body)
        }
    }
}

/// Routes that exist only for `make bench` (`--enable-bench-routes`).
struct BenchRoutes {
    let webSockets: WebSocketHub

    static let topic = "bench"

    struct Broadcast: Codable, Sendable { var payload: String }
    struct BroadcastResult: Codable, Sendable {
        var connections: Int
        /// Time from the request handler to the last socket's send, on the server.
        var fanoutMs: Double

        enum CodingKeys: String, CodingKey {
            case connections
            case fanoutMs = "fanout_ms"
        }
    }

    func register(on router: Router) {
        router.post("/v1/bench/echo") { request in
            let value = try request.decode(JSONValue.self)
            return .json(value)
        }
        let hub = webSockets
        // An idle socket that only receives broadcasts: what `portaria-bench ws` opens.
        router.get("/v1/bench/ws") { request in
            try hub.upgrade(request, topics: [Self.topic])
        }
        BenchWebSocketEcho(hub: hub).register(on: router)
        router.post("/v1/bench/broadcast") { request in
            let body = try request.decode(Broadcast.self)
            let started = ContinuousClock.now
            let count = await hub.broadcast(text: body.payload, topic: Self.topic)
            let elapsed = ContinuousClock.now - started
            let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            return .json(BroadcastResult(connections: count, fanoutMs: milliseconds))
        }
    }
}
