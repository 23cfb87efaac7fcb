import Foundation
import PortariaCore

/// JSON written by hand for the hottest answers (decision 0045): `JSONEncoder` was 23 % of
/// the server's CPU under `GET /v1/me` once the bearer check came from memory (decision
/// 0043). The output is what `JSONCoding.encoder()` writes for the same value — keys
/// sorted, slashes unescaped, nil optionals left out — and decodes to the same value
/// (`HotResponseTests` checks both on ordinary and hostile strings).
struct JSONBytesWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// A JSON string: `"` and `\` escaped, control characters as `JSONEncoder` writes them
    /// (`\b \f \n \r \t`, others `\u00XX`); everything else, non-BMP included, as UTF-8.
    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case 0x08: raw("\\b")
            case 0x0C: raw("\\f")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0x00..<0x20:
                raw("\\u00")
                let hex: StaticString = "0123456789abcdef"
                hex.withUTF8Buffer { digits in
                    bytes.append(digits[Int(byte >> 4)])
                    bytes.append(digits[Int(byte & 0x0F)])
                }
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `[…]` of `element`s, comma-separated.
    mutating func array<Element>(_ elements: [Element], _ element: (inout JSONBytesWriter, Element) -> Void) {
        raw("[")
        for (index, value) in elements.enumerated() {
            if index > 0 { raw(",") }
            element(&self, value)
        }
        raw("]")
    }
}

extension MeResponse {
    /// `GET /v1/me`'s body; keys in sorted order, as `JSONCoding.encoder()` writes them.
    var jsonBytes: [UInt8] {
        var writer = JSONBytesWriter()
        writer.raw("{\"company\":{\"id\":")
        writer.string(company.id)
        writer.raw(",\"name\":")
        writer.string(company.name)
        if let timeZone = company.timeZone {
            writer.raw(",\"time_zone\":")
            writer.string(timeZone)
        }
        writer.raw("},\"permissions\":")
        writer.array(permissions) { $0.string($1) }
        writer.raw(",\"profile\":")
        writer.string(profile.rawValue)
        writer.raw(",\"units\":")
        writer.array(units) { writer, unit in
            writer.raw("{\"id\":")
            writer.string(unit.id)
            writer.raw(",\"label\":")
            writer.string(unit.label)
            writer.raw("}")
        }
        writer.raw(",\"user\":{\"id\":")
        writer.string(user.id)
        writer.raw(",\"name\":")
        writer.string(user.name)
        writer.raw(",\"username\":")
        writer.string(user.username)
        writer.raw("}}")
        return writer.bytes
    }
}
