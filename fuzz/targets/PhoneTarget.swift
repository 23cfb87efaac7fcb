// fuzz/phone: PhoneNumber.normalize (AuthService.normalizePhone), which reads every phone
// that comes from outside (OTP send and verify, the admin directory). The first two bytes
// choose the default country code (valid ones and not), the rest is the typed number.
// Properties: what comes out is E.164 (`+`, then 10–15 digits, the first not 0); it is a
// fixed point (normalising it again gives it back, in any default country); a separator
// typed anywhere changes nothing; the digits typed are the number's last digits, in order.

let separators: [Character] = [" ", "-", "(", ")", "."]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPhone(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard bytes.count >= 2 else { return 0 }
    let country = (Int(bytes[0]) << 8 | Int(bytes[1])) % 2048 - 1024
    let raw = String(decoding: bytes.dropFirst(2), as: UTF8.self)
    guard let phone = PhoneNumber.normalize(raw, defaultCountryCode: country) else { return 0 }

    let digits = phone.dropFirst()
    invariant(phone.first == "+", "no leading +: \(phone) from \(raw)")
    invariant((10...15).contains(digits.count), "not E.164 length: \(phone) from \(raw)")
    invariant(digits.allSatisfy { $0.isASCII && $0.isNumber } && digits.first != "0", "not E.164 digits: \(phone) from \(raw)")
    invariant(PhoneNumber.normalize(phone, defaultCountryCode: country) == phone, "not a fixed point: \(phone) from \(raw)")
    // Any default country: an international number does not depend on it.
    invariant(PhoneNumber.normalize(phone, defaultCountryCode: 1) == phone, "an E.164 number read in another country: \(phone)")

    let typed = raw.filter { $0.isASCII && $0.isNumber }
    invariant(digits.hasSuffix(typed), "the typed digits \(typed) are not the end of \(phone)")

    // A separator inserted anywhere (chosen by the input's length) changes nothing.
    let characters = Array(raw)
    let position = characters.isEmpty ? 0 : Int(bytes[1]) % (characters.count + 1)
    let separated = String(characters[..<position]) + String(separators[Int(bytes[0]) % separators.count]) + String(characters[position...])
    invariant(PhoneNumber.normalize(separated, defaultCountryCode: country) == phone, "a separator changed \(raw) to \(separated)")
    return 0
}
