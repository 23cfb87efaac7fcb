import Foundation
import PortariaCore
import PortariaTestSupport
import Testing
@testable import PortariaServer

/// Decision 0047: the per-company event lock is taken at the end of the transaction. What
/// it guards must still hold when one building's gate POSTs run concurrently on PostgreSQL:
/// a reader following the company's log forward (as every realtime feed does) sees every
/// event exactly once, in `seq` order, and each visit's events in the order they happened.
@Suite("Event log order under concurrent gate POSTs", .serialized)
struct EventOrderTests {
    @Test("concurrent gate POSTs in one company: the log read forward while they commit has no gap and no reordering",
          .requires(.postgres))
    func concurrentGatePostsKeepTheLogGapFree() async throws {
        try await VisitsFixture.with(.postgres) { f in
            let company = f.demo
            let database = f.database
            let start = try await database.read { db in
                try db.queryOne("SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE company_id = ?", .text(company))?.int("seq") ?? 0
            }
            let follower = Follower(database: database, companyID: company, after: start)
            let visits = 120
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<visits {
                    group.addTask { try await f.ring("A-101", name: "Visitante \(index)").id }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            let followed = try await follower.finish()
            let logged = try await database.read { db in try EventLog.since(db, companyID: company, seq: start, limit: 10_000) }

            // Every committed event was seen by the follower, once, in seq order.
            #expect(followed.map(\.seq) == logged.map(\.seq), "the follower skipped or repeated events")
            #expect(zip(logged, logged.dropFirst()).allSatisfy { $0.seq < $1.seq })
            // Each visit: created, then rung, in that order (seq order = the order within the transaction).
            let visitIDs = Set(ids)
            #expect(visitIDs.count == visits)
            for id in visitIDs {
                let types = followed.filter { $0.visitID == id }.map(\.type)
                #expect(types.first == "visit.created", "visit \(id): \(types)")
                #expect(types.contains("visit.ringing"), "visit \(id): \(types)")
            }
            // What the bus carried after each commit has the seqs the log holds.
            let published = await f.recorder.wait { Set($0.compactMap(\.visitID)).isSuperset(of: visitIDs) }
                .filter { visitIDs.contains($0.visitID ?? "") }
            #expect(Set(published.map(\.seq)) == Set(logged.filter { visitIDs.contains($0.visitID ?? "") }.map(\.seq)))
            #expect(!published.contains { $0.seq == 0 })
        }
    }

    @Test("the lock is what keeps the order: transactions that linger after inserting their events still commit them in seq order",
          .requires(.postgres))
    func lingeringTransactionsKeepTheLogGapFree() async throws {
        try await VisitsFixture.with(.postgres) { f in
            let company = f.demo
            let database = f.database
            let start = try await database.read { db in
                try db.queryOne("SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE company_id = ?", .text(company))?.int("seq") ?? 0
            }
            let follower = Follower(database: database, companyID: company, after: start)
            // Each transaction's own last work, registered after the events, sleeps a
            // random while: the window between the insert and the COMMIT in which, without
            // the lock, a later seq commits first and the follower steps over an earlier one.
            let transactions = 64
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<transactions {
                    group.addTask {
                        try await database.write { db in
                            _ = try EventLog.append(db, companyID: company, visitID: nil, unitID: nil,
                                                    events: [PendingEvent(type: .created, data: ["n": .number(Double(index))])],
                                                    at: Date(), bus: EventBus())
                            _ = db.lastWork("test:linger", make: { NSObject() }) { _, _ in
                                usleep(UInt32.random(in: 0...20_000))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let followed = try await follower.finish()
            let logged = try await database.read { db in try EventLog.since(db, companyID: company, seq: start, limit: 10_000) }
            #expect(logged.count == transactions)
            #expect(followed.map(\.seq) == logged.map(\.seq), "the follower skipped or repeated events")
        }
    }
}

/// Reads one company's log forward as `RealtimeFeed.deliver` does (after the last seq it
/// saw), as fast as it can, until told to finish.
private final class Follower: Sendable {
    private let stop = Locked(false)
    private let task: Task<[EventRecord], any Error>

    init(database: any SQLDatabase, companyID: String, after start: Int64) {
        let stop = stop
        task = Task {
            var seen: [EventRecord] = []
            var after = start
            while true {
                let finished = stop.current
                let batch = try await database.read { [after] db in try EventLog.since(db, companyID: companyID, seq: after, limit: 500) }
                seen += batch
                after = batch.last?.seq ?? after
                if finished && batch.isEmpty { return seen }
                if batch.isEmpty { try await Task.sleep(for: .microseconds(200)) }
            }
        }
    }

    /// Everything it read, once the writers are done and one last read found nothing new.
    func finish() async throws -> [EventRecord] {
        stop.withLock { $0 = true }
        return try await task.value
    }
}
