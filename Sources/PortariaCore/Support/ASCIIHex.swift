extension Character {
    /// 0–9, a–f, A–F only. `isHexDigit` is also true of their fullwidth forms (`０`, `Ａ`),
    /// which no token, key or address written in hex contains.
    public var isASCIIHexDigit: Bool { isASCII && isHexDigit }
}
