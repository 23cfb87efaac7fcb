import Foundation
import PortariaTestSupport
import Testing

/// The machine-readable authorization matrix (authorization-matrix.json) driven over
/// real HTTP against the real binary with the demo data: every route × every role
/// (residents, operator, admin, another company's member, a resident acting in her other
/// company, a visitor token, anonymous) × two tenants.
@Suite("Authorization matrix", .serialized)
struct AuthorizationMatrixTests {
    struct Matrix: Decodable {
        var company: String
        var roles: [String: String?]
        var endpoints: [Row]
    }

    struct Row: Decodable {
        var method: String
        var path: String
        var body: String?
        var bodyKind: String?
        var last: Bool?
        var idempotent: Bool?
        var fresh: String?
        var websocket: Bool?
        var expect: [String: Int]

        enum CodingKeys: String, CodingKey {
            case method, path, body, last, idempotent, fresh, websocket, expect
            case bodyKind = "body_kind"
        }
    }

    static func load() throws -> Matrix {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("authorization-matrix.json")
        return try JSONDecoder().decode(Matrix.self, from: Data(contentsOf: url))
    }

    /// Signs in `username` and returns (jwt_token, id of the named company or nil).
    static func login(_ server: TestServer, _ username: String, company: String) async throws -> (String, String?) {
        let response = try await server.postJSON("/v1/auth/login", #"{"username":"\#(username)","password":"demo1234"}"#)
        try #require(response.status == 200, "login \(username): \(response.status) \(response.text)")
        let body = try response.json()
        let token = try #require(body["jwt_token"] as? String)
        let companies = body["companies"] as? [[String: Any]] ?? []
        return (token, companies.first { $0["name"] as? String == company }?["id"] as? String)
    }

    /// Rings `label` at `gate`; returns (visit id, visitor token).
    static func ring(_ server: TestServer, gate: String = "demo-gate", unit: String) async throws -> (String, String) {
        let created = try await server.postJSON("/v1/gates/\(gate)/visits",
                                                #"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Visitante da matriz"}"#)
        try #require(created.status == 201, "gate visit: \(created.status) \(created.text)")
        let body = try created.json()
        return (try #require((body["visit"] as? [String: Any])?["id"] as? String), try #require(body["visitor_token"] as? String))
    }

    static func units(_ server: TestServer, gate: String) async throws -> [String: String] {
        let response = try await server.request("GET", "/v1/gates/\(gate)")
        let units = try #require(try response.json()["units"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: units.compactMap { unit in
            (unit["label"] as? String).flatMap { label in (unit["id"] as? String).map { (label, $0) } }
        })
    }

    /// What the matrix's `{placeholders}` stand for (see the file's `about`).
    static func fixtures(_ server: TestServer, residentToken: String, company: String) async throws -> (values: [String: String], visitorToken: String) {
        let demo = try await units(server, gate: "demo-gate")
        let a101 = try #require(demo["A-101"])
        let b201 = try #require(demo["B-201"])
        let azul = try #require(try await units(server, gate: "azul-gate")["101"])
        // Maria's phone first, so the visit below rings it and its push id can be acked.
        let device = try await server.request("POST", "/v1/devices",
            headers: [("Authorization", "Bearer \(residentToken)"), ("X-Company-Id", company), ("Content-Type", "application/json")],
            body: Array(#"{"installation_id":"matrix-phone","platform":"android","push_token":"matrix-push-maria"}"#.utf8))
        try #require(device.status == 201, "maria's device: \(device.status) \(device.text)")
        let (visit, visitorToken) = try await ring(server, unit: a101)
        let (azulVisit, _) = try await ring(server, gate: "azul-gate", unit: azul)
        var push: String?
        _ = await eventually(within: .seconds(10)) {
            for line in server.log.split(separator: "\n") where line.contains("push NOT sent") && line.contains(visit) {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      object["token_suffix"] as? String == "-maria", object["kind"] as? String == "visit_ring" else { continue }
                push = object["push_id"] as? String
            }
            return push != nil
        }
        let settings = try await server.request("GET", "/v1/units/\(a101)/settings",
                                                headers: [("Authorization", "Bearer \(residentToken)"), ("X-Company-Id", company)])
        try #require(settings.status == 200, "A-101 settings: \(settings.status)")
        // PUT takes the `settings` object that GET answers inside {unit_id, settings, residents}.
        let current = try #require(try settings.json()["settings"] as? [String: Any])
        let body = String(decoding: try JSONSerialization.data(withJSONObject: current), as: UTF8.self)
        return (["a101_unit": a101, "b201_unit": b201, "azul_unit": azul, "a101_visit": visit, "azul_visit": azulVisit,
                 "maria_push": try #require(push, "no ring push to maria's device in the log"), "a101_settings": body], visitorToken)
    }

    /// Sends one matrix request; a WebSocket handshake answers 101 when upgraded.
    static func send(_ server: TestServer, _ method: String, _ path: String, headers: [(String, String)], body: [UInt8],
                     websocket: Bool) async throws -> RawResponse {
        guard websocket else { return try await server.request(method, path, headers: headers, body: body) }
        let connection = try await server.connect()
        defer { connection.close() }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let request = Array(head.utf8)
        return try await offload {
            try connection.send(request)
            guard let response = try connection.readResponse(timeout: .seconds(10), skipInterim: false) else {
                throw HarnessError("connection closed without a response to the handshake on \(path)")
            }
            return response
        }
    }

    @Test("every endpoint × role × tenant answers as the matrix says")
    func matrix() async throws {
        let matrix = try Self.load()
        try await TestServer.with(["--demo", "--gate-limit", "1000", "--unit-ring-limit", "1000", "--gate-ring-limit", "1000"]) { server in
            var tokens: [String: String] = [:]
            var companies: [String: String] = [:]
            var demoID: String?
            for (role, reference) in matrix.roles {
                guard let reference, reference != "visitor" else { continue }
                let parts = reference.split(separator: "@", maxSplits: 1).map(String.init)
                let company = parts.count == 2 ? parts[1] : matrix.company
                let (token, companyID) = try await Self.login(server, parts[0], company: company)
                let (_, demo) = try await Self.login(server, parts[0], company: matrix.company)
                tokens[role] = token
                // Another company's member still sends the matrix company's id (and gets 404).
                if let companyID, parts.count == 2 { companies[role] = companyID }
                if let demo { demoID = demo }
            }
            let company = try #require(demoID, "no role belongs to \(matrix.company)")
            let resident = try #require(tokens["resident"])
            let (placeholders, fixtureVisitorToken) = try await Self.fixtures(server, residentToken: resident, company: company)
            let roles = matrix.roles.keys.sorted()
            let ordered = matrix.endpoints.filter { $0.last != true } + matrix.endpoints.filter { $0.last == true }
            for row in ordered {
                for (index, role) in roles.enumerated() {
                    guard let expected = row.expect[role] else {
                        Issue.record("\(row.method) \(row.path) has no expectation for \(role)")
                        continue
                    }
                    var values = placeholders
                    values["role"] = role.replacingOccurrences(of: "_", with: "-")
                    values["role_digits"] = String(format: "%02d", index)
                    var visitorToken = fixtureVisitorToken
                    switch row.fresh {
                    case "visit"?:
                        let (visit, token) = try await Self.ring(server, unit: try #require(placeholders["a101_unit"]))
                        values["visit"] = visit
                        visitorToken = token
                    case "maria_device"?:
                        let created = try await server.request("POST", "/v1/devices",
                            headers: [("Authorization", "Bearer \(resident)"), ("X-Company-Id", company), ("Content-Type", "application/json")],
                            body: Array(#"{"installation_id":"matrix-\#(UUID().uuidString.prefix(8))","platform":"android","push_token":"matrix-\#(UUID().uuidString)"}"#.utf8))
                        values["maria_device"] = try #require(try created.json()["id"] as? String, "\(created.text)")
                    case nil: break
                    case let other?: Issue.record("unknown fresh fixture \(other)")
                    }
                    var headers: [(String, String)] = []
                    if matrix.roles[role] == .some("visitor") {
                        headers.append(("Authorization", "Bearer \(visitorToken)"))
                    } else if let token = tokens[role] {
                        headers.append(("Authorization", "Bearer \(token)"))
                        headers.append(("X-Company-Id", companies[role] ?? company))
                    }
                    var body: [UInt8] = []
                    switch row.bodyKind {
                    case "jpeg"?:
                        body = sampleJPEG()
                        headers.append(("Content-Type", "image/jpeg"))
                    case "ogg"?:
                        body = SecuritySuites.VisitorTokenTests.ogg(seconds: 2)
                        headers.append(("Content-Type", "audio/ogg"))
                    default:
                        if var text = row.body {
                            for (name, value) in values { text = text.replacingOccurrences(of: "{\(name)}", with: value) }
                            body = Array(text.utf8)
                            headers.append(("Content-Type", "application/json"))
                        }
                    }
                    if row.idempotent == true { headers.append(("Idempotency-Key", UUID().uuidString)) }
                    var path = row.path
                    for (name, value) in values { path = path.replacingOccurrences(of: "{\(name)}", with: value) }
                    let response = try await Self.send(server, row.method, path, headers: headers, body: body, websocket: row.websocket == true)
                    #expect(response.status == expected, "\(row.method) \(row.path) as \(role): \(response.status) \(response.text.prefix(200))")
                    if response.status >= 400 {
                        let error = try? response.json()["error"] as? [String: Any]
                        #expect(error?["code"] is String, "\(row.method) \(row.path) as \(role): no error envelope")
                    }
                }
            }
        }
    }

    @Test("each demo role sees its profile, company and units in /v1/me")
    func profiles() async throws {
        try await TestServer.with(["--demo"]) { server in
            let expectations: [(String, String, [String])] = [
                ("maria", "resident", ["A-101"]), ("joao", "resident", ["A-101"]), ("ana", "resident", ["B-201"]),
                ("portaria", "operator", []), ("admin", "admin", []),
            ]
            for (username, profile, units) in expectations {
                let (token, company) = try await Self.login(server, username, company: "Residencial Demo")
                let me = try await server.request("GET", "/v1/me", headers: [("Authorization", "Bearer \(token)"),
                                                                             ("X-Company-Id", try #require(company))])
                let body = try me.json()
                #expect(body["profile"] as? String == profile, "\(username)")
                #expect((body["units"] as? [[String: Any]])?.compactMap { $0["label"] as? String } == units, "\(username)")
                #expect((body["company"] as? [String: Any])?["name"] as? String == "Residencial Demo")
                #expect((body["user"] as? [String: Any])?["username"] as? String == username)
            }
            // Maria in her other condominium.
            let (token, azul) = try await Self.login(server, "maria", company: "Condomínio Azul")
            let me = try await server.request("GET", "/v1/me", headers: [("Authorization", "Bearer \(token)"), ("X-Company-Id", try #require(azul))])
            #expect((try me.json()["units"] as? [[String: Any]])?.compactMap { $0["label"] as? String } == ["101"])
        }
    }

    @Test("forged, truncated and foreign tokens are 401 over HTTP; bad login input is 400")
    func badTokens() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (token, company) = try await Self.login(server, "ana", company: "Residencial Demo")
            let parts = token.split(separator: ".").map(String.init)
            let none = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64EncodedString()
                .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            let forged = [
                String(token.dropLast(5)), parts[0] + "." + parts[1] + ".", none + "." + parts[1] + ".",
                parts[0] + "." + parts[1] + "." + String(parts[2].reversed()), "not-a-jwt", String(repeating: "a", count: 8000),
            ]
            for bad in forged {
                let response = try await server.request("GET", "/v1/me", headers: [("Authorization", "Bearer \(bad)"), ("X-Company-Id", company ?? "")])
                #expect(response.status == 401, "token \(bad.prefix(40)) → \(response.status)")
            }
            let wrongScheme = try await server.request("GET", "/v1/me", headers: [("Authorization", "Basic \(token)")])
            #expect(wrongScheme.status == 401)
            let huge = try await server.postJSON("/v1/auth/login", #"{"username":"\#(String(repeating: "m", count: 10_240))","password":"demo1234"}"#)
            #expect(huge.status == 400)
            #expect((try huge.json()["error"] as? [String: Any])?["field"] as? String == "username")
            let wrongType = try await server.postJSON("/v1/auth/login", #"{"username":42,"password":"demo1234"}"#)
            #expect(wrongType.status == 400)
            #expect((try wrongType.json()["error"] as? [String: Any])?["field"] as? String == "username")
            let missing = try await server.postJSON("/v1/auth/login", #"{"username":"maria"}"#)
            #expect((try missing.json()["error"] as? [String: Any])?["field"] as? String == "password")
            // Refresh: another user's spent token cannot be replayed, garbage is 401.
            let garbage = try await server.postJSON("/v1/auth/refresh", #"{"refresh_token":"nope"}"#)
            #expect(garbage.status == 401)
        }
    }
}
