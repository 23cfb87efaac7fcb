import Foundation
import PortariaCore

/// Turns visit events into push jobs, inside the transaction that appends the events: a
/// ring and the pushes that make phones ring commit together or not at all (docs/contract.md §1
/// "push jobs live in a durable outbox written in the same transaction as the visit").
/// Registered on the visits' `EventBus` when the application is assembled (decision 0100).
public struct VisitPushes: VisitEventListener {
    /// This instance's push worker, for the gate POST's first rings (decision 0058).
    let handOff: PushHandOff

    public init(handOff: PushHandOff = PushHandOff()) {
        self.handOff = handOff
    }

    public func eventsAppended(_ events: [EventRecord], in db: any SQLConnection, at: Date) throws {
        // The gate POST's transaction is the one that creates the visit: its first rings
        // (appended after `visit.created`) are claimed in it and sent as it commits.
        if events.contains(where: { $0.visitEventType == .created }) { PushOutbox.handOff(db, to: handOff) }
        try Self.enqueue(db, for: events, at: at)
    }

    /// Writes the jobs `events` call for; returns how many.
    @discardableResult
    static func enqueue(_ db: any SQLConnection, for events: [EventRecord], at: Date) throws -> Int {
        var written = 0
        // The device that answered (same transaction): its own user's *other* phones must
        // stop ringing too, so the answering user stays in the cancellation, minus that device.
        let answered = events.first { $0.visitEventType == .answered }?.visitData
        for event in events {
            guard let visitID = event.visitID, let type = event.visitEventType, let data = event.visitData else { continue }
            let users = data.userIDs ?? []
            switch type {
            case .ringing:
                let kind = data.kind ?? .visit
                // A ring is pointless once its step is over: the next resident is rung
                // instead, and a late call would ring after someone else answered.
                let deadline = data.stepExpiresAt ?? data.ringDeadline ?? at.addingTimeInterval(60)
                let message = PushMessage(visitID: visitID, callerName: data.visitorName, unitLabel: data.unitLabel, visitKind: kind,
                                          carrier: try carrier(db, visitID: visitID), geofence: data.geofence)
                // A courier is an actionable notification (authorize / leave at the
                // concierge / refuse), not a call.
                written += try PushOutbox.enqueue(db, PushRequest(userIDs: users, kind: kind == .delivery ? .delivery : .visitRing,
                                                                  message: message, deadline: max(deadline, at.addingTimeInterval(5))),
                                                  now: at).count
            case .ringCancelled:
                // Rings not yet handed to a provider are simply dropped; phones already
                // ringing get a cancellation (a VoIP push can only mean "ring now").
                try PushOutbox.cancelPending(db, visitID: visitID, kinds: [.visitRing, .delivery],
                                             reason: data.reason?.rawValue ?? "cancelled")
                let message = PushMessage(visitID: visitID, unitLabel: data.unitLabel, visitKind: data.kind, reason: data.reason)
                var cancel = PushRequest(userIDs: users, kind: .ringCancelled, message: message, deadline: at.addingTimeInterval(120))
                if data.reason == .answeredElsewhere, let answerer = data.answeredBy?.id {
                    if !cancel.userIDs.contains(answerer) { cancel.userIDs.append(answerer) }
                    if let device = answered?.deviceID { cancel.excludedInstallations = [device] }
                }
                written += try PushOutbox.enqueue(db, cancel, now: at).count
            case .resolved where data.kind == .delivery:
                written += try enqueueResolutionNotice(db, visitID: visitID, data: data, at: at)
            case .created, .answered, .declined, .unanswered, .resolved, .cancelled, .expired, .photoAdded, .voiceMessageAdded:
                continue
            }
        }
        return written
    }

    /// How long a resolution notice is worth delivering: long enough for a phone that
    /// was briefly offline, not so long that it lands the next morning.
    static let noticeLifetime: TimeInterval = 6 * 3600

    /// A decided delivery: the residents whose phones got its actionable alert get a
    /// replacing one without actions ("Maria autorizou às 14:32"), except the resolver;
    /// an automatic decision is announced to every resident to notify (`notify_user_ids`)
    /// as well, since nobody was asked.
    private static func enqueueResolutionNotice(_ db: any SQLConnection, visitID: String, data: VisitEventData, at: Date) throws -> Int {
        guard let action = data.action, let via = data.via else { return 0 }
        let resolvedAt = data.at ?? at
        let by = data.by ?? PersonRef(id: "", name: "")
        // Those whose alert may be on screen: a delivery job that was not withdrawn
        // before sending (the ring_cancelled of this same transaction withdrew the rest).
        var alerted: [String] = []
        for row in try db.query("""
            SELECT DISTINCT user_id FROM push_jobs WHERE visit_id = ? AND kind = 'delivery' AND status <> 'cancelled' ORDER BY user_id
            """, .text(visitID)) {
            if let user = try row.string("user_id") { alerted.append(user) }
        }
        let zone = try db.queryOne("""
            SELECT c.timezone FROM visits v JOIN companies c ON c.id = v.company_id WHERE v.id = ?
            """, .text(visitID))?.string("timezone")
        let message = PushMessage(visitID: visitID, unitLabel: data.unitLabel, visitKind: .delivery,
                                  resolution: VisitResolution(action: action, by: by, at: resolvedAt, via: via), timeZone: zone)
        let kind: PushKind
        var users: [String]
        if via == .auto {
            kind = .automaticResolution
            users = data.notifyUserIDs ?? []
            for user in alerted where !users.contains(user) { users.append(user) }
        } else {
            // The resolver's own tap already answered on their phone.
            kind = .deliveryResolved
            users = alerted.filter { $0 != by.id }
        }
        return try PushOutbox.enqueue(db, PushRequest(userIDs: users, kind: kind, message: message,
                                                      deadline: at.addingTimeInterval(noticeLifetime)), now: at).count
    }

    private static func carrier(_ db: any SQLConnection, visitID: String) throws -> String? {
        try db.queryOne("SELECT carrier FROM visits WHERE id = ?", .text(visitID))?.string("carrier")
    }
}

/// Writes every push attempt and receipt into the visit's attempts timeline, in the
/// outbox's own transaction.
struct VisitTimelinePushSink: PushEventSink {
    func pushAttempted(_ attempt: PushAttempt, in db: any SQLConnection) throws {
        guard let visitID = attempt.visitID.flatMap(VisitID.init(rawValue:)) else { return }
        var detail = "\(attempt.kind.rawValue) via \(attempt.provider): \(attempt.outcome)"
        if let status = attempt.httpStatus { detail += " \(status)" }
        if let reason = attempt.reason { detail += " \(reason)" }
        let name = try db.queryOne("SELECT name FROM users WHERE id = ?", .text(attempt.userID))?.string("name")
        try VisitStore.insertAttempt(db, visitID: visitID, kind: .pushSent, user: PersonRef(id: attempt.userID, name: name ?? ""),
                                     deviceID: attempt.deviceID, channel: attempt.provider, detail: String(detail.prefix(300)),
                                     at: attempt.at)
    }
}
