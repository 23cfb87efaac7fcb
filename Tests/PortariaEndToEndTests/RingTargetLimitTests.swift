import Foundation
import PortariaCore
import PortariaTestSupport
import Testing

/// Rings are capped per unit and per gate across every address (`--unit-ring-limit`,
/// `--gate-ring-limit`), not only per address: many addresses cannot ring one unit (and
/// push to every resident's phone) without end. The caps live in the database, so
/// instances on one PostgreSQL share them.
@Suite("Ring caps per unit and per gate")
struct RingTargetLimitTests {
    /// The demo units by label.
    static func units(_ server: TestServer) async throws -> [String: String] {
        let gate = try await server.request("GET", "/v1/gates/demo-gate")
        let units = try #require(try gate.json()["units"] as? [[String: Any]])
        var byLabel: [String: String] = [:]
        for unit in units {
            if let label = unit["label"] as? String, let id = unit["id"] as? String { byLabel[label] = id }
        }
        return byLabel
    }

    /// One gate POST as the forwarded client `client` (the server trusts 127.0.0.1).
    static func ring(_ server: TestServer, unit: String, from client: String) async throws -> RawResponse {
        try await server.request("POST", "/v1/gates/demo-gate/visits",
                                 headers: [("Content-Type", "application/json"), ("X-Forwarded-For", client)],
                                 body: Array(#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Visitante"}"#.utf8))
    }

    /// Visits the operator sees (at most 100).
    static func visitCount(_ server: TestServer) async throws -> Int {
        let session = try await RealtimeTests.login(server, "portaria")
        let list = try await server.request("GET", "/v1/visits?limit=100",
                                            headers: [("Authorization", "Bearer \(session.token)"), ("X-Company-Id", session.companyID)])
        return (try list.json()["visits"] as? [[String: Any]])?.count ?? -1
    }

    /// A 429 of a ring cap: `Retry-After`, `RATE_LIMITED`, the cap named, a pt-BR sentence.
    static func expectCapRefusal(_ reply: RawResponse, limit: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(reply.status == 429, "\(reply.status) \(reply.text.prefix(300))", sourceLocation: sourceLocation)
        let retryAfter = Int(reply.header("Retry-After") ?? "") ?? 0
        #expect((1...60).contains(retryAfter), "Retry-After \(String(describing: reply.header("Retry-After")))",
                sourceLocation: sourceLocation)
        let error = try reply.errorEnvelope()
        #expect(error.code == .rateLimited, sourceLocation: sourceLocation)
        #expect(error.details["limit"] == .string(limit), "\(error.details)", sourceLocation: sourceLocation)
        #expect(error.message.contains("Aguarde um minuto"), "\(error.message)", sourceLocation: sourceLocation)
    }

    @Test("25 rings of one unit from 25 addresses: the first 6 are accepted, the other 19 get 429 naming the unit; another unit still rings")
    func unitCapAcrossAddresses() async throws {
        try await TestServer.with(["--demo", "--trusted-proxies", "127.0.0.1"]) { server in
            let units = try await Self.units(server)
            let a101 = try #require(units["A-101"]), a102 = try #require(units["A-102"])
            var accepted = 0
            for client in 1...25 {
                let reply = try await Self.ring(server, unit: a101, from: "198.51.100.\(client)")
                if reply.status == 201 {
                    accepted += 1
                } else {
                    try Self.expectCapRefusal(reply, limit: "unit")
                }
            }
            #expect(accepted == 6, "\(accepted) of 25 rings of A-101 were accepted")
            // The refused rings created nothing (and so pushed nothing).
            #expect(try await Self.visitCount(server) == 6)
            // Another unit of the same building is not affected.
            #expect(try await Self.ring(server, unit: a102, from: "198.51.100.200").status == 201)
            print("unit cap: 25 rings of A-101 from 25 addresses → \(accepted) accepted, \(25 - accepted) × 429")
        }
    }

    @Test("a gate's cap counts every unit and address: past --gate-ring-limit the gate answers 429 naming the gate")
    func gateCapAcrossUnitsAndAddresses() async throws {
        try await TestServer.with(["--demo", "--trusted-proxies", "127.0.0.1", "--gate-ring-limit", "8"]) { server in
            let ids = Array(try await Self.units(server).values).sorted()
            try #require(ids.count >= 3)
            var accepted = 0
            for attempt in 0..<12 {
                let reply = try await Self.ring(server, unit: ids[attempt % ids.count], from: "203.0.113.\(attempt + 1)")
                if reply.status == 201 {
                    accepted += 1
                } else {
                    try Self.expectCapRefusal(reply, limit: "gate")
                }
            }
            #expect(accepted == 8, "\(accepted) of 12 rings at the gate were accepted")
        }
    }

    @Test("the caps are options: --unit-ring-limit raised lets 25 rings of one unit through")
    func capsAreConfigurable() async throws {
        try await TestServer.with(["--demo", "--trusted-proxies", "127.0.0.1", "--unit-ring-limit", "100"]) { server in
            let a101 = try #require(try await Self.units(server)["A-101"])
            for client in 1...25 {
                #expect(try await Self.ring(server, unit: a101, from: "198.51.100.\(client)").status == 201)
            }
        }
    }

    @Test("PostgreSQL, two instances: 25 concurrent rings of one unit from 25 addresses, split between the instances, are exactly 6 accepted",
          .requires(.postgres))
    func unitCapSharedByInstances() async throws {
        try await TwoInstances.with(a: ["--trusted-proxies", "127.0.0.1"], b: ["--trusted-proxies", "127.0.0.1"]) { a, b in
            let a101 = try #require(try await Self.units(a)["A-101"])
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for client in 1...25 {
                    group.addTask { try await Self.ring(client % 2 == 0 ? a : b, unit: a101, from: "198.51.100.\(client)").status }
                }
                var all: [Int] = []
                for try await status in group { all.append(status) }
                return all
            }
            #expect(statuses.filter { $0 == 201 }.count == 6, "\(statuses.sorted())")
            #expect(statuses.filter { $0 == 429 }.count == 19, "\(statuses.sorted())")
            #expect(try await Self.visitCount(b) == 6)
        }
    }
}
