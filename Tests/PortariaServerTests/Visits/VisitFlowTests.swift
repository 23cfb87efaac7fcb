import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

@Suite("Visits: gate, ringing, delivery rules", .serialized)
struct VisitFlowTests {
    @Test("the gate lists units, never residents", arguments: VisitsFixture.backends)
    func gateInfo(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let reply = await f.call("GET", "/v1/gates/demo-gate")
            #expect(reply.status == 200)
            let info = try reply.decode(GateInfo.self)
            #expect(info.company.name == "Residencial Demo")
            #expect(info.units.map(\.label) == ["A-101", "A-102", "B-201"])
            let text = String(decoding: reply.body, as: UTF8.self)
            for name in ["Maria", "João", "Ana", "Souza"] { #expect(!text.contains(name)) }
            #expect(await f.call("GET", "/v1/gates/no-such-gate").status == 404)
        }
    }

    @Test("sequential: Maria, João after 20 s, unanswered after the window — no sleeping", arguments: VisitsFixture.backends)
    func sequential(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let maria = f.users["maria"]!, joao = f.users["joao"]!
            let (id, _) = try await f.ring()
            var events = try await f.events(id)
            #expect(events.map(\.type) == ["visit.created", "visit.ringing"])
            #expect(f.userIDs(events[1]) == [maria])
            #expect(try await f.visit(id).status == .ringing)

            await f.advance(19.9)
            #expect(try await f.events(id).count == 2, "nothing before the step timeout")
            await f.advance(0.1)
            events = try await f.events(id)
            #expect(events.map(\.type).suffix(2) == ["visit.ring_cancelled", "visit.ringing"])
            #expect(f.userIDs(events[2]) == [maria])
            #expect(events[2].data["reason"]?.stringValue == "next_step")
            #expect(f.userIDs(events[3]) == [joao])

            await f.advance(39.9)
            #expect(try await f.visit(id).status == .ringing)
            await f.advance(0.1)
            let visit = try await f.visit(id)
            #expect(visit.status == .unanswered)
            #expect(visit.attempts.map(\.kind) == [.ring, .timeout, .ring, .timeout])
            #expect(visit.attempts.compactMap(\.user?.name) == ["Maria Souza", "Maria Souza", "João Souza"])
            events = try await f.events(id)
            #expect(events.map(\.type).suffix(2) == ["visit.ring_cancelled", "visit.unanswered"])
            #expect(Set(f.userIDs(events[4])) == [maria, joao])
            #expect(try await f.count("SELECT COUNT(*) AS n FROM ring_jobs") == 0)

            // The bus saw the same committed events, in order.
            let seen = await f.recorder.wait { $0.filter { $0.visitID == id }.count == events.count }
            #expect(seen.filter { $0.visitID == id }.map(\.seq) == events.map(\.seq))

            // It is now a pendência.
            let pending = try await f.call("GET", "/v1/visits?status=pending", as: "joao").decode(VisitPage.self)
            #expect(pending.visits.map(\.id) == [id])
            #expect(try await f.call("GET", "/v1/visits?status=history", as: "joao").decode(VisitPage.self).visits.isEmpty)
        }
    }

    @Test("a restart mid-ring continues the ring from the database", arguments: VisitsFixture.backends)
    func restartContinues(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, _) = try await f.ring()
            // Another process (its own connections and scheduler) takes over.
            let other = try await f.storage.openAnother()
            let bus = EventBus()
            let scheduler = RingScheduler(database: other, clock: f.clock, bus: bus)
            f.clock.advance(by: 20)
            #expect(await scheduler.tick() == 1)
            let events = try await f.events(id)
            #expect(f.userIDs(events.last!) == [f.users["joao"]!])
            await other.close()
        }
    }

    @Test("simultaneous rings everyone at once", arguments: VisitsFixture.backends)
    func simultaneous(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let maria = f.users["maria"]!, joao = f.users["joao"]!
            let put = await f.call("PUT", "/v1/units/\(f.units["A-101"]!)/settings", as: "maria", company: f.demo,
                                   json: #"{"delivery_rule":"ask","ring_order":["\#(joao)","\#(maria)"],"ring_mode":"simultaneous","ring_window_seconds":30}"#)
            #expect(put.status == 200)
            let (id, _) = try await f.ring()
            var events = try await f.events(id)
            #expect(events.map(\.type) == ["visit.created", "visit.ringing"])
            #expect(f.userIDs(events[1]) == [joao, maria])
            await f.advance(29)
            #expect(try await f.events(id).count == 2)
            await f.advance(1)
            events = try await f.events(id)
            #expect(events.last?.type == "visit.unanswered")
        }
    }

    @Test("delivery rules: leave_at_concierge at once, ask_then_concierge after the window", arguments: VisitsFixture.backends)
    func deliveryRules(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let unit = f.units["A-101"]!
            let maria = f.users["maria"]!, joao = f.users["joao"]!
            func rule(_ rule: String) async {
                let reply = await f.call("PUT", "/v1/units/\(unit)/settings", as: "maria", company: f.demo,
                                         json: #"{"delivery_rule":"\#(rule)","ring_order":["\#(maria)","\#(joao)"],"ring_mode":"sequential"}"#)
                #expect(reply.status == 200)
            }
            await rule("leave_at_concierge")
            let (now, _) = try await f.ring(kind: .delivery, name: "Entregador", carrier: "iFood")
            var visit = try await f.visit(now)
            #expect(visit.status == .resolved)
            #expect(visit.resolution?.action == .leaveAtConcierge)
            #expect(visit.resolution?.via == .auto)
            var events = try await f.events(now)
            #expect(events.map(\.type) == ["visit.created", "visit.resolved"])
            if case .array(let notify)? = events[1].data["notify_user_ids"] {
                #expect(Set(notify.compactMap(\.stringValue)) == [maria, joao])
            } else { Issue.record("residents are not informed") }
            // A visit (not a delivery) still rings under this rule.
            let (person, _) = try await f.ring(kind: .visit)
            #expect(try await f.visit(person).status == .ringing)

            await rule("ask_then_concierge")
            let (later, _) = try await f.ring(kind: .delivery, name: "Entregador", carrier: "Mercado Livre")
            #expect(try await f.visit(later).status == .ringing)
            await f.advance(60)
            visit = try await f.visit(later)
            #expect(visit.status == .resolved)
            #expect(visit.resolution == VisitResolution(action: .leaveAtConcierge, by: .automatic, at: f.clock.now(), via: .auto))
            events = try await f.events(later)
            #expect(events.suffix(2).map(\.type) == ["visit.ring_cancelled", "visit.resolved"])
            // The plain visit of the same moment became a pendência instead.
            #expect(try await f.visit(person).status == .unanswered)
            // A resident trying afterwards is told it was left at the concierge.
            let late = await f.resolve(later, as: "joao")
            #expect(late.status == 409)
            #expect(late.document["error"]?["message"]?.stringValue?.hasPrefix("Deixado na portaria automaticamente") == true)
        }
    }

    @Test("an answer stops ringing everywhere else; the loser learns who and when", arguments: VisitsFixture.backends)
    func answerStopsRinging(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, _) = try await f.ring()
            let answer = await f.call("POST", "/v1/visits/\(id)/answer", as: "joao", company: f.demo,
                                      headers: ["Idempotency-Key": "a1"], json: #"{"device_id":"dev-joao"}"#)
            #expect(answer.status == 200)
            #expect(try answer.decode(Visit.self).status == .answered)
            let events = try await f.events(id)
            let cancelled = try #require(events.first { $0.type == "visit.ring_cancelled" })
            #expect(cancelled.data["reason"]?.stringValue == "answered_elsewhere")
            #expect(f.userIDs(cancelled) == [f.users["maria"]!])
            // The scheduler has nothing left to ring.
            await f.advance(30)
            #expect(try await f.events(id).count == events.count)
            // Maria answering too gets a clear conflict.
            let second = await f.call("POST", "/v1/visits/\(id)/answer", as: "maria", company: f.demo, headers: ["Idempotency-Key": "a2"])
            #expect(second.status == 409)
            #expect(second.code == "VISIT_ALREADY_ANSWERED")
            // São Paulo is UTC−3: 1_800_000_000 s is 2027-01-15T08:00:00Z → 05:00.
            #expect(second.document["error"]?["message"]?.stringValue == "João já atendeu às 05:00")

            let win = await f.resolve(id, as: "joao", key: "r1")
            #expect(win.status == 200)
            let lose = await f.resolve(id, as: "maria", action: "deny", key: "r2")
            #expect(lose.status == 409)
            #expect(lose.code == "VISIT_ALREADY_RESOLVED")
            #expect(lose.document["error"]?["message"]?.stringValue == "João já autorizou às 05:00")
            #expect(lose.document["error"]?["resolved_by"]?["name"]?.stringValue == "João Souza")
            #expect(lose.document["error"]?["resolved_by"]?["id"]?.stringValue == f.users["joao"])
            #expect(lose.document["error"]?["action"]?.stringValue == "authorize")
            #expect(lose.document["error"]?["resolved_at"]?.stringValue == "2027-01-15T08:00:30Z")
            let visit = try await f.visit(id)
            #expect(visit.attempts.map(\.kind) == [.ring, .answer, .resolution])
            #expect(visit.attempts[1].deviceID == "dev-joao")
            #expect(try await f.events(id).last?.type == "visit.resolved")
        }
    }

    @Test("declining moves the ring on at once", arguments: VisitsFixture.backends)
    func decline(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, _) = try await f.ring()
            let reply = await f.call("POST", "/v1/visits/\(id)/decline", as: "maria", company: f.demo, headers: ["Idempotency-Key": "d1"])
            #expect(reply.status == 200)
            await f.advance(0)
            let events = try await f.events(id)
            #expect(events.map(\.type) == ["visit.created", "visit.ringing", "visit.declined", "visit.ring_cancelled", "visit.ringing"])
            #expect(f.userIDs(events.last!) == [f.users["joao"]!])
            _ = await f.call("POST", "/v1/visits/\(id)/decline", as: "joao", company: f.demo, headers: ["Idempotency-Key": "d2"])
            await f.advance(0)
            #expect(try await f.visit(id).status == .unanswered)
        }
    }

    @Test("the visitor follows and cancels; expiry after 24 h", arguments: VisitsFixture.backends)
    func visitorAndExpiry(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, token) = try await f.ring(location: #"{"lat":-23.561684,"lon":-46.655981,"accuracy_m":8}"#)
            let follow = await f.call("GET", "/v1/visitor/visit", bearer: token)
            #expect(follow.status == 200)
            let visit = try follow.decode(PublicVisit.self)
            #expect(visit.id == id && visit.geofence.status == .atEntrance)
            #expect(!String(decoding: follow.body, as: UTF8.self).contains("Maria"))
            #expect(await f.call("GET", "/v1/visitor/visit", bearer: "forged").status == 401)
            #expect(await f.call("GET", "/v1/visitor/visit").status == 401)
            let cancel = await f.call("POST", "/v1/visitor/visit/cancel", bearer: token)
            #expect(try cancel.decode(PublicVisit.self).status == .cancelled)
            let reasons = try await f.events(id).filter { $0.type == "visit.ring_cancelled" }.map { $0.data["reason"]?.stringValue }
            #expect(reasons == ["cancelled"])
            #expect(await f.resolve(id, as: "maria").code == "VISIT_CLOSED")

            let (other, otherToken) = try await f.ring()
            await f.advance(60)
            await f.advance(24 * 3600)
            #expect(try await f.visit(other).status == .expired)
            #expect(await f.call("GET", "/v1/visitor/visit", bearer: otherToken).status == 401, "the token dies with the visit")
        }
    }

    @Test("geofence on the visit: a point 340 m away", arguments: VisitsFixture.backends)
    func geofence(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let lat = -23.561684 + 340 / (Geofence.earthRadius * Double.pi / 180)
            let (id, _) = try await f.ring(location: #"{"lat":\#(lat),"lon":-46.655981,"accuracy_m":20}"#)
            let visit = try await f.visit(id)
            // Due north of the gate: bearing 0°.
            #expect(visit.geofence == GeofenceResult(status: .away, distanceM: 340, bearingDeg: 0))
            #expect(visit.geofenceBadge == "⚠ A 340m da portaria")
            let (unknown, _) = try await f.ring()
            #expect(try await f.visit(unknown).geofence == .unknown)
        }
    }

    @Test("lists: only the caller's units, stable cursor pages", arguments: VisitsFixture.backends)
    func lists(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            var ids: [String] = []
            for index in 0..<5 {
                ids.append(try await f.ring(name: "Visitante \(index)").id)
                if index % 2 == 0 { f.clock.advance(by: 1) }   // some share a created_at
            }
            let b201 = try await f.ring("B-201").id
            var seen: [String] = []
            var cursor: String?
            repeat {
                let path = "/v1/visits?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await f.call("GET", path, as: "maria", company: f.demo).decode(VisitPage.self)
                #expect(page.visits.count <= 2)
                seen += page.visits.map(\.id)
                cursor = page.nextCursor
            } while cursor != nil
            #expect(Set(seen) == Set(ids) && seen.count == ids.count, "every A-101 visit exactly once")
            #expect(!seen.contains(b201))
            let operatorView = try await f.call("GET", "/v1/visits?limit=100", as: "portaria").decode(VisitPage.self)
            #expect(Set(operatorView.visits.map(\.id)) == Set(ids + [b201]))
            let ana = try await f.call("GET", "/v1/visits", as: "ana").decode(VisitPage.self)
            #expect(ana.visits.map(\.id) == [b201])
            #expect(await f.call("GET", "/v1/visits?cursor=garbage", as: "maria", company: f.demo).field == "cursor")
            #expect(await f.call("GET", "/v1/visits?limit=0", as: "maria", company: f.demo).field == "limit")
            #expect(await f.call("GET", "/v1/visits?status=all", as: "maria", company: f.demo).field == "status")
        }
    }

    @Test("unit settings: strict validation, residents only", arguments: VisitsFixture.backends)
    func settings(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let a101 = f.units["A-101"]!
            let maria = f.users["maria"]!, joao = f.users["joao"]!, ana = f.users["ana"]!
            let get = await f.call("GET", "/v1/units/\(a101)/settings", as: "maria", company: f.demo)
            let current = try get.decode(UnitSettingsResponse.self)
            #expect(current.settings == UnitSettings(deliveryRule: .ask, ringOrder: [maria, joao], ringMode: .sequential))
            #expect(Set(current.residents.map(\.name)) == ["Maria Souza", "João Souza"])
            let cases: [(String, String)] = [
                (#"{"delivery_rule":"sometimes","ring_order":[],"ring_mode":"sequential"}"#, "delivery_rule"),
                (#"{"delivery_rule":"ask","ring_order":["\#(ana)"],"ring_mode":"sequential"}"#, "ring_order[0]"),
                (#"{"delivery_rule":"ask","ring_order":["\#(maria)","\#(maria)"],"ring_mode":"sequential"}"#, "ring_order[1]"),
                (#"{"delivery_rule":"ask","ring_order":[],"ring_mode":"loud"}"#, "ring_mode"),
                (#"{"delivery_rule":"ask","ring_order":[],"ring_mode":"sequential","ring_step_seconds":0}"#, "ring_step_seconds"),
                (#"{"delivery_rule":"ask","ring_order":[],"ring_mode":"sequential","ring_window_seconds":100000}"#, "ring_window_seconds"),
                (#"{"delivery_rule":"ask","ring_order":[],"ring_mode":"sequential","ring_step_seconds":50,"ring_window_seconds":30}"#, "ring_step_seconds"),
                (#"{"delivery_rule":"ask","ring_order":"maria","ring_mode":"sequential"}"#, "ring_order"),
                (#"{"delivery_rule":"ask","ring_order":[],"ring_mode":"sequential","volume":11}"#, "volume"),
                (#"{"ring_order":[],"ring_mode":"sequential"}"#, "delivery_rule"),
                (#"{"delivery_rule":"ask","ring_order":[],"ring_mode":"sequential","ring_step_seconds":"20"}"#, "ring_step_seconds"),
            ]
            for (json, field) in cases {
                let reply = await f.call("PUT", "/v1/units/\(a101)/settings", as: "maria", company: f.demo, json: json)
                #expect(reply.status == 400, "\(json)")
                #expect(reply.field == field, "\(json)")
            }
            #expect(try await f.call("GET", "/v1/units/\(a101)/settings", as: "maria", company: f.demo).decode(UnitSettingsResponse.self) == current,
                    "nothing changed")
            let valid = #"{"delivery_rule":"ask","ring_order":["\#(joao)"],"ring_mode":"sequential"}"#
            #expect(await f.call("PUT", "/v1/units/\(a101)/settings", as: "ana", json: valid).status == 404)
            #expect(await f.call("GET", "/v1/units/\(a101)/settings", as: "ana").status == 404)
            #expect(await f.call("GET", "/v1/units/\(a101)/settings", as: "carlos").status == 404)
            #expect(await f.call("GET", "/v1/units/\(a101)/settings", as: "portaria").status == 200)
            #expect(await f.call("PUT", "/v1/units/\(a101)/settings", as: "portaria", json: valid).status == 403)
            #expect(await f.call("PUT", "/v1/units/\(a101)/settings", as: "joao", company: f.demo, json: valid).status == 200)
        }
    }

    @Test("retention deletes photos, voice messages and locations after N days", arguments: VisitsFixture.backends)
    func retention(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let (id, token) = try await f.ring(location: #"{"lat":-23.5617,"lon":-46.6560,"accuracy_m":10}"#)
            #expect(await f.call("POST", "/v1/visitor/visit/photo", bearer: token, bytes: MediaSamples.jpeg()).status == 200)
            #expect(await f.call("POST", "/v1/visitor/visit/voice_message", bearer: token, bytes: MediaSamples.ogg(seconds: 5)).status == 200)
            // The fixture's logins ran on the real clock, the sweep runs on the manual one
            // (2027): keep the residents' sessions live on the sweep's clock too, or it
            // prunes them as long ended (decision 0055) and the reads below get 401.
            try await f.database.write { db in
                try db.execute("UPDATE sessions SET expires_at = ?", .date(f.clock.now().addingTimeInterval(200 * 86_400)))
            }
            f.clock.advance(by: 89 * 86_400)
            let early = try await f.module.retention.run()
            #expect(early.photos == 0 && early.voiceMessages == 0 && early.locations == 0 && early.idempotencyKeys == 0)
            f.clock.advance(by: 2 * 86_400)
            let report = try await f.module.retention.run()
            #expect(report.photos == 1 && report.voiceMessages == 1 && report.locations == 1)
            #expect(await f.call("GET", "/v1/visits/\(id)/photo", as: "maria", company: f.demo).status == 404)
            #expect(try await f.count("SELECT COUNT(*) AS n FROM visits WHERE location_lat IS NOT NULL") == 0)
            let files = FileManager.default.enumerator(atPath: f.dataDirectory)?.allObjects.compactMap { $0 as? String } ?? []
            #expect(!files.contains { $0.hasSuffix(".jpg") || $0.hasSuffix(".ogg") })
            // The geofence verdict (no coordinates) stays for the history.
            #expect(try await f.visit(id).geofence.status == .atEntrance)
        }
    }
}

@Suite("Ring scheduler on several instances", .serialized)
struct RingSchedulerInstancesTests {
    @Test("three instances ticking at once: every step exactly once", arguments: VisitsFixture.backends)
    func noDoubleRing(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            var ids: [String] = []
            for index in 0..<12 { ids.append(try await f.ring(index % 2 == 0 ? "A-101" : "B-201", name: "V\(index)").id) }
            var handles: [any SQLDatabase] = []
            var schedulers: [RingScheduler] = [f.module.scheduler]
            for _ in 0..<2 {
                let handle = try await f.storage.openAnother()
                handles.append(handle)
                schedulers.append(RingScheduler(database: handle, clock: f.clock, bus: EventBus()))
            }
            for seconds in [20.0, 20, 20] {
                f.clock.advance(by: seconds)
                await withTaskGroup(of: Int.self) { group in
                    for scheduler in schedulers { group.addTask { await scheduler.tick() } }
                }
            }
            for id in ids {
                let events = try await f.events(id)
                let rings = events.filter { $0.type == "visit.ringing" }.compactMap { $0.data["step"]?.numberValue }
                #expect(rings == rings.sorted() && Set(rings).count == rings.count, "no step twice: \(rings)")
                #expect(events.filter { $0.type == "visit.unanswered" }.count == 1, "no step lost")
            }
            // A-101 rings Maria then João; B-201 only Ana.
            #expect(try await f.count("SELECT COUNT(*) AS n FROM visit_attempts WHERE kind = 'ring'") == 6 * 2 + 6 * 1)
            for handle in handles { await handle.close() }
        }
    }
}
