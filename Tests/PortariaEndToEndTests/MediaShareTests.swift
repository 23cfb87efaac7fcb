import Foundation
import PortariaCore
import Testing

/// Visitors' media is anonymous: shares of the building's 24 h quota per address and per
/// visit keep a few visitors from spending it for everyone (decision 0070), and media a
/// resident was already shown is fixed once the ring moves on (decision 0072).
@Suite("Visitor media: quota shares and media fixed once shown")
struct MediaShareTests {
    typealias R = RealtimeTests
    typealias Tokens = SecuritySuites.VisitorTokenTests

    /// A visit rung as the forwarded client `client`; returns (visit id, visitor token).
    static func ring(_ server: TestServer, unit: String, from client: String) async throws -> (String, String) {
        let created = try await RingTargetLimitTests.ring(server, unit: unit, from: client)
        try #require(created.status == 201, "\(created.status) \(created.text)")
        let body = try created.json()
        return (try #require((body["visit"] as? [String: Any])?["id"] as? String), try #require(body["visitor_token"] as? String))
    }

    /// Makes A-101 ring Maria for 120 s before João (the longest step): a visitor may replace
    /// media only during the first step, and a test that replaces must not depend on how
    /// fast a loaded machine answers.
    static func slowFirstStep(_ server: TestServer) async throws {
        let maria = try await R.login(server, "maria")
        let unit = try #require(try await RingTargetLimitTests.units(server)["A-101"])
        let current = try await server.get("/v1/units/\(unit)/settings", bearer: maria.token, company: maria.companyID)
        guard case .object(var settings) = try JSONCoding.decoder().decode(JSONValue.self, from: Data(current.body))["settings"] ?? .null else {
            throw HarnessError("no settings in \(current.text)")
        }
        settings["ring_step_seconds"] = .number(120)
        settings["ring_window_seconds"] = .number(600)
        let changed = try await server.request("PUT", "/v1/units/\(unit)/settings",
                                               headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID),
                                                         ("Content-Type", "application/json")],
                                               body: Array(JSONValue.object(settings).jsonText.utf8))
        try #require(changed.status == 200, "\(changed.status) \(changed.text)")
    }

    static func upload(_ server: TestServer, _ token: String, _ kind: String, _ bytes: [UInt8], from client: String) async throws -> RawResponse {
        try await server.request("POST", "/v1/visitor/visit/\(kind)",
                                 headers: [("Authorization", "Bearer \(token)"), ("X-Forwarded-For", client),
                                           ("Content-Type", kind == "photo" ? "image/jpeg" : "audio/ogg")], body: bytes)
    }

    @Test("one address's visitors cannot fill a 32 MiB quota with 2 MiB photos: past its 4 MiB share 429, and another address still attaches a photo")
    func addressShare() async throws {
        try await TestServer.with(["--demo", "--trusted-proxies", "127.0.0.1", "--media-quota-mb", "32",
                                   "--gate-limit", "100"]) { server in
            let units = Array(try await RingTargetLimitTests.units(server).values).sorted()
            let attacker = "198.51.100.7"
            var accepted = 0, refused = 0
            // 16 photos of 2 MiB would be the whole quota (spread over the units: at most 6 each, the unit cap).
            for attempt in 0..<16 {
                let (_, token) = try await Self.ring(server, unit: units[attempt % units.count], from: attacker)
                let photo = sampleJPEG(scanBytes: 2 * 1024 * 1024 - 400, marker: UInt8(0x40 + attempt))
                let reply = try await Self.upload(server, token, "photo", photo, from: attacker)
                if reply.status == 200 {
                    accepted += 1
                } else {
                    refused += 1
                    #expect(reply.status == 429, "\(reply.status) \(reply.text.prefix(200))")
                    let error = try reply.errorEnvelope()
                    #expect(error.code == .rateLimited)
                    #expect(error.details["limit"] == .string("address"), "\(error.details)")
                    #expect(Int(reply.header("Retry-After") ?? "") ?? 0 > 0)
                }
            }
            #expect(accepted == 2, "one address stored \(accepted) photos of 2 MiB")
            // Someone else still can.
            let (_, other) = try await Self.ring(server, unit: units[units.count - 1], from: "203.0.113.9")
            let reply = try await Self.upload(server, other, "photo", sampleJPEG(scanBytes: 2 * 1024 * 1024 - 400, marker: 0x77),
                                              from: "203.0.113.9")
            #expect(reply.status == 200, "\(reply.status) \(reply.text.prefix(200))")
            print("media shares: one address, 16 × 2 MiB photos against a 32 MiB quota → \(accepted) stored, \(refused) × 429; another address \(reply.status)")
        }
    }

    @Test("one visit cannot spend more than its share by replacing its photo: 429 naming the visit")
    func visitShare() async throws {
        // 256 MiB / 64 = 4 MiB a visit: the third 2 MiB photo of one visit is over it.
        try await TestServer.with(["--demo", "--media-quota-mb", "256"]) { server in
            try await Self.slowFirstStep(server)
            let (_, token) = try await R.ring(server)
            for attempt in 0..<2 {
                let reply = try await Tokens.upload(server, token, "photo", sampleJPEG(scanBytes: 2 * 1024 * 1024 - 400, marker: UInt8(0x50 + attempt)))
                #expect(reply.status == 200, "\(reply.status) \(reply.text.prefix(200))")
            }
            let over = try await Tokens.upload(server, token, "photo", sampleJPEG(scanBytes: 2 * 1024 * 1024 - 400, marker: 0x5F))
            #expect(over.status == 429)
            #expect(try over.errorEnvelope().details["limit"] == .string("visit"))
        }
    }

    @Test("after the first resident declines, the visitor cannot replace the photo the next resident will see (409); a recado not yet sent may still be added")
    func mediaFixedAfterDecline() async throws {
        try await TestServer.with(["--demo"]) { server in
            let maria = try await R.login(server, "maria")
            let joao = try await R.login(server, "joao")
            // A-101 rings Maria first (for 120 s, unless she declines), then João.
            try await Self.slowFirstStep(server)
            let (visit, token) = try await R.ring(server)
            #expect(try await Tokens.upload(server, token, "photo", sampleJPEG(marker: 0x61)).status == 200)
            // Before anyone declined the visitor may still retake it.
            #expect(try await Tokens.upload(server, token, "photo", sampleJPEG(marker: 0x62)).status == 200)
            let shown = try await server.get("/v1/visits/\(visit)/photo", bearer: maria.token, company: maria.companyID)
            #expect(shown.status == 200)

            #expect(try await Tokens.act(server, maria, visit: visit, "decline").status == 200)
            let replaced = try await Tokens.upload(server, token, "photo", sampleJPEG(marker: 0x63))
            #expect(replaced.status == 409, "\(replaced.status) \(replaced.text.prefix(200))")
            #expect(try replaced.errorEnvelope().code == .visitMediaFrozen)
            let seen = try await server.get("/v1/visits/\(visit)/photo", bearer: joao.token, company: joao.companyID)
            #expect(seen.body == shown.body, "the photo João is shown differs from the one Maria declined")

            #expect(try await Tokens.upload(server, token, "voice_message", Tokens.ogg(seconds: 3)).status == 200)
            #expect(try await Tokens.upload(server, token, "voice_message", Tokens.ogg(seconds: 4)).status == 409)
        }
    }
}
