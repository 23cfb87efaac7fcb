import Foundation
import PortariaCore

/// The ring plan's SQL: starting a ring, performing one due step, reacting to a decline.
/// Every function runs inside the caller's write transaction.
enum RingEngine {
    struct Job: Sendable {
        var visitID: VisitID
        var steps: [[String]]
        var nextStep: Int
        var stepMs: Int64
        var dueAt: Int64
        var windowEndsAt: Int64
    }

    static func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
    static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }

    /// What starting a ring did: its events, and whether it changed the visit's row (a
    /// window already over ends the visit at once; a ring that starts only writes its job
    /// and attempts).
    struct Start {
        var events: [EventRecord]
        var visitChanged: Bool
    }

    /// Plans the ring of a new visit and performs its first step at once, so the first
    /// ring is stored in the same transaction that creates the visit. The plan is in hand
    /// (`targets` come with their names): the job is written already past its first step,
    /// instead of written, read back and updated.
    static func start(_ db: any SQLConnection, row: VisitRow, targets: [PersonRef], stepSeconds: Int,
                      windowSeconds: Int, at: Date, bus: EventBus) throws -> Start {
        let ids = targets.map(\.id)
        let steps: [[String]] = row.ringMode == .sequential ? ids.map { [$0] } : (ids.isEmpty ? [] : [ids])
        let stepsJSON = JSONValue.array(steps.map { .array($0.map(JSONValue.string)) }).jsonText
        let now = ms(at)
        let job = Job(visitID: row.id, steps: steps, nextStep: 0, stepMs: Int64(stepSeconds) * 1000, dueAt: now,
                      windowEndsAt: now + Int64(windowSeconds) * 1000)
        guard !steps.isEmpty, now < job.windowEndsAt else {
            // Nobody to ring, or no time to ring them: the general step decides.
            try insert(db, job, companyID: row.companyID, stepsJSON: stepsJSON, nextStep: 0, dueAt: now, at: now)
            return Start(events: try step(db, visitID: row.id, at: at, bus: bus), visitChanged: true)
        }
        let after = advanced(job, now: now)
        try insert(db, job, companyID: row.companyID, stepsJSON: stepsJSON, nextStep: after.nextStep, dueAt: after.dueAt, at: now)
        var names: [String: String] = [:]
        for target in targets { names[target.id] = target.name }
        let people = steps[0].map { PersonRef(id: $0, name: names[$0] ?? "") }
        return Start(events: try perform(db, job: job, row: row, ringing: people, at: at, bus: bus), visitChanged: false)
    }

    private static func insert(_ db: any SQLConnection, _ job: Job, companyID: String, stepsJSON: String, nextStep: Int,
                               dueAt: Int64, at now: Int64) throws {
        try db.execute("""
            INSERT INTO ring_jobs (visit_id, company_id, steps, next_step, step_ms, due_at, window_ends_at, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, .id(job.visitID), .text(companyID), .text(stepsJSON), .integer(Int64(nextStep)), .integer(job.stepMs),
                 .integer(dueAt), .integer(job.windowEndsAt), .integer(now))
    }

    /// Where `job` stands once its step `nextStep` is performed at `now`: the following
    /// step, due a step later (or at the window's end after the last).
    static func advanced(_ job: Job, now: Int64) -> (nextStep: Int, dueAt: Int64) {
        let following = job.nextStep + 1
        let due = following < job.steps.count ? min(job.dueAt + job.stepMs, job.windowEndsAt) : job.windowEndsAt
        return (following, max(due, job.dueAt))
    }

    static func job(_ db: any SQLConnection, visitID: VisitID) throws -> Job? {
        guard let row = try db.queryOne("""
            SELECT visit_id, steps, next_step, step_ms, due_at, window_ends_at FROM ring_jobs WHERE visit_id = ?
            """, .id(visitID)) else { return nil }
        let text = try row.string("steps") ?? "[]"
        let steps = (try? JSONDecoder().decode([[String]].self, from: Data(text.utf8))) ?? []
        return Job(visitID: visitID, steps: steps, nextStep: Int(try row.int("next_step") ?? 0), stepMs: try row.int("step_ms") ?? 20_000,
                   dueAt: try row.int("due_at") ?? 0, windowEndsAt: try row.int("window_ends_at") ?? 0)
    }

    /// Claims one due job (SKIP LOCKED on PostgreSQL: another instance busy with a job
    /// is skipped, never waited for) and performs its step. Nil when nothing is due.
    static func processDue(_ db: any SQLConnection, at: Date, bus: EventBus) throws -> [EventRecord]? {
        guard let claimed = try db.queryOne("""
            SELECT j.visit_id FROM ring_jobs j JOIN visits v ON v.id = j.visit_id
            WHERE j.due_at <= ? ORDER BY j.due_at, j.visit_id LIMIT 1
            """ + db.dialect.skipLocked, .integer(ms(at)))?.string("visit_id") else { return nil }
        guard let visitID = VisitID(rawValue: claimed) else {
            // Not an id this server could have written: nothing can ring for it.
            try db.execute("DELETE FROM ring_jobs WHERE visit_id = ?", .text(claimed))
            return []
        }
        return try step(db, visitID: visitID, at: at, bus: bus)
    }

    /// Performs whatever is due for one visit's ring: the next step, or the end of the window.
    static func step(_ db: any SQLConnection, visitID: VisitID, at: Date, bus: EventBus) throws -> [EventRecord] {
        guard let job = try job(db, visitID: visitID) else { return [] }
        guard let row = try VisitStore.load(db, id: visitID), row.status == .ringing else {
            try db.execute("DELETE FROM ring_jobs WHERE visit_id = ?", .id(visitID))
            return []
        }
        let now = ms(at)
        if now >= job.windowEndsAt {
            return try VisitEngine.apply(db, row: row, event: .windowClosed(at: at),
                                         source: EventSource(channel: "scheduler"), at: at, bus: bus).events
        }
        guard job.nextStep < job.steps.count else {
            // Everyone was rung; wait for the window to end.
            try db.execute("UPDATE ring_jobs SET due_at = ? WHERE visit_id = ?", .integer(job.windowEndsAt), .id(visitID))
            return []
        }
        let after = advanced(job, now: now)
        let events = try perform(db, job: job, row: row, ringing: try AccountStore.people(db, ids: job.steps[job.nextStep]),
                                 at: at, bus: bus)
        try db.execute("UPDATE ring_jobs SET next_step = ?, due_at = ? WHERE visit_id = ?",
                       .integer(Int64(after.nextStep)), .integer(after.dueAt), .id(visitID))
        return events
    }

    /// Performs step `job.nextStep` of a ringing visit: the previous step's residents time
    /// out (sequential), `ringing` (that step's residents, named) are rung. Writes the
    /// attempts and appends the events; the job's row is the caller's.
    private static func perform(_ db: any SQLConnection, job: Job, row: VisitRow, ringing people: [PersonRef],
                                at: Date, bus: EventBus) throws -> [EventRecord] {
        let users = job.steps[job.nextStep]
        let visitID = job.visitID
        let now = ms(at)
        var machine = row.machine
        _ = try machine.handle(.ringStep(userIDs: users))   // refuses unless ringing
        var pending: [PendingEvent] = []
        if job.nextStep > 0 && row.ringMode == .sequential {
            let previous = job.steps[job.nextStep - 1].filter { !users.contains($0) }
            try VisitStore.insertAttempts(db, visitID: visitID, kind: .timeout, users: try AccountStore.people(db, ids: previous),
                                          channel: "scheduler", step: job.nextStep - 1, at: at)
            pending.append(PendingEvent(type: .ringCancelled, data: [
                "reason": .string(RingCancelReason.nextStep.rawValue), "user_ids": .array(previous.map(JSONValue.string))]))
        }
        try VisitStore.insertAttempts(db, visitID: visitID, kind: .ring, users: people, channel: "push", step: job.nextStep, at: at)
        let due = advanced(job, now: now).dueAt
        // A step rings until the next one starts (sequential) or the window ends.
        let stepEnds = row.ringMode == .sequential ? min(max(due, now), job.windowEndsAt) : job.windowEndsAt
        pending.append(PendingEvent(type: .ringing, data: [
            "user_ids": .array(users.map(JSONValue.string)), "step": .number(Double(job.nextStep)),
            "ring_mode": .string(row.ringMode.rawValue), "visitor_name": .string(row.visitorName),
            "geofence": .object(["status": .string(row.geofence.status.rawValue),
                                 "distance_m": row.geofence.distanceM.map { .number(Double($0)) } ?? .null]),
            "step_expires_at": .string(Timestamp.format(date(stepEnds))),
            "ring_deadline": .string(Timestamp.format(date(job.windowEndsAt))),
        ]))
        return try EventLog.append(db, companyID: row.companyID, visitID: visitID, unitID: row.unitID,
                                   events: pending.map { VisitEngine.decorate($0, row: row, status: .ringing) }, at: at, bus: bus)
    }

    /// A resident declined: when everyone of the current step has declined, the ring
    /// moves on now (to the next step, or to the end of the window after the last).
    static func declined(_ db: any SQLConnection, visitID: VisitID, userID: String, at: Date) throws {
        guard let job = try job(db, visitID: visitID), job.nextStep > 0 else { return }
        let current = job.steps[job.nextStep - 1]
        guard current.contains(userID) else { return }
        let declined = Set(try db.query("SELECT user_id FROM visit_attempts WHERE visit_id = ? AND kind = 'decline'", .id(visitID))
            .compactMap { try $0.string("user_id") })
        guard current.allSatisfy(declined.contains) else { return }
        let now = ms(at)
        if job.nextStep < job.steps.count {
            try db.execute("UPDATE ring_jobs SET due_at = ? WHERE visit_id = ?", .integer(now), .id(visitID))
        } else {
            try db.execute("UPDATE ring_jobs SET due_at = ?, window_ends_at = ? WHERE visit_id = ?",
                           .integer(now), .integer(now), .id(visitID))
        }
    }

    /// Expires one visit unresolved past its 24 h (SKIP LOCKED, like ring jobs).
    static func expireDue(_ db: any SQLConnection, at: Date, bus: EventBus) throws -> [EventRecord]? {
        guard let id = try db.queryOne("""
            SELECT id FROM visits WHERE expires_at <= ? AND status IN ('ringing', 'answered', 'unanswered')
            ORDER BY expires_at LIMIT 1
            """ + db.dialect.skipLocked, .integer(ms(at)))?.string("id").flatMap(VisitID.init(rawValue:)),
              let row = try VisitStore.load(db, id: id) else { return nil }
        return try VisitEngine.apply(db, row: row, event: .expire(at: at), source: EventSource(channel: "scheduler"), at: at, bus: bus).events
    }
}
