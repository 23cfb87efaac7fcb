import PortariaCore

/// An error that knows how it is answered: the router renders any of them as the error
/// envelope of docs/contract.md §2, so a capability declares its own failures (`VisitError`,
/// `IdempotencyError`) as domain cases and spells their wire shape once, in its
/// conformance, instead of building HTTP answers where the failure happens.
public protocol RenderableError: Error, Sendable {
    var status: Int { get }
    var code: ErrorCode { get }
    var message: String { get }
    var details: [String: JSONValue] { get }
    var headers: [(String, String)] { get }
}

extension RenderableError {
    public var details: [String: JSONValue] { [:] }
    public var headers: [(String, String)] { [] }

    /// The envelope, byte for byte what `HTTPError` with the same fields answers.
    public var response: HTTPResponse {
        HTTPError(rendering: self).response
    }
}

/// The status, code and message of one refusal: what a small error enum spells per
/// case, in one table (`AuthError`, `UnitSettingsError`).
struct ErrorAnswer: Sendable {
    var status: Int
    var code: ErrorCode
    var message: String

    init(_ status: Int, _ code: ErrorCode, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }
}

/// A `RenderableError` whose cases each map to one `ErrorAnswer`.
protocol TabulatedError: RenderableError {
    var answer: ErrorAnswer { get }
}

extension TabulatedError {
    var status: Int { answer.status }
    var code: ErrorCode { answer.code }
    var message: String { answer.message }
}

/// Transport and input errors (400/401/403/404/405/413/415/429/503): the generic
/// `RenderableError`, built in place where a failure has no capability of its own.
public struct HTTPError: RenderableError, CustomStringConvertible {
    public var status: Int
    public var body: ErrorBody
    public var headers: [(String, String)]

    public init(status: Int, code: ErrorCode, message: String,
                details: [String: JSONValue] = [:], headers: [(String, String)] = []) {
        self.status = status
        self.body = ErrorBody(code: code, message: message, details: details)
        self.headers = headers
    }

    /// The answer any `RenderableError` renders to, as the generic value.
    public init(rendering error: any RenderableError) {
        self.init(status: error.status, code: error.code, message: error.message, details: error.details, headers: error.headers)
    }

    public var description: String { "\(status) \(body.code): \(body.message)" }
    public var code: ErrorCode { body.code }
    public var message: String { body.message }
    public var details: [String: JSONValue] { body.details }

    public var response: HTTPResponse {
        var response = HTTPResponse.json(ErrorEnvelope(error: body), status: status, headers: headers)
        if response.status == 500 && status != 500 { response.status = status }
        return response
    }

    public static func invalidRequest(_ message: String, field: String? = nil) -> HTTPError {
        var details: [String: JSONValue] = [:]
        if let field { details["field"] = .string(field) }
        return HTTPError(status: 400, code: .invalidRequest, message: message, details: details)
    }

    public static func notFound(_ message: String = "not found") -> HTTPError {
        HTTPError(status: 404, code: .notFound, message: message)
    }

    public static func unauthorized(_ message: String = "authentication required") -> HTTPError {
        HTTPError(status: 401, code: .unauthorized, message: message,
                  headers: [("WWW-Authenticate", "Bearer")])
    }

    /// The one 429 body: `RATE_LIMITED` with `retry_after` (seconds, at least 1) in the
    /// envelope and the same number in `Retry-After`.
    public static func rateLimited(_ message: String, retryAfter: Int) -> HTTPError {
        tryAgain(status: 429, code: .rateLimited, message: message, retryAfter: retryAfterSeconds(retryAfter))
    }

    /// An answer that asks the client to come back: `retry_after` (seconds) in the envelope
    /// and the same number in `Retry-After` (429s, storage faults, a full server).
    static func tryAgain(status: Int, code: ErrorCode, message: String, retryAfter: Int) -> HTTPError {
        HTTPError(status: status, code: code, message: message, details: ["retry_after": .number(Double(retryAfter))],
                  headers: [("Retry-After", String(retryAfter))])
    }

    /// What every 429 announces: at least one second.
    static func retryAfterSeconds(_ seconds: Int) -> Int { max(1, seconds) }

    public static func forbidden(_ message: String = "permission denied") -> HTTPError {
        HTTPError(status: 403, code: .forbidden, message: message)
    }

    /// A field as 400s name it: `a.b[2].c`.
    static func fieldPath(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue { text += "[\(index)]" }
            else { text += text.isEmpty ? key.stringValue : ".\(key.stringValue)" }
        }
        return text
    }

    /// Turns a JSON decoding failure into a 400 that names the field, in `a.b[2].c` form.
    static func from(_ error: DecodingError) -> HTTPError {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            fieldPath(codingPath + (last.map { [$0] } ?? []))
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath, key)
            return .invalidRequest("\(field) is required", field: field)
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            if field.isEmpty { return .invalidRequest("the request body must be a JSON object") }
            return .invalidRequest("\(field) must be \(describe(type))", field: field)
        case .valueNotFound(let type, let context):
            let field = path(context.codingPath)
            if field.isEmpty { return .invalidRequest("the request body must be a JSON object") }
            return .invalidRequest("\(field) must be \(describe(type)), not null", field: field)
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty { return .invalidRequest("the request body is not valid JSON") }
            return .invalidRequest("\(field) is invalid: \(context.debugDescription)", field: field)
        @unknown default:
            return .invalidRequest("the request body is invalid")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type: return "an integer"
        case is Double.Type, is Float.Type: return "a number"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Array") { return "an array" }
            if name.hasPrefix("Dictionary") { return "an object" }
            return "of type \(name)"
        }
    }
}

/// Thrown by validation code in handlers: a 400 naming the field.
public func require(_ condition: Bool, field: String, _ message: @autoclosure () -> String) throws {
    if !condition { throw HTTPError.invalidRequest(message(), field: field) }
}
