import Foundation

/// The methods the API uses.
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable {
    case get = "GET"
    case post = "POST"
    case put = "PUT"
    case delete = "DELETE"
}

/// No JSON body: a request that sends none, or an answer that has none (204).
public struct NoBody: Codable, Sendable, Equatable {
    public init() {}
}

/// The answer is the socket itself (101 Switching Protocols), not a body.
public enum WebSocketUpgrade: Sendable {}

/// One route of the API: its method, its path template (`/v1/visits/{id}`, the same string
/// the server's router and its metrics label use) and, as type parameters, what its body
/// carries each way. `Data` stands for bytes that are not JSON (uploads, media files, the
/// OpenAPI document), `JSONValue` for a JSON answer that has no contract type of its own.
///
/// A route with path parameters is turned into a concrete `APIEndpoint` by the typed
/// functions of `APIRoutes` (`APIRoutes.visit(id:)`), so no caller writes a path by hand.
public struct APIRoute<Request, Response>: Sendable, CustomStringConvertible {
    public let method: HTTPMethod
    public let template: String

    init(_ method: HTTPMethod, _ template: String) {
        self.method = method
        self.template = template
    }

    /// `GET /v1/visits/{id}`.
    public var description: String { "\(method.rawValue) \(template)" }

    /// The names between braces, in order.
    public var parameterNames: [String] {
        template.split(separator: "/").compactMap { segment in
            segment.hasPrefix("{") && segment.hasSuffix("}") ? String(segment.dropFirst().dropLast()) : nil
        }
    }

    /// The route without its type parameters, for lists and comparisons.
    public var entry: RouteEntry {
        RouteEntry(method: method, template: template, request: String(describing: Request.self),
                   response: String(describing: Response.self))
    }

    /// A route without parameters, as the endpoint it always is. A route with parameters
    /// is filled by its typed function in `APIRoutes` instead (asking it here is a
    /// programming error, caught by the first test that takes that path).
    public var endpoint: APIEndpoint<Request, Response> {
        precondition(parameterNames.isEmpty, "\(self) has parameters: use its function in APIRoutes")
        return filling([:])
    }

    /// This route with each `{name}` replaced by its value, percent-encoded as one path
    /// segment. Only the catalogue's typed functions call it, with every name filled.
    func filling(_ values: KeyValuePairs<String, String>) -> APIEndpoint<Request, Response> {
        var path = ""
        var empty: String?
        for segment in template.split(separator: "/") {
            path += "/"
            guard segment.hasPrefix("{") && segment.hasSuffix("}") else {
                path += segment
                continue
            }
            let name = segment.dropFirst().dropLast()
            guard let value = values.first(where: { $0.key == name })?.value else {
                preconditionFailure("\(self) has no value for {\(name)}")
            }
            if value.isEmpty, empty == nil { empty = String(name) }
            path += APIEndpoint<Request, Response>.encodeSegment(value)
        }
        return APIEndpoint(route: self, path: path, emptyParameter: empty)
    }
}

/// A route as plain values: what the catalogue lists and tests compare.
public struct RouteEntry: Hashable, Sendable, CustomStringConvertible {
    public var method: HTTPMethod
    public var template: String
    /// The request and response type names (`LoginRequest`, `NoBody`, `Data`).
    public var request: String
    public var response: String

    public var description: String { "\(method.rawValue) \(template)" }
}

/// Why an endpoint cannot be sent.
public enum RouteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A path parameter was empty: `/v1/visits/` would be another route (the list).
    case emptyParameter(route: String, name: String)

    public var description: String {
        switch self {
        case .emptyParameter(let route, let name): "\(route): {\(name)} is empty"
        }
    }
}

/// A route with its parameters filled in: the path a request goes to.
public struct APIEndpoint<Request, Response>: Sendable, CustomStringConvertible {
    public let route: APIRoute<Request, Response>
    /// Percent-encoded: each parameter is one segment, whatever characters it holds.
    public let path: String
    /// The first parameter given as "", which makes the path another route's.
    let emptyParameter: String?

    public var method: HTTPMethod { route.method }
    public var description: String { "\(route.method.rawValue) \(path)" }

    /// The path, or `RouteError.emptyParameter` when a parameter was empty.
    public func checkedPath() throws -> String {
        if let emptyParameter { throw RouteError.emptyParameter(route: route.description, name: emptyParameter) }
        return path
    }

    /// RFC 3986 unreserved characters stay, everything else is percent-encoded as UTF-8,
    /// dots included: a parameter "." or ".." must stay a value, never a path step that a
    /// URL library would collapse.
    static func encodeSegment(_ value: String) -> String {
        var encoded = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                encoded.unicodeScalars.append("%")
                encoded.unicodeScalars.append(hex[Int(byte >> 4)])
                encoded.unicodeScalars.append(hex[Int(byte & 0x0F)])
            }
        }
        return encoded
    }
}
