import Foundation
import Testing
@testable import PortariaServer

/// Regression tests for parsers that trust numbers read from the file: every input here
/// makes unchecked arithmetic trap (or is of the family the fuzzers explore) and must end
/// in a thrown `MediaSniffer.Failure`, which the upload route answers with a 4xx.
@Suite("Media parsers on hostile input: a Failure, never a trap")
struct MediaSnifferHostileInputTests {
    typealias Failure = MediaSniffer.Failure
    static let cap = MediaSniffer.durationCapMilliseconds

    /// The Failure `voice` threw, or nil if it accepted the bytes.
    func voiceFailure(_ bytes: [UInt8]) -> Failure? {
        do { _ = try MediaSniffer.voice(bytes); return nil } catch { return error }
    }

    func isMalformed(_ failure: Failure?) -> Bool {
        if case .malformed = failure { return true }
        return false
    }

    // MARK: Ogg

    @Test("the 48-byte Ogg voice message that stopped the server is refused")
    func oggGranuleOverflow() {
        let bytes = HostileMedia.oggGranuleOverflow()
        #expect(bytes.count == 48)
        #expect(voiceFailure(bytes) == .malformed("Ogg stream has no audio pages"))
    }

    @Test("an Ogg stream whose last granule is near 2^63 is too long, not a trap")
    func oggHugeGranule() {
        #expect(voiceFailure(HostileMedia.ogg(lastGranule: 0x7FFF_FFFF_FFFF_FFFF)) == .tooLong(Self.cap))
        #expect(voiceFailure(HostileMedia.ogg(lastGranule: 48 * 61_000 + 312)) == .tooLong(61_000))
    }

    @Test("a negative granule position (other than -1, no packet ends here) is malformed")
    func oggNegativeGranule() {
        #expect(voiceFailure(HostileMedia.ogg(lastGranule: 0x8000_0000_0000_0000)) == .malformed("Ogg granule position is negative"))
        // −1 alone: no page says where the audio ends.
        #expect(voiceFailure(HostileMedia.ogg(lastGranule: UInt64.max)) == .malformed("Ogg stream has no audio pages"))
    }

    @Test("a pre-skip longer than the stream is a zero-length message, not a negative one")
    func oggPreSkipLongerThanStream() throws {
        #expect(try MediaSniffer.voice(HostileMedia.ogg(lastGranule: 100)).durationMs == 0)
    }

    @Test("truncated and misframed Ogg pages are malformed")
    func oggTruncated() {
        let valid = MediaSamples.ogg(seconds: 3)
        for cut in [1, 5, 20, 27, 28, 31, valid.count - 1] {
            #expect(voiceFailure(Array(valid.prefix(valid.count - cut))) != nil, "cut \(cut)")
        }
        #expect(isMalformed(voiceFailure(valid + [0x4F, 0x67])))
    }

    // MARK: WebM

    @Test("a WebM cluster timecode near 2^64 is malformed")
    func webmClusterTimecode() {
        #expect(voiceFailure(HostileMedia.webmClusterTimecodeNear2to64()) == .malformed("WebM cluster timecode is out of range"))
    }

    @Test("a block timestamp past Int64.max is malformed")
    func webmBlockOverflow() {
        #expect(voiceFailure(HostileMedia.webmBlockTimeOverflow()) == .malformed("WebM block timecode is out of range"))
    }

    @Test("a WebM Duration of NaN, ±∞ or below zero is malformed; 1e300 is too long")
    func webmDuration() {
        #expect(isMalformed(voiceFailure(HostileMedia.webmDurationNaN())))
        #expect(isMalformed(voiceFailure(HostileMedia.webmDurationInfinite())))
        #expect(isMalformed(voiceFailure(HostileMedia.webm(info: HostileMedia.duration(-.infinity)))))
        #expect(isMalformed(voiceFailure(HostileMedia.webm(info: HostileMedia.duration(-5)))))
        #expect(voiceFailure(HostileMedia.webmDurationHuge()) == .tooLong(Self.cap))
        // A 4-byte float Duration: NaN bits too.
        #expect(isMalformed(voiceFailure(HostileMedia.webm(info: MediaSamples.ebml([0x44, 0x89], [0x7F, 0xC0, 0, 0])))))
        #expect(isMalformed(voiceFailure(HostileMedia.webm(info: MediaSamples.ebml([0x44, 0x89], [0, 0, 0])))))
    }

    @Test("a huge TimecodeScale times a huge timestamp is capped, a zero scale is malformed")
    func webmTimecodeScale() {
        let scale = HostileMedia.be64(UInt64.max)
        #expect(voiceFailure(HostileMedia.webm(timecodeScale: scale, clusterTimecode: HostileMedia.be64(UInt64(Int64.max - 1_000)))) == .tooLong(Self.cap))
        #expect(voiceFailure(HostileMedia.webm(info: HostileMedia.duration(1e300), timecodeScale: scale)) == .tooLong(Self.cap))
        #expect(voiceFailure(HostileMedia.webm(timecodeScale: [0])) == .malformed("WebM TimecodeScale is zero"))
        #expect(isMalformed(voiceFailure(HostileMedia.webm(timecodeScale: [UInt8](repeating: 0xFF, count: 9)))))
    }

    @Test("empty EBML elements take their defaults: TimecodeScale 1 ms, Duration 0")
    func webmEmptyElements() throws {
        let voice = try MediaSniffer.voice(HostileMedia.webm(info: MediaSamples.ebml([0x44, 0x89], []), timecodeScale: [],
                                                             clusterTimecode: MediaSamples.be16(2_000), blockOffset: 40))
        #expect(voice.durationMs == 2_040)
    }

    @Test("a WebM with a sane cluster timecode and a negative block offset still reads")
    func webmNegativeOffset() throws {
        let voice = try MediaSniffer.voice(HostileMedia.webm(clusterTimecode: MediaSamples.be16(5_000), blockOffset: -20))
        #expect(voice.durationMs == 4_980)
    }

    // MARK: M4A

    @Test("an M4A box with a 64-bit size near 2^63 or 2^64 is malformed")
    func m4aLargeSize() {
        #expect(isMalformed(voiceFailure(HostileMedia.m4aHugeLargeSize())))
        var all = HostileMedia.m4aHugeLargeSize()
        for index in 28..<36 { all[index] = 0xFF }   // the largesize field: 2^64 − 1
        #expect(isMalformed(voiceFailure(all)))
    }

    @Test("an M4A movie header of 2^64 − 1 seconds is too long, not a trap")
    func m4aHugeDuration() {
        #expect(voiceFailure(HostileMedia.m4aHugeDuration()) == .tooLong(Self.cap))
    }

    @Test("an M4A whose duration's milliseconds overflow only in the final sum is too long, not 382 ms")
    func m4aDurationSumWraps() {
        #expect(voiceFailure(HostileMedia.m4aDurationSumWraps()) == .tooLong(Self.cap))
    }

    @Test("every crafted voice message in the list ends in a Failure")
    func everyCrash() {
        for (name, bytes) in HostileMedia.voiceCrashes {
            #expect(voiceFailure(bytes) != nil, "\(name) was accepted")
        }
    }

    // MARK: Photos

    @Test("JPEG: metadata between the scans of a progressive image and trailers after EOI are dropped")
    func jpegBetweenScansAndTrailer() throws {
        let base = MediaSamples.jpeg()
        let withoutEOI = Array(base.dropLast(2))
        let exif = MediaSamples.segment(0xE1, Array("Exif\0\0MM\0*GPS secret".utf8))
        let scan = MediaSamples.segment(0xC4, [0x10] + [UInt8](repeating: 0, count: 15) + [1] + [0])
            + MediaSamples.segment(0xDA, [1, 1, 0, 0, 63, 0]) + [0x55, 0xFF, 0x00, 0xFF, 0xD3, 0x66]
        let bytes = withoutEOI + exif + scan + [0xFF, 0xD9] + Array("SEFH trailer with GPS secret".utf8)
        let photo = try MediaSniffer.photo(bytes)
        #expect(!MediaSnifferTests.contains(photo.bytes, "secret"))
        // What survives: the stripped first part, the second scan's tables, header and
        // entropy data (stuffed byte and restart marker intact), then EOI and nothing after.
        let first = try MediaSniffer.photo(base).bytes.dropLast(2)
        #expect(photo.bytes == Array(first) + scan + [0xFF, 0xD9])
        #expect(try MediaSniffer.photo(photo.bytes) == photo)
    }

    @Test("JPEG: no end-of-image marker, a segment past the end, a bad marker are malformed")
    func jpegMalformed() {
        let base = MediaSamples.jpeg()
        let cases: [[UInt8]] = [
            Array(base.dropLast(2)),
            [0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF, 0x00],
            [0xFF, 0xD8, 0xFF, 0xFF, 0xFF],
            [0xFF, 0xD8, 0xFF, 0x00, 0x00, 0x02],
            [0xFF, 0xD8, 0xFF, 0xD9],
        ]
        for bytes in cases {
            #expect(throws: Failure.self, "\(bytes.prefix(12))") { try MediaSniffer.photo(bytes) }
        }
    }

    @Test("PNG: a chunk length of 2^32 − 1 or past the end is malformed")
    func pngLengths() {
        let signature = MediaSniffer.pngSignature
        for length in [UInt32.max, 0x8000_0000, 0x7FFF_FFFF, 100] {
            let chunk = MediaSamples.be32(Int(length)) + Array("IHDR".utf8) + [UInt8](repeating: 0, count: 17)
            #expect(throws: Failure.self, "length \(length)") { try MediaSniffer.photo(signature + chunk) }
        }
    }
}
