import Foundation
import Testing

/// Behind a trusted proxy, per-IP limits apply to the forwarded client address.
@Suite("Trusted proxy")
struct ProxyTests {
    static func ring(_ server: TestServer, from client: String?) async throws -> Int {
        let gate = try await server.request("GET", "/v1/gates/demo-gate")
        let units = try #require(try gate.json()["units"] as? [[String: Any]])
        let unit = try #require(units.first?["id"] as? String)
        var headers = [("Content-Type", "application/json")]
        if let client { headers.append(("X-Forwarded-For", client)) }
        return try await server.request("POST", "/v1/gates/demo-gate/visits", headers: headers,
                                        body: Array(#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Proxy"}"#.utf8)).status
    }

    @Test("the gate limit counts each forwarded client when the proxy is trusted, and ignores the header otherwise")
    func gateLimitPerForwardedClient() async throws {
        try await TestServer.with(["--demo", "--gate-limit", "1", "--trusted-proxies", "127.0.0.1"]) { server in
            let status1 = try await Self.ring(server, from: "198.51.100.1")
            #expect(status1 == 201)
            let status2 = try await Self.ring(server, from: "198.51.100.2")
            #expect(status2 == 201)
            let status3 = try await Self.ring(server, from: "198.51.100.1")
            #expect(status3 == 429)
        }
        try await TestServer.with(["--demo", "--gate-limit", "1"]) { server in
            let status4 = try await Self.ring(server, from: "198.51.100.1")
            #expect(status4 == 201)
            // Without --trusted-proxies a client cannot pick a fresh bucket with the header.
            let status5 = try await Self.ring(server, from: "198.51.100.2")
            #expect(status5 == 429)
        }
    }
}
