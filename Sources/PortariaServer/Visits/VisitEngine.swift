import Foundation
import PortariaCore

/// Who or what caused an event, for the attempts timeline.
struct EventSource: Sendable {
    var user: PersonRef?
    var deviceID: String?
    var channel: String
}

/// Feeds one event to a visit's state machine and performs the actions it returns,
/// inside the caller's write transaction: the visit row, its timeline, the ring job and
/// the event log change together or not at all.
enum VisitEngine {
    struct Outcome: Sendable {
        var row: VisitRow
        var actions: [VisitAction]
        var events: [EventRecord]
    }

    /// `row` must be locked by the caller (`VisitStore.lock`). Throws
    /// `VisitTransitionError` when the state refuses the event; nothing is written then.
    static func apply(_ db: any SQLConnection, row: VisitRow, event: VisitEvent, source: EventSource,
                      at: Date, extra: [PendingEvent] = [], bus: EventBus) throws -> Outcome {
        var machine = row.machine
        let actions = try machine.handle(event)
        var pending: [PendingEvent] = []
        var answered: (PersonRef, Date)?
        var ringStopped = false

        for action in actions {
            switch action {
            case .ring(let userIDs):
                // Rings are written by the scheduler, which knows the step; see RingEngine.
                _ = userIDs
            case .stopRinging(let reason):
                ringStopped = true
                let hadJob = try db.execute("DELETE FROM ring_jobs WHERE visit_id = ?", .id(row.id)) > 0
                var users = try VisitStore.rungUsers(db, visitID: row.id)
                // Nothing rang (a delivery left at the concierge at once): nothing to stop.
                if !hadJob && users.isEmpty { continue }
                if reason == .answeredElsewhere, let by = source.user {
                    // The answering device keeps its call; the others stop.
                    users.removeAll { $0 == by.id }
                }
                var data: [String: JSONValue] = ["reason": .string(reason.rawValue),
                                                 "user_ids": .array(users.map(JSONValue.string))]
                if reason == .answeredElsewhere, let by = source.user { data["answered_by"] = person(by) }
                pending.append(PendingEvent(type: .ringCancelled, data: data))
            case .recordAnswer(let by):
                answered = (by, at)
                try VisitStore.insertAttempt(db, visitID: row.id, kind: .answer, user: by, deviceID: source.deviceID,
                                             channel: source.channel, at: at)
                // The device lets the realtime layer open the call with that one device.
                pending.append(PendingEvent(type: .answered,
                                            data: ["by": person(by), "device_id": source.deviceID.map(JSONValue.string) ?? .null]))
            case .recordDecline(let by):
                try VisitStore.insertAttempt(db, visitID: row.id, kind: .decline, user: by, deviceID: source.deviceID,
                                             channel: source.channel, at: at)
                pending.append(PendingEvent(type: .declined, data: ["by": person(by)]))
            case .advanceRing:
                if let user = source.user { try RingEngine.declined(db, visitID: row.id, userID: user.id, at: at) }
            case .becamePending:
                try VisitStore.insertAttempt(db, visitID: row.id, kind: .timeout, channel: "scheduler", at: at)
                pending.append(PendingEvent(type: .unanswered, data: [:]))
            case .resolved(let resolution):
                try db.execute("""
                    INSERT INTO visit_resolutions (visit_id, action, user_id, user_name, via, created_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """, .id(row.id), .text(resolution.action.rawValue),
                         resolution.via == .auto ? .null : .text(resolution.by.id), .text(resolution.by.name),
                         .text(resolution.via.rawValue), .date(resolution.at))
                try VisitStore.insertAttempt(db, visitID: row.id, kind: .resolution,
                                             user: resolution.via == .auto ? nil : resolution.by,
                                             deviceID: source.deviceID, channel: resolution.via.rawValue,
                                             detail: resolution.action.rawValue, at: at)
                var data = resolutionJSON(resolution)
                if resolution.via == .auto {
                    // Nobody decided: residents are informed (the push layer turns this
                    // into an alert), since no one was asked.
                    data["notify_user_ids"] = .array(try VisitStore.notifiedResidents(db, unitID: row.unitID).map { .string($0.id) })
                }
                pending.append(PendingEvent(type: .resolved, data: data))
            case .cancelled:
                try VisitStore.insertAttempt(db, visitID: row.id, kind: .cancel, channel: "visitor", at: at)
                pending.append(PendingEvent(type: .cancelled, data: [:]))
            case .expired:
                try VisitStore.insertAttempt(db, visitID: row.id, kind: .expire, channel: "scheduler", at: at)
                pending.append(PendingEvent(type: .expired, data: [:]))
            }
        }

        let status = machine.state.status
        try db.execute("""
            UPDATE visits SET status = ?, updated_at = ?,
                answered_by = COALESCE(?, answered_by), answered_by_name = COALESCE(?, answered_by_name),
                answered_at = COALESCE(?, answered_at),
                ring_deadline = CASE WHEN ? = 1 THEN NULL ELSE ring_deadline END
            WHERE id = ?
            """, .text(status.rawValue), .date(at), .optional(answered?.0.id), .optional(answered?.0.name),
                 answered.map { .date($0.1) } ?? .null, .bool(ringStopped), .id(row.id))
        let events = try EventLog.append(db, companyID: row.companyID, visitID: row.id, unitID: row.unitID,
                                         events: (pending + extra).map { decorate($0, row: row, status: status) }, at: at, bus: bus)
        var after = row
        after.status = status
        after.updatedAt = at
        if let answered { after.answeredBy = answered.0; after.answeredAt = answered.1 }
        if case .resolved(let resolution) = machine.state { after.resolution = resolution }
        return Outcome(row: after, actions: actions, events: events)
    }

    /// Every event names its visit, unit, kind and the status after the change, so a
    /// consumer can act without reading the visit back.
    static func decorate(_ event: PendingEvent, row: VisitRow, status: VisitStatus) -> PendingEvent {
        var data = event.data
        data["visit_id"] = .string(row.id.rawValue)
        data["unit_id"] = .string(row.unitID.rawValue)
        data["unit_label"] = .string(row.unitLabel)
        data["kind"] = .string(row.kind.rawValue)
        data["status"] = .string(status.rawValue)
        return PendingEvent(type: event.type, data: data)
    }

    static func person(_ person: PersonRef) -> JSONValue {
        .object(["id": .string(person.id), "name": .string(person.name)])
    }

    static func resolutionJSON(_ resolution: VisitResolution) -> [String: JSONValue] {
        ["action": .string(resolution.action.rawValue), "by": person(resolution.by),
         "at": .string(Timestamp.format(resolution.at)), "via": .string(resolution.via.rawValue)]
    }
}
