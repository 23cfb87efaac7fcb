import Foundation
import PortariaCore
import Testing

/// Hostile media, end to end: a visitor (anyone who scans the gate's QR code)
/// posts crafted voice messages and photos to the real binary. Each gets a 4xx with an
/// error code naming the field, nothing is stored, and the server keeps answering.
/// The voice messages are the `crash-*`/`hostile-*` seeds of fuzz/corpus/media-voice/,
/// every one of which stopped `portaria serve` before the parsers used checked arithmetic.
@Suite("Hostile uploads against the real binary")
struct HostileUploadTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The crafted inputs of one fuzz target's seed corpus, by file name.
    static func crafted(_ target: String) throws -> [(name: String, bytes: [UInt8])] {
        let directory = root.appendingPathComponent("fuzz/corpus/\(target)")
        return try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("crash-") || $0.hasPrefix("hostile-") }
            .sorted()
            .map { ($0, Array(try Data(contentsOf: directory.appendingPathComponent($0)))) }
    }

    /// A visit rung at the demo gate, and its visitor token.
    static func ring(_ server: TestServer) async throws -> String {
        let gate = try await server.request("GET", "/v1/gates/demo-gate")
        try #require(gate.status == 200)
        let unit = try #require(try JSONCoding.decoder().decode(GateInfo.self, from: Data(gate.body)).units.first).id
        let created = try await server.postJSON("/v1/gates/demo-gate/visits",
                                                #"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Pedro Visitante"}"#)
        try #require(created.status == 201, "gate POST answered \(created.status): \(created.text)")
        return try JSONCoding.decoder().decode(CreateVisitResponse.self, from: Data(created.body)).visitorToken
    }

    func upload(_ server: TestServer, _ kind: String, token: String, _ bytes: [UInt8], contentType: String) async throws -> RawResponse {
        try await server.request("POST", "/v1/visitor/visit/\(kind)",
                                 headers: [("Authorization", "Bearer \(token)"), ("Content-Type", contentType)], body: bytes)
    }

    @Test("crafted voice messages and photos get a 4xx with an error code; the server lives and stores nothing",
          .timeLimit(.minutes(2)))
    func craftedUploads() async throws {
        let voices = try Self.crafted("media-voice")
        for named in ["crash-ogg-granule-overflow-48-bytes", "crash-webm-cluster-timecode-near-2to64", "crash-webm-duration-nan",
                      "crash-webm-duration-1e300", "crash-m4a-huge-64-bit-box-size",
                      "hostile-m4a-duration-sum-wraps", "hostile-wav-data-size-4gib", "hostile-wav-wrong-byte-rate", "hostile-wav-61s"] {
            #expect(voices.contains { $0.name.hasPrefix(named) }, "fuzz/corpus/media-voice/ lacks \(named)")
        }
        #expect(voices.first { $0.name.hasPrefix("crash-ogg-granule-overflow-48-bytes") }?.bytes.count == 48)

        try await TestServer.with(["--demo", "--gate-limit", "1000000", "--unit-ring-limit", "1000000", "--gate-ring-limit", "1000000"]) { server in
            // A visitor token may upload 10 times: each crafted file gets its own visit.
            var token = try await Self.ring(server)
            for voice in voices {
                token = try await Self.ring(server)
                let reply = try await upload(server, "voice_message", token: token, voice.bytes, contentType: "audio/ogg")
                #expect((400..<500).contains(reply.status), "\(voice.name): \(reply.status) \(reply.text.prefix(200))")
                let error = try reply.errorEnvelope()
                #expect(error.code == .invalidRequest, "\(voice.name): \(error.code)")
                #expect(error.details["field"] == .string("voice_message"), "\(voice.name)")
                await server.expectHealthy()
            }

            let jpeg = Array(try Data(contentsOf: Self.root.appendingPathComponent("fuzz/corpus/media-photo/valid.jpg")))
            let photos: [(String, [UInt8])] = [
                ("JPEG without its end-of-image marker", Array(jpeg.dropLast(2))),
                ("JPEG segment length past the end", [0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF, 0x00, 0x00]),
                ("PNG chunk of 2^32 − 1 bytes", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0xFF, 0xFF, 0xFF, 0xFF]
                    + Array("IHDR".utf8) + [UInt8](repeating: 0, count: 17)),
            ]
            for (label, bytes) in photos {
                token = try await Self.ring(server)
                let reply = try await upload(server, "photo", token: token, bytes, contentType: "image/jpeg")
                #expect(reply.status == 400, "\(label): \(reply.status)")
                #expect(try reply.errorEnvelope().details["field"] == .string("photo"), "\(label)")
                await server.expectHealthy()
            }

            // Nothing was stored; the same routes still take a real upload.
            let visit = try await server.request("GET", "/v1/visitor/visit", headers: [("Authorization", "Bearer \(token)")])
            let before = try JSONCoding.decoder().decode(PublicVisit.self, from: Data(visit.body))
            #expect(!before.hasVoiceMessage && !before.hasPhoto)
            let ogg = Array(try Data(contentsOf: Self.root.appendingPathComponent("fuzz/corpus/media-voice/valid-ogg-3s.ogg")))
            #expect(try await upload(server, "voice_message", token: token, ogg, contentType: "audio/ogg").status == 200)
            #expect(try await upload(server, "photo", token: token, jpeg, contentType: "image/jpeg").status == 200)
        }
    }

    /// A 16 kHz mono 16-bit WAV of `seconds` of silence, as the gate page writes it.
    static func wav(seconds: Int) -> [UInt8] {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(value >> (8 * $0) & 0xFF) } }
        let data = seconds * 32_000
        return Array("RIFF".utf8) + le(36 + data, 4) + Array("WAVEfmt ".utf8) + le(16, 4) + le(1, 2) + le(1, 2)
            + le(16_000, 4) + le(32_000, 4) + le(2, 2) + le(16, 2) + Array("data".utf8) + le(data, 4) + [UInt8](repeating: 0, count: data)
    }

    @Test("a 60 s WAV recado (1.92 MB, over the compressed formats' 1 MiB) is read whole, stored and served back as audio/wav; one byte over 2 MiB is refused")
    func sixtySecondWAV() async throws {
        try await TestServer.with(["--demo"]) { server in
            let token = try await Self.ring(server)
            let bytes = Self.wav(seconds: 60)
            #expect(bytes.count == 1_920_044)
            let reply = try await upload(server, "voice_message", token: token, bytes, contentType: "audio/wav")
            #expect(reply.status == 200, "\(reply.status) \(reply.text.prefix(300))")
            let visit = try JSONCoding.decoder().decode(PublicVisit.self, from: Data(reply.body))
            #expect(visit.hasVoiceMessage)
            // The concierge sees every visit of the building.
            let concierge = try await RealtimeTests.login(server, "portaria")
            let served = try await server.request("GET", "/v1/visits/\(visit.id)/voice_message", headers: [
                ("Authorization", "Bearer \(concierge.token)"), ("X-Company-Id", concierge.companyID)])
            #expect(served.status == 200, "\(served.status) \(served.text.prefix(200))")
            #expect(served.header("Content-Type") == "audio/wav")
            #expect(served.body == bytes)
            let over = try await upload(server, "voice_message", token: token, bytes + [UInt8](repeating: 0, count: 2 * 1024 * 1024 - bytes.count + 1),
                                        contentType: "audio/wav")
            #expect(over.status == 413, "\(over.status) \(over.text.prefix(200))")
        }
    }
}
