import Foundation
import PortariaCore
import PortariaTestSupport
import Testing
@testable import PortariaServer

/// The visits capability over a fresh demo database, a manual clock and an in-process
/// HTTP client (the real router and error mapping, no socket).
struct VisitsFixture: Sendable {
    let storage: StorageFixture
    let module: VisitsModule
    let server: HTTPServer
    let clock: ManualTimeSource
    let recorder: EventRecorder
    let dataDirectory: String
    let tokens: [String: String]
    let companies: [String: String]   // name → id
    let units: [String: String]       // label → id
    let users: [String: String]       // username → id

    static let backends: [Backend] = Backend.underTest

    static func with(_ backend: Backend, beforeIdempotentWork: (@Sendable () async -> Void)? = nil,
                     _ body: (VisitsFixture) async throws -> Void) async throws {
        try await AuthFixture.with(backend) { auth in
            let clock = ManualTimeSource(Date(timeIntervalSince1970: 1_800_000_000))
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-visits-\(UUID().uuidString)").path
            var configuration = VisitsConfiguration()
            // Tests ring one unit many times a minute; the caps across addresses have their own tests.
            configuration.gateLimit = 10_000
            configuration.unitRingLimit = 10_000
            configuration.gateRingLimit = 10_000
            configuration.dataDirectory = directory
            let module = VisitsModule(database: auth.storage.database, authenticator: auth.authenticator,
                                      configuration: configuration, clock: clock, beforeIdempotentWork: beforeIdempotentWork)
            // As the application assembles it: push jobs written with the events.
            module.bus.listen(VisitPushes())
            let router = Router()
            module.register(on: router)
            let server = HTTPServer(router: router)
            var tokens: [String: String] = [:]
            for user in ["maria", "joao", "ana", "carlos", "portaria", "admin"] {
                tokens[user] = try await auth.auth.login(LoginRequest(username: user, password: "demo1234"), clientAddress: "127.0.0.1").jwtToken
            }
            let db = auth.storage.database
            let companies = try await db.read { db in
                Dictionary(uniqueKeysWithValues: try db.query("SELECT id, name FROM companies", []).map { (try $0.string("name")!, try $0.string("id")!) })
            }
            let units = try await db.read { db in
                Dictionary(uniqueKeysWithValues: try db.query("SELECT id, label FROM units", []).map { (try $0.string("label")!, try $0.string("id")!) })
            }
            let users = try await db.read { db in
                Dictionary(uniqueKeysWithValues: try db.query("SELECT id, username FROM users", []).map { (try $0.string("username")!, try $0.string("id")!) })
            }
            let fixture = VisitsFixture(storage: auth.storage, module: module, server: server, clock: clock,
                                        recorder: EventRecorder(bus: module.bus), dataDirectory: directory,
                                        tokens: tokens, companies: companies, units: units, users: users)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try await body(fixture)
        }
    }

    var database: any SQLDatabase { storage.database }
    var demo: String { companies["Residencial Demo"]! }
    var azul: String { companies["Condomínio Azul"]! }

    /// An answer of the router, as the raw client reads one off the wire.
    typealias Reply = RawResponse

    /// One request through the router, as the HTTP server would run it.
    func call(_ method: String, _ path: String, as user: String? = nil, bearer: String? = nil, company: String? = nil,
              headers: [String: String] = [:], json: String? = nil, bytes: [UInt8]? = nil, client: String = "10.0.0.7") async -> Reply {
        var all = headers.reduce(into: [String: String]()) { $0[$1.key.lowercased()] = $1.value }
        if let user { all["authorization"] = "Bearer \(tokens[user]!)" }
        if let bearer { all["authorization"] = "Bearer \(bearer)" }
        if let company { all["x-company-id"] = company }
        var body: [UInt8] = []
        if let json { body = Array(json.utf8); all["content-type"] = "application/json" }
        if let bytes { body = bytes }
        let (path, query) = Self.split(path)
        let request = HTTPRequest(method: method, path: path, query: query, headers: all, body: body, clientAddress: client)
        let (response, _) = await server.respond(to: request)
        let headers = Dictionary(response.headers.map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { first, _ in first })
        return Reply(status: response.status, headers: headers, body: response.body)
    }

    static func split(_ target: String) -> (String, [String: String]) {
        guard let mark = target.firstIndex(of: "?") else { return (target, [:]) }
        var query: [String: String] = [:]
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            query[parts[0].removingPercentEncoding ?? parts[0]] = parts.count > 1 ? (parts[1].removingPercentEncoding ?? parts[1]) : ""
        }
        return (String(target[..<mark]), query)
    }

    /// Rings A-101 (or another unit) from the demo gate; returns (visit id, visitor token).
    @discardableResult
    func ring(_ label: String = "A-101", kind: VisitKind = .visit, name: String = "Pedro Visitante", carrier: String? = nil,
              gate: String = "demo-gate", location: String? = nil) async throws -> (id: String, token: String) {
        var fields = [#""unit_id":"\#(units[label]!)""#, #""kind":"\#(kind.rawValue)""#, #""visitor_name":"\#(name)""#]
        if let carrier { fields.append(#""carrier":"\#(carrier)""#) }
        if let location { fields.append(#""location":\#(location)"#) }
        let reply = await call("POST", "/v1/gates/\(gate)/visits", json: "{" + fields.joined(separator: ",") + "}")
        try #require(reply.status == 201, "gate POST answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        let created = try reply.decode(CreateVisitResponse.self)
        return (created.visit.id, created.visitorToken)
    }

    func visit(_ id: String, as user: String = "maria") async throws -> Visit {
        let reply = await call("GET", "/v1/visits/\(id)", as: user, company: demo)
        try #require(reply.status == 200, "GET visit answered \(reply.status)")
        return try reply.decode(Visit.self)
    }

    func resolve(_ id: String, as user: String, action: String = "authorize", key: String = UUID().uuidString,
                 company: String? = nil) async -> Reply {
        await call("POST", "/v1/visits/\(id)/resolve", as: user, company: company ?? demo,
                   headers: ["Idempotency-Key": key], json: #"{"action":"\#(action)"}"#)
    }

    func events(_ visitID: String) async throws -> [EventRecord] {
        try await database.read { db in try EventLog.forVisit(db, visitID: visitID) }
    }

    func userIDs(_ event: EventRecord) -> [String] {
        guard case .array(let values)? = event.data["user_ids"] else { return [] }
        return values.compactMap(\.stringValue)
    }

    func count(_ sql: String, _ parameters: SQLValue...) async throws -> Int {
        let parameters = parameters
        return try await database.read { db in Int(try db.queryOne(sql, parameters)?.int("n") ?? -1) }
    }

    /// Advances the manual clock and lets the scheduler do what is due.
    func advance(_ seconds: TimeInterval) async {
        clock.advance(by: seconds)
        await module.scheduler.tick()
    }
}

extension JSONValue {
    subscript(_ index: Int) -> JSONValue? {
        if case .array(let values) = self, values.indices.contains(index) { return values[index] }
        return nil
    }
    var numberValue: Double? { if case .number(let value) = self { return value }; return nil }
}

extension RawResponse {
    /// The body as an open JSON value (`.null` when it is not JSON).
    var document: JSONValue { (try? JSONCoding.decoder().decode(JSONValue.self, from: Data(body))) ?? .null }
    /// The error envelope's `code` and `field`, when the body is one.
    var code: String? { document["error"]?["code"]?.stringValue }
    var field: String? { document["error"]?["field"]?.stringValue }
    /// The body decoded as the server's own contract type.
    func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T { try JSONCoding.decoder().decode(T.self, from: Data(body)) }
}
