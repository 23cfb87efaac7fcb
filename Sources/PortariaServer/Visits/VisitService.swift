import Foundation
import PortariaCore

/// Configuration of the visits capability.
public struct VisitsConfiguration: Sendable {
    /// Visits a source IP may create per minute at one gate (`--gate-limit`).
    public var gateLimit = 10
    /// Rings one unit may receive per minute from every address together
    /// (`--unit-ring-limit`; sizing in docs/ops.md).
    public var unitRingLimit = 6
    /// Rings one gate may place per minute from every address together
    /// (`--gate-ring-limit`; sizing in docs/ops.md).
    public var gateRingLimit = 60
    /// Photos and voice messages live here (`--data-dir`).
    public var dataDirectory = "./portaria-data"
    /// Photos, voice messages and visitor locations older than this are deleted.
    public var retentionDays = 90
    /// Days the audit trail is kept (`--audit-retention-days`).
    public var auditRetentionDays = 730
    /// Unresolved visits expire after this.
    public var visitLifetime: TimeInterval = 24 * 3600
    /// Unknown gate tokens one address may try per `gateGuessWindow`; past that, every
    /// gate request from the address is refused until the window ends (decision 0013).
    public var gateGuessLimit = 20
    public var gateGuessWindow: TimeInterval = 600
    /// Photo and voice-message uploads one visitor token may make (over the visit's life).
    public var uploadsPerVisit = 10
    /// Realtime tickets one visitor token may take per `visitorTicketWindow`.
    public var ticketsPerVisit = 30
    public var visitorTicketWindow: TimeInterval = 600
    /// Bytes of photos and voice messages a company's visitors may store per 24 h
    /// (`--media-quota-mb`); with the retention period it bounds a company's disk use.
    public var mediaBytesPerCompanyPerDay = 512 * 1024 * 1024
    /// Shares of that quota, so anonymous visitors cannot spend it for everyone: one
    /// address may upload a 1/`mediaAddressShareDivisor` of it per 24 h, one visit a
    /// 1/`mediaVisitShareDivisor` over its life — never less than one photo and one voice
    /// message (`MediaShares`).
    public var mediaAddressShareDivisor = 8
    public var mediaVisitShareDivisor = 64
    /// How long after the answer a visitor may still get relay credentials: the longest
    /// call (`CallSession.Limits.maxDuration`).
    public var callWindow: TimeInterval = 15 * 60
    public init() {}
}

/// Visits: the gate, the visitor's own visit, residents' actions and lists. Each change
/// is one write transaction that locks the visit row, feeds the state machine
/// (`VisitMachine`) and writes the row, the timeline, the ring job and the event log
/// together; committed events then go to the in-process `EventBus`.
///
/// The visit row lock — not an in-memory actor — owns each visit's state machine, since
/// several instances may serve the same visit from one PostgreSQL.
public struct VisitService: Sendable {
    let database: any SQLDatabase
    let clock: any TimeSource
    let bus: EventBus
    let configuration: VisitsConfiguration
    let media: MediaStore
    let idempotency: IdempotencyStore
    let log: Log
    /// Called after a change that makes a ring step due now (a decline).
    let wakeScheduler: @Sendable () -> Void
    /// Test hook: runs after the in-flight marker is committed, before the action.
    let beforeIdempotentWork: (@Sendable () async -> Void)?

    public init(database: any SQLDatabase, clock: any TimeSource, bus: EventBus, configuration: VisitsConfiguration,
                log: Log = .shared, wakeScheduler: @escaping @Sendable () -> Void = {},
                beforeIdempotentWork: (@Sendable () async -> Void)? = nil) {
        self.wakeScheduler = wakeScheduler
        self.beforeIdempotentWork = beforeIdempotentWork
        self.database = database
        self.clock = clock
        self.bus = bus
        self.configuration = configuration
        // No quiet period: a file write has no pooled connections that fail once each.
        self.media = MediaStore(root: configuration.dataDirectory,
                                faults: StorageFaultWatch(store: "media directory", quietPeriod: .zero, log: log))
        self.idempotency = IdempotencyStore(database: database)
        self.log = log
    }

    // MARK: Gate (public)

    struct Gate: Sendable {
        var id: String
        var companyID: String
        var companyName: String
        var gate: GeoPoint?
        var radius: Double
    }

    func gate(token: String) async throws -> Gate {
        guard token.utf8.count <= 200 else { throw VisitError.gateNotFound }
        let row = try await database.read { db in
            try db.queryOne("""
                SELECT g.id, g.company_id, c.name, c.gate_lat, c.gate_lon, c.gate_radius_m
                FROM gates g JOIN companies c ON c.id = g.company_id WHERE g.token = ?
                """, .text(token))
        }
        guard let row else { throw VisitError.gateNotFound }
        var point: GeoPoint?
        if let lat = try row.double("gate_lat"), let lon = try row.double("gate_lon") { point = GeoPoint(lat: lat, lon: lon) }
        let required = row.required
        return Gate(id: try required.string("id"), companyID: try required.string("company_id"), companyName: try required.string("name"),
                    gate: point, radius: try required.double("gate_radius_m"))
    }

    /// A gate as one client address may see it. Unknown tokens count per address, not
    /// per guessed token (a bucket per guess would never fill). An address over the
    /// limit is refused with a read only — no lookup, no write — and for *every* token:
    /// answering a real token differently from a guess would let the guessing go on.
    func openGate(token: String, address: String) async throws -> Gate {
        let limiter = RateLimiter(database: database)
        let bucket = "gate-unknown:" + address
        let now = clock.now()
        let seen = try await limiter.peek(bucket, window: configuration.gateGuessWindow, now: now)
        if seen.count >= configuration.gateGuessLimit { throw Self.rateLimited(seen) }
        do {
            return try await gate(token: token)
        } catch VisitError.gateNotFound {
            let counted = try await limiter.hit(bucket, window: configuration.gateGuessWindow, now: now)
            if counted.count > configuration.gateGuessLimit { throw Self.rateLimited(counted) }
            throw VisitError.gateNotFound
        }
    }

    /// `GET /v1/gates/{gate_token}` from `address`: the company's name and units, never
    /// residents. Views of a real gate are limited per (gate, address) to `viewLimit` a
    /// minute, checked before counting.
    public func gateInfo(token: String, address: String, viewLimit: Int) async throws -> GateInfo {
        let gate = try await openGate(token: token, address: address)
        let view = try await RateLimiter(database: database)
            .admit("gate-view:\(gate.id):\(address)", max: viewLimit, window: 60, now: clock.now())
        if !view.allowed { throw Self.rateLimited(view.window) }
        return try await gateInfo(gate)
    }

    /// `GET /v1/gates/{gate_token}` without per-address accounting (tests, tools).
    public func gateInfo(token: String) async throws -> GateInfo {
        try await gateInfo(try await gate(token: token))
    }

    func gateInfo(_ gate: Gate) async throws -> GateInfo {
        let units = try await database.read { db in
            try db.query("SELECT id, label FROM units WHERE company_id = ? ORDER BY label", .text(gate.companyID))
                .map { UnitSummary(id: try $0.required.string("id"), label: try $0.required.string("label")) }
        }
        return GateInfo(company: .init(name: gate.companyName), units: units)
    }

    static func validate(_ request: CreateVisitRequest) throws -> CreateVisitRequest {
        var request = request
        request.visitorName = request.visitorName.trimmingCharacters(in: .whitespacesAndNewlines)
        try require(!request.visitorName.isEmpty, field: "visitor_name", "visitor_name must not be empty")
        try require(request.visitorName.count <= 80, field: "visitor_name", "visitor_name must be at most 80 characters")
        try require(!request.visitorName.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) },
                    field: "visitor_name", "visitor_name must not contain control characters")
        try require(UnitID(rawValue: request.unitID) != nil, field: "unit_id", "unit_id is not a unit of this gate")
        if let carrier = request.carrier {
            let trimmed = carrier.trimmingCharacters(in: .whitespacesAndNewlines)
            try require(request.kind == .delivery, field: "carrier", "carrier is only for deliveries")
            try require(!trimmed.isEmpty && trimmed.count <= 60, field: "carrier", "carrier must be 1 to 60 characters")
            try require(!trimmed.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) },
                        field: "carrier", "carrier must not contain control characters")
            request.carrier = trimmed
        }
        if let location = request.location {
            try require(location.lat.isFinite && (-90...90).contains(location.lat), field: "location.lat", "location.lat must be between -90 and 90")
            try require(location.lon.isFinite && (-180...180).contains(location.lon), field: "location.lon", "location.lon must be between -180 and 180")
            try require(location.accuracyM.isFinite && (0...100_000).contains(location.accuracyM),
                        field: "location.accuracy_m", "location.accuracy_m must be between 0 and 100000")
        }
        return request
    }

    /// The gate's per-source limit (`--gate-limit` visits per minute at one gate from one
    /// address), counted by `createVisit`; the address also carries the unknown-token count.
    ///
    /// The unit and the gate also have caps across every address (`perUnit`, `perGate`
    /// rings per window): a flood from many addresses cannot push to a unit's residents
    /// without end. They are counted in the database, in the visit's own transaction, so
    /// every instance shares them and the count is exact.
    public struct GateRateLimit: Sendable {
        /// The client address as limits key it (`AddressKey`).
        public var address: String
        public var max: Int
        public var window: TimeInterval = 60
        public var perUnit: Int = .max
        public var perGate: Int = .max
        func bucket(gateID: String) -> String { "gate-visit:\(gateID):\(address)" }
        static func unitBucket(_ unitID: String) -> String { "ring-unit:" + unitID }
        static func gateBucket(_ gateID: String) -> String { "ring-gate:" + gateID }
    }

    /// The target caps' count, taken as the transaction's last work (after the visit's
    /// rows, before the event log's lock): the two bucket rows stay locked only from there
    /// to COMMIT on PostgreSQL, not for the whole gate POST, so one busy gate keeps the
    /// short lock hold of decision 0047. Over a cap, the throw rolls the whole visit back.
    private final class TargetCount {
        let unitID: String
        let gateID: String
        let limit: GateRateLimit
        let now: Date
        init(unitID: String, gateID: String, limit: GateRateLimit, now: Date) {
            self.unitID = unitID
            self.gateID = gateID
            self.limit = limit
            self.now = now
        }

        func run(_ db: any SQLConnection) throws {
            if limit.perUnit != .max {
                let unit = try RateLimiter.hit(db, GateRateLimit.unitBucket(unitID), window: limit.window, now: now)
                if unit.count > limit.perUnit { throw VisitError.targetBusy(.unit, retryAfter: unit.retryAfter) }
            }
            if limit.perGate != .max {
                let gate = try RateLimiter.hit(db, GateRateLimit.gateBucket(gateID), window: limit.window, now: now)
                if gate.count > limit.perGate { throw VisitError.targetBusy(.gate, retryAfter: gate.retryAfter) }
            }
        }
    }

    static func rateLimited(_ window: RateLimiter.Window) -> VisitError {
        .rateLimited(retryAfter: window.retryAfter)
    }

    private enum Creation: Sendable {
        case limited(RateLimiter.Window)
        case unknownUnit
        case created(Visit, [EventRecord])
    }

    /// `POST /v1/gates/{gate_token}/visits`: counts the attempt against `rateLimit`, creates
    /// the visit, plans its ring and rings the first step — all in one transaction (one
    /// commit, one fsync on SQLite). A source already over its limit is refused after a
    /// read, before the transaction; an unknown-unit attempt commits its count and nothing
    /// else. Unknown gate tokens count per address (`openGate`).
    public func createVisit(gateToken: String, request: CreateVisitRequest,
                            rateLimit: GateRateLimit? = nil) async throws -> CreateVisitResponse {
        let request = try Self.validate(request)
        let now = clock.now()
        let gate: Gate
        if let rateLimit {
            gate = try await openGate(token: gateToken, address: rateLimit.address)
            let limiter = RateLimiter(database: database)
            let seen = try await limiter.peek(rateLimit.bucket(gateID: gate.id), window: rateLimit.window, now: now)
            if seen.count >= rateLimit.max { throw Self.rateLimited(seen) }
            // A unit or gate already at its cap is refused with reads only.
            if rateLimit.perUnit != .max {
                let unit = try await limiter.peek(GateRateLimit.unitBucket(request.unitID), window: rateLimit.window, now: now)
                if unit.count >= rateLimit.perUnit { throw VisitError.targetBusy(.unit, retryAfter: unit.retryAfter) }
            }
            if rateLimit.perGate != .max {
                let ringsHere = try await limiter.peek(GateRateLimit.gateBucket(gate.id), window: rateLimit.window, now: now)
                if ringsHere.count >= rateLimit.perGate { throw VisitError.targetBusy(.gate, retryAfter: ringsHere.retryAfter) }
            }
        } else {
            gate = try await self.gate(token: gateToken)
        }
        let token = Crypto.opaqueToken()
        let geofence = Geofence.evaluate(location: request.location, gate: gate.gate, radius: gate.radius)
        let visitID = VisitID.issue()
        let id = visitID.rawValue
        let lifetime = configuration.visitLifetime
        let creation = try await database.write { db -> Creation in
            if let rateLimit {
                let window = try RateLimiter.hit(db, rateLimit.bucket(gateID: gate.id), window: rateLimit.window, now: now)
                if window.count > rateLimit.max { return .limited(window) }
            }
            guard let unit = try db.queryOne("""
                SELECT id, delivery_rule, ring_mode, ring_step_seconds, ring_window_seconds FROM units WHERE id = ? AND company_id = ?
                """, .text(request.unitID), .text(gate.companyID)) else {
                return .unknownUnit
            }
            if let rateLimit {
                _ = db.lastWork("ring-target-count", make: {
                    TargetCount(unitID: request.unitID, gateID: gate.id, limit: rateLimit, now: now)
                }, run: { count, db in try count.run(db) })
            }
            let rule = try unit.string("delivery_rule").flatMap(DeliveryRule.init(rawValue:)) ?? .ask
            let mode = try unit.string("ring_mode").flatMap(RingMode.init(rawValue:)) ?? .sequential
            let window = Int(try unit.int("ring_window_seconds") ?? 60)
            try db.execute("""
                INSERT INTO visits (id, company_id, unit_id, gate_id, kind, visitor_name, carrier, status,
                    location_lat, location_lon, location_accuracy_m, geofence_status, geofence_distance_m,
                    delivery_rule, ring_mode, ring_deadline, visitor_token_hash, expires_at, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, 'ringing', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, .text(id), .text(gate.companyID), .text(request.unitID), .text(gate.id), .text(request.kind.rawValue),
                     .text(request.visitorName), .optional(request.carrier),
                     request.location.map { .real($0.lat) } ?? .null, request.location.map { .real($0.lon) } ?? .null,
                     request.location.map { .real($0.accuracyM) } ?? .null,
                     .text(geofence.status.rawValue), geofence.distanceM.map { .integer(Int64($0)) } ?? .null,
                     .text(rule.rawValue), .text(mode.rawValue), .date(now.addingTimeInterval(TimeInterval(window))),
                     .text(Crypto.tokenHash(token)), .date(now.addingTimeInterval(lifetime)), .date(now), .date(now))
            // The call from the gate, in the trail with the decisions that answer it.
            try AuditLog.append(db, AuditEntry(companyID: gate.companyID, actorUserID: nil, actorRole: "visitor", action: "visit.create",
                                               objectType: "visit", objectID: id, address: rateLimit?.address,
                                               detail: ["gate_id": .string(gate.id), "unit_id": .string(request.unitID),
                                                        "kind": .string(request.kind.rawValue)], at: now))
            guard let row = try VisitStore.load(db, id: visitID) else { throw StorageError.failed("visit vanished") }
            var data: [String: JSONValue] = ["visitor_name": .string(row.visitorName),
                                             "geofence": .object(["status": .string(geofence.status.rawValue),
                                                                  "distance_m": geofence.distanceM.map { .number(Double($0)) } ?? .null])]
            if let carrier = row.carrier { data["carrier"] = .string(carrier) }
            var events = try EventLog.append(db, companyID: row.companyID, visitID: row.id, unitID: row.unitID,
                                             events: [VisitEngine.decorate(PendingEvent(type: .created, data: data), row: row, status: .ringing)],
                                             at: now, bus: bus)
            if request.kind == .delivery && rule == .leaveAtConcierge {
                // Nobody is asked: resolved at once, residents informed by the event.
                let resolution = VisitResolution(action: .leaveAtConcierge, by: .automatic, at: now, via: .auto)
                events += try VisitEngine.apply(db, row: row, event: .resolve(resolution),
                                                source: EventSource(channel: "auto"), at: now, bus: bus).events
            } else {
                let targets = try VisitStore.ringTargets(db, unitID: row.unitID)
                events += try RingEngine.start(db, row: row, targets: targets,
                                               stepSeconds: Int(try unit.int("ring_step_seconds") ?? 20), windowSeconds: window, at: now, bus: bus)
            }
            guard let after = try VisitStore.load(db, id: visitID) else { throw StorageError.failed("visit vanished") }
            return .created(try VisitStore.dto(db, after), events)
        }
        switch creation {
        case .limited(let window):
            throw Self.rateLimited(window)
        case .unknownUnit:
            throw VisitError.unknownUnit
        case .created(let visit, let events):
            bus.publish(events)
            return CreateVisitResponse(visit: PublicVisit(visit), visitorToken: token)
        }
    }

    // MARK: Visitor (visitor token, resolved at the route edge by `VisitorAuthenticator`)

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
        let ended = try await database.read { db in
            try db.queryOne("SELECT 1 AS ended FROM visit_attempts WHERE visit_id = ? AND kind = ? AND created_at >= ? LIMIT 1",
                            .id(visitID), .text(AttemptKind.callEnded.rawValue), .date(answeredAt)) != nil
        }
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
        let used = try await database.read { db in try Self.mediaBytesToday(db, companyID: companyID, now: now) }
        if used + size > quota { throw VisitError.mediaQuotaExceeded(quotaBytes: quota) }
        try await shares.check(RateLimiter(database: database), adding: size, now: now)
        let path = try media.write(stored.bytes, companyID: companyID, visitID: id, mediaID: mediaID, ext: stored.ext)
        do {
            let (visit, replaced, events) = try await database.write { db -> (Visit, String?, [EventRecord]) in
                guard let row = try VisitStore.lock(db, id: visitID) else { throw VisitError.visitNotFound }
                try Self.checkMediaOpen(row.status)
                if try Self.mediaBytesToday(db, companyID: companyID, now: now) + size > quota {
                    throw VisitError.mediaQuotaExceeded(quotaBytes: quota)
                }
                let old = try db.queryOne("SELECT path FROM visit_media WHERE visit_id = ? AND kind = ?", .text(id), .text(kind.rawValue))?.string("path")
                if old != nil, try Self.residentWasShown(db, row: row) { throw VisitError.mediaFrozen(row.status) }
                try shares.count(db, adding: size, now: now)
                try db.execute("DELETE FROM visit_media WHERE visit_id = ? AND kind = ?", .text(id), .text(kind.rawValue))
                try db.execute("""
                    INSERT INTO visit_media (id, visit_id, kind, content_type, byte_size, duration_ms, path, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, .text(mediaID), .text(id), .text(kind.rawValue), .text(stored.contentType),
                         .integer(Int64(stored.bytes.count)), stored.durationMs.map { .integer(Int64($0)) } ?? .null,
                         .text(path), .date(now))
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
        return try db.queryOne("""
            SELECT 1 AS moved FROM visit_attempts
            WHERE visit_id = ? AND (kind IN ('decline', 'timeout') OR (kind = 'ring' AND step > 0)) LIMIT 1
            """, .id(row.id)) != nil
    }

    /// Bytes of media a company's visitors stored in the 24 h before `now`.
    static func mediaBytesToday(_ db: any SQLConnection, companyID: String, now: Date) throws -> Int {
        Int(try db.queryOne("""
            SELECT COALESCE(SUM(m.byte_size), 0) AS bytes FROM visit_media m JOIN visits v ON v.id = m.visit_id
            WHERE v.company_id = ? AND m.created_at > ?
            """, .text(companyID), .date(now.addingTimeInterval(-86_400)))?.int("bytes") ?? 0)
    }

    // MARK: Residents and operators

    /// The visit's status alone; nil when there is no such visit.
    func status(of id: VisitID) async throws -> VisitStatus? {
        try await database.read { db in try VisitStore.status(db, id: id) }
    }

    func visit(id: VisitID) async throws -> Visit {
        try await database.read { db in
            guard let row = try VisitStore.load(db, id: id) else { throw VisitError.visitNotFound }
            return try VisitStore.dto(db, row)
        }
    }

    /// Operators (and admins, who hold `operator`) see the whole company; residents
    /// their own units. Anything else is 404, as if it did not exist.
    static func canSee(_ caller: Caller, companyID: String, unitID: UnitID) -> Bool {
        caller.companyID == companyID && (caller.has(Permission.operatorConsole) || caller.unitIDs.contains(unitID))
    }

    public func visit(id: VisitID, caller: Caller) async throws -> Visit {
        // The visit, its timeline and its resolution from one snapshot, so they agree.
        let visit = try await database.readSnapshot { db -> Visit? in
            guard let row = try VisitStore.load(db, id: id), Self.canSee(caller, companyID: row.companyID, unitID: row.unitID) else { return nil }
            return try VisitStore.dto(db, row)
        }
        guard let visit else { throw VisitError.visitNotFound }
        return visit
    }

    /// The bytes of a visit's photo or voice message, for those who may see the visit.
    public func mediaFile(visitID id: VisitID, kind: MediaKind, caller: Caller) async throws -> (contentType: String, bytes: [UInt8]) {
        let visitID = id.rawValue
        let row = try await database.read { db -> SQLRow? in
            try db.queryOne("""
                SELECT m.content_type, m.path, v.company_id, v.unit_id FROM visit_media m JOIN visits v ON v.id = m.visit_id
                WHERE m.visit_id = ? AND m.kind = ?
                """, .text(visitID), .text(kind.rawValue))
        }
        guard let row, Self.canSee(caller, companyID: try row.required.string("company_id"), unitID: try row.required.id("unit_id")),
              let path = try row.string("path"), let bytes = media.read(path) else {
            throw VisitError.mediaNotFound(kind)
        }
        return (try row.string("content_type") ?? "application/octet-stream", bytes)
    }

    public enum ListFilter: String, Sendable {
        case pending, history
    }

    /// `GET /v1/visits`: newest first, keyset-paginated on (created_at, id).
    public func list(caller: Caller, filter: ListFilter?, cursor: String?, limit: Int) async throws -> VisitPage {
        var after: (Int64, String)?
        if let cursor {
            guard let bytes = Base64URL.decode(cursor), let text = String(bytes: bytes, encoding: .utf8),
                  let colon = text.firstIndex(of: ":"), let ms = Int64(text[..<colon]),
                  case let id = String(text[text.index(after: colon)...]), VisitID(rawValue: id) != nil else {
                throw VisitError.invalidCursor
            }
            after = (ms, id)
        }
        let operatorView = caller.has(Permission.operatorConsole)
        let units = caller.unitIDs.map(\.rawValue).sorted()
        if !operatorView && units.isEmpty { return VisitPage(visits: [], nextCursor: nil) }
        let companyID = caller.companyID
        let position = after
        let (visits, more) = try await database.readSnapshot { db -> ([Visit], Bool) in
            var sql = VisitStore.select + " WHERE v.company_id = ?"
            var parameters: [SQLValue] = [.text(companyID)]
            if !operatorView {
                sql += " AND v.unit_id IN (" + units.map { _ in "?" }.joined(separator: ", ") + ")"
                parameters += units.map(SQLValue.text)
            }
            switch filter {
            case .pending: sql += " AND v.status = 'unanswered'"
            case .history: sql += " AND v.status <> 'unanswered'"
            case nil: break
            }
            if let (ms, id) = position {
                sql += " AND (v.created_at < ? OR (v.created_at = ? AND v.id < ?))"
                parameters += [.integer(ms), .integer(ms), .text(id)]
            }
            sql += " ORDER BY v.created_at DESC, v.id DESC LIMIT ?"
            parameters.append(.integer(Int64(limit + 1)))
            let rows = try db.query(sql, parameters).map(VisitStore.row)
            return (try VisitStore.dtos(db, Array(rows.prefix(limit))), rows.count > limit)
        }
        var next: String?
        if more, let last = visits.last {
            next = Base64URL.encode(Array("\(RingEngine.ms(last.createdAt)):\(last.id)".utf8))
        }
        return VisitPage(visits: visits, nextCursor: next)
    }

    // MARK: Answer / decline / resolve

    enum CallAction: String, Sendable { case answer, decline, resolve }

    /// Performs one of the three actions under the idempotency contract (`key` is the
    /// request's validated `Idempotency-Key`). The answer is the visit, or the 409 of a
    /// lost race, as first answered: a retry with the same key gets it again, `replayed`.
    func perform(_ action: CallAction, visitID id: VisitID, caller: Caller, key: String,
                 resolve: ResolveVisitRequest?, call: CallActionRequest?) async throws -> IdempotencyStore.Outcome {
        let visitID = id.rawValue
        // Visibility first: another company's or another unit's visit is a 404 and
        // never touches the key store.
        let visible = try await database.read { db -> Bool in
            guard let row = try db.queryOne("SELECT company_id, unit_id FROM visits WHERE id = ?", .text(visitID)) else { return false }
            return Self.canSee(caller, companyID: try row.required.string("company_id"), unitID: try row.required.id("unit_id"))
        }
        guard visible else { throw VisitError.visitNotFound }

        let canonical: String
        switch action {
        case .resolve:
            let body = resolve ?? ResolveVisitRequest(action: .authorize)
            canonical = JSONValue.object(["action": .string(body.action.rawValue),
                                          "via": .string((body.via ?? .app).rawValue)]).jsonText
        case .answer, .decline:
            canonical = JSONValue.object(["device_id": call?.deviceID.map(JSONValue.string) ?? .null]).jsonText
        }
        let hash = IdempotencyStore.requestHash(method: "POST", path: "/v1/visits/\(visitID)/\(action.rawValue)", canonicalBody: canonical)
        let now = clock.now()
        let me = PersonRef(id: caller.user.id, name: caller.user.name)
        let hook = beforeIdempotentWork
        let outcome = try await idempotency.run(userID: caller.user.id, key: key, requestHash: hash, now: now,
                                                          beforeWork: hook) { db in
            guard let row = try VisitStore.lock(db, id: id) else { throw VisitError.visitNotFound }
            let event: VisitEvent
            var via = ResolutionChannel.app
            switch action {
            case .answer: event = .answer(by: me, at: now)
            case .decline: event = .decline(by: me, at: now)
            case .resolve:
                let body = resolve ?? ResolveVisitRequest(action: .authorize)
                via = body.via ?? .app
                event = .resolve(VisitResolution(action: body.action, by: me, at: now, via: via))
            }
            // Answering twice from the same person (two devices) is not a conflict.
            if action == .answer, case .answered(let by, _) = row.machine.state, by.id == me.id {
                return .init(status: 200, body: Self.encode(try VisitStore.dto(db, row)))
            }
            do {
                let outcome = try VisitEngine.apply(db, row: row, event: event,
                                                    source: EventSource(user: me, deviceID: call?.deviceID, channel: via.rawValue), at: now, bus: bus)
                // The decision and its audit row commit together (decision 0091).
                var detail: [String: JSONValue] = [:]
                if action == .resolve, let body = resolve { detail = ["action": .string(body.action.rawValue), "via": .string(via.rawValue)] }
                try AuditLog.append(db, AuditLog.entry(caller, "visit.\(action.rawValue)", objectType: "visit", objectID: visitID,
                                                       device: call?.deviceID, detail: detail, at: now))
                return .init(status: 200, body: Self.encode(try VisitStore.dto(db, outcome.row)), events: outcome.events)
            } catch let error as VisitTransitionError {
                // A decided outcome, stored and replayed like a success.
                let refusal = VisitError(error, row: row)
                return .init(status: refusal.status, body: refusal.response.body)
            }
        }
        bus.publish(outcome.events)
        if action == .decline && !outcome.events.isEmpty { wakeScheduler() }
        return outcome
    }

    static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        (try? Array(JSONCoding.encoder().encode(value))) ?? Array("{}".utf8)
    }
}

/// The two kinds of recorded media.
public enum MediaKind: String, Sendable {
    case photo
    case voiceMessage = "voice_message"
}
