import Foundation
import PortariaTestSupport
import PortariaWebSocket
import Testing

/// Bodies in memory: a server-wide budget for buffered request bodies shared between
/// client addresses (decision 0060), a minimum rate for a body (decision 0061), and a
/// per-address connection limit.
@Suite("Request bodies and connections per address")
struct BodyBudgetTests {
    /// A complete 600 KB POST to a route that does not exist (404 once its body is in).
    static func probe(_ server: TestServer, from source: String? = nil) async throws -> RawResponse {
        try await server.request("POST", "/v1/no-such-route", headers: [("Content-Type", "application/octet-stream")],
                                 body: [UInt8](repeating: 0x61, count: 600_000), timeout: .seconds(20), from: source)
    }

    /// Opens a POST from `source` declaring `declared` body bytes and sends the head and
    /// the first `sent` of them; the connection stays open, the body unfinished. Returns once
    /// the server's kernel has the bytes, so uploads held one after another are read in turn
    /// and a later probe does not race them for the budget.
    static func holdUpload(_ server: TestServer, from source: String? = nil, declared: Int, sent: Int) async throws -> RawConnection {
        let connection = try await server.connect(from: source)
        let head = "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(declared)\r\n\r\n"
        try await offload {
            try connection.send(Array(head.utf8) + [UInt8](repeating: 0x20, count: sent))
            _ = connection.waitUntilDelivered()
        }
        return connection
    }

    @Test("an address holding more than the budget leaves free gets 503 with Retry-After; the budget returns when its uploads go")
    func bufferedBodyBudget() async throws {
        try await TestServer.with(["--demo", "--max-buffered-body-mb", "8"]) { server in
            #expect(try await Self.probe(server).status == 404, "a 600 KB body fits an idle server")
            // Nine uploads from one address stop 100 KB short of their declared 1,000,000
            // bytes. An address may hold at most what the 8 MiB budget leaves free, so it
            // keeps four of them (3.6 MB) and its own 600 KB body no longer fits.
            var hoarders: [RawConnection] = []
            for _ in 0..<9 { hoarders.append(try await Self.holdUpload(server, declared: 1_000_000, sent: 900_000)) }
            // Once the server has read them all, the probe does not fit.
            var busy: RawResponse?
            var seen: [String] = []
            let refused = await eventually(within: .seconds(30), every: .milliseconds(200)) {
                let response: RawResponse
                do { response = try await Self.probe(server) } catch {
                    seen.append("\(error)")
                    return false
                }
                seen.append(String(response.status))
                guard response.status == 503 else { return false }
                busy = response
                return true
            }
            #expect(refused, "no 503 while 8.1 MB of bodies were held under an 8 MiB budget: \(seen.suffix(5))\n\(server.log.suffix(2500))")
            #expect(busy?.header("retry-after") == "5")
            #expect((try? busy?.errorEnvelope().code) == .serviceUnavailable)

            for connection in hoarders { connection.abort() }
            let recovered = await eventually(within: .seconds(30), every: .milliseconds(200)) {
                (try? await Self.probe(server))?.status == 404
            }
            #expect(recovered, "the budget was not given back when the connections went away")
        }
    }

    @Test("while one address holds uploads that fill the whole budget by their declared sizes, another address logs in and uploads 600 KB")
    func oneAddressCannotSpendTheBudgetForOthers() async throws {
        try await TestServer.with(["--demo", "--max-buffered-body-mb", "8"]) { server in
            // 127.0.0.1 declares 8 × 1 MiB (the whole budget) and sends one byte of each,
            // then sends 950 KB of nine more 1,000,000-byte uploads and holds them all.
            var held: [RawConnection] = []
            for _ in 0..<8 { held.append(try await Self.holdUpload(server, declared: 1 << 20, sent: 1)) }
            for _ in 0..<9 { held.append(try await Self.holdUpload(server, declared: 1_000_000, sent: 950_000)) }
            defer { held.forEach { $0.abort() } }
            // Once the server has read them, 127.0.0.1 is refused more…
            var seen: [Int] = []
            let heavy = await eventually(within: .seconds(30), every: .milliseconds(200)) {
                guard let status = try? await Self.probe(server).status else { return false }
                seen.append(status)
                return status == 503
            }
            #expect(heavy, "127.0.0.1 was never refused while holding its uploads: \(seen.suffix(5))")
            // …and 127.0.0.2 is served meanwhile: a login, and a body of 600 KB.
            let login = try await server.request("POST", "/v1/auth/login", headers: [("Content-Type", "application/json")],
                                                 body: Array(#"{"username":"maria","password":"demo1234"}"#.utf8), from: "127.0.0.2")
            #expect(login.status == 200, "login from another address: \(login.status) \(login.text)")
            #expect(try await Self.probe(server, from: "127.0.0.2").status == 404, "a 600 KB body from another address was refused")
        }
    }

    @Test("a body trickled slower than --body-min-rate is cut off after --body-timeout-seconds although every byte restarts the idle timer")
    func trickledBodyIsCutOff() async throws {
        // The environment, not options: a server that does not know them still starts.
        try await TestServer.with([], environment: ["PORTARIA_BODY_TIMEOUT_SECONDS": "2"]) { server in
            let tricklers = try await (0..<3).asyncMap { _ in try await Self.holdUpload(server, declared: 1000, sent: 0) }
            defer { tricklers.forEach { $0.close() } }
            // One byte every half second for up to 40 s: far under the idle timeout (30 s)
            // between bytes, far slower than 1024 bytes per second.
            let closed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for connection in tricklers {
                    group.addTask {
                        try await offload { connection.trickleUntilClosed([UInt8](repeating: 0x20, count: 80), interval: .milliseconds(500)) }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(closed == tricklers.count, "\(tricklers.count - closed) of \(tricklers.count) trickled bodies still open after 40 s")
            #expect(try await server.request("GET", "/healthz").status == 200)
        }
    }

    @Test("one address may hold --max-connections-per-ip connections; the next is refused, others are not affected")
    func connectionsPerAddress() async throws {
        try await TestServer.with(["--demo", "--max-connections-per-ip", "20"]) { server in
            var held: [RawConnection] = []
            for _ in 0..<20 { held.append(try await server.connect()) }
            // The 21st from 127.0.0.1 is accepted by the kernel and closed by the server.
            let extra = try await server.connect()
            let closed = try await offload { extra.waitForClose(timeout: .seconds(10)) }
            #expect(closed, "a 21st connection from one address was served")
            held.removeFirst().close()
            let freed = await eventually(within: .seconds(10)) {
                (try? await server.request("GET", "/healthz", timeout: .seconds(3)))?.status == 200
            }
            #expect(freed)
            held.removeAll()
        }
    }

    @Test("an address holding --max-connections-per-ip realtime sockets is answered 429 for the next handshake; another address is served; a closed socket frees its place")
    func realtimeSocketsPerAddress() async throws {
        try await TestServer.with(["--demo", "--max-connections-per-ip", "3"]) { server in
            let maria = try await RealtimeTests.login(server, "maria")
            var held: [RawConnection] = []
            defer { held.forEach { $0.close() } }
            for _ in 0..<3 {
                held.append(try await Self.realtimeHandshake(server, maria, from: "127.0.0.3", until: { $0 == 101 }).connection)
            }
            let (refusedConnection, refused) = try await Self.realtimeHandshake(server, maria, from: "127.0.0.3")
            defer { refusedConnection.close() }
            #expect(refused.status == 429, "a fourth realtime socket from one address was admitted")
            #expect(refused.header("retry-after") == "5")
            #expect((try refused.json()["error"] as? [String: Any])?["code"] as? String == "RATE_LIMITED")
            #expect(try await server.request("GET", "/healthz").status == 200)
            let other = try await Self.realtimeHandshake(server, maria, from: "127.0.0.4")
            defer { other.connection.close() }
            #expect(other.response.status == 101)

            held.removeFirst().close()
            held.append(try await Self.realtimeHandshake(server, maria, from: "127.0.0.3", until: { $0 == 101 }).connection)
        }
    }

    /// A `/v1/realtime` handshake from `source` and its answer (a 101 is returned, not
    /// skipped), tried again until the status satisfies `accept` — also when libmicrohttpd
    /// drops the connection unanswered (its own per-address count still holds an upgraded
    /// connection until the connection has been handed back).
    static func realtimeHandshake(_ server: TestServer, _ session: RealtimeTests.Session, from source: String,
                                  until accept: @escaping @Sendable (Int) -> Bool = { _ in true }) async throws -> (connection: RawConnection, response: RawResponse) {
        let head = "GET /v1/realtime HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: \(WebSocketHandshake.makeKey())\r\n"
            + "Authorization: Bearer \(session.token)\r\nX-Company-Id: \(session.companyID)\r\n\r\n"
        return try await RawConnection.firstAnswer(port: server.port, from: source, sending: head, until: accept)
    }
}
