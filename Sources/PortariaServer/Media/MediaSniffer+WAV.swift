import Foundation

extension MediaSniffer {
    /// WAV is uncompressed (a 60 s recado at 16 kHz, 16-bit mono is 1.92 MB), so it gets
    /// a larger limit than the compressed formats; the upload route admits this much.
    static let maxWAVBytes = 2 * 1024 * 1024

    /// RIFF/WAVE with linear PCM (format 1): 1–2 channels, 8–48 kHz, 16 bits a sample —
    /// what the gate page writes when the browser cannot record AAC (decision 0077), and
    /// what `AVAudioPlayer` and every browser play. The `fmt ` chunk must be consistent
    /// (block align = channels × 2, byte rate = rate × block align) and precede `data`;
    /// every chunk must fit in the body (a `data` chunk may not claim more than is there:
    /// the duration is computed from its declared size). Chunks other than `fmt ` and
    /// `data` (LIST, fact, …) are skipped.
    ///
    /// Every chunk size is a 32-bit number compared against what is left of the body
    /// (at most `maxWAVBytes`) before it is added, so no sum can overflow.
    static func wav(_ bytes: [UInt8]) throws(Failure) -> Voice {
        guard bytes.count >= 12 else { throw .malformed("WAV header truncated") }
        guard bytes[8..<12].elementsEqual("WAVE".utf8) else { throw .unrecognized }
        let riffSize = Int(readLE(bytes, 4, count: 4))
        // RIFF's size counts from byte 8; a smaller body means a truncated file. Extra
        // bytes after the RIFF chunk are not read.
        guard riffSize >= 4, riffSize <= bytes.count - 8 else { throw .malformed("WAV RIFF size \(riffSize) overruns the file") }
        let end = 8 + riffSize
        var index = 12
        var format: (channels: Int, rate: Int, byteRate: Int)?
        while end - index >= 8 {
            let type = String(decoding: bytes[index..<(index + 4)], as: UTF8.self)
            let size = Int(readLE(bytes, index + 4, count: 4))
            let body = index + 8
            guard size <= end - body else { throw .malformed("WAV chunk \(type) overruns the file") }
            switch type {
            case "fmt ":
                guard format == nil else { throw .malformed("WAV has two fmt chunks") }
                guard size >= 16 else { throw .malformed("WAV fmt chunk is \(size) bytes; at least 16") }
                let tag = readLE(bytes, body, count: 2)
                let channels = Int(readLE(bytes, body + 2, count: 2))
                let rate = Int(readLE(bytes, body + 4, count: 4))
                let byteRate = Int(readLE(bytes, body + 8, count: 4))
                let blockAlign = Int(readLE(bytes, body + 12, count: 2))
                let bits = readLE(bytes, body + 14, count: 2)
                guard tag == 1 else { throw .malformed("WAV format \(tag) is not PCM (1)") }
                guard (1...2).contains(channels) else { throw .malformed("WAV has \(channels) channels; 1 or 2") }
                guard (8_000...48_000).contains(rate) else { throw .malformed("WAV sample rate \(rate) Hz is outside 8–48 kHz") }
                guard bits == 16 else { throw .malformed("WAV samples are \(bits) bits; 16") }
                // All three are small here (≤ 2 channels, ≤ 48 kHz): no product can overflow.
                guard blockAlign == channels * 2 else { throw .malformed("WAV block align \(blockAlign) is not channels × 2") }
                guard byteRate == rate * blockAlign else { throw .malformed("WAV byte rate \(byteRate) is not sample rate × block align") }
                format = (channels, rate, byteRate)
            case "data":
                guard let format else { throw .malformed("WAV data chunk before the fmt chunk") }
                guard size % (format.channels * 2) == 0 else { throw .malformed("WAV data is not whole sample frames") }
                guard size > 0 else { throw .malformed("WAV has no samples") }
                // size < 2^32 and byteRate ≥ 16,000: size × 1000 fits an Int; checked anyway.
                let (scaled, overflow) = size.multipliedReportingOverflow(by: 1000)
                guard !overflow else { throw .malformed("WAV data size is out of range") }
                let milliseconds = scaled / format.byteRate
                return Voice(contentType: "audio/wav", fileExtension: "wav", durationMs: min(milliseconds, durationCapMilliseconds))
            default:
                break
            }
            // Chunks are padded to an even length; the pad byte may be missing at the end.
            let padded = size + (size & 1)
            index = body + min(padded, end - body)
        }
        throw .malformed(format == nil ? "WAV has no fmt chunk" : "WAV has no data chunk")
    }
}
