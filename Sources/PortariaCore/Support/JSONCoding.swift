import Foundation

/// The one JSON dialect of the API: `snake_case` keys, UTC ISO-8601 timestamps with `Z`.
///
/// Types in the contract spell their coding keys in snake_case themselves (no key
/// conversion strategy): the wire names are then visible in code and the same on every
/// platform, and `JSONValue` dictionaries pass through untouched.
public enum JSONCoding {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = Timestamp.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "expected an ISO-8601 UTC timestamp")
            }
            return date
        }
        return decoder
    }
}

/// ISO-8601 UTC timestamps, `2026-11-29T14:32:05Z` (fractions accepted on input).
public enum Timestamp {
    public static func format(_ date: Date) -> String {
        var seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        seconds -= days * 86_400
        let (year, month, day) = civilDate(fromDays: days)
        guard (0...9999).contains(year) else {
            return String(format: "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ",
                          year, month, day, seconds / 3600, (seconds % 3600) / 60, seconds % 60)
        }
        // Digits written directly: `String(format:)` was a fifth of the CPU of `GET
        // /v1/visits` (every visit carries several timestamps) and of rendering a push.
        return String(unsafeUninitializedCapacity: 20) { buffer in
            func two(_ value: Int64, at index: Int) {
                buffer[index] = UInt8(ascii: "0") + UInt8(value / 10)
                buffer[index + 1] = UInt8(ascii: "0") + UInt8(value % 10)
            }
            two(year / 100, at: 0)
            two(year % 100, at: 2)
            buffer[4] = UInt8(ascii: "-")
            two(month, at: 5)
            buffer[7] = UInt8(ascii: "-")
            two(day, at: 8)
            buffer[10] = UInt8(ascii: "T")
            two(seconds / 3600, at: 11)
            buffer[13] = UInt8(ascii: ":")
            two((seconds % 3600) / 60, at: 14)
            buffer[16] = UInt8(ascii: ":")
            two(seconds % 60, at: 17)
            buffer[19] = UInt8(ascii: "Z")
            return 20
        }
    }

    public static func parse(_ text: String) -> Date? {
        // ISO8601DateFormatter is lenient and reads 2023-02-29 as 2023-03-01; a day that
        // does not exist is refused instead of silently moved.
        guard hasExistingCalendarDay(text) else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    /// Whether `text` starts with `YYYY-MM-DD` naming a day of the proleptic Gregorian calendar.
    private static func hasExistingCalendarDay(_ text: String) -> Bool {
        let bytes = Array(text.utf8.prefix(10))
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return false }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              (1...12).contains(month) else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return (1...lengths[month - 1]).contains(day)
    }

    /// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
    private static func civilDate(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
