import Foundation
import PortariaCore

/// Residents' and operators' decisions: answer, decline, resolve.
extension VisitService {
    /// The two actions on the call itself, one route each (`/v1/visits/{id}/answer`, `…/decline`).
    enum CallAction: String, Sendable { case answer, decline }

    /// What a resident or operator does to a visit, with its request body.
    enum Decision: Sendable {
        case call(CallAction, CallActionRequest)
        case resolve(ResolveVisitRequest)

        /// The route this decision arrives on, for the idempotency key's request hash.
        func endpoint(visitID: String) -> (method: HTTPMethod, path: String) {
            switch self {
            case .call(.answer, _): let route = APIRoutes.answerCall(id: visitID); return (route.method, route.path)
            case .call(.decline, _): let route = APIRoutes.declineCall(id: visitID); return (route.method, route.path)
            case .resolve: let route = APIRoutes.resolveVisit(id: visitID); return (route.method, route.path)
            }
        }

        /// The name the audit trail records (decision 0091).
        var auditAction: VisitAuditAction {
            switch self {
            case .call(.answer, _): return .answer
            case .call(.decline, _): return .decline
            case .resolve: return .resolve
            }
        }

        /// The device the call action came from, if it said.
        var deviceID: String? {
            if case .call(_, let request) = self { return request.deviceID }
            return nil
        }
    }

    /// Performs one decision under the idempotency contract (`key` is the request's
    /// validated `Idempotency-Key`). The answer is the visit, or the 409 of a lost race,
    /// as first answered: a retry with the same key gets it again, `replayed`.
    func perform(_ decision: Decision, visitID id: VisitID, caller: Caller, key: String) async throws -> IdempotencyStore.Outcome {
        let visitID = id.rawValue
        // Visibility first: another company's or another unit's visit is a 404 and
        // never touches the key store.
        let visible = try await database.read { db -> Bool in
            guard let place = try VisitStore.place(db, id: id) else { return false }
            return Self.canSee(caller, companyID: place.companyID, unitID: place.unitID)
        }
        guard visible else { throw VisitError.visitNotFound }

        let canonical: String
        switch decision {
        case .resolve(let body):
            canonical = JSONValue.object(["action": .string(body.action.rawValue),
                                          "via": .string((body.via ?? .app).rawValue)]).jsonText
        case .call(_, let body):
            canonical = JSONValue.object(["device_id": body.deviceID.map(JSONValue.string) ?? .null]).jsonText
        }
        let route = decision.endpoint(visitID: visitID)
        let hash = IdempotencyStore.requestHash(method: route.method.rawValue, path: route.path, canonicalBody: canonical)
        let now = clock.now()
        let me = PersonRef(id: caller.user.id, name: caller.user.name)
        let hook = beforeIdempotentWork
        let outcome = try await idempotency.run(userID: caller.user.id, key: key, requestHash: hash, now: now,
                                                          beforeWork: hook) { db in
            guard let row = try VisitStore.lock(db, id: id) else { throw VisitError.visitNotFound }
            let event: VisitEvent
            var via = ResolutionChannel.app
            var detail: [String: JSONValue] = [:]
            switch decision {
            case .call(.answer, _): event = .answer(by: me, at: now)
            case .call(.decline, _): event = .decline(by: me, at: now)
            case .resolve(let body):
                via = body.via ?? .app
                event = .resolve(VisitResolution(action: body.action, by: me, at: now, via: via))
                detail = ["action": .string(body.action.rawValue), "via": .string(via.rawValue)]
            }
            // Answering twice from the same person (two devices) is not a conflict.
            if case .call(.answer, _) = decision, case .answered(let by, _) = row.machine.state, by.id == me.id {
                return .init(status: 200, body: Self.encode(try VisitStore.dto(db, row)))
            }
            do {
                let outcome = try VisitEngine.apply(db, row: row, event: event,
                                                    source: EventSource(user: me, deviceID: decision.deviceID, channel: via.rawValue),
                                                    at: now, bus: bus)
                // The decision and its audit row commit together (decision 0091).
                try AuditLog.append(db, AuditLog.entry(caller, decision.auditAction.rawValue, objectType: "visit", objectID: visitID,
                                                       device: decision.deviceID, detail: detail, at: now))
                return .init(status: 200, body: Self.encode(try VisitStore.dto(db, outcome.row)), events: outcome.events)
            } catch let error as VisitTransitionError {
                // A decided outcome, stored and replayed like a success.
                let refusal = VisitError(error, row: row)
                return .init(status: refusal.status, body: refusal.response.body)
            }
        }
        bus.publish(outcome.events)
        if case .call(.decline, _) = decision, !outcome.events.isEmpty { wakeScheduler() }
        return outcome
    }
}

/// What the audit trail calls the facts about a visit (decision 0091).
enum VisitAuditAction: String, Sendable {
    /// A visitor rang at the gate.
    case create = "visit.create"
    case answer = "visit.answer"
    case decline = "visit.decline"
    case resolve = "visit.resolve"
}
