import Foundation
import Testing

/// Bodies in memory: a server-wide budget for buffered request
/// bodies, and a per-address connection limit.
@Suite("Request bodies and connections per address")
struct BodyBudgetTests {
    /// A complete 600 KB POST to a route that does not exist (404 once its body is in).
    static func probe(_ server: TestServer) async throws -> RawResponse {
        try await server.request("POST", "/v1/no-such-route", headers: [("Content-Type", "application/octet-stream")],
                                 body: [UInt8](repeating: 0x61, count: 600_000), timeout: .seconds(20))
    }

    @Test("bodies held across connections beyond --max-buffered-body-mb get 503 with Retry-After; the budget returns when they go")
    func bufferedBodyBudget() async throws {
        try await TestServer.with(["--demo", "--max-buffered-body-mb", "8"]) { server in
            #expect(try await Self.probe(server).status == 404, "a 600 KB body fits an idle server")
            // Nine uploads stop 100 KB short of their declared 1,000,000 bytes: 8.1 MB of
            // the 8 MiB budget held, so a 600 KB body no longer fits.
            var hoarders: [RawConnection] = []
            for _ in 0..<9 {
                let connection = try await server.connect()
                let head = "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
                try await offload { try connection.send(Array(head.utf8) + [UInt8](repeating: 0x20, count: 900_000)) }
                hoarders.append(connection)
            }
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
}
