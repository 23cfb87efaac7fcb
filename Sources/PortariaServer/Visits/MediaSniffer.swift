import Foundation

/// Recognises uploads by their bytes (never by the Content-Type a client claims),
/// strips photo metadata by rewriting the container, and reads voice-message durations.
/// No image or audio library: only the container structure is touched.
enum MediaSniffer {
    static let maxPhotoBytes = 2 * 1024 * 1024
    static let maxVoiceBytes = 1024 * 1024
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

    /// Copies a JPEG's segments up to the scan, dropping APP1 (Exif, XMP), APP2–APP13
    /// and APP15 (ICC, IPTC, maker data) and comments; keeps APP0 (JFIF) and APP14 (Adobe,
    /// needed to decode colours correctly) and everything the decoder needs. The
    /// entropy-coded scan and what follows it are copied verbatim.
    ///
    /// Losing the Exif orientation is deliberate: the gate page draws the camera frame
    /// to a canvas (which applies orientation) before uploading.
    static func stripJPEG(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
        var output: [UInt8] = [0xFF, 0xD8]
        var index = 2
        var sawFrame = false
        while index < bytes.count {
            guard bytes[index] == 0xFF else { throw .malformed("JPEG segment does not start with 0xFF at \(index)") }
            // Fill bytes (0xFF padding) may precede a marker.
            var markerIndex = index + 1
            while markerIndex < bytes.count && bytes[markerIndex] == 0xFF { markerIndex += 1 }
            guard markerIndex < bytes.count else { throw .malformed("JPEG ends inside a marker") }
            let marker = bytes[markerIndex]
            let segmentStart = markerIndex + 1
            switch marker {
            case 0xD8, 0x01, 0xD0...0xD7:
                throw .malformed("unexpected JPEG marker \(marker) before the scan")
            case 0xD9:
                throw .malformed("JPEG has no image scan")
            default:
                break
            }
            guard segmentStart + 2 <= bytes.count else { throw .malformed("JPEG segment length missing") }
            let length = Int(bytes[segmentStart]) << 8 | Int(bytes[segmentStart + 1])
            guard length >= 2, segmentStart + length <= bytes.count else { throw .malformed("JPEG segment overruns the file") }
            let segmentEnd = segmentStart + length
            let keep: Bool
            switch marker {
            case 0xE0, 0xEE: keep = true              // JFIF, Adobe
            case 0xE1...0xEF, 0xFE: keep = false      // Exif/XMP/ICC/IPTC/maker data, comments
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                sawFrame = true
                keep = true
            default: keep = true                      // DQT, DHT, DRI, SOS, …
            }
            if keep { output += [0xFF, marker] + bytes[segmentStart..<segmentEnd] }
            if marker == 0xDA {
                guard sawFrame else { throw .malformed("JPEG scan before any frame header") }
                output += bytes[segmentEnd...]
                return output
            }
            index = segmentEnd
        }
        throw .malformed("JPEG has no image scan")
    }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// Chunks needed to show the image faithfully; everything else (tEXt, zTXt, iTXt,
    /// eXIf, tIME, private chunks) is dropped.
    static let pngKeep: Set<String> = ["IHDR", "PLTE", "IDAT", "IEND", "tRNS", "gAMA", "cHRM", "sRGB", "iCCP", "sBIT", "bKGD", "pHYs"]

    static func stripPNG(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
        var output = pngSignature
        var index = pngSignature.count
        var first = true
        while index + 12 <= bytes.count {
            let length = Int(bytes[index]) << 24 | Int(bytes[index + 1]) << 16 | Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            let end = index + 12 + length
            guard length >= 0, length < 0x7fff_ffff, end <= bytes.count else { throw .malformed("PNG chunk overruns the file") }
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

    /// WebM/Opus, Ogg/Opus or M4A/AAC, with its duration read from the container.
    static func voice(_ bytes: [UInt8]) throws(Failure) -> Voice {
        guard bytes.count <= maxVoiceBytes else { throw .tooLarge }
        let voice: Voice
        if bytes.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) {
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

    /// Ogg/Opus: the first page carries `OpusHead` (pre-skip); the duration is the last
    /// page's granule position (48 kHz samples) minus the pre-skip.
    static func ogg(_ bytes: [UInt8]) throws(Failure) -> Voice {
        guard let head = find(Array("OpusHead".utf8), in: bytes, from: 0, limit: 512), head + 12 <= bytes.count else {
            throw .unrecognized
        }
        let preSkip = Int(bytes[head + 10]) | Int(bytes[head + 11]) << 8
        var granule: Int64 = -1
        var index = 0
        while index + 27 <= bytes.count {
            guard Array(bytes[index..<(index + 4)]) == Array("OggS".utf8) else { throw .malformed("Ogg page expected at \(index)") }
            var value: UInt64 = 0
            for offset in (0..<8).reversed() { value = value << 8 | UInt64(bytes[index + 6 + offset]) }
            let segments = Int(bytes[index + 26])
            guard index + 27 + segments <= bytes.count else { throw .malformed("Ogg segment table overruns the file") }
            let bodyLength = bytes[(index + 27)..<(index + 27 + segments)].reduce(0) { $0 + Int($1) }
            if value != UInt64.max { granule = max(granule, Int64(bitPattern: value)) }
            index += 27 + segments + bodyLength
        }
        guard index == bytes.count, granule >= 0 else { throw .malformed("Ogg stream is truncated") }
        let samples = max(0, granule - Int64(preSkip))
        return Voice(contentType: "audio/ogg", fileExtension: "ogg", durationMs: Int(samples * 1000 / 48_000))
    }

    /// WebM (Matroska) with an Opus track. Browsers' MediaRecorder writes no Duration
    /// and unknown-size Segment/Cluster elements, so the duration is the later of the
    /// Info Duration and the last block's timestamp (cluster timecode + block offset).
    static func webm(_ bytes: [UInt8]) throws(Failure) -> Voice {
        var reader = EBMLReader(bytes: bytes)
        var docType = ""
        var codecs: [String] = []
        var timecodeScale: Double = 1_000_000
        var duration: Double = 0
        var clusterTime: Int64 = 0
        var lastBlock: Int64 = 0
        let masters: Set<UInt32> = [0x1A45DFA3, 0x18538067, 0x1549A966, 0x1654AE6B, 0xAE, 0x1F43B675, 0xA0]
        while !reader.atEnd {
            let (id, size) = try reader.header()
            if masters.contains(id) { continue }   // descend: read the children inline
            guard let size else { throw .malformed("WebM element of unknown size is not a container") }
            let payload = try reader.take(size)
            switch id {
            case 0x4282: docType = String(decoding: payload, as: UTF8.self)
            case 0x86: codecs.append(String(decoding: payload, as: UTF8.self))
            case 0x2AD7B1: timecodeScale = Double(unsigned(payload))
            case 0x4489:
                if payload.count == 4 { duration = Double(Float(bitPattern: UInt32(truncatingIfNeeded: unsigned(payload)))) }
                else if payload.count == 8 { duration = Double(bitPattern: unsigned(payload)) }
            case 0xE7: clusterTime = Int64(unsigned(payload))
            case 0xA3, 0xA1:
                // Block: track number (EBML varint), then a signed 16-bit relative timecode.
                var block = EBMLReader(bytes: Array(payload))
                _ = try block.varint(keepMarker: false)
                let offset = try block.take(2)
                let relative = Int16(bitPattern: UInt16(offset[offset.startIndex]) << 8 | UInt16(offset[offset.startIndex + 1]))
                lastBlock = max(lastBlock, clusterTime + Int64(relative))
            default: break
            }
        }
        guard docType == "webm" else { throw .unrecognized }
        guard codecs.contains("A_OPUS") else { throw .malformed("WebM voice messages must be Opus (A_OPUS)") }
        let units = max(duration, Double(lastBlock))
        return Voice(contentType: "audio/webm", fileExtension: "webm", durationMs: Int((units * timecodeScale / 1_000_000).rounded()))
    }

    /// M4A: an `mp4a` sample entry somewhere in `moov`, duration from `mvhd`.
    static func m4a(_ bytes: [UInt8]) throws(Failure) -> Voice {
        var durationMs: Int?
        var hasAAC = false
        func walk(_ start: Int, _ end: Int, depth: Int) throws(Failure) {
            var index = start
            while index + 8 <= end {
                var size = Int(read32(bytes, index))
                let type = String(decoding: bytes[(index + 4)..<(index + 8)], as: UTF8.self)
                var header = 8
                if size == 1 {
                    guard index + 16 <= end else { throw .malformed("MP4 box header truncated") }
                    size = Int(read32(bytes, index + 8)) << 32 | Int(read32(bytes, index + 12))
                    header = 16
                } else if size == 0 {
                    size = end - index
                }
                guard size >= header, index + size <= end else { throw .malformed("MP4 box \(type) overruns its parent") }
                let body = index + header
                switch type {
                case "moov", "trak", "mdia", "minf", "stbl":
                    if depth < 8 { try walk(body, index + size, depth: depth + 1) }
                case "stsd":
                    // Full box header (4) + entry count (4), then sample entries.
                    if depth < 8 { try walk(body + 8, index + size, depth: depth + 1) }
                case "mp4a":
                    hasAAC = true
                case "mvhd":
                    guard body + 32 <= index + size else { throw .malformed("mvhd truncated") }
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
                    durationMs = Int(min(duration, UInt64(Int32.max)) * 1000 / timescale)
                default: break
                }
                index += size
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

    static func unsigned(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8], from: Int, limit: Int) -> Int? {
        let end = min(bytes.count - needle.count, from + limit)
        guard end >= from else { return nil }
        for index in from...end where bytes[index] == needle[0] && Array(bytes[index..<(index + needle.count)]) == needle {
            return index
        }
        return nil
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
