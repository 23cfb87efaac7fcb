import Foundation

/// The id of one kind of record (a visit, a user, a unit…): the one place that says what
/// an id may be, so a path or body value that cannot be an id is refused before any
/// lookup, and a `UnitID` cannot be passed where a `VisitID` is meant.
///
/// The rule: 1 to 64 UTF-8 bytes. Ids the server issues are lowercase UUIDs, well inside
/// it; seeded and imported ids keep whatever shape they were given, and a stricter rule
/// would change which requests answer 404. Encodes as a plain JSON string, so a typed id
/// and a `String` look the same on the wire.
public struct Identifier<Kind>: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The longest id in UTF-8 bytes (every id column is compared against this bound
    /// before it reaches SQL).
    public static var maxBytes: Int { 64 }

    public let rawValue: String

    /// Nil for a value that cannot be an id of any record.
    public init?(rawValue: String) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= Self.maxBytes else { return nil }
        self.rawValue = rawValue
    }

    /// A fresh id for a record this server creates: a lowercase UUID.
    public static func issue() -> Self {
        // A UUID's 36 ASCII bytes are always within the rule.
        Self(checked: UUID().uuidString.lowercased())
    }

    private init(checked rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = Self(rawValue: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "must be 1 to \(Self.maxBytes) bytes")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// The kinds of ids (phantom types: never instantiated).
public enum IdentifierKind {
    public enum Visit {}
    public enum User {}
    public enum Unit {}
    public enum Company {}
    public enum Device {}
    public enum Push {}
}

public typealias VisitID = Identifier<IdentifierKind.Visit>
public typealias UserID = Identifier<IdentifierKind.User>
public typealias UnitID = Identifier<IdentifierKind.Unit>
public typealias CompanyID = Identifier<IdentifierKind.Company>
public typealias DeviceID = Identifier<IdentifierKind.Device>
public typealias PushID = Identifier<IdentifierKind.Push>
