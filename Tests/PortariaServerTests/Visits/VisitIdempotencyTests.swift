import Foundation
import PortariaCore
import PortariaTestSupport
import Testing
@testable import PortariaServer

/// A gate a test opens when it wants a paused request to continue.
final class Gate: Sendable {
    private let opened = Locked(false)
    private let arrived = Locked(0)
    func open() { opened.withLock { $0 = true } }
    var arrivals: Int { arrived.current }
    func pass() async {
        arrived.withLock { $0 += 1 }
        _ = await eventually(within: .seconds(60), every: .milliseconds(2)) { opened.current }
    }
}

@Suite("Visits: idempotent resolve, races, tenancy, bad input", .serialized)
struct VisitIdempotencyTests {
    @Test("key required, 1–255 characters, replay, mismatch, scoped per user", arguments: VisitsFixture.backends)
    func contract(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, _) = try await f.ring()
            let path = "/v1/visits/\(id)/resolve"
            let missing = await f.call("POST", path, as: "maria", company: f.demo, json: #"{"action":"authorize"}"#)
            #expect(missing.status == 400 && missing.code == "IDEMPOTENCY_KEY_REQUIRED")
            let empty = await f.resolve(id, as: "maria", key: "")
            #expect(empty.status == 400 && empty.code == "IDEMPOTENCY_KEY_REQUIRED")
            let long = await f.resolve(id, as: "maria", key: String(repeating: "k", count: 256))
            #expect(long.status == 400 && long.field == "Idempotency-Key")
            #expect(try await f.visit(id).status == .ringing, "refused requests change nothing")

            let key = String(repeating: "k", count: 255)
            let first = await f.resolve(id, as: "maria", key: key)
            #expect(first.status == 200)
            #expect(first.header("Idempotent-Replayed") == nil)
            let replay = await f.resolve(id, as: "maria", key: key)
            #expect(replay.status == 200)
            #expect(replay.header("Idempotent-Replayed") == "true")
            #expect(replay.body == first.body, "byte-identical replay")
            // Equivalent JSON (spacing, explicit default) is the same request.
            let spaced = await f.call("POST", path, as: "maria", company: f.demo, headers: ["Idempotency-Key": key],
                                      json: #"{ "via": "app",  "action": "authorize" }"#)
            #expect(spaced.status == 200 && spaced.header("Idempotent-Replayed") == "true")

            let mismatch = await f.resolve(id, as: "maria", action: "deny", key: key)
            #expect(mismatch.status == 422 && mismatch.code == "IDEMPOTENCY_KEY_MISMATCH")
            let otherVisit = try await f.ring().id
            #expect(await f.resolve(otherVisit, as: "maria", key: key).code == "IDEMPOTENCY_KEY_MISMATCH")

            // João with Maria's key: never Maria's response.
            let joao = await f.resolve(id, as: "joao", key: key)
            #expect(joao.status == 409 && joao.code == "VISIT_ALREADY_RESOLVED")
            #expect(joao.header("Idempotent-Replayed") == nil)
            #expect(joao.document["error"]?["resolved_by"]?["name"]?.stringValue == "Maria Souza")
            #expect(joao.document["error"]?["message"]?.stringValue == "Maria já autorizou às 05:00")
            // …and his 409 is itself replayable.
            let joaoAgain = await f.resolve(id, as: "joao", key: key)
            #expect(joaoAgain.status == 409 && joaoAgain.header("Idempotent-Replayed") == "true" && joaoAgain.body == joao.body)

            #expect(try await f.count("SELECT COUNT(*) AS n FROM visit_resolutions") == 1)
            #expect(try await f.count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE status IS NULL") == 0)

            // Kept at least 24 h, gone after the 48 h sweep.
            f.clock.advance(by: 47 * 3600)
            try await f.module.retention.run()
            #expect(await f.resolve(id, as: "maria", key: key).header("Idempotent-Replayed") == "true")
            f.clock.advance(by: 2 * 3600)
            #expect(try await f.module.retention.run().idempotencyKeys >= 1)
        }
    }

    @Test("the same key still in flight is 409 REQUEST_IN_PROGRESS", arguments: VisitsFixture.backends)
    func inFlight(backend: Backend) async throws {
        let gate = Gate()
        try await VisitsFixture.with(backend, beforeIdempotentWork: { await gate.pass() }) { f in
            let (id, _) = try await f.ring()
            async let first = f.resolve(id, as: "maria", key: "slow")
            try await waitUntil("the first resolve reaching the gate", every: .milliseconds(2)) { gate.arrivals > 0 }
            let second = await f.resolve(id, as: "maria", key: "slow")
            #expect(second.status == 409 && second.code == "REQUEST_IN_PROGRESS")
            #expect(second.header("Retry-After") != nil)
            gate.open()
            #expect(await first.status == 200)
            let third = await f.resolve(id, as: "maria", key: "slow")
            #expect(third.status == 200 && third.header("Idempotent-Replayed") == "true")
        }
    }

    @Test("a dead holder's in-flight marker expires; after a restart (SQLite) it is released", arguments: VisitsFixture.backends)
    func orphanedMarker(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, _) = try await f.ring()
            let hash = IdempotencyStore.requestHash(method: "POST", path: "/v1/visits/\(id)/resolve",
                                                    canonicalBody: #"{"action":"authorize","via":"app"}"#)
            let now = f.clock.now()
            let maria = f.users["maria"]!
            // A process died between its two transactions.
            _ = try await f.database.write { db in
                try IdempotencyStore.begin(db, userID: maria, key: "orphan", requestHash: hash, now: now, lease: 10)
            }
            #expect(await f.resolve(id, as: "maria", key: "orphan").code == "REQUEST_IN_PROGRESS")
            f.clock.advance(by: 11)
            #expect(await f.resolve(id, as: "maria", key: "orphan").status == 200)
            #expect(try await f.count("SELECT COUNT(*) AS n FROM visit_resolutions") == 1)
        }
    }

    @Test("50 concurrent resolves from Maria and João: exactly one 200", arguments: VisitsFixture.backends)
    func race(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, _) = try await f.ring()
            let replies = await withTaskGroup(of: (String, String, FixtureReply).self) { group in
                for index in 0..<50 {
                    let user = index % 2 == 0 ? "maria" : "joao"
                    // Some requests share a key (a device retrying while the first is in flight).
                    let key = "\(user)-\(index % 10 < 8 ? index : index - 2)"
                    let action = index % 3 == 0 ? "deny" : "authorize"
                    let actionForKey = (Int(key.split(separator: "-")[1])! % 3 == 0) ? "deny" : "authorize"
                    group.addTask { (user, key, FixtureReply(await f.resolve(id, as: user, action: action == actionForKey ? action : actionForKey, key: key))) }
                }
                var all: [(String, String, FixtureReply)] = []
                for await reply in group { all.append(reply) }
                return all
            }
            let wins = replies.filter { $0.2.status == 200 && $0.2.replayed == false }
            #expect(wins.count == 1, "exactly one fresh 200, got \(wins.count)")
            let winner = try #require(wins.first)
            let winnerID = f.users[winner.0]!
            for (user, key, reply) in replies where !(user == winner.0 && key == winner.1 && !reply.replayed) {
                switch reply.status {
                case 200:
                    #expect(reply.replayed && user == winner.0 && key == winner.1, "a 200 that is not the winner's replay")
                case 409:
                    if reply.code == "VISIT_ALREADY_RESOLVED" {
                        #expect(reply.resolvedBy == winnerID)
                    } else {
                        #expect(reply.code == "REQUEST_IN_PROGRESS")
                    }
                default:
                    Issue.record("unexpected \(reply.status) \(reply.code ?? "")")
                }
            }
            #expect(try await f.count("SELECT COUNT(*) AS n FROM visit_resolutions WHERE visit_id = ?", .text(id)) == 1)
            #expect(try await f.count("SELECT COUNT(*) AS n FROM events WHERE visit_id = ? AND type = 'visit.resolved'", .text(id)) == 1)
            #expect(try await f.count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE status IS NULL") == 0)
        }
    }

    @Test("cross-tenant and other units: 404 everywhere", arguments: VisitsFixture.backends)
    func tenancy(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, token) = try await f.ring()
            _ = await f.call("POST", "/v1/visitor/visit/photo", bearer: token, bytes: MediaSamples.jpeg())
            _ = await f.call("POST", "/v1/visitor/visit/voice_message", bearer: token, bytes: MediaSamples.ogg(seconds: 3))
            let attempts: [(String, String?)] = [("carlos", nil), ("carlos", f.demo), ("ana", nil), ("maria", f.azul)]
            for (user, company) in attempts {
                for suffix in ["", "/photo", "/voice_message"] {
                    #expect(await f.call("GET", "/v1/visits/\(id)\(suffix)", as: user, company: company).status == 404, "\(user) GET \(suffix)")
                }
                for action in ["answer", "decline", "resolve"] {
                    let reply = await f.call("POST", "/v1/visits/\(id)/\(action)", as: user, company: company,
                                             headers: ["Idempotency-Key": "x-\(user)"], json: #"{"action":"authorize"}"#)
                    #expect(reply.status == 404, "\(user) \(action)")
                }
                let list = await f.call("GET", "/v1/visits", as: user, company: company)
                let listed = (try? list.decode(VisitPage.self))?.visits.map(\.id) ?? []
                #expect(list.status == 404 || !listed.contains(id))
            }
            #expect(await f.call("GET", "/v1/visits/\(id)", as: "portaria").status == 200)
            #expect(await f.call("GET", "/v1/visits/\(id)", as: "admin").status == 200)
            #expect(await f.call("GET", "/v1/visits/\(id)").status == 401)
            #expect(await f.call("GET", "/v1/visits/not-a-visit", as: "maria", company: f.demo).status == 404)
            #expect(try await f.visit(id).status == .ringing)
            #expect(try await f.count("SELECT COUNT(*) AS n FROM idempotency_keys") == 0)
        }
    }

    @Test("bad input on every endpoint: 4xx naming the field, nothing changed", arguments: VisitsFixture.backends)
    func badInput(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, _) = try await f.ring()
            let unit = f.units["A-101"]!
            func snapshot() async throws -> [Int] {
                try await [f.count("SELECT COUNT(*) AS n FROM visits"), f.count("SELECT COUNT(*) AS n FROM events"),
                           f.count("SELECT COUNT(*) AS n FROM visit_attempts"), f.count("SELECT COUNT(*) AS n FROM idempotency_keys"),
                           f.count("SELECT COUNT(*) AS n FROM visit_resolutions")]
            }
            let before = try await snapshot()
            let gate: [(String, String)] = [
                ("{", ""),
                (#"[]"#, ""),
                (#"{"kind":"visit","visitor_name":"Pedro"}"#, "unit_id"),
                (#"{"unit_id":"\#(unit)","kind":"party","visitor_name":"Pedro"}"#, "kind"),
                (#"{"unit_id":"\#(unit)","kind":"visit"}"#, "visitor_name"),
                (#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"   "}"#, "visitor_name"),
                (#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"\#(String(repeating: "x", count: 81))"}"#, "visitor_name"),
                (#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":42}"#, "visitor_name"),
                (#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Pedro","carrier":"iFood"}"#, "carrier"),
                (#"{"unit_id":"\#(f.units["101"]!)","kind":"visit","visitor_name":"Pedro"}"#, "unit_id"),
                (#"{"unit_id":"nope","kind":"visit","visitor_name":"Pedro"}"#, "unit_id"),
                (#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Pedro","location":{"lat":91,"lon":0,"accuracy_m":5}}"#, "location.lat"),
                (#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Pedro","location":{"lat":0,"lon":-181,"accuracy_m":5}}"#, "location.lon"),
                (#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Pedro","location":{"lat":0,"lon":0,"accuracy_m":-1}}"#, "location.accuracy_m"),
                (#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Pedro","location":{"lat":0,"lon":0}}"#, "location.accuracy_m"),
                (#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Pedro","location":"here"}"#, "location"),
            ]
            for (json, field) in gate {
                let reply = await f.call("POST", "/v1/gates/demo-gate/visits", json: json)
                #expect(reply.status == 400, "\(json)")
                if !field.isEmpty { #expect(reply.field == field, "\(json) → \(reply.field ?? "nil")") }
            }
            #expect(await f.call("POST", "/v1/gates/unknown/visits", json: #"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"P"}"#).status == 404)
            let resolve: [(String, String)] = [
                (#"{"action":"maybe"}"#, "action"), (#"{}"#, "action"), (#"{"action":1}"#, "action"),
                (#"{"action":"authorize","via":"auto"}"#, "via"), (#"{"action":"authorize","via":"pigeon"}"#, "via"),
            ]
            for (json, field) in resolve {
                let reply = await f.call("POST", "/v1/visits/\(id)/resolve", as: "maria", company: f.demo,
                                         headers: ["Idempotency-Key": UUID().uuidString], json: json)
                #expect(reply.status == 400 && reply.field == field, "\(json)")
            }
            let answer = await f.call("POST", "/v1/visits/\(id)/answer", as: "maria", company: f.demo,
                                      headers: ["Idempotency-Key": "k"], json: #"{"device_id":""}"#)
            #expect(answer.status == 400 && answer.field == "device_id")
            let wrongType = await f.call("POST", "/v1/visits/\(id)/resolve", as: "maria", company: f.demo,
                                         headers: ["Idempotency-Key": "k", "Content-Type": "text/plain"])
            #expect(wrongType.status == 400 || wrongType.status == 415)
            #expect(try await snapshot() == before, "nothing changed")
            #expect(try await f.visit(id).status == .ringing)
        }
    }

    @Test("gate creation is rate limited per source IP and gate", arguments: VisitsFixture.backends)
    func rateLimit(backend: Backend) async throws {
        try await AuthFixture.with(backend) { auth in
            var configuration = VisitsConfiguration()
            configuration.gateLimit = 3
            let module = VisitsModule(database: auth.storage.database, authenticator: auth.authenticator,
                                      configuration: configuration, clock: ManualTimeSource())
            let router = Router()
            module.register(on: router)
            let server = HTTPServer(router: router)
            let unit = try await auth.storage.database.read { db in
                try db.queryOne("SELECT id FROM units WHERE label = 'A-102'", [])!.string("id")!
            }
            func post(_ ip: String, gate: String = "demo-gate") async -> HTTPResponse {
                await server.respond(to: HTTPRequest(method: "POST", path: "/v1/gates/\(gate)/visits",
                                                     headers: ["content-type": "application/json"],
                                                     body: Array(#"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"P"}"#.utf8),
                                                     clientAddress: ip)).0
            }
            for _ in 0..<3 { #expect(await post("10.9.9.9").status == 201) }
            let limited = await post("10.9.9.9")
            #expect(limited.status == 429 && limited.header("Retry-After") != nil)
            // The one 429 shape: RATE_LIMITED with retry_after equal to the header.
            let envelope = try JSONCoding.decoder().decode(ErrorEnvelope.self, from: Data(limited.body))
            #expect(envelope.error.code == .rateLimited)
            #expect(envelope.error.details["retry_after"] == .number(Double(limited.header("Retry-After").flatMap(Int.init) ?? -1)))
            #expect(await post("10.9.9.10").status == 201, "another address has its own window")
        }
    }
}

/// The parts of a reply the race test checks.
struct FixtureReply: Sendable {
    var status: Int
    var code: String?
    var replayed: Bool
    var resolvedBy: String?
    init(_ reply: VisitsFixture.Reply) {
        status = reply.status
        code = reply.code
        replayed = reply.header("Idempotent-Replayed") == "true"
        resolvedBy = reply.document["error"]?["resolved_by"]?["id"]?.stringValue
    }
}
