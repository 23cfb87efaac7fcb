import Foundation

/// Random (version 4) UUIDs as lowercase text, for push ids and attempt rows.
///
/// Foundation's `UUID()` on Linux opens and reads /dev/urandom on every call and its
/// `uuidString` goes through a formatted CFString; this draws from the system generator
/// (getrandom) and writes the 36 characters directly, which the push paths do per push.
public enum UUIDText {
    public static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var high = generator.next() as UInt64
        var low = generator.next() as UInt64
        high = (high & ~0xF000) | 0x4000                       // version 4
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // RFC 4122 variant
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int, from shift: Int) {
                for nibble in 0..<nibbles {
                    let digit = UInt8(truncatingIfNeeded: value >> UInt64(shift - 4 * nibble)) & 0xF
                    buffer[index] = digit < 10 ? 48 + digit : 87 + digit
                    index += 1
                }
            }
            put(high, nibbles: 8, from: 60)
            buffer[index] = UInt8(ascii: "-"); index += 1
            put(high, nibbles: 4, from: 28)
            buffer[index] = UInt8(ascii: "-"); index += 1
            put(high, nibbles: 4, from: 12)
            buffer[index] = UInt8(ascii: "-"); index += 1
            put(low, nibbles: 4, from: 60)
            buffer[index] = UInt8(ascii: "-"); index += 1
            put(low, nibbles: 12, from: 44)
            return index
        }
    }
}
