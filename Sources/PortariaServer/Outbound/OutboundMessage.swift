import Foundation

// A request to another service and its answer, shared by the libcurl client
// (OutboundHTTPClient) and the HTTP/2 client (HTTP2Client). Kept apart from both, so the
// code that reads answers compiles without either library (fuzz/targets/PushResponseTarget.swift).

public struct OutboundRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(String, String)] = []
    public var body: [UInt8] = []
    public var timeout: TimeInterval = 10
}

public struct OutboundResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]
}

public enum OutboundHTTPError: Error, Sendable, CustomStringConvertible {
    case transport(String)
    case status(Int)
    public var description: String {
        switch self {
        case .transport(let detail): return "transport error: \(detail)"
        case .status(let code): return "unexpected HTTP status \(code)"
        }
    }
}
