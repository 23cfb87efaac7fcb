/// The body of every error answer: `{"error": {"code": "…", "message": "…", …details}}`.
public struct ErrorEnvelope: Sendable, Codable, Equatable {
    public var error: ErrorBody
    public init(error: ErrorBody) { self.error = error }
}

/// `code` and `message` are always present; details (such as `field`, or `resolved_by`
/// for `VISIT_ALREADY_RESOLVED`) sit beside them in the same object.
public struct ErrorBody: Sendable, Codable, Equatable {
    public var code: ErrorCode
    public var message: String
    public var details: [String: JSONValue]

    public init(code: ErrorCode, message: String, details: [String: JSONValue] = [:]) {
        self.code = code
        self.message = message
        self.details = details
    }

    /// The field that made a request invalid, when the server named one.
    public var field: String? { details["field"]?.stringValue }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        code = try container.decode(ErrorCode.self, forKey: Key(stringValue: "code"))
        message = try container.decodeIfPresent(String.self, forKey: Key(stringValue: "message")) ?? ""
        var details: [String: JSONValue] = [:]
        for key in container.allKeys where key.stringValue != "code" && key.stringValue != "message" {
            details[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
        }
        self.details = details
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(code, forKey: Key(stringValue: "code"))
        try container.encode(message, forKey: Key(stringValue: "message"))
        for (key, value) in details.sorted(by: { $0.key < $1.key }) {
            try container.encode(value, forKey: Key(stringValue: key))
        }
    }
}
