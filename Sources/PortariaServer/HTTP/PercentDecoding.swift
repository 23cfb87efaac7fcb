/// Query arguments arrive with their percent-escapes intact (libmicrohttpd is told not to
/// decode, so that a path is decoded once, by the router). This decodes them the way
/// libmicrohttpd's own decoder did: each `%XX` with two hex digits becomes that byte, and
/// anything else — a lone `%`, `%G1`, a truncated `%4` — stays as written. Bytes that do
/// not form UTF-8 become U+FFFD, as every other header value does.
enum PercentDecoding {
    static func decodeLeniently(_ text: String) -> String {
        let utf8 = text.utf8
        guard utf8.contains(UInt8(ascii: "%")) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"),
               let first = utf8.index(index, offsetBy: 1, limitedBy: utf8.endIndex), first != utf8.endIndex,
               let second = utf8.index(first, offsetBy: 1, limitedBy: utf8.endIndex), second != utf8.endIndex,
               let high = hexValue(utf8[first]), let low = hexValue(utf8[second]) {
                bytes.append(high << 4 | low)
                index = utf8.index(after: second)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
