import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

@Suite("Request decoding")
struct RequestDecodingTests {
    struct Leaf: Decodable { var c: Int }
    struct Middle: Decodable { var b: [Leaf] }
    struct Body: Decodable {
        var a: Middle
        var name: String
        var tags: [String]?
        var ratio: Double?
    }

    private func request(_ json: String, contentType: String? = "application/json") -> HTTPRequest {
        var headers: [String: String] = [:]
        if let contentType { headers["content-type"] = contentType }
        return HTTPRequest(method: "POST", path: "/x", headers: headers, body: Array(json.utf8))
    }

    /// The HTTPError a decode throws (or an issue if it did not throw one).
    private func failure(_ json: String, contentType: String? = "application/json",
                         sourceLocation: SourceLocation = #_sourceLocation) -> HTTPError? {
        do {
            _ = try request(json, contentType: contentType).decode(Body.self)
            Issue.record("decoding succeeded", sourceLocation: sourceLocation)
        } catch let error as HTTPError {
            return error
        } catch {
            Issue.record("not an HTTPError: \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    static let valid = #"{"a":{"b":[{"c":1},{"c":2},{"c":3}]},"name":"x"}"#

    @Test("a valid body decodes")
    func valid() throws {
        let body = try request(Self.valid).decode(Body.self)
        #expect(body.a.b.map(\.c) == [1, 2, 3])
    }

    @Test("errors name the nested field as a.b[2].c", arguments: [
        (#"{"a":{"b":[{"c":1},{"c":2},{"c":"three"}]},"name":"x"}"#, "a.b[2].c", "must be an integer"),
        (#"{"a":{"b":[{"c":1},{"c":2},{}]},"name":"x"}"#, "a.b[2].c", "is required"),
        (#"{"a":{"b":[{"c":1},{"c":2},{"c":null}]},"name":"x"}"#, "a.b[2].c", "not null"),
        (#"{"a":{"b":{"c":1}},"name":"x"}"#, "a.b", "must be an array"),
        (#"{"a":{"b":[]},"name":7}"#, "name", "must be a string"),
        (#"{"a":{"b":[]}}"#, "name", "is required"),
        (#"{"a":[],"name":"x"}"#, "a", "must be an object"),
        (#"{"a":{"b":[]},"name":"x","tags":[1]}"#, "tags[0]", "must be a string"),
    ])
    func namesNestedFields(_ json: String, _ field: String, _ phrase: String) throws {
        let error = try #require(failure(json))
        #expect(error.status == 400)
        #expect(error.body.code == .invalidRequest)
        #expect(error.body.field == field)
        #expect(error.body.message.contains(field))
        if !phrase.isEmpty { #expect(error.body.message.contains(phrase), "\(error.body.message)") }
    }

    @Test("malformed or non-object bodies are 400 without a field", arguments: [
        "", "{", "not json", #"{"a":1"#, #"{"a" 1}"#, "[1,2,3]", "\"just a string\"", "null", "\u{FF}\u{FE}",
    ])
    func malformed(_ json: String) throws {
        let error = try #require(failure(json))
        #expect(error.status == 400)
        #expect(error.body.code == .invalidRequest)
        #expect(error.body.field == nil)
    }

    @Test("a number that does not fit an integer field is 400, names the field, and is not called invalid JSON", arguments: [
        (#"{"a":{"b":[{"c":1},{"c":2.5}]},"name":"x"}"#, "a.b[1].c"),
        (#"{"a":{"b":[{"c":99999999999999999999999}]},"name":"x"}"#, "a.b[0].c"),
        // A fraction where one fits (ratio is a Double) is not to blame.
        (#"{"ratio":2.5,"a":{"b":[{"c":3},{"c":-0.5}]},"name":"x"}"#, "a.b[1].c"),
    ])
    func numberOutOfRange(_ json: String, _ field: String) throws {
        let error = try #require(failure(json))
        #expect(error.status == 400 && error.body.code == .invalidRequest)
        #expect(!error.body.message.contains("not valid JSON"), "\(error.body.message)")
        // Foundation on Linux gives no coding path here; `MisfitNumber` finds the field.
        #expect(error.body.field == field, "\(error.body.message)")
        #expect(error.body.message == "\(field) must be a whole number within range")
    }

    @Test("a body with more numbers than MisfitNumber tries still gets its 400, without a field")
    func numberOutOfRangeInALargeBody() throws {
        let many = (0..<MisfitNumber.maxNumbers).map { #"{"c":\#($0)}"# }.joined(separator: ",")
        let error = try #require(failure(#"{"a":{"b":[\#(many),{"c":2.5}]},"name":"x"}"#))
        #expect(error.status == 400 && error.body.code == .invalidRequest && error.body.field == nil)
        #expect(error.body.message.contains("out of range or not an integer"), "\(error.body.message)")
    }

    @Test("other media types are 415", arguments: [
        "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
        "application/jsonx", "application/xml", "json", "",
    ])
    func unsupportedMediaType(_ contentType: String) throws {
        let error = try #require(failure(Self.valid, contentType: contentType))
        #expect(error.status == 415)
        #expect(error.body.code == .unsupportedMediaType)
    }

    @Test("JSON media types are accepted, parameters and case ignored", arguments: [
        "application/json", "application/json; charset=utf-8", "Application/JSON", "application/problem+json",
        " application/json ;charset=UTF-8",
    ])
    func jsonMediaTypes(_ contentType: String) throws {
        _ = try request(Self.valid, contentType: contentType).decode(Body.self)
    }

    @Test("a body without Content-Type is read as JSON")
    func missingContentType() throws {
        _ = try request(Self.valid, contentType: nil).decode(Body.self)
    }

    @Test("HTTPError.from turns each DecodingError kind into a 400 naming the field")
    func fromDecodingError() {
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int?
            init(_ name: String) { stringValue = name; intValue = nil }
            init(_ index: Int) { stringValue = "Index \(index)"; intValue = index }
            init?(stringValue: String) { self.init(stringValue) }
            init?(intValue: Int) { self.init(intValue) }
        }
        let path: [any CodingKey] = [Key("a"), Key("b"), Key(2)]
        let missing = HTTPError.from(.keyNotFound(Key("c"), .init(codingPath: path, debugDescription: "")))
        #expect(missing.body.field == "a.b[2].c")
        let mismatch = HTTPError.from(.typeMismatch(Int.self, .init(codingPath: path + [Key("c")], debugDescription: "")))
        #expect(mismatch.body.field == "a.b[2].c")
        #expect(mismatch.body.message == "a.b[2].c must be an integer")
        let null = HTTPError.from(.valueNotFound(String.self, .init(codingPath: [Key(0), Key("x")], debugDescription: "")))
        #expect(null.body.field == "[0].x")
        let corrupted = HTTPError.from(.dataCorrupted(.init(codingPath: [Key("when")], debugDescription: "expected an ISO-8601 UTC timestamp")))
        #expect(corrupted.body.field == "when")
        #expect(corrupted.body.message.contains("ISO-8601"))
        for error in [missing, mismatch, null, corrupted] {
            #expect(error.status == 400 && error.body.code == .invalidRequest)
        }
    }

    @Test("a timestamp field with a bad value names the field")
    func badTimestamp() throws {
        struct Stamped: Decodable { var at: Date }
        var request = request(#"{"at":"2023-02-29T00:00:00Z"}"#)
        request.method = "POST"
        do {
            _ = try request.decode(Stamped.self)
            Issue.record("an impossible date was accepted")
        } catch let error as HTTPError {
            #expect(error.status == 400)
            #expect(error.body.field == "at")
        }
    }
}
