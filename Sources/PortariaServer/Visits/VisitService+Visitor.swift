import Foundation
import PortariaCore

/// The visitor's side, with the visitor token resolved at the route edge by
/// `VisitorAuthenticator`: following, cancelling, media.
extension VisitService {
    /// A visitor token that may still follow its visit live (tickets, sockets): the visit
    /// is not closed, and the token is within its ticket allowance.
    func visitorLive(_ access: VisitorAccess, takingTicket: Bool) async throws -> VisitorAccess {
        if access.status.isTerminal { throw VisitError.closed(access.status) }
        if takingTicket {
            let decision = try await RateLimiter(database: database).admit(
                "visitor-ticket:" + access.visitID.rawValue, max: configuration.ticketsPerVisit,
                window: configuration.visitorTicketWindow, now: clock.now())
            if !decision.allowed { throw Self.rateLimited(decision.window) }
        }
        return access
    }

    /// The visit whose call a visitor may get relay credentials for: only while the call
    /// is live (the visit answered, within the longest call, and its call not ended). A
    /// relay credential is bandwidth on our TURN server; a token that has no call gets
    /// none (409). "Ended" is read from the visit's timeline (the `call_ended` attempt the
    /// instance holding the call writes), so it holds on every instance.
    func visitorLiveCall(_ access: VisitorAccess) async throws -> String {
        guard access.status == .answered, let answeredAt = access.answeredAt,
              clock.now() < answeredAt.addingTimeInterval(configuration.callWindow) else {
            throw VisitError.callNotActive(access.status)
        }
        let visitID = access.visitID
        let ended = try await database.read { db in try VisitStore.callEnded(db, visitID: visitID, since: answeredAt) }
        if ended { throw VisitError.callNotActive(access.status) }
        return visitID.rawValue
    }

    func visitorVisit(_ access: VisitorAccess) async throws -> PublicVisit {
        PublicVisit(try await visit(id: access.visitID))
    }

    func visitorCancel(_ access: VisitorAccess) async throws -> PublicVisit {
        let id = access.visitID
        let now = clock.now()
        let (visit, events) = try await database.write { db -> (Visit, [EventRecord]) in
            guard let row = try VisitStore.lock(db, id: id) else { throw VisitError.visitNotFound }
            if row.status == .cancelled { return (try VisitStore.dto(db, row), []) }   // cancelling twice is fine
            do {
                let outcome = try VisitEngine.apply(db, row: row, event: .cancel(at: now), source: EventSource(channel: "visitor"), at: now, bus: bus)
                return (try VisitStore.dto(db, outcome.row), outcome.events)
            } catch is VisitTransitionError {
                throw VisitError.closed(row.status)
            }
        }
        bus.publish(events)
        return PublicVisit(visit)
    }

    /// Stores a photo or voice message the visitor uploaded, after sniffing and (photos)
    /// stripping metadata.
    ///
    /// Media is evidence a resident decides on: once the visit is answered or resolved it
    /// is frozen (409 `VISIT_MEDIA_FROZEN`), checked again under the visit's row lock so a
    /// decision racing the upload wins. A photo or voice message already stored is also
    /// fixed once the ring moved past its first step (a decline, a step's timeout) or the
    /// visit waits as a pendência: the next resident sees what the first one was shown
    /// (decision 0072); one not yet stored may still be added. Uploads count per token
    /// (`uploadsPerVisit`, 429), bytes per company and day (`mediaBytesPerCompanyPerDay`,
    /// 507), and bytes per address and per visit (`MediaShares`, 429).
    func visitorUpload(_ access: VisitorAccess, kind: MediaKind, body: [UInt8], address: String) async throws -> PublicVisit {
        let visitID = access.visitID
        let id = visitID.rawValue
        try Self.checkMediaOpen(access.status)
        let allowance = try await RateLimiter(database: database).admit(
            "visitor-upload:" + id, max: configuration.uploadsPerVisit, window: configuration.visitLifetime, now: clock.now())
        if !allowance.allowed {
            throw VisitError.uploadsSpent(limit: configuration.uploadsPerVisit, retryAfter: allowance.window.retryAfter)
        }
        try require(!body.isEmpty, field: kind.rawValue, "the request body must be the \(kind == .photo ? "image" : "audio") bytes")
        let stored: (contentType: String, ext: String, bytes: [UInt8], durationMs: Int?)
        do {
            switch kind {
            case .photo:
                let photo = try MediaSniffer.photo(body)
                stored = (photo.contentType, photo.fileExtension, photo.bytes, nil)
            case .voiceMessage:
                let voice = try MediaSniffer.voice(body)
                stored = (voice.contentType, voice.fileExtension, body, voice.durationMs)
            }
        } catch {
            switch error {
            case .tooLarge: throw VisitError.mediaTooLarge(kind)
            case .tooLong(let ms): throw VisitError.mediaTooLong(kind, milliseconds: ms)
            case .unrecognized: throw VisitError.mediaUnrecognized(kind)
            case .malformed(let why): throw VisitError.mediaMalformed(kind, reason: why)
            }
        }
        let now = clock.now()
        let mediaID = UUID().uuidString.lowercased()
        let companyID = access.companyID
        let quota = configuration.mediaBytesPerCompanyPerDay
        let size = stored.bytes.count
        let shares = MediaShares(quotaBytes: quota, configuration: configuration, address: address, visitID: id)
        // Checked before the file is written (reads), and again in the transaction.
        let used = try await database.read { db in try MediaStore.bytesToday(db, companyID: companyID, now: now) }
        if used + size > quota { throw VisitError.mediaQuotaExceeded(quotaBytes: quota) }
        try await shares.check(RateLimiter(database: database), adding: size, now: now)
        let path = try media.write(stored.bytes, companyID: companyID, visitID: id, mediaID: mediaID, ext: stored.ext)
        do {
            let (visit, replaced, events) = try await database.write { db -> (Visit, String?, [EventRecord]) in
                guard let row = try VisitStore.lock(db, id: visitID) else { throw VisitError.visitNotFound }
                try Self.checkMediaOpen(row.status)
                if try MediaStore.bytesToday(db, companyID: companyID, now: now) + size > quota {
                    throw VisitError.mediaQuotaExceeded(quotaBytes: quota)
                }
                let old = try MediaStore.storedPath(db, visitID: visitID, kind: kind)
                if old != nil, try Self.residentWasShown(db, row: row) { throw VisitError.mediaFrozen(row.status) }
                try shares.count(db, adding: size, now: now)
                try MediaStore.record(db, StoredMedia(id: mediaID, visitID: visitID, kind: kind, contentType: stored.contentType,
                                                      byteSize: size, durationMs: stored.durationMs, path: path), at: now)
                var data: [String: JSONValue] = ["content_type": .string(stored.contentType), "byte_size": .number(Double(stored.bytes.count))]
                if let duration = stored.durationMs { data["duration_ms"] = .number(Double(duration)) }
                let events = try EventLog.append(db, companyID: row.companyID, visitID: row.id, unitID: row.unitID,
                                                 events: [VisitEngine.decorate(PendingEvent(type: kind == .photo ? .photoAdded : .voiceMessageAdded, data: data),
                                                                               row: row, status: row.status)], at: now, bus: bus)
                return (try VisitStore.dto(db, row), old, events)
            }
            if let replaced { media.remove(replaced) }
            bus.publish(events)
            return PublicVisit(visit)
        } catch {
            media.remove(path)
            throw error
        }
    }

    /// Media may be added while the visit rings or waits as a pendência; a decision (or
    /// a resident on the line) freezes it, and a closed visit takes nothing.
    static func checkMediaOpen(_ status: VisitStatus) throws {
        switch status {
        case .ringing, .unanswered:
            return
        case .answered, .resolved:
            throw VisitError.mediaFrozen(status)
        case .cancelled, .expired:
            throw VisitError.closed(status)
        }
    }

    /// Whether a resident other than the first one rung may already see the visit's media
    /// as it is: the visit waits as a pendência, or the ring moved past its first step
    /// (someone declined, or a step timed out and the next resident was rung).
    static func residentWasShown(_ db: any SQLConnection, row: VisitRow) throws -> Bool {
        if row.status == .unanswered { return true }
        return try VisitStore.ringMovedOn(db, visitID: row.id)
    }

}
