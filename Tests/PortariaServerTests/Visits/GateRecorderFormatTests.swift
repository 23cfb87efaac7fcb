import Foundation
import Testing
@testable import PortariaServer

/// Which format the gate uploads a recado in (decision 0077): AAC in MP4 wherever the
/// browser records it, and otherwise the browser's own recording converted to a 16 kHz
/// mono WAV — both play in the iPhone app's player and in every browser. Runs the gate's
/// own `VoiceRecorder.mimeType()`, `VoiceRecorder.uploadsWAV()` and `encodeWAV()`
/// (Web/gate/assets/media.js) under Node with a stand-in `MediaRecorder.isTypeSupported`
/// for each browser's answers.
@Suite("Gate recorder format")
struct GateRecorderFormatTests {
    static let mediaJS: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Web/gate/assets/media.js")
    }()

    /// What `body` (run after media.js is imported as `media`) writes to stdout under Node.
    static func node(_ body: String, prelude: String = "") throws -> Data {
        let module = String(decoding: try JSONSerialization.data(withJSONObject: [mediaJS.absoluteString]), as: UTF8.self)
        let script = """
        \(prelude)
        const media = await import(\(module)[0]);
        \(body)
        """
        let node = Process()
        node.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        node.arguments = ["node", "--input-type=module", "-e", script]
        let out = Pipe()
        node.standardOutput = out
        try node.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        node.waitUntilExit()
        #expect(node.terminationStatus == 0, "node failed")
        return data
    }

    /// The recording format chosen when the browser supports exactly `supported`, and
    /// whether that recording is converted to WAV before upload.
    static func chosen(supporting supported: [String]) throws -> (record: String, wav: Bool) {
        let list = String(decoding: try JSONSerialization.data(withJSONObject: supported), as: UTF8.self)
        let output = try node("""
            const type = media.VoiceRecorder.mimeType();
            process.stdout.write(JSON.stringify([type, media.VoiceRecorder.uploadsWAV(type)]));
            """, prelude: """
            const supported = new Set(\(list));
            globalThis.MediaRecorder = { isTypeSupported: (type) => supported.has(type) };
            """)
        let answer = try JSONSerialization.jsonObject(with: output) as? [Any]
        return (answer?.first as? String ?? "?", answer?.last as? Bool ?? false)
    }

    /// (browser, what it can record, what the gate must record, whether it uploads WAV)
    static let browsers: [(String, [String], String, Bool)] = [
        ("Safari (records AAC in MP4, and WebM since 18.4)", ["audio/mp4", "audio/mp4;codecs=mp4a.40.2", "audio/webm;codecs=opus", "audio/webm"],
         "audio/mp4;codecs=mp4a.40.2", false),
        ("Chrome with an AAC encoder (Opus in MP4 too)", ["audio/mp4", "audio/mp4;codecs=opus", "audio/mp4;codecs=mp4a.40.2", "audio/webm;codecs=opus"],
         "audio/mp4;codecs=mp4a.40.2", false),
        ("Chromium without AAC: never Opus in MP4, WAV uploaded", ["audio/mp4", "audio/mp4;codecs=opus", "audio/webm;codecs=opus", "audio/webm"],
         "audio/webm;codecs=opus", true),
        ("Firefox: WAV uploaded", ["audio/ogg;codecs=opus", "audio/webm;codecs=opus", "audio/webm"], "audio/webm;codecs=opus", true),
        ("an older Safari that answers no to every named type: its default recording, as WAV", [], "", true),
    ]

    @Test("the gate uploads AAC in MP4 when the browser records it, WAV otherwise, never Opus", arguments: browsers.indices)
    func choice(_ index: Int) throws {
        let (browser, supported, record, wav) = Self.browsers[index]
        let chosen = try Self.chosen(supporting: supported)
        #expect(chosen.record == record, "\(browser)")
        #expect(chosen.wav == wav, "\(browser)")
    }

    @Test("the gate's WAV writer makes 16 kHz mono 16-bit PCM that the server's sniffer accepts with its duration")
    func wavWriter() throws {
        // 1.5 s of a tone, with samples past ±1 that must be clamped.
        let output = try Self.node("""
            const samples = new Float32Array(24000).map((_, i) => 1.2 * Math.sin(i / 8));
            process.stdout.write(Buffer.from(media.encodeWAV(samples, media.WAV_SAMPLE_RATE)).toString("base64"));
            """)
        let bytes = Array(try #require(Data(base64Encoded: output)))
        #expect(bytes.count == 44 + 48_000)
        let voice = try MediaSniffer.voice(bytes)
        #expect(voice == MediaSniffer.Voice(contentType: "audio/wav", fileExtension: "wav", durationMs: 1_500))
        // Sample 13 (sin(13/8) ≈ 0.9985, × 1.2) is clamped to full scale.
        #expect(bytes[44 + 26] == 0xFF && bytes[44 + 27] == 0x7F)
    }
}
