/// String literals as JSON strings, for building push payloads and other open-shaped JSON.
extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}
