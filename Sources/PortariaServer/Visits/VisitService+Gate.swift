import Foundation
import PortariaCore

/// The gate: its page, and the visit a visitor creates there.
extension VisitService {
    func gate(token: String) async throws -> Gate {
        guard token.utf8.count <= 200 else { throw VisitError.gateNotFound }
        guard let gate = try await database.read({ db in try GateStore.gate(db, token: token) }) else { throw VisitError.gateNotFound }
        return gate
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
        let units = try await database.read { db in try GateStore.units(db, companyID: gate.companyID) }
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

    /// The gate POST's counts — the source address at this gate, and the unit's and the
    /// gate's caps — taken in one statement as the transaction's last work (after the
    /// visit's rows, before the event log's lock): the bucket rows stay locked only from
    /// there to COMMIT on PostgreSQL, not for the whole gate POST, so visitors behind one
    /// address, one busy unit or one busy gate do not queue behind each other's whole
    /// transaction (decision 0122). Over a limit, the throw rolls the whole visit back; an
    /// attempt at an unknown unit commits its address count and nothing else.
    private final class GateCount {
        let unitID: String
        let gateID: String
        let limit: GateRateLimit
        let now: Date
        /// Whether the unit exists: only then are the unit's and the gate's caps counted.
        var unitKnown = false
        init(unitID: String, gateID: String, limit: GateRateLimit, now: Date) {
            self.unitID = unitID
            self.gateID = gateID
            self.limit = limit
            self.now = now
        }

        func run(_ db: any SQLConnection) throws {
            let address = limit.bucket(gateID: gateID)
            let unit = GateRateLimit.unitBucket(unitID)
            let gate = GateRateLimit.gateBucket(gateID)
            var buckets = [address]
            if unitKnown && limit.perUnit != .max { buckets.append(unit) }
            if unitKnown && limit.perGate != .max { buckets.append(gate) }
            let counted = try RateLimiter.hit(db, buckets, window: limit.window, now: now)
            if let window = counted[address], window.count > limit.max { throw VisitService.rateLimited(window) }
            if let window = counted[unit], window.count > limit.perUnit { throw VisitError.targetBusy(.unit, retryAfter: window.retryAfter) }
            if let window = counted[gate], window.count > limit.perGate { throw VisitError.targetBusy(.gate, retryAfter: window.retryAfter) }
        }
    }

    private enum Admission: Sendable {
        case refused(VisitError)
        case unknownGate
        case admitted(Gate)
    }

    /// The gate POST's admission in one read: the gate, and every count that could refuse
    /// the attempt (the address's unknown-token count, its count at this gate, the unit's
    /// and the gate's caps), in the order `openGate` and the caps have always answered. A
    /// refusal costs no write; an unknown token counts per address as in `openGate`. The
    /// gate is looked up even for an address over its unknown-token limit, but the answer
    /// does not depend on it.
    private func admit(token: String, unitID: String, limit: GateRateLimit, now: Date) async throws -> Gate {
        let unknownBucket = "gate-unknown:" + limit.address
        let (guessLimit, guessWindow) = (configuration.gateGuessLimit, configuration.gateGuessWindow)
        let admission = try await database.read { db -> Admission in
            let gate = token.utf8.count <= 200 ? try GateStore.gate(db, token: token) : nil
            var buckets: [(bucket: String, window: TimeInterval)] = [(unknownBucket, guessWindow)]
            if let gate {
                buckets.append((limit.bucket(gateID: gate.id), limit.window))
                if limit.perUnit != .max { buckets.append((GateRateLimit.unitBucket(unitID), limit.window)) }
                if limit.perGate != .max { buckets.append((GateRateLimit.gateBucket(gate.id), limit.window)) }
            }
            let seen = try RateLimiter.peek(db, buckets, now: now)
            if let unknown = seen[unknownBucket], unknown.count >= guessLimit { return .refused(Self.rateLimited(unknown)) }
            guard let gate else { return .unknownGate }
            if let window = seen[limit.bucket(gateID: gate.id)], window.count >= limit.max { return .refused(Self.rateLimited(window)) }
            if let window = seen[GateRateLimit.unitBucket(unitID)], window.count >= limit.perUnit {
                return .refused(.targetBusy(.unit, retryAfter: window.retryAfter))
            }
            if let window = seen[GateRateLimit.gateBucket(gate.id)], window.count >= limit.perGate {
                return .refused(.targetBusy(.gate, retryAfter: window.retryAfter))
            }
            return .admitted(gate)
        }
        switch admission {
        case .refused(let error):
            throw error
        case .admitted(let gate):
            return gate
        case .unknownGate:
            let counted = try await RateLimiter(database: database).hit(unknownBucket, window: guessWindow, now: now)
            if counted.count > guessLimit { throw Self.rateLimited(counted) }
            throw VisitError.gateNotFound
        }
    }

    static func rateLimited(_ window: RateLimiter.Window) -> VisitError {
        .rateLimited(retryAfter: window.retryAfter)
    }

    private enum Creation: Sendable {
        case unknownUnit
        case created(Visit, [EventRecord])
    }

    /// `POST /v1/gates/{gate_token}/visits`: counts the attempt against `rateLimit`, creates
    /// the visit, plans its ring and rings the first step — all in one transaction (one
    /// commit, one fsync on SQLite). A source already over its limit is refused after one
    /// read, before the transaction (`admit`); the counts are the transaction's last work
    /// (`GateCount`); an unknown-unit attempt commits its count and nothing else. Unknown
    /// gate tokens count per address (`openGate`).
    public func createVisit(gateToken: String, request: CreateVisitRequest,
                            rateLimit: GateRateLimit? = nil) async throws -> CreateVisitResponse {
        let request = try Self.validate(request)
        let now = clock.now()
        let gate: Gate
        if let rateLimit {
            gate = try await admit(token: gateToken, unitID: request.unitID, limit: rateLimit, now: now)
        } else {
            gate = try await self.gate(token: gateToken)
        }
        let token = Crypto.opaqueToken()
        let geofence = Geofence.evaluate(location: request.location, gate: gate.gate, radius: gate.radius)
        let visitID = VisitID.issue()
        let id = visitID.rawValue
        let lifetime = configuration.visitLifetime
        let creation = try await database.write { db -> Creation in
            let count = rateLimit.map { rateLimit in
                db.lastWork("gate-count", make: {
                    GateCount(unitID: request.unitID, gateID: gate.id, limit: rateLimit, now: now)
                }, run: { count, db in try count.run(db) })
            }
            guard let unit = try GateStore.ringSettings(db, unitID: request.unitID, companyID: gate.companyID) else {
                return .unknownUnit
            }
            count?.unitKnown = true
            let (rule, mode, window) = (unit.rule, unit.mode, unit.windowSeconds)
            try VisitStore.insert(db, NewVisit(id: visitID, companyID: gate.companyID, gateID: gate.id, request: request,
                                               geofence: geofence, rule: rule, mode: mode,
                                               ringDeadline: now.addingTimeInterval(TimeInterval(window)),
                                               visitorTokenHash: Crypto.tokenHash(token), expiresAt: now.addingTimeInterval(lifetime)),
                                  at: now)
            // The call from the gate, in the trail with the decisions that answer it.
            try AuditLog.append(db, AuditEntry(companyID: gate.companyID, actorUserID: nil, actorRole: "visitor", action: VisitAuditAction.create.rawValue,
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
            let visitChanged: Bool
            if request.kind == .delivery && rule == .leaveAtConcierge {
                // Nobody is asked: resolved at once, residents informed by the event.
                let resolution = VisitResolution(action: .leaveAtConcierge, by: .automatic, at: now, via: .auto)
                events += try VisitEngine.apply(db, row: row, event: .resolve(resolution),
                                                source: EventSource(channel: "auto"), at: now, bus: bus).events
                visitChanged = true
            } else {
                let targets = try VisitStore.ringTargets(db, unitID: row.unitID)
                let ring = try RingEngine.start(db, row: row, targets: targets,
                                                stepSeconds: unit.stepSeconds, windowSeconds: window, at: now, bus: bus)
                events += ring.events
                visitChanged = ring.visitChanged
            }
            // A ring that starts writes attempts and the ring job, not the visit's row.
            guard let after = try (visitChanged ? VisitStore.load(db, id: visitID) : row) else {
                throw StorageError.failed("visit vanished")
            }
            return .created(try VisitStore.dto(db, after), events)
        }
        switch creation {
        case .unknownUnit:
            throw VisitError.unknownUnit
        case .created(let visit, let events):
            bus.publish(events)
            return CreateVisitResponse(visit: PublicVisit(visit), visitorToken: token)
        }
    }
}
