import Foundation
@testable import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A structurally valid baseline JPEG (what the server's sniffer accepts) whose scan
/// carries `scanBytes` bytes, so a test can choose the stored size; `marker` varies them.
func sampleJPEG(scanBytes: Int = 16, marker: UInt8 = 0x12) -> [UInt8] {
    func segment(_ type: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [0xFF, type, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
    }
    var bytes: [UInt8] = [0xFF, 0xD8]
    bytes += segment(0xE0, Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0])
    bytes += segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
    bytes += segment(0xC0, [8, 0, 1, 0, 1, 1, 1, 0x11, 0])
    bytes += segment(0xC4, [0] + [UInt8](repeating: 0, count: 15) + [1] + [0])
    bytes += segment(0xDA, [1, 1, 0, 0, 63, 0])
    bytes += [UInt8](repeating: marker, count: scanBytes) + [0xFF, 0xD9]
    return bytes
}

extension SecuritySuites {
    @Suite("Abuse limits: visitor tokens")
    struct VisitorTokenTests {
        typealias R = RealtimeTests

        static func act(_ server: TestServer, _ session: R.Session, visit: String, _ action: String, body: String = "{}") async throws -> RawResponse {
            try await server.post("/v1/visits/\(visit)/\(action)", json: body, bearer: session.token, company: session.companyID,
                                  idempotencyKey: UUID().uuidString)
        }

        static func upload(_ server: TestServer, _ token: String, _ kind: String, _ bytes: [UInt8]) async throws -> RawResponse {
            try await server.post("/v1/visitor/visit/\(kind)", bytes: bytes, bearer: token,
                                  contentType: kind == "photo" ? "image/jpeg" : "audio/ogg")
        }

        /// An Ogg/Opus voice message of `seconds` (header pages and one audio page).
        static func ogg(seconds: Double) -> [UInt8] {
            func le(_ value: UInt64, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(value >> (8 * UInt64($0)) & 0xFF) } }
            func page(granule: UInt64, sequence: UInt64, type: UInt8, body: [UInt8]) -> [UInt8] {
                Array("OggS".utf8) + [0, type] + le(granule, 8) + le(0x1234, 4) + le(sequence, 4) + le(0, 4) + [1, UInt8(body.count)] + body
            }
            let head = Array("OpusHead".utf8) + [1, 1] + le(312, 2) + le(48_000, 4) + [0, 0, 0]
            let tags = Array("OpusTags".utf8) + le(0, 4) + le(0, 4)
            return page(granule: 0, sequence: 0, type: 2, body: head) + page(granule: 0, sequence: 1, type: 0, body: tags)
                + page(granule: UInt64(seconds * 48_000) + 312, sequence: 2, type: 4, body: [0xFC, 0xFF, 0xFE])
        }

        @Test("once a resident answers or resolves, the visitor cannot replace the photo or voice message (409 VISIT_MEDIA_FROZEN); the evidence stays")
        func mediaFreezesOnDecision() async throws {
            try await TestServer.with(["--demo"]) { server in
                let maria = try await R.login(server, "maria")
                let (visit, token) = try await R.ring(server)
                #expect(try await Self.upload(server, token, "photo", sampleJPEG(marker: 0x21)).status == 200)
                let evidence = try await server.get("/v1/visits/\(visit)/photo", bearer: maria.token, company: maria.companyID)
                #expect(evidence.status == 200)

                #expect(try await Self.act(server, maria, visit: visit, "answer").status == 200)
                let replaced = try await Self.upload(server, token, "photo", sampleJPEG(marker: 0x22))
                #expect(replaced.status == 409)
                #expect(try replaced.errorEnvelope().code == .visitMediaFrozen)
                let voice = try await Self.upload(server, token, "voice_message", Self.ogg(seconds: 3))
                #expect(voice.status == 409)

                #expect(try await Self.act(server, maria, visit: visit, "resolve", body: #"{"action":"deny"}"#).status == 200)
                let afterResolve = try await Self.upload(server, token, "photo", sampleJPEG(marker: 0x23))
                #expect(afterResolve.status == 409)
                #expect(try afterResolve.errorEnvelope().code == .visitMediaFrozen)
                let still = try await server.get("/v1/visits/\(visit)/photo", bearer: maria.token, company: maria.companyID)
                #expect(still.body == evidence.body, "the photo the decision was made on changed")
                #expect(try await server.get("/v1/visits/\(visit)/voice_message", bearer: maria.token, company: maria.companyID).status == 404)

                // A pendência (nobody answered) still takes a voice message: that is what it is for.
                let (_, pending) = try await R.ring(server)
                #expect(try await Self.upload(server, pending, "voice_message", Self.ogg(seconds: 3)).status == 200)
            }
        }

        @Test("a visitor token has 10 uploads for its visit and 30 realtime tickets per 10 minutes; past that 429 with Retry-After")
        func uploadsAndTicketsPerToken() async throws {
            try await TestServer.with(["--demo"]) { server in
                // Replacements are taken only during the first ring step (decision 0072).
                try await MediaShareTests.slowFirstStep(server)
                let (_, token) = try await R.ring(server)
                for attempt in 1...10 {
                    let response = try await Self.upload(server, token, "photo", sampleJPEG(marker: UInt8(0x30 + attempt)))
                    #expect(response.status == 200, "upload \(attempt): \(response.text)")
                }
                let eleventh = try await Self.upload(server, token, "photo", sampleJPEG(marker: 0x50))
                #expect(eleventh.status == 429)
                #expect(Int(eleventh.header("retry-after") ?? "") ?? 0 > 0)

                for attempt in 1...30 {
                    let ticket = try await server.post("/v1/realtime/tickets", bearer: token)
                    #expect(ticket.status == 201, "ticket \(attempt): \(ticket.text)")
                }
                let refused = try await server.post("/v1/realtime/tickets", bearer: token)
                #expect(refused.status == 429)
                #expect(try refused.errorEnvelope().code == .rateLimited)
                let retryAfter = Int(refused.header("retry-after") ?? "") ?? 0
                #expect((1...600).contains(retryAfter))
                // Another visitor's token is not affected.
                let (_, other) = try await R.ring(server)
                #expect(try await server.post("/v1/realtime/tickets", bearer: other).status == 201)
            }
        }

        @Test("a building's visitors may store --media-quota-mb per day: past it 507 MEDIA_QUOTA_EXCEEDED and nothing is stored; other buildings are unaffected")
        func mediaQuotaPerCompany() async throws {
            try await TestServer.with(["--demo", "--media-quota-mb", "1"]) { server in
                let maria = try await R.login(server, "maria")
                // 400 KB photos: two fit in 1 MiB, the third does not.
                var visits: [(String, String)] = []
                for _ in 0..<3 { visits.append(try await R.ring(server)) }
                #expect(try await Self.upload(server, visits[0].1, "photo", sampleJPEG(scanBytes: 400_000, marker: 0x41)).status == 200)
                #expect(try await Self.upload(server, visits[1].1, "photo", sampleJPEG(scanBytes: 400_000, marker: 0x42)).status == 200)
                let over = try await Self.upload(server, visits[2].1, "photo", sampleJPEG(scanBytes: 400_000, marker: 0x43))
                #expect(over.status == 507)
                #expect(try over.errorEnvelope().code == .mediaQuotaExceeded)
                #expect(try await server.get("/v1/visits/\(visits[2].0)/photo", bearer: maria.token, company: maria.companyID).status == 404)
                // Nothing of the refused upload is left on disk.
                let files = FileManager.default.enumerator(atPath: server.directory.appendingPathComponent("data").path)?
                    .allObjects.compactMap { $0 as? String }.filter { $0.hasSuffix(".jpg") } ?? []
                #expect(files.count == 2, "\(files)")
                // Condomínio Azul has its own allowance.
                let gate = try await server.get("/v1/gates/azul-gate")
                let unit = try #require((try gate.json()["units"] as? [[String: Any]])?.first?["id"] as? String)
                let created = try await server.post("/v1/gates/azul-gate/visits", json: #"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Azul"}"#)
                let azulToken = try #require(try created.json()["visitor_token"] as? String)
                #expect(try await Self.upload(server, azulToken, "photo", sampleJPEG(scanBytes: 400_000, marker: 0x44)).status == 200)
            }
        }

        @Test("TURN credentials go to a visitor only while its call is live: 409 CALL_NOT_ACTIVE while ringing and after the decision")
        func relayCredentialsOnlyDuringACall() async throws {
            try await TestServer.with(["--demo", "--turn-url", "turn:127.0.0.1:3478", "--turn-secret", "abuse-test-secret"]) { server in
                let maria = try await R.login(server, "maria")
                let (visit, token) = try await R.ring(server)
                let ringing = try await server.get("/v1/calls/ice_servers", bearer: token)
                #expect(ringing.status == 409)
                #expect(try ringing.errorEnvelope().code == .callNotActive)
                #expect(!ringing.text.contains("ice_servers") && !ringing.text.contains("username"))

                #expect(try await Self.act(server, maria, visit: visit, "answer").status == 200)
                let live = try await server.get("/v1/calls/ice_servers", bearer: token)
                #expect(live.status == 200)
                let servers = try #require(try live.json()["ice_servers"] as? [[String: Any]])
                #expect(servers.contains { ($0["username"] as? String)?.hasSuffix(":visitor-\(visit)") == true }, "\(live.text)")

                #expect(try await Self.act(server, maria, visit: visit, "resolve", body: #"{"action":"authorize"}"#).status == 200)
                let after = try await server.get("/v1/calls/ice_servers", bearer: token)
                #expect(after.status == 409)
                #expect(try after.errorEnvelope().code == .callNotActive)
                // Residents still get theirs (they answer the next call).
                #expect(try await server.get("/v1/calls/ice_servers", bearer: maria.token, company: maria.companyID).status == 200)
            }
        }

        @Test("the visitor's socket gets the closing frame and is closed normally when the visit closes; the token opens no new socket")
        func visitorSocketClosesWithTheVisit() async throws {
            try await TestServer.with(["--demo"]) { server in
                let maria = try await R.login(server, "maria")
                let (visit, token) = try await R.ring(server)
                let ticket = try #require(try await server.post("/v1/realtime/tickets", bearer: token).json()["ticket"] as? String)
                // since=0: whenever the join lands, every event of this visit reaches the socket.
                let visitor = R.Reader(try await WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/v1/realtime?ticket=\(ticket)&since=0"))
                #expect(try await Self.act(server, maria, visit: visit, "answer").status == 200)
                #expect(try await Self.act(server, maria, visit: visit, "resolve", body: #"{"action":"authorize"}"#).status == 200)
                let frames = try await visitor.until("visit.resolved")
                #expect(frames.contains { $0["type"]?.stringValue == "visit.answered" })
                #expect(frames.last?["data"]?["action"]?.stringValue == "authorize")
                #expect(await visitor.closeCode(timeout: .seconds(5)) == 1000)

                let refused = try await server.post("/v1/realtime/tickets", bearer: token)
                #expect(refused.status == 409)
                #expect(try refused.errorEnvelope().code == .visitClosed)
                // The token still reads the outcome for the page.
                let outcome = try await server.get("/v1/visitor/visit", bearer: token)
                #expect(outcome.status == 200)
                #expect(try outcome.json()["status"] as? String == "resolved")
            }
        }
    }
}
