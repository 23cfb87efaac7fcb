import Foundation

/// Tiny, structurally valid media files built byte by byte (no fixtures on disk).
enum MediaSamples {
    static func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    static func be32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(value >> $0 & 0xFF) } }
    static func le(_ value: UInt64, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(value >> (8 * UInt64($0)) & 0xFF) } }

    static func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] { [0xFF, marker] + be16(payload.count + 2) + payload }

    /// SOI, APP0 JFIF, APP1 Exif (with a GPS-looking string), COM, DQT, SOF0, DHT, SOS, scan, EOI.
    static func jpeg(exifSecret: String = "GPS -23.5617 -46.6560 iPhone de Maria") -> [UInt8] {
        var bytes: [UInt8] = [0xFF, 0xD8]
        bytes += segment(0xE0, Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0])
        bytes += segment(0xE1, Array("Exif\0\0".utf8) + Array("MM\0*".utf8) + Array(exifSecret.utf8))
        bytes += segment(0xE1, Array("http://ns.adobe.com/xap/1.0/\0<x:xmpmeta>secret</x:xmpmeta>".utf8))
        bytes += segment(0xFE, Array("comment: taken at home".utf8))
        bytes += segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
        bytes += segment(0xC0, [8] + be16(1) + be16(1) + [1, 1, 0x11, 0])
        bytes += segment(0xC4, [0] + [UInt8](repeating: 0, count: 15) + [1] + [0])
        bytes += segment(0xDA, [1, 1, 0, 0, 63, 0])
        bytes += [0x12, 0x34, 0xFF, 0x00, 0x56, 0xFF, 0xD9]
        return bytes
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] { be32(data.count) + Array(type.utf8) + data + [0, 0, 0, 0] }

    static func png() -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            + chunk("IHDR", be32(1) + be32(1) + [8, 2, 0, 0, 0])
            + chunk("tEXt", Array("Author\0Maria Souza".utf8))
            + chunk("eXIf", Array("MM\0*GPS".utf8))
            + chunk("IDAT", [0x78, 0x9C, 0x63, 0, 0, 0, 2, 0, 1])
            + chunk("IEND", [])
    }

    static func oggPage(granule: UInt64, sequence: Int, type: UInt8, body: [UInt8]) -> [UInt8] {
        Array("OggS".utf8) + [0, type] + le(granule, 8) + le(0x1234, 4) + le(UInt64(sequence), 4) + le(0, 4) + [1, UInt8(body.count)] + body
    }

    /// An Ogg/Opus stream of `seconds` (pre-skip 312 samples at 48 kHz).
    static func ogg(seconds: Double) -> [UInt8] {
        let head = Array("OpusHead".utf8) + [1, 1] + le(312, 2) + le(48_000, 4) + [0, 0, 0]
        let tags = Array("OpusTags".utf8) + le(0, 4) + le(0, 4)
        return oggPage(granule: 0, sequence: 0, type: 2, body: head)
            + oggPage(granule: 0, sequence: 1, type: 0, body: tags)
            + oggPage(granule: UInt64(seconds * 48_000) + 312, sequence: 2, type: 4, body: [0xFC, 0xFF, 0xFE])
    }

    static func ebml(_ id: [UInt8], _ payload: [UInt8]) -> [UInt8] { id + [0x80 | UInt8(payload.count)] + payload }
    static let unknownSize: [UInt8] = [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]

    /// WebM as MediaRecorder writes it: unknown-size Segment and Cluster, no Duration;
    /// blocks every 20 ms up to `seconds`.
    static func webm(seconds: Double, codec: String = "A_OPUS") -> [UInt8] {
        var bytes = ebml([0x1A, 0x45, 0xDF, 0xA3], ebml([0x42, 0x82], Array("webm".utf8)))
        bytes += [0x18, 0x53, 0x80, 0x67] + unknownSize
        bytes += ebml([0x15, 0x49, 0xA9, 0x66], ebml([0x2A, 0xD7, 0xB1], [0x0F, 0x42, 0x40]))
        bytes += ebml([0x16, 0x54, 0xAE, 0x6B], ebml([0xAE], ebml([0xD7], [1]) + ebml([0x86], Array(codec.utf8))))
        var clusterStart = 0
        var time = 0
        let end = Int(seconds * 1000)
        while clusterStart <= end {
            bytes += [0x1F, 0x43, 0xB6, 0x75] + unknownSize
            bytes += ebml([0xE7], be16(clusterStart).count == 2 ? [UInt8(clusterStart >> 16 & 0xFF)] + be16(clusterStart) : [])
            time = clusterStart
            while time <= min(end, clusterStart + 10_000) {
                bytes += ebml([0xA3], [0x81] + be16(time - clusterStart) + [0x80, 0xFC])
                time += 20
            }
            clusterStart += 10_020
        }
        return bytes
    }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { be32(payload.count + 8) + Array(type.utf8) + payload }

    /// M4A (ftyp M4A, moov/mvhd with the duration, an mp4a sample entry).
    static func m4a(seconds: Double) -> [UInt8] {
        let mvhd = box("mvhd", [0, 0, 0, 0] + be32(0) + be32(0) + be32(1000) + be32(Int(seconds * 1000)) + [UInt8](repeating: 0, count: 80))
        let stsd = box("stsd", [0, 0, 0, 0] + be32(1) + box("mp4a", [UInt8](repeating: 0, count: 28)))
        let trak = box("trak", box("mdia", box("minf", box("stbl", stsd))))
        return box("ftyp", Array("M4A ".utf8) + be32(0) + Array("M4A isom".utf8)) + box("moov", mvhd + trak)
    }

    /// A RIFF/WAVE `fmt ` chunk body: PCM unless `format` says otherwise; byte rate and
    /// block align consistent unless given.
    static func wavFormat(format: Int = 1, channels: Int = 1, rate: Int = 16_000, bits: Int = 16,
                          byteRate: Int? = nil, blockAlign: Int? = nil) -> [UInt8] {
        let align = blockAlign ?? channels * bits / 8
        return le(UInt64(format), 2) + le(UInt64(channels), 2) + le(UInt64(rate), 4)
            + le(UInt64(byteRate ?? rate * align), 4) + le(UInt64(align), 2) + le(UInt64(bits), 2)
    }

    /// A RIFF/WAVE file of the given chunks (type, body; the declared size may differ).
    static func riff(_ chunks: [(type: String, size: Int?, body: [UInt8])], riffSize: Int? = nil) -> [UInt8] {
        var content = Array("WAVE".utf8)
        for chunk in chunks {
            content += Array(chunk.type.utf8) + le(UInt64(chunk.size ?? chunk.body.count), 4) + chunk.body
            if chunk.body.count % 2 == 1 { content.append(0) }
        }
        return Array("RIFF".utf8) + le(UInt64(riffSize ?? content.count), 4) + content
    }

    /// A 16-bit PCM WAV of `seconds` of silence, as the gate page writes it (16 kHz mono
    /// by default), with a LIST chunk between `fmt ` and `data` as other writers add.
    static func wav(seconds: Double, rate: Int = 16_000, channels: Int = 1, list: Bool = false) -> [UInt8] {
        let frames = Int(seconds * Double(rate))
        var chunks: [(type: String, size: Int?, body: [UInt8])] = [("fmt ", nil, wavFormat(channels: channels, rate: rate))]
        if list { chunks.append(("LIST", nil, Array("INFOISFT".utf8) + le(5, 4) + Array("gate\0".utf8))) }
        chunks.append(("data", nil, [UInt8](repeating: 0, count: frames * channels * 2)))
        return riff(chunks)
    }
}
