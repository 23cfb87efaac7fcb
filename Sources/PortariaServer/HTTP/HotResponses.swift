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

/// `GET /v1/visits` and `GET /v1/visits/{id}` written by hand (decision 0051): the same
/// bytes as `JSONCoding.encoder()` — keys sorted, nil optionals left out — which had been
/// about half of the list's CPU (decision 0033). `HotResponseTests` compares bytes.
extension VisitPage {
    var jsonBytes: [UInt8] {
        var writer = JSONBytesWriter(capacity: 512 + visits.count * 1_024)
        writer.raw("{")
        if let nextCursor {
            writer.raw("\"next_cursor\":")
            writer.string(nextCursor)
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
        if let carrier {
            writer.raw(",\"carrier\":")
            writer.string(carrier)
        }
        writer.raw(",\"company_id\":")
        writer.string(companyID)
        writer.raw(",\"created_at\":")
        writer.timestamp(createdAt)
        writer.raw(",\"expires_at\":")
        writer.timestamp(expiresAt)
        writer.raw(",\"geofence\":{")
        if let bearing = geofence.bearingDeg {
            writer.raw("\"bearing_deg\":")
            writer.int(bearing)
            writer.raw(",")
        }
        if let distance = geofence.distanceM {
            writer.raw("\"distance_m\":")
            writer.int(distance)
            writer.raw(",")
        }
        writer.raw("\"status\":")
        writer.string(geofence.status.rawValue)
        writer.raw("},\"geofence_badge\":")
        writer.string(geofenceBadge)
        writer.raw(",\"id\":")
        writer.string(id)
        writer.raw(",\"kind\":")
        writer.string(kind.rawValue)
        if let photo {
            writer.raw(",\"photo\":")
            photo.write(into: &writer)
        }
        if let resolution {
            writer.raw(",\"resolution\":{\"action\":")
            writer.string(resolution.action.rawValue)
            writer.raw(",\"at\":")
            writer.timestamp(resolution.at)
            writer.raw(",\"by\":")
            resolution.by.write(into: &writer)
            writer.raw(",\"via\":")
            writer.string(resolution.via.rawValue)
            writer.raw("}")
        }
        if let ringDeadline {
            writer.raw(",\"ring_deadline\":")
            writer.timestamp(ringDeadline)
        }
        writer.raw(",\"status\":")
        writer.string(status.rawValue)
        writer.raw(",\"unit\":{\"id\":")
        writer.string(unit.id)
        writer.raw(",\"label\":")
        writer.string(unit.label)
        writer.raw("},\"updated_at\":")
        writer.timestamp(updatedAt)
        writer.raw(",\"visitor_name\":")
        writer.string(visitorName)
        if let voiceMessage {
            writer.raw(",\"voice_message\":")
            voiceMessage.write(into: &writer)
        }
        writer.raw("}")
    }
}

extension VisitAttempt {
    /// at, channel, detail, device_id, id, kind, step, user.
    func write(into writer: inout JSONBytesWriter) {
        writer.raw("{\"at\":")
        writer.timestamp(at)
        if let channel {
            writer.raw(",\"channel\":")
            writer.string(channel)
        }
        if let detail {
            writer.raw(",\"detail\":")
            writer.string(detail)
        }
        if let deviceID {
            writer.raw(",\"device_id\":")
            writer.string(deviceID)
        }
        writer.raw(",\"id\":")
        writer.string(id)
        writer.raw(",\"kind\":")
        writer.string(kind.rawValue)
        if let step {
            writer.raw(",\"step\":")
            writer.int(step)
        }
        if let user {
            writer.raw(",\"user\":")
            user.write(into: &writer)
        }
        writer.raw("}")
    }
}

extension VisitMediaInfo {
    /// byte_size, content_type, created_at, duration_ms, url.
    func write(into writer: inout JSONBytesWriter) {
        writer.raw("{\"byte_size\":")
        writer.int(byteSize)
        writer.raw(",\"content_type\":")
        writer.string(contentType)
        writer.raw(",\"created_at\":")
        writer.timestamp(createdAt)
        if let durationMs {
            writer.raw(",\"duration_ms\":")
            writer.int(durationMs)
        }
        writer.raw(",\"url\":")
        writer.string(url)
        writer.raw("}")
    }
}

extension PersonRef {
    func write(into writer: inout JSONBytesWriter) {
        writer.raw("{\"id\":")
        writer.string(id)
        writer.raw(",\"name\":")
        writer.string(name)
        writer.raw("}")
    }
}
