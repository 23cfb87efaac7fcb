import Foundation
import Testing

/// The machine-readable authorization matrix (authorization-matrix.json) driven over
/// real HTTP against the real binary with the demo data.
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
        var last: Bool?
        var idempotent: Bool?
        var expect: [String: Int]
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

    /// What the matrix's `{placeholders}` stand for: unit ids from the public gate, and a
    /// visit to A-101 rung from the demo gate.
    static func fixtures(_ server: TestServer, residentToken: String, company: String) async throws -> [String: String] {
        let gate = try await server.request("GET", "/v1/gates/demo-gate")
        let units = try #require(try gate.json()["units"] as? [[String: Any]])
        func unit(_ label: String) throws -> String {
            try #require(units.first { $0["label"] as? String == label }?["id"] as? String, "no unit \(label) at demo-gate")
        }
        let a101 = try unit("A-101")
        let created = try await server.postJSON("/v1/gates/demo-gate/visits",
                                                #"{"unit_id":"\#(a101)","kind":"visit","visitor_name":"Visitante da matriz"}"#)
        try #require(created.status == 201, "gate visit: \(created.status) \(created.text)")
        let visit = try #require((try created.json()["visit"] as? [String: Any])?["id"] as? String)
        let settings = try await server.request("GET", "/v1/units/\(a101)/settings",
                                                headers: [("Authorization", "Bearer \(residentToken)"), ("X-Company-Id", company)])
        try #require(settings.status == 200, "A-101 settings: \(settings.status)")
        // PUT takes the `settings` object that GET answers inside {unit_id, settings, residents}.
        let current = try #require(try settings.json()["settings"] as? [String: Any])
        let body = String(decoding: try JSONSerialization.data(withJSONObject: current), as: UTF8.self)
        return ["a101_unit": a101, "b201_unit": try unit("B-201"), "a101_visit": visit, "a101_settings": body]
    }

    @Test("every endpoint × role answers as the matrix says")
    func matrix() async throws {
        let matrix = try Self.load()
        try await TestServer.with(["--demo"]) { server in
            var tokens: [String: String] = [:]
            var companyID: String?
            for (role, username) in matrix.roles {
                guard let username else { continue }
                let (token, company) = try await Self.login(server, username, company: matrix.company)
                tokens[role] = token
                if let company { companyID = company }
            }
            let company = try #require(companyID, "no role belongs to \(matrix.company)")
            let placeholders = try await Self.fixtures(server, residentToken: try #require(tokens["resident"]), company: company)
            let ordered = matrix.endpoints.filter { $0.last != true } + matrix.endpoints.filter { $0.last == true }
            for row in ordered {
                for role in matrix.roles.keys.sorted() {
                    guard let expected = row.expect[role] else {
                        Issue.record("\(row.method) \(row.path) has no expectation for \(role)")
                        continue
                    }
                    var headers: [(String, String)] = []
                    if let token = tokens[role] {
                        headers.append(("Authorization", "Bearer \(token)"))
                        headers.append(("X-Company-Id", company))
                    }
                    if row.body != nil { headers.append(("Content-Type", "application/json")) }
                    if row.idempotent == true { headers.append(("Idempotency-Key", UUID().uuidString)) }
                    var path = row.path
                    for (name, value) in placeholders { path = path.replacingOccurrences(of: "{\(name)}", with: value) }
                    var body = row.body ?? ""
                    for (name, value) in placeholders { body = body.replacingOccurrences(of: "{\(name)}", with: value) }
                    let response = try await server.request(row.method, path, headers: headers, body: Array(body.utf8))
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
