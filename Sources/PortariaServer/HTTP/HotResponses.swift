import Foundation
import PortariaCore

/// JSON written by hand for the hottest answers (decision 0051): `JSONEncoder` was 23 % of
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

    /// A JSON integer, as `JSONEncoder` writes an `Int`: optional minus, decimal digits.
    mutating func int(_ value: Int) {
        // `description`, as JSONEncoder; up to 15 digits it is a small string, no allocation.
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A timestamp as `JSONCoding.encoder()`'s date strategy writes it: the string of
    /// `Timestamp.format` (digits, `-`, `:`, `T`, `Z`; nothing to escape).
    mutating func timestamp(_ date: Date) {
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: Timestamp.format(date).utf8)
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

    /// `key` (which carries its own comma, quotes and colon: `,"carrier":`) then `value`.
    mutating func member<Value: JSONBytesWritable>(_ key: StaticString, _ value: Value) {
        raw(key)
        value.write(into: &self)
    }

    /// Nothing for nil: `JSONEncoder` leaves nil optionals out.
    mutating func member<Value: JSONBytesWritable>(_ key: StaticString, _ value: Value?) {
        if let value { member(key, value) }
    }
}

/// A value `JSONBytesWriter.member` can write.
protocol JSONBytesWritable {
    func write(into writer: inout JSONBytesWriter)
}

extension String: JSONBytesWritable {
    func write(into writer: inout JSONBytesWriter) { writer.string(self) }
}

extension Int: JSONBytesWritable {
    func write(into writer: inout JSONBytesWriter) { writer.int(self) }
}

/// As `JSONCoding.encoder()`'s date strategy writes it.
extension Date: JSONBytesWritable {
    func write(into writer: inout JSONBytesWriter) { writer.timestamp(self) }
}

extension MeResponse {
    /// `GET /v1/me`'s body; keys in sorted order, as `JSONCoding.encoder()` writes them.
    var jsonBytes: [UInt8] {
        var writer = JSONBytesWriter()
        writer.member("{\"company\":{\"id\":", company.id)
        writer.member(",\"name\":", company.name)
        writer.member(",\"time_zone\":", company.timeZone)
        writer.raw("},\"permissions\":")
        writer.array(permissions) { $0.string($1) }
        writer.member(",\"profile\":", profile.rawValue)
        writer.raw(",\"units\":")
        writer.array(units) { $1.write(into: &$0) }
        writer.member(",\"user\":{\"id\":", user.id)
        writer.member(",\"name\":", user.name)
        writer.member(",\"username\":", user.username)
        writer.raw("}}")
        return writer.bytes
    }
}

/// `GET /v1/visits` and `GET /v1/visits/{id}` written by hand (decision 0051): the same
/// bytes as `JSONCoding.encoder()` — keys sorted, nil optionals left out — which had been
/// about half of the list's CPU (decision 0051). `HotResponseTests` compares bytes.
extension VisitPage {
    var jsonBytes: [UInt8] {
        var writer = JSONBytesWriter(capacity: 512 + visits.count * 1_024)
        writer.raw("{")
        if let nextCursor {
            writer.member("\"next_cursor\":", nextCursor)
            writer.raw(",")
        }
        writer.raw("\"visits\":")
        writer.array(visits) { $1.write(into: &$0) }
        writer.raw("}")
        return writer.bytes
    }
}

extension Visit {
    var jsonBytes: [UInt8] {
        var writer = JSONBytesWriter(capacity: 1_024)
        write(into: &writer)
        return writer.bytes
    }

    /// Keys in the order `.sortedKeys` puts them: answered_by, attempts, carrier,
    /// company_id, created_at, expires_at, geofence, geofence_badge, id, kind, photo,
    /// resolution, ring_deadline, status, unit, updated_at, visitor_name, voice_message.
    func write(into writer: inout JSONBytesWriter) {
        writer.raw("{")
        if let answeredBy {
            writer.raw("\"answered_by\":")
            answeredBy.write(into: &writer)
            writer.raw(",")
        }
        writer.raw("\"attempts\":")
        writer.array(attempts) { $1.write(into: &$0) }
        writer.member(",\"carrier\":", carrier)
        writer.member(",\"company_id\":", companyID)
        writer.member(",\"created_at\":", createdAt)
        writer.member(",\"expires_at\":", expiresAt)
        writer.raw(",\"geofence\":{")
        if let bearing = geofence.bearingDeg {
            writer.member("\"bearing_deg\":", bearing)
            writer.raw(",")
        }
        if let distance = geofence.distanceM {
            writer.member("\"distance_m\":", distance)
            writer.raw(",")
        }
        writer.member("\"status\":", geofence.status.rawValue)
        writer.member("},\"geofence_badge\":", geofenceBadge)
        writer.member(",\"id\":", id)
        writer.member(",\"kind\":", kind.rawValue)
        writer.member(",\"photo\":", photo)
        if let resolution {
            writer.member(",\"resolution\":{\"action\":", resolution.action.rawValue)
            writer.member(",\"at\":", resolution.at)
            writer.raw(",\"by\":")
            resolution.by.write(into: &writer)
            writer.member(",\"via\":", resolution.via.rawValue)
            writer.raw("}")
        }
        writer.member(",\"ring_deadline\":", ringDeadline)
        writer.member(",\"status\":", status.rawValue)
        writer.member(",\"unit\":", unit)
        writer.member(",\"updated_at\":", updatedAt)
        writer.member(",\"visitor_name\":", visitorName)
        writer.member(",\"voice_message\":", voiceMessage)
        writer.raw("}")
    }
}

extension VisitAttempt: JSONBytesWritable {
    /// at, channel, detail, device_id, id, kind, step, user.
    func write(into writer: inout JSONBytesWriter) {
        writer.member("{\"at\":", at)
        writer.member(",\"channel\":", channel)
        writer.member(",\"detail\":", detail)
        writer.member(",\"device_id\":", deviceID)
        writer.member(",\"id\":", id)
        writer.member(",\"kind\":", kind.rawValue)
        writer.member(",\"step\":", step)
        writer.member(",\"user\":", user)
        writer.raw("}")
    }
}

extension VisitMediaInfo: JSONBytesWritable {
    /// byte_size, content_type, created_at, duration_ms, url.
    func write(into writer: inout JSONBytesWriter) {
        writer.member("{\"byte_size\":", byteSize)
        writer.member(",\"content_type\":", contentType)
        writer.member(",\"created_at\":", createdAt)
        writer.member(",\"duration_ms\":", durationMs)
        writer.member(",\"url\":", url)
        writer.raw("}")
    }
}

extension UnitSummary: JSONBytesWritable {
    func write(into writer: inout JSONBytesWriter) {
        writer.member("{\"id\":", id)
        writer.member(",\"label\":", label)
        writer.raw("}")
    }
}

extension PersonRef: JSONBytesWritable {
    func write(into writer: inout JSONBytesWriter) {
        writer.member("{\"id\":", id)
        writer.member(",\"name\":", name)
        writer.raw("}")
    }
}
