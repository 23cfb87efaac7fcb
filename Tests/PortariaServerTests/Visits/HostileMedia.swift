import Foundation

/// Crafted uploads whose numbers, read from the file, reach arithmetic that traps unless
/// it is checked (overflow, `Int(_:)` of NaN or of a huge Double, `Int64(_:)` of a UInt64
/// over 2^63): each would stop `portaria serve` without the parsers' checked arithmetic. The same bytes are the `crash-*` seeds of
/// `fuzz/corpus/media-voice/` (written by `scripts/fuzz --make-seeds`), which the
/// end-to-end test posts to the real binary.
enum HostileMedia {
    typealias S = MediaSamples

    /// 48 bytes: one Ogg page carrying `OpusHead` with a granule position near 2^63.
    /// The old reader took it as the stream's length and overflowed `samples * 1000`.
    static func oggGranuleOverflow() -> [UInt8] {
        let head = Array("OpusHead".utf8) + [1, 1] + S.le(312, 2) + S.le(48_000, 4) + [0, 0, 0] + [0]
        let bytes = S.oggPage(granule: 0x7FFF_FFFF_FFFF_FF00, sequence: 0, type: 2, body: head)
        precondition(bytes.count == 48)
        return bytes
    }

    /// A well-formed Ogg/Opus stream whose last page claims `granule` samples.
    static func ogg(lastGranule granule: UInt64) -> [UInt8] {
        let head = Array("OpusHead".utf8) + [1, 1] + S.le(312, 2) + S.le(48_000, 4) + [0, 0, 0]
        let tags = Array("OpusTags".utf8) + S.le(0, 4) + S.le(0, 4)
        return S.oggPage(granule: 0, sequence: 0, type: 2, body: head)
            + S.oggPage(granule: 0, sequence: 1, type: 0, body: tags)
            + S.oggPage(granule: granule, sequence: 2, type: 4, body: [0xFC, 0xFF, 0xFE])
    }

    /// WebM as MediaRecorder writes it, with extra `info` children (a Duration), one
    /// cluster of timecode `clusterTimecode` (big-endian bytes) and one block at `blockOffset`.
    static func webm(info: [UInt8] = [], timecodeScale: [UInt8] = [0x0F, 0x42, 0x40],
                     clusterTimecode: [UInt8] = [0], blockOffset: Int16 = 0) -> [UInt8] {
        var bytes = S.ebml([0x1A, 0x45, 0xDF, 0xA3], S.ebml([0x42, 0x82], Array("webm".utf8)))
        bytes += [0x18, 0x53, 0x80, 0x67] + S.unknownSize
        bytes += S.ebml([0x15, 0x49, 0xA9, 0x66], S.ebml([0x2A, 0xD7, 0xB1], timecodeScale) + info)
        bytes += S.ebml([0x16, 0x54, 0xAE, 0x6B], S.ebml([0xAE], S.ebml([0xD7], [1]) + S.ebml([0x86], Array("A_OPUS".utf8))))
        bytes += [0x1F, 0x43, 0xB6, 0x75] + S.unknownSize
        bytes += S.ebml([0xE7], clusterTimecode)
        bytes += S.ebml([0xA3], [0x81] + S.be16(Int(UInt16(bitPattern: blockOffset))) + [0x80, 0xFC])
        return bytes
    }

    static func be64(_ value: UInt64) -> [UInt8] { (0..<8).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xFF) } }

    /// An 8-byte float Duration element (Info child).
    static func duration(_ value: Double) -> [UInt8] { S.ebml([0x44, 0x89], be64(value.bitPattern)) }

    /// A cluster timecode near 2^64: the old reader's `Int64(UInt64)` trapped.
    static func webmClusterTimecodeNear2to64() -> [UInt8] { webm(clusterTimecode: be64(0xFFFF_FFFF_FFFF_FF00)) }

    /// Cluster timecode Int64.max plus a positive block offset: the old sum overflowed.
    static func webmBlockTimeOverflow() -> [UInt8] { webm(clusterTimecode: be64(UInt64(Int64.max)), blockOffset: 100) }

    /// Duration NaN: the old `Int(NaN)` trapped.
    static func webmDurationNaN() -> [UInt8] { webm(info: duration(.nan)) }

    /// Duration 1e300: the old `Int(1e300 × scale)` trapped.
    static func webmDurationHuge() -> [UInt8] { webm(info: duration(1e300)) }

    /// Duration +∞.
    static func webmDurationInfinite() -> [UInt8] { webm(info: duration(.infinity)) }

    /// An M4A whose second top-level box has a 64-bit size near 2^63: the old
    /// `index + size` overflowed.
    static func m4aHugeLargeSize() -> [UInt8] {
        let ftyp = S.box("ftyp", Array("M4A ".utf8) + S.be32(0) + Array("M4A isom".utf8))
        return ftyp + S.be32(1) + Array("free".utf8) + be64(0x7FFF_FFFF_FFFF_FFF0) + [UInt8](repeating: 0, count: 16)
            + Array(S.m4a(seconds: 1).dropFirst(ftyp.count))
    }

    /// An M4A whose movie header (version 1) claims 2^64 − 1 units at 1 unit per second.
    static func m4aHugeDuration() -> [UInt8] {
        let mvhd = S.box("mvhd", [1, 0, 0, 0] + be64(0) + be64(0) + S.be32(1) + be64(UInt64.max) + [UInt8](repeating: 0, count: 80))
        let stsd = S.box("stsd", [0, 0, 0, 0] + S.be32(1) + S.box("mp4a", [UInt8](repeating: 0, count: 28)))
        let trak = S.box("trak", S.box("mdia", S.box("minf", S.box("stbl", stsd))))
        return S.box("ftyp", Array("M4A ".utf8) + S.be32(0) + Array("M4A isom".utf8)) + S.box("moov", mvhd + trak)
    }

    /// An M4A whose movie header (version 1) claims 18 446 744 073 709 551 × 999 + 998
    /// units at 999 a second: whole milliseconds fit in 64 bits, but adding the last
    /// second's 998 ms wrapped, and the file read as 382 ms long.
    static func m4aDurationSumWraps() -> [UInt8] {
        let units = UInt64(18_446_744_073_709_551) * 999 + 998
        let mvhd = S.box("mvhd", [1, 0, 0, 0] + be64(0) + be64(0) + S.be32(999) + be64(units) + [UInt8](repeating: 0, count: 80))
        let stsd = S.box("stsd", [0, 0, 0, 0] + S.be32(1) + S.box("mp4a", [UInt8](repeating: 0, count: 28)))
        let trak = S.box("trak", S.box("mdia", S.box("minf", S.box("stbl", stsd))))
        return S.box("ftyp", Array("M4A ".utf8) + S.be32(0) + Array("M4A isom".utf8)) + S.box("moov", mvhd + trak)
    }

    /// A WAV whose `data` chunk claims 4 GiB − 1 bytes in a file of a few dozen: the
    /// duration must come from bytes that are there.
    static func wavDataSizeOverflow() -> [UInt8] {
        S.riff([("fmt ", nil, S.wavFormat()), ("data", 0xFFFF_FFFF, [0, 0, 0, 0])])
    }

    /// A WAV whose RIFF size claims 4 GiB − 1 bytes.
    static func wavRIFFSizeOverflow() -> [UInt8] {
        S.riff([("fmt ", nil, S.wavFormat()), ("data", nil, [0, 0, 0, 0])], riffSize: 0xFFFF_FFFF)
    }

    /// A WAV whose `fmt ` chunk claims 4 GiB − 8 bytes: `index + 8 + size` would pass 2^32.
    static func wavFormatSizeOverflow() -> [UInt8] {
        S.riff([("fmt ", 0xFFFF_FFF8, S.wavFormat()), ("data", nil, [0, 0, 0, 0])])
    }

    /// 16 kHz mono whose byte rate says 1 byte a second: 32,000 bytes of samples would
    /// read as 32,000 s if the byte rate were trusted.
    static func wavWrongByteRate() -> [UInt8] {
        S.riff([("fmt ", nil, S.wavFormat(byteRate: 1)), ("data", nil, [UInt8](repeating: 0, count: 32_000))])
    }

    /// The gate's WAV cut in the middle of its samples: the data chunk claims more than is there.
    static func wavTruncated() -> [UInt8] { Array(S.wav(seconds: 0.5).dropLast(1_000)) }

    /// 61 s at 8 kHz mono (the smallest byte rate admitted): over the 60 s limit.
    static func wavTooLong() -> [UInt8] { S.wav(seconds: 61, rate: 8_000) }

    /// The crafted voice messages, by the seed file name they have in the fuzz corpus.
    static let voiceCrashes: [(name: String, bytes: [UInt8])] = [
        ("crash-ogg-granule-overflow-48-bytes", oggGranuleOverflow()),
        ("crash-ogg-granule-near-2to63", ogg(lastGranule: 0x7FFF_FFFF_FFFF_FFFF)),
        ("crash-webm-cluster-timecode-near-2to64", webmClusterTimecodeNear2to64()),
        ("crash-webm-block-time-overflow", webmBlockTimeOverflow()),
        ("crash-webm-duration-nan", webmDurationNaN()),
        ("crash-webm-duration-1e300", webmDurationHuge()),
        ("crash-webm-duration-infinity", webmDurationInfinite()),
        ("crash-m4a-huge-64-bit-box-size", m4aHugeLargeSize()),
        ("hostile-m4a-huge-duration", m4aHugeDuration()),
        ("hostile-m4a-duration-sum-wraps", m4aDurationSumWraps()),
        ("hostile-wav-data-size-4gib", wavDataSizeOverflow()),
        ("hostile-wav-riff-size-4gib", wavRIFFSizeOverflow()),
        ("hostile-wav-fmt-size-4gib", wavFormatSizeOverflow()),
        ("hostile-wav-wrong-byte-rate", wavWrongByteRate()),
        ("hostile-wav-truncated", wavTruncated()),
        ("hostile-wav-61s", wavTooLong()),
    ]
}
