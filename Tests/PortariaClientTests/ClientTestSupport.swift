import Foundation
import PortariaClient
@testable import PortariaCore
import Testing

/// A scripted server for the client core: each request is answered by the next handler
/// (or the fallback), and every request is recorded.
final class ScriptedHTTP: AuthorizedHTTP, HTTPTransport, @unchecked Sendable {
    typealias Handler = @Sendable (ClientHTTPRequest) throws -> ClientHTTPResponse
    private let state = Locked<(handlers: [Handler], requests: [ClientHTTPRequest], user: String?)>(([], [], "u-me"))
    private let fallback: Handler

    init(user: String? = "u-me", fallback: @escaping Handler = { _ in throw TransportError("no route to host") }) {
        self.fallback = fallback
        state.withLock { $0.user = user }
    }

    /// Queues answers for the next requests, in order.
    func then(_ handlers: Handler...) { state.withLock { $0.handlers += handlers } }

    var requests: [ClientHTTPRequest] { state.withLock { $0.requests } }
    func setUser(_ user: String?) { state.withLock { $0.user = user } }

    var userID: String? { state.withLock { $0.user } }

    func sendAuthorized(_ request: ClientHTTPRequest) async throws -> ClientHTTPResponse {
        try answer(request)
    }

    func send(_ request: ClientHTTPRequest, to baseURL: URL) async throws -> ClientHTTPResponse {
        try answer(request)
    }

    private func answer(_ request: ClientHTTPRequest) throws -> ClientHTTPResponse {
        let handler = state.withLock { state -> Handler in
            state.requests.append(request)
            return state.handlers.isEmpty ? fallback : state.handlers.removeFirst()
        }
        return try handler(request)
    }
}

enum Fixtures {
    static let saoPaulo = TimeZone(identifier: "America/Sao_Paulo")!
    /// 17:32 UTC = 14:32 in São Paulo (UTC−3, no daylight saving since 2019).
    static let at1432 = Timestamp.parse("2026-11-29T17:32:05Z")!

    static func visit(id: String = "v-1", kind: VisitKind = .delivery, status: VisitStatus = .resolved,
                      resolution: VisitResolution? = nil, updatedAt: Date = at1432) -> Visit {
        Visit(id: id, companyID: "c-1", unit: UnitSummary(id: "un-1", label: "A-101"), kind: kind, visitorName: "Pedro",
              carrier: kind == .delivery ? "Loggi" : nil, status: status, geofence: .unknown, photo: nil, voiceMessage: nil,
              attempts: [], answeredBy: nil, resolution: resolution, ringDeadline: nil, expiresAt: updatedAt.addingTimeInterval(86_400),
              createdAt: updatedAt.addingTimeInterval(-60), updatedAt: updatedAt)
    }

    static func json<T: Encodable>(_ status: Int, _ value: T, headers: [String: String] = [:]) -> ClientHTTPResponse {
        ClientHTTPResponse(status: status, headers: headers.merging(["content-type": "application/json"]) { $1 },
                           body: try! JSONCoding.encoder().encode(value))
    }

    static func error(_ status: Int, _ code: String, _ message: String = "", details: [String: JSONValue] = [:],
                      headers: [String: String] = [:]) -> ClientHTTPResponse {
        json(status, ErrorEnvelope(error: ErrorBody(code: ErrorCode(code), message: message, details: details)), headers: headers)
    }

    static func alreadyResolved(by person: PersonRef, action: ResolutionAction = .authorize, via: ResolutionChannel = .app,
                                at: Date = at1432) -> ClientHTTPResponse {
        error(409, "VISIT_ALREADY_RESOLVED", "Maria já autorizou às 14:32", details: [
            "resolved_by": .object(["id": .string(person.id), "name": .string(person.name)]),
            "resolved_at": .string(Timestamp.format(at)), "action": .string(action.rawValue), "via": .string(via.rawValue),
        ])
    }
}

func temporaryDirectory(_ label: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-client-\(label)-\(UUID().uuidString.prefix(8))").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
