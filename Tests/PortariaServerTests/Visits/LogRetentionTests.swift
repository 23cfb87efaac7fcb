import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

/// The retention sweep over the tables that grow with every visit: the event log and the
/// push outbox (decision 0055). Photos, voice messages and locations: `VisitFlowTests`.
@Suite("Retention of events and push jobs", .serialized)
struct LogRetentionTests {
    static let backends: [Backend] = Backend.underTest
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func sweep(_ database: any SQLDatabase, days: Int = 90) async throws -> RetentionJob.Report {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-retention-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        return try await RetentionJob(database: database, clock: ManualTimeSource(now), dataDirectory: directory, days: days).run()
    }

    static func addEvents(_ database: any SQLDatabase, company: String, count: Int, daysAgo: Double) async throws {
        let at = now.addingTimeInterval(-daysAgo * 86_400)
        try await database.write { db in
            for index in 0..<count {
                try db.execute("INSERT INTO events (company_id, visit_id, unit_id, type, data, created_at) VALUES (?, NULL, NULL, ?, '{}', ?)",
                               .text(company), .text("test.event.\(index)"), .date(at))
            }
        }
    }

    static func seqs(_ database: any SQLDatabase, company: String) async throws -> [Int64] {
        try await database.read { db in
            try db.query("SELECT seq FROM events WHERE company_id = ? ORDER BY seq", .text(company)).map { try $0.required.int("seq") }
        }
    }

    @Test("events older than 7 days go in batches, oldest first; each company keeps its newest; the pruned-through mark rises", arguments: backends)
    func events(backend: Backend) async throws {
        try await AuthFixture.with(backend) { auth in
            let database = auth.storage.database
            // More than two batches of old events in company A, then two recent ones.
            try await Self.addEvents(database, company: "company-a", count: RetentionJob.batchSize * 2 + 500, daysAgo: 10)
            // Company B's only events are old: its newest stays (the feed starts there).
            try await Self.addEvents(database, company: "company-b", count: 3, daysAgo: 9)
            try await Self.addEvents(database, company: "company-a", count: 2, daysAgo: 6.9)
            let recentA = try await Self.seqs(database, company: "company-a").suffix(2)
            let newestB = try #require(try await Self.seqs(database, company: "company-b").last)
            #expect(try await database.read { db in try EventLog.prunedThrough(db) } == 0)

            let report = try await Self.sweep(database)
            #expect(report.events == RetentionJob.batchSize * 2 + 500 + 2)
            #expect(try await Self.seqs(database, company: "company-a") == Array(recentA))
            #expect(try await Self.seqs(database, company: "company-b") == [newestB])
            // The mark is the highest seq deleted: B's second event.
            let mark = try await database.read { db in try EventLog.prunedThrough(db) }
            #expect(mark == newestB - 1)

            // Nothing older left: a second sweep deletes nothing and keeps the mark.
            #expect(try await Self.sweep(database).events == 0)
            #expect(try await database.read { db in try EventLog.prunedThrough(db) } == mark)
            // A shorter retention bounds the event log too: 5 days takes A's two recent ones
            // except the newest, and the mark rises to it.
            #expect(try await Self.sweep(database, days: 5).events == 1)
            #expect(try await Self.seqs(database, company: "company-a") == [recentA.last!])
            #expect(try await database.read { db in try EventLog.prunedThrough(db) } == recentA.first!)
        }
    }

    @Test("finished push jobs older than 30 days go with their attempts; pending ones never; retention days bound it", arguments: backends)
    func pushJobs(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            try await fixture.register("maria")
            let maria = try await fixture.userID("maria")
            var enqueued: [String] = []
            for _ in 0..<4 {
                let jobs = try await fixture.enqueue(PushRequest(userID: maria, kind: .delivery, message: ringMessage(),
                                                                 deadline: Date().addingTimeInterval(600)))
                enqueued.append(try #require(jobs.first?.pushID))
            }
            let ids = enqueued
            // (status, age in days) per job; the first two carry an attempt each.
            let shapes: [(String, Double)] = [("sent", 40), ("failed", 31), ("pending", 40), ("sent", 10)]
            try await fixture.database.write { db in
                for (index, (status, age)) in shapes.enumerated() {
                    try db.execute("UPDATE push_jobs SET status = ?, created_at = ? WHERE id = ?",
                                   .text(status), .date(Self.now.addingTimeInterval(-age * 86_400)), .text(ids[index]))
                }
                for id in ids.prefix(2) {
                    let device = try #require(try db.queryOne("SELECT device_id FROM push_jobs WHERE id = ?", .text(id))?.string("device_id"))
                    try db.execute("""
                        INSERT INTO push_attempts (id, push_id, device_id, attempt, at, provider, outcome, instance)
                        VALUES (?, ?, ?, 1, ?, 'apns', 'sent', 'test')
                        """, .text(UUID().uuidString), .text(id), .text(device), .date(Self.now.addingTimeInterval(-30 * 86_400)))
                }
            }
            func remaining() async throws -> [String] {
                try await fixture.database.read { db in
                    try db.query("SELECT id FROM push_jobs", []).map { try $0.required.string("id") }
                }
            }
            let report = try await Self.sweep(fixture.database)
            #expect(report.pushJobs == 2 && report.pushAttempts == 2)
            #expect(Set(try await remaining()) == Set([ids[2], ids[3]]))
            #expect(try await fixture.database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM push_attempts", [])?.int("n") } == 0)
            // Retention of 5 days: the 10-day-old sent job goes; the pending one still stays.
            #expect(try await Self.sweep(fixture.database, days: 5).pushJobs == 1)
            #expect(try await remaining() == [ids[2]])
        }
    }
}

/// The auth tables that grow with every login and every SMS code (decision 0055).
@Suite("Retention of sessions and SMS codes", .serialized)
struct AuthRetentionTests {
    static let backends = LogRetentionTests.backends
    static let now = LogRetentionTests.now

    static func count(_ database: any SQLDatabase, _ table: String) async throws -> Int64 {
        try await database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM \(table)", [])?.int("n") ?? -1 }
    }

    @Test("sessions 30 days past their expiry go with their refresh tokens; live and recently ended ones stay, and a pruned token answers like any unknown one",
          arguments: backends)
    func sessions(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let database = fixture.storage.database
            // Four real logins (each a session with its first refresh token); two of them
            // refreshed twice, so their sessions hold three tokens each.
            var logins: [LoginResponse] = []
            for index in 0..<4 {
                var body = try await fixture.auth.login(LoginRequest(username: "maria", password: "demo1234"), clientAddress: "10.0.0.\(index)")
                if index < 2 {
                    for _ in 0..<2 { body = try await fixture.auth.refresh(RefreshRequest(refreshToken: body.refreshToken)) }
                }
                logins.append(body)
            }
            #expect(try await Self.count(database, "sessions") == 4)
            // Ages, relative to the sweep's clock: expired 31 and 45 days ago (pruned; the
            // first is also revoked), expired 29 days ago (kept), still live (kept).
            let expiries: [Double] = [-31, -45, -29, 10]
            var sessionIDs: [String] = []
            for login in logins { sessionIDs.append(try #require(try await fixture.auth.sessionID(forRefreshToken: login.refreshToken))) }
            let byLogin = sessionIDs
            try await database.write { db in
                for (index, days) in expiries.enumerated() {
                    try db.execute("UPDATE sessions SET expires_at = ? WHERE id = ?",
                                   .date(Self.now.addingTimeInterval(days * 86_400)), .text(byLogin[index]))
                }
                try db.execute("UPDATE sessions SET revoked_at = ?, revoked_reason = 'logout' WHERE id = ?",
                               .date(Self.now.addingTimeInterval(-40 * 86_400)), .text(byLogin[0]))
            }
            #expect(try await Self.count(database, "refresh_tokens") == 3 + 3 + 1 + 1)

            let report = try await LogRetentionTests.sweep(database)
            #expect(report.sessions == 2 && report.refreshTokens == 3 + 3)
            let left = try await database.read { db in
                try Set(db.query("SELECT id FROM sessions", []).map { try $0.required.string("id") })
            }
            #expect(left == [byLogin[2], byLogin[3]])
            #expect(try await Self.count(database, "refresh_tokens") == 2)
            // A second sweep finds nothing; the retention days do not shorten session keeping.
            #expect(try await LogRetentionTests.sweep(database, days: 1).sessions == 0)

            // The pruned session's token gets the answer a never-issued token gets.
            let pruned = await httpError { _ = try await fixture.auth.refresh(RefreshRequest(refreshToken: logins[1].refreshToken)) }
            let unknown = await httpError { _ = try await fixture.auth.refresh(RefreshRequest(refreshToken: "never-issued-token")) }
            #expect(pruned?.status == 401)
            #expect(pruned?.body.code == unknown?.body.code)
        }
    }

    @Test("SMS codes and their tokens go a day after they expired", arguments: backends)
    func otp(backend: Backend) async throws {
        try await AuthFixture.with(backend) { fixture in
            let database = fixture.storage.database
            let maria = try #require(try await database.read { db in
                try db.queryOne("SELECT id FROM users WHERE username = 'maria'", [])?.string("id")
            })
            // (expired this many days before the sweep's clock) — > 1 day goes.
            let ages: [Double] = [3, 1.5, 0.5, -0.01]
            try await database.write { db in
                for (index, days) in ages.enumerated() {
                    let expiry = SQLValue.date(Self.now.addingTimeInterval(-days * 86_400))
                    try db.execute("INSERT INTO otp_codes (id, phone, code_hash, created_at, expires_at) VALUES (?, '+5511999990000', 'h', ?, ?)",
                                   .text("code-\(index)"), expiry, expiry)
                    try db.execute("INSERT INTO otp_tokens (token_hash, user_id, expires_at) VALUES (?, ?, ?)",
                                   .text("token-\(index)"), .text(maria), expiry)
                }
            }
            let report = try await LogRetentionTests.sweep(database)
            #expect(report.otpCodes == 2 && report.otpTokens == 2)
            let codes = try await database.read { db in try Set(db.query("SELECT id FROM otp_codes", []).map { try $0.required.string("id") }) }
            let tokens = try await database.read { db in try Set(db.query("SELECT token_hash FROM otp_tokens", []).map { try $0.required.string("token_hash") }) }
            #expect(codes == ["code-2", "code-3"])
            #expect(tokens == ["token-2", "token-3"])
        }
    }
}
