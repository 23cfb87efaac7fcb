import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

/// `GET /v1/visits` reads a page's attempts and media with two queries, not two per visit,
/// and writes the body by hand (decision 0051). Against the previous path — the visit
/// loaded and its DTO built one by one, encoded by `JSONEncoder` — the page must be the
/// same bytes, in the same order, with the same cursors, and never another company's or
/// another unit's visit.
@Suite("Visits list: folded reads and hand-written body", .serialized)
struct VisitListFoldingTests {
    /// Visits in every shape the API produces: ringing, answered, resolved, cancelled,
    /// unanswered; photo and voice; a delivery with a carrier; a position; two units and two
    /// companies; some sharing a created_at; then hostile strings written straight into the
    /// rows (the gate refuses control characters, but names also come from accounts).
    static func seed(_ f: VisitsFixture) async throws -> [String] {
        var ids: [String] = []
        let (media, mediaToken) = try await f.ring(name: #"Zé \"Aspas\" \\ barra / 😀 𝄞"#)   // JSON-escaped: the fixture writes it into the body as is
        #expect(await f.call("POST", "/v1/visitor/visit/photo", bearer: mediaToken,
                             headers: ["Content-Type": "image/jpeg"], bytes: MediaSamples.jpeg()).status == 200)
        #expect(await f.call("POST", "/v1/visitor/visit/voice_message", bearer: mediaToken,
                             headers: ["Content-Type": "audio/webm"], bytes: MediaSamples.webm(seconds: 20)).status == 200)
        ids.append(media)
        let answered = try await f.ring(kind: .delivery, name: "Entregador", carrier: #"Correios \"BR\""#).id
        #expect(await f.call("POST", "/v1/visits/\(answered)/answer", as: "maria", company: f.demo,
                             headers: ["Idempotency-Key": UUID().uuidString]).status == 200)
        ids.append(answered)
        f.clock.advance(by: 1)
        let resolved = try await f.ring(name: "Resolvida").id
        #expect(await f.resolve(resolved, as: "joao").status == 200)
        ids.append(resolved)
        let (cancelled, cancelToken) = try await f.ring(name: "Desistiu")
        #expect(await f.call("POST", "/v1/visitor/visit/cancel", bearer: cancelToken).status == 200)
        ids.append(cancelled)
        let lat = -23.561684 + 340 / (Geofence.earthRadius * Double.pi / 180)
        ids.append(try await f.ring(name: "Longe", location: #"{"lat":\#(lat),"lon":-46.655981,"accuracy_m":20}"#).id)
        ids.append(try await f.ring("B-201", name: "Bloco B").id)
        ids.append(try await f.ring("101", name: "Azul", gate: "azul-gate").id)
        await f.advance(60)   // the rest ring out: unanswered, with ring and timeout attempts
        f.clock.advance(by: 1)
        ids.append(try await f.ring(name: "Tocando agora").id)
        ids.append(try await f.ring("101", name: "Azul tocando", gate: "azul-gate").id)

        // No NUL: PostgreSQL text cannot hold one (the writer's own test covers it).
        let hostile = "ctl \u{1}\u{1F}\u{7F} \"q\" \\ \u{2028}\u{2029} \u{FEFF} 😀 " + String(repeating: "Ação ", count: 400)
        let resolvedID = resolved, answeredID = answered, mediaID = media
        try await f.database.write { db in
            _ = try db.execute("UPDATE visits SET visitor_name = ?, carrier = ? WHERE id = ?",
                               .text(hostile), .text(hostile), .text(resolvedID))
            _ = try db.execute("UPDATE visits SET answered_by_name = ? WHERE id = ?", .text(hostile), .text(answeredID))
            _ = try db.execute("UPDATE visit_resolutions SET user_name = ? WHERE visit_id = ?", .text(hostile), .text(resolvedID))
            _ = try db.execute("UPDATE visit_attempts SET user_name = ?, detail = ?, device_id = ? WHERE visit_id = ?",
                               .text(hostile), .text(hostile), .text(hostile), .text(mediaID))
            _ = try db.execute("UPDATE units SET label = ? WHERE label = 'B-201'", .text("B-201 \u{1}\"\\"))
            return ()
        }
        return ids
    }

    /// The visits and the DTOs as the previous code built them: one visit at a time.
    static func perVisit(_ f: VisitsFixture, _ ids: [String]) async throws -> [Visit] {
        try await f.database.readSnapshot { db in
            try ids.map { id in
                guard let visitID = VisitID(rawValue: id), let row = try VisitStore.load(db, id: visitID) else {
                    throw VisitError.visitNotFound
                }
                return try VisitStore.dto(db, row)
            }
        }
    }

    @Test("every page is JSONEncoder's bytes of the per-visit DTOs, in order, only the caller's visits",
          arguments: VisitsFixture.backends)
    func pages(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let seeded = try await Self.seed(f)
            let demoUnits = [f.units["A-101"]!, f.units["B-201"]!]
            // Who asks, in which company, and which units they may see (nil: the whole company).
            let callers: [(user: String, company: String, units: [String]?)] = [
                ("maria", f.demo, [f.units["A-101"]!]), ("joao", f.demo, [f.units["A-101"]!]),
                ("ana", f.demo, [f.units["B-201"]!]), ("portaria", f.demo, nil),
                ("carlos", f.azul, [f.units["101"]!]), ("maria", f.azul, [f.units["101"]!]),
            ]
            let all = try await f.database.read { db in
                try db.query("SELECT id, company_id, unit_id, status FROM visits ORDER BY created_at DESC, id DESC", []).map {
                    (id: try $0.required.string("id"), company: try $0.required.string("company_id"),
                     unit: try $0.required.string("unit_id"), status: try $0.required.string("status"))
                }
            }
            #expect(Set(all.map(\.id)) == Set(seeded))
            #expect(Set(all.filter { $0.company == f.demo }.map(\.unit)) == Set(demoUnits))
            var pagesSeen = 0
            for caller in callers {
                for filter in [nil, "pending", "history"] as [String?] {
                    let expected = all.filter { visit in
                        visit.company == caller.company && (caller.units?.contains(visit.unit) ?? true)
                            && (filter == nil || (filter == "pending") == (visit.status == "unanswered"))
                    }.map(\.id)
                    for limit in [1, 2, 3, 100] {
                        var seen: [String] = []
                        var cursor: String?
                        repeat {
                            var path = "/v1/visits?limit=\(limit)"
                            if let filter { path += "&status=\(filter)" }
                            if let cursor { path += "&cursor=\(cursor)" }
                            let reply = await f.call("GET", path, as: caller.user, company: caller.company)
                            try #require(reply.status == 200, "\(caller.user) \(path): \(reply.status)")
                            #expect(reply.header("Content-Type") == "application/json")
                            let page = try reply.decode(VisitPage.self)
                            let before = VisitPage(visits: try await Self.perVisit(f, page.visits.map(\.id)), nextCursor: page.nextCursor)
                            let bytes = Array(try JSONCoding.encoder().encode(before))
                            #expect(reply.body == bytes, "\(caller.user) \(path)")
                            #expect(page.visits.allSatisfy { $0.companyID == caller.company })
                            seen += page.visits.map(\.id)
                            cursor = page.nextCursor
                            pagesSeen += 1
                            try #require(pagesSeen < 1_000, "the cursor must end")
                        } while cursor != nil
                        #expect(seen == expected, "\(caller.user) in \(caller.company), status \(filter ?? "-"), limit \(limit)")
                    }
                }
            }
            // Enough shapes went through: attempts, media, answers, resolutions, carriers, positions.
            let visits = try await Self.perVisit(f, seeded)
            #expect(visits.contains { $0.photo != nil && $0.voiceMessage != nil })
            #expect(visits.contains { $0.answeredBy != nil } && visits.contains { $0.resolution != nil })
            #expect(visits.contains { $0.carrier != nil } && visits.contains { $0.geofence.bearingDeg != nil })
            #expect(visits.contains { $0.ringDeadline != nil } && visits.contains { $0.attempts.count >= 2 })
            #expect(Set(visits.map(\.status)) == [.ringing, .answered, .resolved, .cancelled, .unanswered])
        }
    }

    @Test("one visit: JSONEncoder's bytes of its DTO", arguments: VisitsFixture.backends)
    func single(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            for id in try await Self.seed(f) {
                let visit = try await Self.perVisit(f, [id])[0]
                let (user, company) = visit.companyID == f.demo ? ("portaria", f.demo) : ("carlos", f.azul)
                let reply = await f.call("GET", "/v1/visits/\(id)", as: user, company: company)
                #expect(reply.status == 200)
                #expect(reply.body == Array(try JSONCoding.encoder().encode(visit)), "\(id)")
            }
        }
    }

    @Test("the folded DTOs equal the per-visit ones, for any chunk size", arguments: VisitsFixture.backends)
    func folded(backend: Backend) async throws {
        try await VisitsFixture.with(backend) { f in
            let seeded = try await Self.seed(f)
            let expected = try await Self.perVisit(f, seeded)
            for chunk in [1, 2, 3, 500] {
                let folded = try await f.database.readSnapshot { db in
                    let rows = try seeded.map { id in
                        guard let visitID = VisitID(rawValue: id), let row = try VisitStore.load(db, id: visitID) else {
                            throw VisitError.visitNotFound
                        }
                        return row
                    }
                    return try VisitStore.dtos(db, rows, chunk: chunk)
                }
                #expect(folded == expected, "chunk \(chunk)")
            }
            #expect(try await f.database.read { db in try VisitStore.dtos(db, []) }.isEmpty)
        }
    }
}
