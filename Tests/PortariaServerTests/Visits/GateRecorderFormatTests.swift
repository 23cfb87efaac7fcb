import Foundation
import Testing

/// Which format the gate records a recado in (decision 0077): AAC in MP4 wherever the
/// browser can — the one format the iPhone app's player, the server's sniffer and every
/// browser share — and WebM/Ogg Opus only where it cannot. Runs the gate's own
/// `VoiceRecorder.mimeType()` (Web/gate/assets/media.js) under Node with a stand-in
/// `MediaRecorder.isTypeSupported` for each browser's answers.
@Suite("Gate recorder format")
struct GateRecorderFormatTests {
    static let mediaJS: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Web/gate/assets/media.js")
    }()

    /// The format chosen when the browser supports exactly `supported`.
    static func chosen(supporting supported: [String]) throws -> String {
        let list = String(decoding: try JSONSerialization.data(withJSONObject: supported), as: UTF8.self)
        let script = """
        const supported = new Set(\(list));
        globalThis.MediaRecorder = { isTypeSupported: (type) => supported.has(type) };
        const { VoiceRecorder } = await import(\(String(decoding: try JSONSerialization.data(withJSONObject: [mediaJS.absoluteString]), as: UTF8.self))[0]);
        process.stdout.write(VoiceRecorder.mimeType());
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
        return String(decoding: data, as: UTF8.self)
    }

    /// (browser, what it can record, what the gate must choose)
    static let browsers: [(String, [String], String)] = [
        ("Safari (records AAC in MP4, and WebM since 18.4)", ["audio/mp4", "audio/mp4;codecs=mp4a.40.2", "audio/webm;codecs=opus", "audio/webm"],
         "audio/mp4;codecs=mp4a.40.2"),
        ("Chrome with an AAC encoder (Opus in MP4 too)", ["audio/mp4", "audio/mp4;codecs=opus", "audio/mp4;codecs=mp4a.40.2", "audio/webm;codecs=opus"],
         "audio/mp4;codecs=mp4a.40.2"),
        ("Chromium without AAC: never Opus in MP4", ["audio/mp4", "audio/mp4;codecs=opus", "audio/webm;codecs=opus", "audio/webm"],
         "audio/webm;codecs=opus"),
        ("Firefox", ["audio/ogg;codecs=opus", "audio/webm;codecs=opus", "audio/webm"], "audio/webm;codecs=opus"),
        ("an older Safari that answers no to every named type (its default is MP4/AAC)", [], ""),
    ]

    @Test("the gate records AAC in MP4 when the browser can, Opus otherwise, never Opus in MP4", arguments: browsers.indices)
    func choice(_ index: Int) throws {
        let (browser, supported, expected) = Self.browsers[index]
        #expect(try Self.chosen(supporting: supported) == expected, "\(browser)")
    }
}
