import Foundation
import PortariaCore

/// `/healthz` (liveness), `/readyz` (readiness) and the served contract.
struct SystemRoutes {
    let database: any SQLDatabase
    let openAPIPath: String
    /// PostgreSQL: whether the cross-instance listener is connected; nil on SQLite.
    var listenerConnected: (@Sendable () -> Bool)? = nil
    /// The versions this binary's schema needs (`/readyz`'s "migrations current").
    var requiredMigrations: Set<Int> = Set(Schema.migrations.map(\.version))

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
        let database = database
        let check = SharedCheck { (try? await database.ping()) != nil }
        // The two answers never change: encoded once.
        let healthy = HTTPResponse.json(Health(status: "ok", database: "ok"))
        var unhealthy = HTTPResponse.json(Health(status: "unavailable", database: "unreachable"), status: 503)
        unhealthy.headers.append(("Retry-After", "5"))
        router.get("/healthz") { [unhealthy] _ in await check.run() ? healthy : unhealthy }
        let readiness = Readiness(database: database, listenerConnected: listenerConnected,
                                  requiredMigrations: requiredMigrations)
        router.get("/readyz") { _ in await readiness.answer() }
        let path = openAPIPath
        let cached = Locked<[UInt8]?>(nil)
        router.add(APIRoutes.openAPIDocument) { _ in
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

/// `/healthz`'s database check, shared by the requests that arrive while it runs: a burst
/// of probes costs the database one query at a time, not one each, and every answer comes
/// from a query that was still running when the request arrived. A check that has not
/// answered within `timeout` (a half-open connection to the database) answers "unhealthy"
/// to everyone waiting for it, and the next probe starts a fresh one.
final class SharedCheck: Sendable {
    private struct Round {
        var waiting: [CheckedContinuation<Bool, Never>] = []
        var number: UInt64
        var deadline: Task<Void, Never>?
    }

    private struct State {
        /// Nil while no check runs.
        var round: Round?
        /// Rounds started so far: numbers the running one, so a late answer ends nothing.
        var started: UInt64 = 0
    }

    private let check: @Sendable () async -> Bool
    private let timeout: Duration
    private let state = Locked(State())

    init(timeout: Duration = .seconds(5), _ check: @escaping @Sendable () async -> Bool) {
        self.check = check
        self.timeout = timeout
    }

    /// Requests waiting for the running check (tests).
    var waiters: Int { state.withLock { $0.round?.waiting.count ?? 0 } }

    func run() async -> Bool {
        await withCheckedContinuation { continuation in
            let started: UInt64? = state.withLock { state in
                if state.round != nil {
                    state.round?.waiting.append(continuation)
                    return nil
                }
                state.started += 1
                state.round = Round(waiting: [continuation], number: state.started)
                return state.started
            }
            guard let started else { return }
            let deadline = Task { [timeout] in
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { self.answer(started, false) }
            }
            state.withLock { if $0.round?.number == started { $0.round?.deadline = deadline } }
            Task { self.answer(started, await self.check()) }
        }
    }

    /// Ends round `number` with `healthy`, once: the check's answer or the deadline, whichever
    /// comes first.
    private func answer(_ number: UInt64, _ healthy: Bool) {
        let ended = state.withLock { state -> Round? in
            guard let taken = state.round, taken.number == number else { return nil }
            state.round = nil
            return taken
        }
        guard let ended else { return }
        ended.deadline?.cancel()
        for waiter in ended.waiting { waiter.resume(returning: healthy) }
    }
}

/// Whether this instance can serve, for a load balancer: the database answers, its schema
/// has every migration this binary needs, the cross-instance listener is connected
/// (PostgreSQL: without it this instance would miss other instances' events) and the
/// database takes writes (not a read-only PostgreSQL, not a full disk). 200 `{"status": "ready", "checks"}`, or
/// 503 with `Retry-After` and the checks that failed named.
struct Readiness: Sendable {
    let database: any SQLDatabase
    let listenerConnected: (@Sendable () -> Bool)?
    let requiredMigrations: Set<Int>

    func checks() async -> [String: String] {
        var checks: [String: String] = [:]
        var readOnly = false
        do {
            let (applied, setting) = try await database.read { connection -> ([Int], String?) in
                let versions = try connection.query("SELECT version FROM schema_migrations", []).compactMap { try $0.int("version").map(Int.init) }
                guard connection.dialect == .postgres else { return (versions, nil) }
                // A standby, or a database set read-only during a failover.
                return (versions, try connection.queryOne("SELECT current_setting('transaction_read_only') AS read_only", [])?.string("read_only"))
            }
            checks["database"] = "ok"
            checks["migrations"] = requiredMigrations.isSubset(of: Set(applied)) ? "ok" : "pending"
            readOnly = setting == "on"
        } catch {
            checks["database"] = "unreachable"
            checks["migrations"] = "unknown"
        }
        if let listenerConnected { checks["listener"] = listenerConnected() ? "ok" : "disconnected" }
        if readOnly { checks["writes"] = "read_only" }
        else if database.faultWatch?.currentFault == "full" { checks["writes"] = "storage_full" }
        else { checks["writes"] = "ok" }
        return checks
    }

    func answer() async -> HTTPResponse {
        let checks = await checks()
        let ready = checks.values.allSatisfy { $0 == "ok" }
        let body = JSONValue.object([
            "status": .string(ready ? "ready" : "not_ready"),
            "checks": .object(checks.mapValues { .string($0) }),
        ])
        var response = HTTPResponse(status: ready ? 200 : 503, headers: [("Content-Type", "application/json")],
                                    body: Array(body.jsonText.utf8))
        if !ready { response.headers.append(("Retry-After", String(StorageFaultAnswer.unavailableRetryAfter))) }
        return response
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
