import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

@Suite("Visit media: sniffing, metadata stripping, durations")
struct MediaSnifferTests {
    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }

    @Test("JPEG: APP1 Exif/XMP and comments go, JFIF and the image stay")
    func jpeg() throws {
        let original = MediaSamples.jpeg()
        let photo = try MediaSniffer.photo(original)
        #expect(photo.contentType == "image/jpeg")
        #expect(Self.contains(original, "Exif") && Self.contains(original, "GPS"))
        for secret in ["Exif", "GPS", "xmpmeta", "comment", "Maria"] { #expect(!Self.contains(photo.bytes, secret)) }
        #expect(Self.contains(photo.bytes, "JFIF"))
        #expect(photo.bytes.suffix(7) == original.suffix(7), "the scan is copied verbatim")
        #expect(photo.bytes.count < original.count)
        // Stripping is idempotent.
        #expect(try MediaSniffer.photo(photo.bytes).bytes == photo.bytes)
    }

    @Test("PNG: text and eXIf chunks go")
    func png() throws {
        let photo = try MediaSniffer.photo(MediaSamples.png())
        #expect(photo.contentType == "image/png")
        #expect(!Self.contains(photo.bytes, "Maria") && !Self.contains(photo.bytes, "eXIf") && !Self.contains(photo.bytes, "tEXt"))
        #expect(Self.contains(photo.bytes, "IHDR") && Self.contains(photo.bytes, "IDAT") && Self.contains(photo.bytes, "IEND"))
    }

    @Test("bad photos are refused by content, not by name")
    func badPhotos() {
        #expect(throws: MediaSniffer.Failure.unrecognized) { try MediaSniffer.photo(Array("GIF89a....".utf8)) }
        #expect(throws: MediaSniffer.Failure.unrecognized) { try MediaSniffer.photo(MediaSamples.ogg(seconds: 1)) }
        #expect(throws: MediaSniffer.Failure.tooLarge) { try MediaSniffer.photo([0xFF, 0xD8, 0xFF] + [UInt8](repeating: 0, count: 2 << 20)) }
        let truncated = Array(MediaSamples.jpeg().prefix(30))
        #expect(throws: (any Error).self) { try MediaSniffer.photo(truncated) }
        let noEnd = Array(MediaSamples.png().dropLast(12))
        #expect(throws: (any Error).self) { try MediaSniffer.photo(noEnd) }
    }

    @Test("voice: durations from Ogg, WebM (no Duration element) and M4A")
    func voice() throws {
        let ogg = try MediaSniffer.voice(MediaSamples.ogg(seconds: 12.5))
        #expect(ogg.contentType == "audio/ogg" && ogg.durationMs == 12_500)
        let webm = try MediaSniffer.voice(MediaSamples.webm(seconds: 15))
        #expect(webm.contentType == "audio/webm" && webm.durationMs == 15_000)
        let m4a = try MediaSniffer.voice(MediaSamples.m4a(seconds: 42))
        #expect(m4a.contentType == "audio/mp4" && m4a.durationMs == 42_000)
        #expect(try MediaSniffer.voice(MediaSamples.ogg(seconds: 60)).durationMs == 60_000)
    }

    @Test("voice: over 60 s, wrong codec, not audio")
    func badVoice() {
        #expect(throws: MediaSniffer.Failure.tooLong(61_000)) { try MediaSniffer.voice(MediaSamples.ogg(seconds: 61)) }
        #expect(throws: MediaSniffer.Failure.tooLong(75_000)) { try MediaSniffer.voice(MediaSamples.webm(seconds: 75)) }
        #expect(throws: MediaSniffer.Failure.tooLong(90_000)) { try MediaSniffer.voice(MediaSamples.m4a(seconds: 90)) }
        #expect(throws: (any Error).self) { try MediaSniffer.voice(MediaSamples.webm(seconds: 5, codec: "V_VP8")) }
        #expect(throws: MediaSniffer.Failure.unrecognized) { try MediaSniffer.voice(MediaSamples.jpeg()) }
        #expect(throws: MediaSniffer.Failure.unrecognized) { try MediaSniffer.voice(Array("hello, this is not audio".utf8)) }
        #expect(throws: MediaSniffer.Failure.tooLarge) { try MediaSniffer.voice(Array("OggS".utf8) + [UInt8](repeating: 0, count: 1 << 20)) }
    }
}

@Suite("Visit media over the API", .serialized)
struct VisitMediaRouteTests {
    @Test("uploads are sniffed, stripped and served only to the unit and the concierge", arguments: VisitsFixture.backends)
    func uploads(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, token) = try await f.ring()
            // The header lies; the bytes decide.
            let photo = await f.call("POST", "/v1/visitor/visit/photo", bearer: token,
                                     headers: ["Content-Type": "image/gif"], bytes: MediaSamples.jpeg())
            #expect(photo.status == 200)
            #expect(try photo.decode(PublicVisit.self).hasPhoto)
            let voice = await f.call("POST", "/v1/visitor/visit/voice_message", bearer: token,
                                     headers: ["Content-Type": "audio/ogg"], bytes: MediaSamples.webm(seconds: 20))
            #expect(voice.status == 200)

            let served = await f.call("GET", "/v1/visits/\(id)/photo", as: "maria", company: f.demo)
            #expect(served.status == 200 && served.header("Content-Type") == "image/jpeg")
            #expect(!MediaSnifferTests.contains(served.body, "Exif") && !MediaSnifferTests.contains(served.body, "GPS"))
            let audio = await f.call("GET", "/v1/visits/\(id)/voice_message", as: "joao", company: f.demo)
            #expect(audio.status == 200 && audio.header("Content-Type") == "audio/webm")
            #expect(await f.call("GET", "/v1/visits/\(id)/photo", as: "portaria").status == 200)
            for (user, company) in [("ana", nil), ("carlos", nil), ("carlos", f.demo), ("maria", f.azul)] as [(String, String?)] {
                #expect(await f.call("GET", "/v1/visits/\(id)/photo", as: user, company: company).status == 404, "\(user)")
                #expect(await f.call("GET", "/v1/visits/\(id)/voice_message", as: user, company: company).status == 404, "\(user)")
            }
            let visit = try await f.visit(id)
            #expect(visit.voiceMessage?.durationMs == 20_000)
            #expect(visit.photo?.url == "/v1/visits/\(id)/photo")
            #expect(try await f.events(id).map(\.type).contains("visit.voice_message_added"))

            // Bad uploads change nothing.
            let before = try await f.count("SELECT COUNT(*) AS n FROM visit_media")
            let cases: [([UInt8], Int, String)] = [
                (Array("#!/bin/sh\nrm -rf /".utf8), 415, "photo"),
                (Array(MediaSamples.jpeg().prefix(40)), 400, "photo"),
                ([], 400, "photo"),
            ]
            for (bytes, status, field) in cases {
                let reply = await f.call("POST", "/v1/visitor/visit/photo", bearer: token, headers: ["Content-Type": "image/jpeg"], bytes: bytes)
                #expect(reply.status == status && reply.field == field)
            }
            let long = await f.call("POST", "/v1/visitor/visit/voice_message", bearer: token, bytes: MediaSamples.ogg(seconds: 75))
            #expect(long.status == 400 && long.field == "voice_message")
            let text = await f.call("POST", "/v1/visitor/visit/voice_message", bearer: token, headers: ["Content-Type": "audio/ogg"],
                                    bytes: Array("not audio at all".utf8))
            #expect(text.status == 415 && text.field == "voice_message")
            #expect(await f.call("POST", "/v1/visitor/visit/photo", bytes: MediaSamples.jpeg()).status == 401)
            #expect(try await f.count("SELECT COUNT(*) AS n FROM visit_media") == before)

            // Pendências carry the voice message.
            await f.advance(60)
            let pending = try await f.call("GET", "/v1/visits?status=pending", as: "maria", company: f.demo).decode(VisitPage.self)
            #expect(pending.visits.first?.voiceMessage?.contentType == "audio/webm")
        }
    }
}
