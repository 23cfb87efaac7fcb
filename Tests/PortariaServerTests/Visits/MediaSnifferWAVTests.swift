import Foundation
import Testing
@testable import PortariaServer

/// WAV voice messages (decision 0077): 16-bit PCM, 1–2 channels, 8–48 kHz, the duration
/// from the `data` chunk's size and the byte rate; anything inconsistent is a Failure
/// (the upload route's 4xx), never a trap or a made-up duration.
@Suite("Media sniffer: WAV voice messages")
struct MediaSnifferWAVTests {
    typealias Failure = MediaSniffer.Failure
    typealias S = MediaSamples

    func voiceFailure(_ bytes: [UInt8]) -> Failure? {
        do { _ = try MediaSniffer.voice(bytes); return nil } catch { return error }
    }

    @Test("the gate's 16 kHz mono WAV is audio/wav with the duration its samples last")
    func gateWAV() throws {
        let voice = try MediaSniffer.voice(S.wav(seconds: 2.5))
        #expect(voice == MediaSniffer.Voice(contentType: "audio/wav", fileExtension: "wav", durationMs: 2_500))
    }

    @Test("stereo 48 kHz, 8 kHz and extra chunks (LIST) are accepted")
    func otherShapes() throws {
        #expect(try MediaSniffer.voice(S.wav(seconds: 0.5, rate: 48_000, channels: 2, list: true)).durationMs == 500)
        #expect(try MediaSniffer.voice(S.wav(seconds: 3, rate: 8_000)).durationMs == 3_000)
    }

    @Test("a 60 s WAV at 16 kHz fits the voice limit although it is larger than any compressed one")
    func sixtySecondsFit() throws {
        let bytes = S.wav(seconds: 60)
        #expect(bytes.count > MediaSniffer.maxVoiceBytes && bytes.count <= MediaSniffer.maxWAVBytes)
        #expect(try MediaSniffer.voice(bytes).durationMs == 60_000)
        #expect(VisitsModule.bodyLimit(method: "POST", path: "/v1/visitor/visit/voice_message")! >= bytes.count)
        // The default quota's per-visit share still holds a photo at its largest and this.
        let share = MediaShares(quotaBytes: 512 * 1024 * 1024, configuration: VisitsConfiguration(), address: "a", visitID: "v")
        #expect(share.visit.kib >= MediaShares.kib(MediaSniffer.maxPhotoBytes) + MediaShares.kib(bytes.count))
        #expect(MediaShares.floorBytes >= MediaSniffer.maxPhotoBytes + bytes.count)
    }

    @Test("compressed formats keep their 1 MiB limit; only WAV may be larger")
    func compressedLimit() {
        let big = S.ogg(seconds: 3) + [UInt8](repeating: 0, count: MediaSniffer.maxVoiceBytes)
        #expect(voiceFailure(big) == .tooLarge)
        #expect(voiceFailure(Array("RIFF".utf8) + [UInt8](repeating: 0, count: MediaSniffer.maxWAVBytes)) == .tooLarge)
    }

    @Test("a WAV longer than 60 s is too long")
    func tooLong() {
        #expect(voiceFailure(HostileMedia.wavTooLong()) == .tooLong(61_000))
    }

    @Test("chunk sizes beyond the body are malformed, whether RIFF, fmt or data claims them")
    func overrunningSizes() {
        #expect(voiceFailure(HostileMedia.wavRIFFSizeOverflow()) == .malformed("WAV RIFF size 4294967295 overruns the file"))
        #expect(voiceFailure(HostileMedia.wavFormatSizeOverflow()) == .malformed("WAV chunk fmt  overruns the file"))
        #expect(voiceFailure(HostileMedia.wavDataSizeOverflow()) == .malformed("WAV chunk data overruns the file"))
        #expect(voiceFailure(HostileMedia.wavTruncated()) != nil)
        let valid = S.wav(seconds: 0.1)
        for cut in [1, 2, 9, 30, valid.count - 12, valid.count - 4] {
            #expect(voiceFailure(Array(valid.prefix(valid.count - cut))) != nil, "cut \(cut)")
        }
    }

    @Test("a byte rate or block align that disagrees with the format is malformed")
    func inconsistentFormat() {
        #expect(voiceFailure(HostileMedia.wavWrongByteRate()) == .malformed("WAV byte rate 1 is not sample rate × block align"))
        let badAlign = S.riff([("fmt ", nil, S.wavFormat(blockAlign: 4)), ("data", nil, [0, 0, 0, 0])])
        #expect(voiceFailure(badAlign) == .malformed("WAV block align 4 is not channels × 2"))
    }

    @Test("formats other than 16-bit PCM, 1–2 channels, 8–48 kHz are malformed")
    func oddFormats() {
        func with(_ format: [UInt8]) -> Failure? { voiceFailure(S.riff([("fmt ", nil, format), ("data", nil, [0, 0, 0, 0])])) }
        #expect(with(S.wavFormat(format: 3)) == .malformed("WAV format 3 is not PCM (1)"))
        #expect(with(S.wavFormat(format: 0xFFFE)) == .malformed("WAV format 65534 is not PCM (1)"))
        #expect(with(S.wavFormat(channels: 0)) == .malformed("WAV has 0 channels; 1 or 2"))
        #expect(with(S.wavFormat(channels: 6)) == .malformed("WAV has 6 channels; 1 or 2"))
        #expect(with(S.wavFormat(rate: 96_000)) == .malformed("WAV sample rate 96000 Hz is outside 8–48 kHz"))
        #expect(with(S.wavFormat(rate: 0)) == .malformed("WAV sample rate 0 Hz is outside 8–48 kHz"))
        #expect(with(S.wavFormat(bits: 8)) == .malformed("WAV samples are 8 bits; 16"))
        #expect(with(S.wavFormat(bits: 24)) == .malformed("WAV samples are 24 bits; 16"))
        #expect(with(Array(S.wavFormat().prefix(14))) == .malformed("WAV fmt chunk is 14 bytes; at least 16"))
    }

    @Test("a WAV without fmt, without data, with data first or with partial frames is malformed")
    func structure() {
        let format = S.wavFormat(channels: 2)
        #expect(voiceFailure(S.riff([("data", nil, [0, 0, 0, 0])])) == .malformed("WAV data chunk before the fmt chunk"))
        #expect(voiceFailure(S.riff([("fmt ", nil, format)])) == .malformed("WAV has no data chunk"))
        #expect(voiceFailure(S.riff([("LIST", nil, [1, 2])])) == .malformed("WAV has no fmt chunk"))
        #expect(voiceFailure(S.riff([("fmt ", nil, format), ("data", nil, [0, 0])])) == .malformed("WAV data is not whole sample frames"))
        #expect(voiceFailure(S.riff([("fmt ", nil, format), ("data", nil, [])])) == .malformed("WAV has no samples"))
        #expect(voiceFailure(S.riff([("fmt ", nil, format), ("fmt ", nil, format), ("data", nil, [0, 0, 0, 0])]))
                == .malformed("WAV has two fmt chunks"))
        // RIFF but not WAVE (an AVI, say) is not a voice message.
        #expect(voiceFailure(Array("RIFF".utf8) + S.le(4, 4) + Array("AVI ".utf8)) == .unrecognized)
    }
}
