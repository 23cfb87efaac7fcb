/// A phone number as the server stores and compares it: E.164, `+5511999990001`. A file
/// of its own (no database, no service) so the exact code that reads phones from the
/// outside is also fuzzed on its own (`fuzz/phone`).
enum PhoneNumber {
    /// `+5511999990001` form: digits with an optional leading `+`, separators removed. A
    /// national number — 10 or 11 digits without `+`, as people write "(11) 99999-0001" —
    /// is read in `defaultCountryCode` (`--default-country-code`, 55); 12–15 digits without
    /// `+` already carry their country code. Anything else is not a phone (nil).
    static func normalize(_ raw: String, defaultCountryCode: Int = 55) -> String? {
        let trimmed = raw.filter { !" -().".contains($0) }
        let international = trimmed.hasPrefix("+")
        let digits = international ? String(trimmed.dropFirst()) : trimmed
        // No country code and no area code starts with 0 (a trunk prefix is not part of the number).
        guard (10...15).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }), !digits.hasPrefix("0") else { return nil }
        if !international && digits.count <= 11 {
            // The whole E.164 number stays within 15 digits.
            let country = String(defaultCountryCode)
            guard (1...999).contains(defaultCountryCode), country.count + digits.count <= 15 else { return nil }
            return "+" + country + digits
        }
        return "+" + digits
    }
}
