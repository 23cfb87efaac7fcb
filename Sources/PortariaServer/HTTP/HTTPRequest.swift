import Foundation
import PortariaCore

/// A complete HTTP request as handlers see it: headers and body fully received.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query string, as it came (escapes intact): the router splits it
    /// at `/` and decodes each segment once, so an encoded `/` stays inside its value.
    public var path: String
    /// Query arguments, percent-decoded once (`PercentDecoding`).
    public var query: [String: String]
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]
    public var requestID: String
    public var clientAddress: String
    /// Filled by the router from `{name}` segments.
    public var pathParameters: [String: String] = [:]
    /// Filled by the router: the pattern that matched, for logs and metrics.
    public var route: String = ""

    public init(method: String, path: String, query: [String: String] = [:],
                headers: [String: String] = [:], body: [UInt8] = [],
                requestID: String = UUID().uuidString, clientAddress: String = "") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.requestID = requestID
        self.clientAddress = clientAddress
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// A path parameter the route declared; a missing one is a programming error → 500.
    public func parameter(_ name: String) throws -> String {
        guard let value = pathParameters[name] else {
            throw HTTPError(status: 500, code: .internalError, message: "route has no parameter \(name)")
        }
        return value
    }

    /// A path parameter that must be an id of `Kind`: a value that cannot be one answers
    /// the same 404 as an id that does not exist (`notFound` names the resource).
    public func parameter<Kind>(_ name: String, as _: Identifier<Kind>.Type, notFound: String) throws -> Identifier<Kind> {
        guard let id = Identifier<Kind>(rawValue: try parameter(name)) else { throw HTTPError.notFound(notFound) }
        return id
    }

    /// Decodes the JSON body, answering 415 for another media type and 400
    /// `INVALID_REQUEST` naming the offending field for anything malformed.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        if let contentType = header("content-type") {
            let mediaType = contentType.split(separator: ";").first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
            guard mediaType == "application/json" || mediaType.hasSuffix("+json") else {
                throw HTTPError(status: 415, code: .unsupportedMediaType,
                                message: "expected Content-Type application/json, got \(mediaType)")
            }
        }
        guard !body.isEmpty else {
            throw HTTPError.invalidRequest("the request body must be a JSON object")
        }
        do {
            return try JSONCoding.decoder().decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            // Foundation on Linux reports a number that does not fit its field (2.5 or 1e400
            // for an Int) as corrupted data with no coding path; the body is valid JSON then,
            // so say what is known rather than "not valid JSON", and find the field.
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty,
               (try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])) != nil {
                if let field = MisfitNumber.field(decoding: T.self, from: body) {
                    throw HTTPError.invalidRequest("\(field) must be a whole number within range", field: field)
                }
                throw HTTPError.invalidRequest("a number in the request body is out of range or not an integer where one is required")
            }
            throw HTTPError.from(error)
        } catch let error as HTTPError {
            throw error
        } catch {
            throw HTTPError.invalidRequest("the request body is not valid JSON")
        }
    }
}
