import Foundation
import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Decision 0029: one owner starts and stops every part of `portaria serve`, stopping in
/// the reverse order with each stop awaited. Checked from outside, on the real binary,
/// with everything that can be busy busy when SIGTERM arrives.
@Suite("One lifecycle: SIGTERM while everything is busy", .serialized)
struct LifecycleTests {
    typealias R = RealtimeTests

    /// How long a frame may take on a loaded machine (the suites run in parallel).
    static let patience: Duration = .seconds(30)

    static let backends: [String] = casesAvailable(["sqlite", "postgres"]) { $0 == "postgres" ? .postgres : nil }

    /// What a log line may not say after SIGTERM: a component that overran, a loop that
    /// used the database after it closed, a drain that waited out its grace period.
    static let unclean = ["component is slow to stop", "database closed", "requests still running after grace period",
                          "upgraded sockets not handed back", "component failed to start"]

    @Test("open sockets, a live video call, visits being created and the push worker delivering: every socket gets 1001, the process exits 0 promptly and cleanly, and the database opens again at once",
          arguments: backends)
    func busyShutdown(_ backend: String) async throws {
        var arguments = ["--demo", "--gate-limit", "100000", "--unit-ring-limit", "100000", "--gate-ring-limit", "100000"]
        var drop: (() -> Void)?
        if backend == "postgres" {
            let database = try #require(try TestPostgres.createDatabase())
            arguments += ["--database", database.url]
            drop = database.drop
        }
        defer { drop?() }
        let server = try await TestServer.start(arguments)
        do {
            try await Self.busyShutdown(server, arguments: arguments)
        } catch {
            await server.stop()
            throw error
        }
    }

    static func busyShutdown(_ server: TestServer, arguments: [String]) async throws {
        /// A failed step names itself and shows the server's log.
        func step<T>(_ name: String, _ body: () async throws -> T) async throws -> T {
            do { return try await body() } catch { throw HarnessError("\(name): \(error)\n--- server log ---\n\(server.log.suffix(4000))") }
        }
        // A phone whose pushes the log-only sender "delivers": the push worker has work
        // for every visit rung below.
        let maria = try await R.login(server, "maria")
        let device = try await server.request("POST", "/v1/devices",
            headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID), ("Content-Type", "application/json")],
            body: Array(#"{"installation_id":"lifecycle-phone","platform":"android","push_token":"lifecycle-push-maria"}"#.utf8))
        try #require(device.status == 201, "device: \(device.status) \(device.text)")

        // Sockets: the gate page, the phone that will answer, a neighbour.
        let (visit, visitorToken) = try await R.ring(server)
        let ticket = try await server.request("POST", "/v1/realtime/tickets", headers: [("Authorization", "Bearer \(visitorToken)")])
        let visitorTicket = try #require(try ticket.json()["ticket"] as? String)
        let visitor = R.Reader(try await WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/v1/realtime?ticket=\(visitorTicket)"))
        try await step("the gate page's socket subscribes") { try await visitor.waitUntilSubscribed(timeout: Self.patience) }
        let phone = R.Reader(try await R.socket(server, maria, query: "?device_id=phone-1"))
        try await step("the phone's socket subscribes") { try await phone.waitUntilSubscribed(timeout: Self.patience) }
        let neighbour = R.Reader(try await R.socket(server, try await R.login(server, "ana")))
        try await step("the neighbour's socket subscribes") { try await neighbour.waitUntilSubscribed(timeout: Self.patience) }

        // A live call: answered from the phone, offer and answer relayed.
        let answered = try await server.request("POST", "/v1/visits/\(visit)/answer",
            headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID),
                      ("Idempotency-Key", UUID().uuidString), ("Content-Type", "application/json")],
            body: Array(#"{"device_id":"phone-1"}"#.utf8))
        try #require(answered.status == 200, "\(answered.text)")
        // The feed has started the call once the phone sees the answer (on PostgreSQL the
        // feed learns of it through NOTIFY, after the HTTP answer).
        _ = try await step("the phone sees the answer") { try await phone.until("visit.answered", timeout: Self.patience) }
        let sdp = #""v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n""#
        visitor.connection.send(text: CallSignalingTests.frame("call.offer", #"{"visit_id":"\#(visit)","sdp":\#(sdp)}"#))
        _ = try await step("the phone gets the offer") { try await phone.until("call.offer", timeout: Self.patience) }
        phone.connection.send(text: CallSignalingTests.frame("call.answer", #"{"visit_id":"\#(visit)","sdp":\#(sdp)}"#))
        _ = try await step("the gate page gets the answer") { try await visitor.until("call.answer", timeout: Self.patience) }

        // The push worker has delivered the first ring's push…
        let delivered = await eventually(within: .seconds(30)) {
            server.log.split(separator: "\n").contains { $0.contains("push NOT sent") && $0.contains(visit) }
        }
        try #require(delivered, "the push worker never delivered the first ring:\n\(server.log.suffix(3000))")

        // …and keeps getting more: visits are created (each rings, each enqueues pushes)
        // from two clients until the server stops answering.
        let created = Locked(0)
        let unit = try await Self.unitA101(server)
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        while !Task.isCancelled {
                            guard let response = try? await server.postJSON("/v1/gates/demo-gate/visits",
                                    #"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Load"}"#)
                            else { return }   // refused or reset: the server is going
                            if response.status == 201 { created.withLock { $0 += 1 } }
                            if response.status == 503 { return }
                        }
                    }
                }
            }
        }
        let loaded = await eventually(within: .seconds(30)) { created.current >= 3 }
        try #require(loaded, "no visits were created under load")

        let logBefore = server.log.utf8.count
        let signalled = ContinuousClock.now
        server.signal(SIGTERM)

        // Every socket is told the server is going away (1001), the call's two ends too.
        for (name, reader) in [("visitor", visitor), ("phone", phone), ("neighbour", neighbour)] {
            #expect(await reader.closeCode(timeout: .seconds(20)) == 1001, "\(name)'s socket was not closed with 1001")
        }
        // Promptly: the WebSocket close handshakes (at most 2 s), a drain of the requests
        // in flight (milliseconds each), then every loop awaited. 30 s is for a loaded
        // machine under a sanitizer, far below the 10 s grace + 30 s handler wait a stuck
        // drain would take.
        let exited = await waitForExit(server.process, within: .seconds(30))
        let took = ContinuousClock.now - signalled
        load.cancel()
        await load.value
        let after = String(decoding: Array(server.log.utf8.dropFirst(logBefore)), as: UTF8.self)
        #expect(exited, "still running \(took) after SIGTERM:\n\(after.suffix(4000))")
        guard exited else { return }
        #expect(server.process.terminationReason == .exit && server.process.terminationStatus == 0,
                "exit: reason \(server.process.terminationReason.rawValue), status \(server.process.terminationStatus)\n\(after.suffix(4000))")
        for phrase in Self.unclean {
            #expect(!after.contains(phrase), "after SIGTERM the log says \"\(phrase)\":\n\(after.suffix(4000))")
        }
        #expect(after.contains(#""msg":"stopped""#), "no \"stopped\" line:\n\(after.suffix(4000))")
        print("busy shutdown (\(arguments.contains("--database") ? "postgres" : "sqlite")): exited \(took) after SIGTERM; \(created.current) visits created under load")

        // The database (and on SQLite its file lock) was released: a new process on the
        // same directory and database starts and serves at once.
        let again = try await TestServer.start(arguments, directory: server.directory)
        await again.expectHealthy()
        let status = await again.stop(grace: .seconds(30))
        #expect(status == 0, "the restarted server did not exit cleanly:\n\(again.finalLog.suffix(3000))")
    }

    /// A-101's id at the demo gate.
    static func unitA101(_ server: TestServer) async throws -> String {
        let gate = try await server.request("GET", "/v1/gates/demo-gate")
        let units = try #require(try gate.json()["units"] as? [[String: Any]])
        return try #require(units.first { $0["label"] as? String == "A-101" }?["id"] as? String)
    }
}
