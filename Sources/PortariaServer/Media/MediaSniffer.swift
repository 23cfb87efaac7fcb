import Foundation

/// Recognises uploads by their bytes (never by the Content-Type a client claims),
/// strips photo metadata by rewriting the container, and reads voice-message durations.
/// No image or audio library: only the container structure is touched.
enum MediaSniffer {
    static let maxPhotoBytes = 2 * 1024 * 1024
    /// The compressed voice formats (WebM, Ogg, M4A); WAV has `maxWAVBytes`.
    static let maxVoiceBytes = 1024 * 1024
    /// The largest voice upload of any format: what the upload route reads.
    static var maxVoiceUploadBytes: Int { max(maxVoiceBytes, maxWAVBytes) }
    static let maxVoiceMilliseconds = 60_000
    /// Containers round their durations; a 60.0 s recording may read 60.02 s.
    static let voiceToleranceMilliseconds = 500

    struct Photo: Equatable {
        var contentType: String
        var fileExtension: String
        var bytes: [UInt8]
    }

    struct Voice: Equatable {
        var contentType: String
        var fileExtension: String
        var durationMs: Int
    }

    enum Failure: Error, Equatable {
        case unrecognized
        case malformed(String)
        case tooLarge
        case tooLong(Int)
    }

    // MARK: Photos

    /// A JPEG or PNG with every metadata segment/chunk removed.
    static func photo(_ bytes: [UInt8]) throws(Failure) -> Photo {
        guard bytes.count <= maxPhotoBytes else { throw .tooLarge }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
            return Photo(contentType: "image/jpeg", fileExtension: "jpg", bytes: try stripJPEG(bytes))
        }
        if bytes.starts(with: pngSignature) {
            return Photo(contentType: "image/png", fileExtension: "png", bytes: try stripPNG(bytes))
        }
        throw .unrecognized
    }

    /// Copies a JPEG's segments, dropping APP1 (Exif, XMP), APP2–APP13 and APP15 (ICC,
    /// IPTC, maker data) and comments wherever they appear (before the first scan or
    /// between the scans of a progressive image); keeps APP0 (JFIF) and APP14 (Adobe,
    /// needed to decode colours correctly) and everything the decoder needs. Entropy-coded
    /// data is copied verbatim; whatever follows the end-of-image marker (the trailers
    /// some phones append, with their own metadata) is dropped.
    ///
    /// Losing the Exif orientation is deliberate: the gate page draws the camera frame
    /// to a canvas (which applies orientation) before uploading.
    ///
    /// Every index is bounded by `bytes.count` (at most `maxPhotoBytes`) and every length
    /// read from the file is at most 65,535, so no sum below can overflow.
    static func stripJPEG(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
        var output: [UInt8] = [0xFF, 0xD8]
        output.reserveCapacity(bytes.count)
        var index = 2
        var sawFrame = false
        var sawScan = false
        while true {
            guard index < bytes.count else {
                throw .malformed(sawScan ? "JPEG has no end-of-image marker" : "JPEG has no image scan")
            }
            guard bytes[index] == 0xFF else { throw .malformed("JPEG segment does not start with 0xFF at \(index)") }
            // Fill bytes (0xFF padding) may precede a marker.
            var markerIndex = index + 1
            while markerIndex < bytes.count && bytes[markerIndex] == 0xFF { markerIndex += 1 }
            guard markerIndex < bytes.count else { throw .malformed("JPEG ends inside a marker") }
            let marker = bytes[markerIndex]
            let segmentStart = markerIndex + 1
            switch marker {
            case 0xD9:
                guard sawScan else { throw .malformed("JPEG has no image scan") }
                output += [0xFF, 0xD9]
                return output
            case 0xD8, 0x01, 0x00, 0xD0...0xD7:
                throw .malformed("unexpected JPEG marker \(marker) outside a scan")
            default:
                break
            }
            guard bytes.count - segmentStart >= 2 else { throw .malformed("JPEG segment length missing") }
            let length = Int(bytes[segmentStart]) << 8 | Int(bytes[segmentStart + 1])
            guard length >= 2, length <= bytes.count - segmentStart else { throw .malformed("JPEG segment overruns the file") }
            let segmentEnd = segmentStart + length
            let keep: Bool
            switch marker {
            case 0xE0, 0xEE: keep = true              // JFIF, Adobe
            case 0xE1...0xEF, 0xFE: keep = false      // Exif/XMP/ICC/IPTC/maker data, comments
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                sawFrame = true
                keep = true
            default: keep = true                      // DQT, DHT, DRI, SOS, DNL, …
            }
            if keep {
                output += [0xFF, marker]
                output += bytes[segmentStart..<segmentEnd]
            }
            index = segmentEnd
            if marker == 0xDA {
                guard sawFrame else { throw .malformed("JPEG scan before any frame header") }
                sawScan = true
                // The entropy-coded data runs to the next marker that is neither a stuffed
                // 0xFF00 nor a restart marker (RST0–RST7).
                var scanEnd = index
                while scanEnd < bytes.count {
                    if bytes[scanEnd] == 0xFF, scanEnd + 1 < bytes.count {
                        let next = bytes[scanEnd + 1]
                        if next == 0x00 || (0xD0...0xD7).contains(next) {
                            scanEnd += 2
                            continue
                        }
                        break
                    }
                    scanEnd += 1
                }
                output += bytes[index..<scanEnd]
                index = scanEnd
            }
        }
    }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// Chunks needed to show the image faithfully; everything else (tEXt, zTXt, iTXt,
    /// eXIf, tIME, private chunks) is dropped.
    static let pngKeep: Set<String> = ["IHDR", "PLTE", "IDAT", "IEND", "tRNS", "gAMA", "cHRM", "sRGB", "iCCP", "sBIT", "bKGD", "pHYs"]

    static func stripPNG(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
        var output = pngSignature
        var index = pngSignature.count
        var first = true
        // `length` is at most 2^31 − 1 (PNG's own limit, checked before it is added) and
        // `index` at most `bytes.count`, so the sums below cannot overflow.
        while bytes.count - index >= 12 {
            let length = Int(read32(bytes, index))
            guard length <= 0x7fff_ffff, length <= bytes.count - index - 12 else { throw .malformed("PNG chunk overruns the file") }
            let end = index + 12 + length
            let type = String(decoding: bytes[(index + 4)..<(index + 8)], as: UTF8.self)
            guard type.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
                throw .malformed("PNG chunk type is not ASCII letters")
            }
            if first && type != "IHDR" { throw .malformed("PNG does not start with IHDR") }
            first = false
            if pngKeep.contains(type) { output += bytes[index..<end] }
            index = end
            if type == "IEND" { return output }
        }
        throw .malformed("PNG has no IEND chunk")
    }

    // MARK: Voice messages

    /// WebM/Opus, Ogg/Opus, M4A/AAC (each at most `maxVoiceBytes`) or WAV/PCM (at most
    /// `maxWAVBytes`), with its duration read from the container.
    static func voice(_ bytes: [UInt8]) throws(Failure) -> Voice {
        guard bytes.count <= maxVoiceUploadBytes else { throw .tooLarge }
        let voice: Voice
        if bytes.starts(with: Array("RIFF".utf8)) {
            voice = try wav(bytes)
        } else if bytes.count > maxVoiceBytes {
            throw .tooLarge
        } else if bytes.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) {
            voice = try webm(bytes)
        } else if bytes.starts(with: Array("OggS".utf8)) {
            voice = try ogg(bytes)
        } else if bytes.count >= 12 && Array(bytes[4..<8]) == Array("ftyp".utf8) {
            voice = try m4a(bytes)
        } else {
            throw .unrecognized
        }
        guard voice.durationMs <= maxVoiceMilliseconds + voiceToleranceMilliseconds else { throw .tooLong(voice.durationMs) }
        return voice
    }

    /// Durations are reported up to this (24.8 days, far over any limit) and capped
    /// there: a number read from the file never takes part in arithmetic that can overflow.
    static let durationCapMilliseconds = Int(Int32.max)

    /// Ogg/Opus (RFC 7845): a beginning-of-stream page whose packet is `OpusHead` (with
    /// the pre-skip), then pages of that stream whose granule positions count 48 kHz
    /// samples. The duration is the largest granule position minus the pre-skip.
    static func ogg(_ bytes: [UInt8]) throws(Failure) -> Voice {
        var opusSerial: UInt32?
        var preSkip: UInt64 = 0
        var lastGranule: UInt64?
        var index = 0
        while index < bytes.count {
            guard bytes.count - index >= 27 else { throw .malformed("Ogg page header truncated at \(index)") }
            guard bytes[index..<(index + 4)].elementsEqual("OggS".utf8) else { throw .malformed("Ogg page expected at \(index)") }
            guard bytes[index + 4] == 0 else { throw .malformed("Ogg page version \(bytes[index + 4]) is not 0") }
            let headerType = bytes[index + 5]
            let granule = readLE(bytes, index + 6, count: 8)
            let serial = UInt32(truncatingIfNeeded: readLE(bytes, index + 14, count: 4))
            let segments = Int(bytes[index + 26])
            let tableStart = index + 27
            guard bytes.count - tableStart >= segments else { throw .malformed("Ogg segment table overruns the file") }
            // At most 255 segments of at most 255 bytes: the page body is under 64 KiB.
            let bodyStart = tableStart + segments
            let bodyLength = bytes[tableStart..<bodyStart].reduce(0) { $0 + Int($1) }
            guard bytes.count - bodyStart >= bodyLength else { throw .malformed("Ogg page overruns the file") }
            let body = bytes[bodyStart..<(bodyStart + bodyLength)]
            if headerType & 0x02 != 0 {
                // Beginning of a logical stream: the identification header, granule 0.
                if opusSerial == nil, body.starts(with: "OpusHead".utf8) {
                    guard body.count >= 19 else { throw .malformed("OpusHead is truncated") }
                    preSkip = readLE(bytes, bodyStart + 10, count: 2)
                    opusSerial = serial
                }
            } else if serial == opusSerial, granule != UInt64.max {
                // All ones: no packet ends on this page. Otherwise a signed 64-bit count.
                guard granule <= UInt64(Int64.max) else { throw .malformed("Ogg granule position is negative") }
                // Header pages (OpusTags) end at 0: only a page past 0 says where audio ends.
                if granule > 0 { lastGranule = max(lastGranule ?? 0, granule) }
            }
            index = bodyStart + bodyLength
        }
        guard opusSerial != nil else { throw .unrecognized }
        guard let lastGranule else { throw .malformed("Ogg stream has no audio pages") }
        // Samples at 48 kHz → ms: a division only, nothing to overflow.
        let samples = lastGranule > preSkip ? lastGranule - preSkip : 0
        let milliseconds = min(samples / 48, UInt64(durationCapMilliseconds))
        return Voice(contentType: "audio/ogg", fileExtension: "ogg", durationMs: Int(milliseconds))
    }

    /// WebM (Matroska) with an Opus track. Browsers' MediaRecorder writes no Duration
    /// and unknown-size Segment/Cluster elements, so the duration is the later of the
    /// Info Duration and the last block's timestamp (cluster timecode + block offset).
    static func webm(_ bytes: [UInt8]) throws(Failure) -> Voice {
        var reader = EBMLReader(bytes: bytes)
        var docType = ""
        var codecs: [String] = []
        var timecodeScale: UInt64 = 1_000_000    // nanoseconds per tick
        var duration: Double = 0                 // ticks, as a float
        var clusterTime: Int64 = 0               // ticks
        var lastBlock: Int64 = 0                 // ticks
        let masters: Set<UInt32> = [0x1A45DFA3, 0x18538067, 0x1549A966, 0x1654AE6B, 0xAE, 0x1F43B675, 0xA0]
        while !reader.atEnd {
            let (id, size) = try reader.header()
            if masters.contains(id) { continue }   // descend: read the children inline
            guard let size else { throw .malformed("WebM element of unknown size is not a container") }
            let payload = try reader.take(size)
            switch id {
            case 0x4282: docType = String(decoding: payload, as: UTF8.self)
            case 0x86: codecs.append(String(decoding: payload, as: UTF8.self))
            case 0x2AD7B1:
                // An empty element means its default (RFC 8794 §6.3): 1 ms ticks.
                timecodeScale = payload.isEmpty ? 1_000_000 : try unsigned(payload, "TimecodeScale")
                guard timecodeScale > 0 else { throw .malformed("WebM TimecodeScale is zero") }
            case 0x4489:
                switch payload.count {
                case 0: duration = 0                  // an empty float is 0 (RFC 8794 §7.3)
                case 4: duration = Double(Float(bitPattern: UInt32(truncatingIfNeeded: try unsigned(payload, "Duration"))))
                case 8: duration = Double(bitPattern: try unsigned(payload, "Duration"))
                default: throw .malformed("WebM Duration is \(payload.count) bytes; a float is 0, 4 or 8")
                }
                guard duration.isFinite, duration >= 0 else { throw .malformed("WebM Duration is not a finite, non-negative number") }
            case 0xE7:
                guard let time = Int64(exactly: try unsigned(payload, "Timecode")) else {
                    throw .malformed("WebM cluster timecode is out of range")
                }
                clusterTime = time
            case 0xA3, 0xA1:
                // Block: track number (EBML varint), then a signed 16-bit relative timecode.
                var block = EBMLReader(bytes: Array(payload))
                _ = try block.varint(keepMarker: false)
                let offset = try block.take(2)
                let relative = Int16(bitPattern: UInt16(offset[offset.startIndex]) << 8 | UInt16(offset[offset.startIndex + 1]))
                let (time, overflow) = clusterTime.addingReportingOverflow(Int64(relative))
                guard !overflow else { throw .malformed("WebM block timecode is out of range") }
                lastBlock = max(lastBlock, time)
            default: break
            }
        }
        guard docType == "webm" else { throw .unrecognized }
        guard codecs.contains("A_OPUS") else { throw .malformed("WebM voice messages must be Opus (A_OPUS)") }
        // In Double: no trap; a product too large for a Double is +∞, which is capped.
        let ticks = max(duration, Double(lastBlock))
        let milliseconds = ticks * Double(timecodeScale) / 1_000_000
        return Voice(contentType: "audio/webm", fileExtension: "webm", durationMs: try cappedMilliseconds(milliseconds))
    }

    /// M4A: an `mp4a` sample entry somewhere in `moov`, duration from `mvhd`.
    static func m4a(_ bytes: [UInt8]) throws(Failure) -> Voice {
        var durationMs: Int?
        var hasAAC = false
        func walk(_ start: Int, _ end: Int, depth: Int) throws(Failure) {
            var index = start
            // `index` and `end` stay within the file; box sizes are compared against what
            // is left (`end - index`) before being added, so no sum can overflow.
            while end - index >= 8 {
                let type = String(decoding: bytes[(index + 4)..<(index + 8)], as: UTF8.self)
                var size: Int
                var header = 8
                switch read32(bytes, index) {
                case 1:
                    guard end - index >= 16 else { throw .malformed("MP4 box header truncated") }
                    let large = UInt64(read32(bytes, index + 8)) << 32 | UInt64(read32(bytes, index + 12))
                    guard let exact = Int(exactly: large) else { throw .malformed("MP4 box \(type) overruns its parent") }
                    size = exact
                    header = 16
                case 0:
                    size = end - index
                case let compact:
                    size = Int(compact)
                }
                guard size >= header, size <= end - index else { throw .malformed("MP4 box \(type) overruns its parent") }
                let body = index + header
                let boxEnd = index + size
                switch type {
                case "moov", "trak", "mdia", "minf", "stbl":
                    if depth < 8 { try walk(body, boxEnd, depth: depth + 1) }
                case "stsd":
                    // Full box header (4) + entry count (4), then sample entries.
                    if depth < 8, boxEnd - body >= 8 { try walk(body + 8, boxEnd, depth: depth + 1) }
                case "mp4a":
                    hasAAC = true
                case "mvhd":
                    guard boxEnd - body >= 32 else { throw .malformed("mvhd truncated") }
                    let version = bytes[body]
                    let timescale: UInt64
                    let duration: UInt64
                    if version == 1 {
                        timescale = UInt64(read32(bytes, body + 20))
                        duration = UInt64(read32(bytes, body + 24)) << 32 | UInt64(read32(bytes, body + 28))
                    } else {
                        timescale = UInt64(read32(bytes, body + 12))
                        duration = UInt64(read32(bytes, body + 16))
                    }
                    guard timescale > 0 else { throw .malformed("mvhd timescale is zero") }
                    // Whole seconds and the remainder apart: remainder × 1000 < 2^42. Both the
                    // product and the sum are checked: a sum that wrapped would read as a
                    // short recording (2^64 − 1 units at 999 a second read as 382 ms).
                    let (wholeMs, overflow) = (duration / timescale).multipliedReportingOverflow(by: 1000)
                    let partMs = duration % timescale * 1000 / timescale
                    let (totalMs, sumOverflow) = wholeMs.addingReportingOverflow(partMs)
                    durationMs = overflow || sumOverflow ? durationCapMilliseconds
                        : Int(min(totalMs, UInt64(durationCapMilliseconds)))
                default: break
                }
                index = boxEnd
            }
        }
        try walk(0, bytes.count, depth: 0)
        guard hasAAC else { throw .unrecognized }
        guard let durationMs else { throw .malformed("M4A has no movie header (mvhd)") }
        return Voice(contentType: "audio/mp4", fileExtension: "m4a", durationMs: durationMs)
    }

    // MARK: Helpers

    static func read32(_ bytes: [UInt8], _ index: Int) -> UInt32 {
        UInt32(bytes[index]) << 24 | UInt32(bytes[index + 1]) << 16 | UInt32(bytes[index + 2]) << 8 | UInt32(bytes[index + 3])
    }

    /// A little-endian unsigned integer of `count` (≤ 8) bytes at `index`.
    static func readLE(_ bytes: [UInt8], _ index: Int, count: Int) -> UInt64 {
        (0..<count).reversed().reduce(0) { $0 << 8 | UInt64(bytes[index + $1]) }
    }

    /// An EBML unsigned integer element: big-endian, 0–8 bytes.
    static func unsigned(_ bytes: ArraySlice<UInt8>, _ name: String) throws(Failure) -> UInt64 {
        guard bytes.count <= 8 else { throw .malformed("WebM \(name) is \(bytes.count) bytes; at most 8") }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Milliseconds as an Int, capped at `durationCapMilliseconds` (+∞, from a product of
    /// two huge finite numbers, is capped too).
    static func cappedMilliseconds(_ value: Double) throws(Failure) -> Int {
        guard !value.isNaN, value >= 0 else { throw .malformed("duration is not a non-negative number") }
        guard value < Double(durationCapMilliseconds) else { return durationCapMilliseconds }
        return Int(value.rounded())
    }

    /// EBML variable-length integers, as Matroska/WebM uses them.
    struct EBMLReader {
        let bytes: [UInt8]
        var index = 0
        var atEnd: Bool { index >= bytes.count }

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func varint(keepMarker: Bool) throws(Failure) -> (value: UInt64, allOnes: Bool) {
            guard index < bytes.count else { throw .malformed("WebM truncated") }
            let first = bytes[index]
            guard first != 0 else { throw .malformed("WebM varint longer than 8 bytes") }
            let length = first.leadingZeroBitCount + 1
            guard index + length <= bytes.count else { throw .malformed("WebM truncated") }
            var value = UInt64(keepMarker ? first : first & (0xFF >> length))
            var allOnes = (first & (0xFF >> length)) == (0xFF >> length)
            for offset in 1..<length {
                value = value << 8 | UInt64(bytes[index + offset])
                if bytes[index + offset] != 0xFF { allOnes = false }
            }
            index += length
            return (value, allOnes)
        }

        /// An element's id (marker kept, as specs write ids) and size (nil when unknown).
        mutating func header() throws(Failure) -> (UInt32, Int?) {
            let id = try varint(keepMarker: true).value
            let size = try varint(keepMarker: false)
            guard id <= UInt64(UInt32.max) else { throw .malformed("WebM element id too long") }
            if size.allOnes { return (UInt32(id), nil) }
            guard size.value <= UInt64(bytes.count) else { throw .malformed("WebM element overruns the file") }
            return (UInt32(id), Int(size.value))
        }

        mutating func take(_ count: Int) throws(Failure) -> ArraySlice<UInt8> {
            guard count >= 0, index + count <= bytes.count else { throw .malformed("WebM element overruns the file") }
            defer { index += count }
            return bytes[index..<(index + count)]
        }
    }
}
