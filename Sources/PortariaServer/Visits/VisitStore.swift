import Foundation
import PortariaCore

/// A visit row as the server reasons about it (with its resolution and unit label).
struct VisitRow: Sendable {
    var id: VisitID
    var companyID: String
    var timeZone: String
    var unitID: UnitID
    var unitLabel: String
    var kind: VisitKind
    var visitorName: String
    var carrier: String?
    var status: VisitStatus
    var geofence: GeofenceResult
    var deliveryRule: DeliveryRule
    var ringMode: RingMode
    var answeredBy: PersonRef?
    var answeredAt: Date?
    var ringDeadline: Date?
    var expiresAt: Date
    var createdAt: Date
    var updatedAt: Date
    var resolution: VisitResolution?

    /// The state machine positioned at this row's state.
    var machine: VisitMachine {
        let state: VisitState
        switch status {
        case .ringing: state = .ringing
        case .answered: state = .answered(by: answeredBy ?? PersonRef(id: "", name: ""), at: answeredAt ?? updatedAt)
        case .unanswered: state = .unanswered(at: updatedAt)
        case .resolved:
            state = .resolved(resolution ?? VisitResolution(action: .authorize, by: .automatic, at: updatedAt, via: .auto))
        case .cancelled: state = .cancelled(at: updatedAt)
        case .expired: state = .expired(at: updatedAt)
        }
        return VisitMachine(state: state,
                            leaveAtConciergeWhenUnanswered: kind == .delivery && deliveryRule == .askThenConcierge)
    }

    var zone: TimeZone { TimeZone(identifier: timeZone) ?? TimeZone(identifier: "America/Sao_Paulo") ?? .gmt }
}

/// SQL of visits, shared by the service, the scheduler and the lists. Every function
/// runs inside the caller's read or write closure.
/// A visit as the gate creates it (`VisitStore.insert`).
struct NewVisit: Sendable {
    var id: VisitID
    var companyID: String
    var gateID: String
    /// The validated request: unit, kind, names, location.
    var request: CreateVisitRequest
    var geofence: GeofenceResult
    var rule: DeliveryRule
    var mode: RingMode
    var ringDeadline: Date
    var visitorTokenHash: String
    var expiresAt: Date
}

enum VisitStore {
    static let select = """
        SELECT v.id, v.company_id, c.timezone, v.unit_id, u.label AS unit_label, v.kind, v.visitor_name, v.carrier,
               v.status, v.geofence_status, v.geofence_distance_m, v.location_lat, v.location_lon, c.gate_lat, c.gate_lon,
               v.delivery_rule, v.ring_mode, v.answered_by,
               v.answered_by_name, v.answered_at, v.ring_deadline, v.expires_at, v.created_at, v.updated_at,
               r.action AS r_action, r.user_id AS r_user_id, r.user_name AS r_user_name, r.via AS r_via,
               r.created_at AS r_at
        FROM visits v
        JOIN units u ON u.id = v.unit_id
        JOIN companies c ON c.id = v.company_id
        LEFT JOIN visit_resolutions r ON r.visit_id = v.id
        """

    /// Required reads for the `NOT NULL` columns of visits, units and companies; the
    /// resolution columns come from a LEFT JOIN and the answer columns are nullable.
    static func row(_ row: SQLRow) throws -> VisitRow {
        var resolution: VisitResolution?
        if let action = try row.string("r_action").flatMap(ResolutionAction.init(rawValue:)) {
            let by = try row.string("r_user_id").map { PersonRef(id: $0, name: try row.required.string("r_user_name")) } ?? .automatic
            resolution = VisitResolution(action: action, by: by, at: try row.required.date("r_at"),
                                         via: ResolutionChannel(rawValue: try row.required.string("r_via")) ?? .app)
        }
        let required = row.required
        let distance = try row.int("geofence_distance_m").map(Int.init)
        let geofenceStatus = GeofenceStatus(rawValue: try required.string("geofence_status")) ?? .unknown
        // From the stored position while it is kept (retention deletes it; the distance stays).
        var bearing: Int?
        if geofenceStatus != .unknown, let lat = try row.double("location_lat"), let lon = try row.double("location_lon"),
           let gateLat = try row.double("gate_lat"), let gateLon = try row.double("gate_lon") {
            bearing = Geofence.bearing(from: GeoPoint(lat: gateLat, lon: gateLon), to: GeoPoint(lat: lat, lon: lon))
        }
        return VisitRow(
            id: try required.id("id"), companyID: try required.string("company_id"),
            timeZone: try required.string("timezone"),
            unitID: try required.id("unit_id"), unitLabel: try required.string("unit_label"),
            kind: VisitKind(rawValue: try required.string("kind")) ?? .visit,
            visitorName: try required.string("visitor_name"), carrier: try row.string("carrier"),
            status: VisitStatus(rawValue: try required.string("status")) ?? .ringing,
            geofence: GeofenceResult(status: geofenceStatus, distanceM: distance, bearingDeg: bearing),
            deliveryRule: DeliveryRule(rawValue: try required.string("delivery_rule")) ?? .ask,
            ringMode: RingMode(rawValue: try required.string("ring_mode")) ?? .sequential,
            answeredBy: try row.string("answered_by").map { PersonRef(id: $0, name: try row.string("answered_by_name") ?? "") },
            answeredAt: try row.date("answered_at"), ringDeadline: try row.date("ring_deadline"),
            expiresAt: try required.date("expires_at"), createdAt: try required.date("created_at"),
            updatedAt: try required.date("updated_at"), resolution: resolution)
    }

    static func load(_ db: any SQLConnection, id: VisitID) throws -> VisitRow? {
        try db.queryOne(select + " WHERE v.id = ?", .text(id.rawValue)).map(row)
    }

    /// Just the visit's status (a ticket re-checked at redemption); nil for no such visit.
    static func status(_ db: any SQLConnection, id: VisitID) throws -> VisitStatus? {
        try db.queryOne("SELECT status FROM visits WHERE id = ?", .text(id.rawValue))?.string("status").flatMap(VisitStatus.init(rawValue:))
    }

    /// Locks the visit row for the rest of the transaction (PostgreSQL; SQLite's write
    /// transaction is already exclusive) and loads it.
    static func lock(_ db: any SQLConnection, id: VisitID) throws -> VisitRow? {
        guard try db.queryOne("SELECT id FROM visits WHERE id = ?" + db.dialect.forUpdate, .text(id.rawValue)) != nil else { return nil }
        return try load(db, id: id)
    }

    static func attempts(_ db: any SQLConnection, visitID: VisitID) throws -> [VisitAttempt] {
        try db.query("SELECT " + attemptColumns + " FROM visit_attempts WHERE visit_id = ? ORDER BY id", .id(visitID)).map(attempt)
    }

    static func media(_ db: any SQLConnection, visitID: VisitID) throws -> [String: VisitMediaInfo] {
        var result: [String: VisitMediaInfo] = [:]
        for row in try db.query("SELECT " + mediaColumns + " FROM visit_media WHERE visit_id = ?", .id(visitID)) {
            result[try row.required.string("kind")] = try mediaInfo(row, visitID: visitID)
        }
        return result
    }

    private static let attemptColumns = "visit_id, id, kind, user_id, user_name, device_id, channel, step, detail, created_at"
    private static let mediaColumns = "visit_id, kind, content_type, byte_size, duration_ms, created_at"

    private static func attempt(_ row: SQLRow) throws -> VisitAttempt {
        VisitAttempt(id: try row.required.string("id"), kind: try row.string("kind").flatMap(AttemptKind.init(rawValue:)) ?? .ring,
                     user: try row.string("user_id").map { PersonRef(id: $0, name: try row.string("user_name") ?? "") },
                     deviceID: try row.string("device_id"), channel: try row.string("channel"),
                     step: try row.int("step").map(Int.init), detail: try row.string("detail"), at: try row.date("created_at") ?? Date())
    }

    private static func mediaInfo(_ row: SQLRow, visitID: VisitID) throws -> VisitMediaInfo {
        VisitMediaInfo(url: try mediaPath(kind: try row.required.string("kind"), visitID: visitID), contentType: try row.required.string("content_type"),
                       byteSize: Int(try row.int("byte_size") ?? 0), durationMs: try row.int("duration_ms").map(Int.init),
                       createdAt: try row.date("created_at") ?? Date())
    }

    /// Where a residents' app fetches a visit's file of this kind (`photo`, `voice_message`).
    private static func mediaPath(kind: String, visitID: VisitID) throws -> String {
        switch MediaKind(rawValue: kind) {
        case .photo: return APIRoutes.visitPhoto(id: visitID.rawValue).path
        case .voiceMessage: return APIRoutes.visitVoiceMessage(id: visitID.rawValue).path
        case nil: throw RowDecodingError.unknownValue("kind", value: kind)
        }
    }

    /// The full DTO of `GET /v1/visits/{id}`.
    static func dto(_ db: any SQLConnection, _ row: VisitRow) throws -> Visit {
        dto(row, media: try media(db, visitID: row.id), attempts: try attempts(db, visitID: row.id))
    }

    /// The DTOs of a page of rows, in the rows' order, with a fixed number of queries
    /// (decision 0051): all their attempts in one, all their media in another, instead
    /// of two per visit. Only the given visits' children are read, so the page's company
    /// and unit filter is the only isolation needed; the same values as `dto` row by row.
    static func dtos(_ db: any SQLConnection, _ rows: [VisitRow], chunk: Int = 500) throws -> [Visit] {
        guard !rows.isEmpty else { return [] }
        var attempts: [VisitID: [VisitAttempt]] = [:]
        var media: [VisitID: [String: VisitMediaInfo]] = [:]
        // Chunked so a long list stays under every engine's parameter limit (a page is ≤ 100).
        for start in stride(from: 0, to: rows.count, by: max(chunk, 1)) {
            let ids = rows[start..<min(start + max(chunk, 1), rows.count)].map(\.id)
            let list = " IN (" + ids.map { _ in "?" }.joined(separator: ", ") + ")"
            let parameters = ids.map(SQLValue.id)
            for row in try db.query("SELECT " + attemptColumns + " FROM visit_attempts WHERE visit_id" + list + " ORDER BY id", parameters) {
                attempts[try row.required.id("visit_id"), default: []].append(try attempt(row))
            }
            for row in try db.query("SELECT " + mediaColumns + " FROM visit_media WHERE visit_id" + list, parameters) {
                let visitID: VisitID = try row.required.id("visit_id")
                media[visitID, default: [:]][try row.required.string("kind")] = try mediaInfo(row, visitID: visitID)
            }
        }
        return rows.map { dto($0, media: media[$0.id] ?? [:], attempts: attempts[$0.id] ?? []) }
    }

    private static func dto(_ row: VisitRow, media: [String: VisitMediaInfo], attempts: [VisitAttempt]) -> Visit {
        Visit(id: row.id.rawValue, companyID: row.companyID, unit: UnitSummary(id: row.unitID.rawValue, label: row.unitLabel),
              kind: row.kind, visitorName: row.visitorName, carrier: row.carrier, status: row.status,
              geofence: row.geofence, photo: media["photo"], voiceMessage: media["voice_message"],
              attempts: attempts, answeredBy: row.answeredBy, resolution: row.resolution,
              ringDeadline: row.status == .ringing ? row.ringDeadline : nil, expiresAt: row.expiresAt,
              createdAt: row.createdAt, updatedAt: row.updatedAt)
    }

    /// Newest first from the company's visits (of `units` only, unless nil), keyset-paged
    /// after `(created_at ms, id)`; at most `limit` rows.
    static func page(_ db: any SQLConnection, companyID: String, units: [String]?, filter: VisitService.ListFilter?,
                     after: (Int64, String)?, limit: Int) throws -> [VisitRow] {
        var sql = select + " WHERE v.company_id = ?"
        var parameters: [SQLValue] = [.text(companyID)]
        if let units {
            sql += " AND v.unit_id IN (" + units.map { _ in "?" }.joined(separator: ", ") + ")"
            parameters += units.map(SQLValue.text)
        }
        switch filter {
        case .pending: sql += " AND v.status = 'unanswered'"
        case .history: sql += " AND v.status <> 'unanswered'"
        case nil: break
        }
        if let (ms, id) = after {
            sql += " AND (v.created_at < ? OR (v.created_at = ? AND v.id < ?))"
            parameters += [.integer(ms), .integer(ms), .text(id)]
        }
        sql += " ORDER BY v.created_at DESC, v.id DESC LIMIT ?"
        parameters.append(.integer(Int64(limit)))
        return try db.query(sql, parameters).map(row)
    }

    /// The company and unit a visit belongs to (who may see it); nil when there is no such visit.
    static func place(_ db: any SQLConnection, id: VisitID) throws -> (companyID: String, unitID: UnitID)? {
        guard let row = try db.queryOne("SELECT company_id, unit_id FROM visits WHERE id = ?", .id(id)) else { return nil }
        return (try row.required.string("company_id"), try row.required.id("unit_id"))
    }

    /// Whether the visit's call ended (its `call_ended` attempt) at or after `since`.
    static func callEnded(_ db: any SQLConnection, visitID: VisitID, since: Date) throws -> Bool {
        try db.queryOne("SELECT 1 AS ended FROM visit_attempts WHERE visit_id = ? AND kind = ? AND created_at >= ? LIMIT 1",
                        .id(visitID), .text(AttemptKind.callEnded.rawValue), .date(since)) != nil
    }

    /// Whether the ring moved past its first step: someone declined, a step timed out, or
    /// a later step rang.
    static func ringMovedOn(_ db: any SQLConnection, visitID: VisitID) throws -> Bool {
        try db.queryOne("""
            SELECT 1 AS moved FROM visit_attempts
            WHERE visit_id = ? AND (kind IN ('decline', 'timeout') OR (kind = 'ring' AND step > 0)) LIMIT 1
            """, .id(visitID)) != nil
    }

    /// Inserts a visit just created at the gate, ringing.
    static func insert(_ db: any SQLConnection, _ visit: NewVisit, at now: Date) throws {
        let request = visit.request
        try db.execute("""
            INSERT INTO visits (id, company_id, unit_id, gate_id, kind, visitor_name, carrier, status,
                location_lat, location_lon, location_accuracy_m, geofence_status, geofence_distance_m,
                delivery_rule, ring_mode, ring_deadline, visitor_token_hash, expires_at, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, 'ringing', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, .id(visit.id), .text(visit.companyID), .text(request.unitID), .text(visit.gateID), .text(request.kind.rawValue),
                 .text(request.visitorName), .optional(request.carrier),
                 request.location.map { .real($0.lat) } ?? .null, request.location.map { .real($0.lon) } ?? .null,
                 request.location.map { .real($0.accuracyM) } ?? .null,
                 .text(visit.geofence.status.rawValue), visit.geofence.distanceM.map { .integer(Int64($0)) } ?? .null,
                 .text(visit.rule.rawValue), .text(visit.mode.rawValue), .date(visit.ringDeadline),
                 .text(visit.visitorTokenHash), .date(visit.expiresAt), .date(now), .date(now))
    }

    static func insertAttempt(_ db: any SQLConnection, visitID: VisitID, kind: AttemptKind, user: PersonRef? = nil,
                              deviceID: String? = nil, channel: String? = nil, step: Int? = nil, detail: String? = nil,
                              at: Date) throws {
        try db.execute("""
            INSERT INTO visit_attempts (visit_id, kind, user_id, user_name, device_id, channel, step, detail, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, .id(visitID), .text(kind.rawValue), .optional(user?.id), .optional(user?.name), .optional(deviceID),
                 .optional(channel), step.map { .integer(Int64($0)) } ?? .null, .optional(detail), .date(at))
    }

    /// One attempt of `kind` per user of `users`, in their order, with one statement.
    static func insertAttempts(_ db: any SQLConnection, visitID: VisitID, kind: AttemptKind, users: [PersonRef], channel: String,
                               step: Int, at: Date) throws {
        guard !users.isEmpty else { return }
        let values = users.map { _ in "(?, ?, ?, ?, NULL, ?, ?, NULL, ?)" }.joined(separator: ", ")
        try db.execute("""
            INSERT INTO visit_attempts (visit_id, kind, user_id, user_name, device_id, channel, step, detail, created_at)
            VALUES \(values)
            """, users.flatMap { user -> [SQLValue] in
                [.id(visitID), .text(kind.rawValue), .text(user.id), .text(user.name), .text(channel), .integer(Int64(step)), .date(at)]
            })
    }

    /// The residents rung for a unit: its ring order (current, enabled residents only),
    /// or, when the unit has no ring order, every resident by name.
    ///
    /// Only residents who may see visits (`visits.view`, the permission `GET /v1/visits`
    /// asks) are rung: a ring push names the visitor, and a member without the permission
    /// must not learn by push what the API would refuse them.
    static func ringTargets(_ db: any SQLConnection, unitID: UnitID) throws -> [PersonRef] {
        let unit = try residentsWithGrants(db, unitID: unitID)
        return unit.viewers(unit.ringOrder.isEmpty ? unit.residents : unit.ringOrder)
    }

    /// The residents of a unit told about its visits (delivery rules' notices).
    static func notifiedResidents(_ db: any SQLConnection, unitID: UnitID) throws -> [PersonRef] {
        let unit = try residentsWithGrants(db, unitID: unitID)
        return unit.viewers(unit.residents)
    }

    /// A unit's people as ringing needs them: its ring order (enabled residents, by
    /// position), its enabled residents (by name), and the permissions each resident
    /// holds in the unit's company, directly or through a sector — from one statement
    /// whatever the number of residents.
    struct UnitResidents {
        var ringOrder: [PersonRef] = []
        var residents: [PersonRef] = []
        var permissions: [String: (direct: [String], sectors: [String])] = [:]

        /// `people` who hold `visits.view` in the unit's company (the permission
        /// `GET /v1/visits` asks): a ring push names the visitor, and a member without the
        /// permission must not learn by push what the API would refuse them.
        func viewers(_ people: [PersonRef]) -> [PersonRef] {
            people.filter { person in
                guard let grants = permissions[person.id] else { return false }
                return Permissions.effective(user: grants.direct, sectors: [grants.sectors]).contains(Permission.visitsView)
            }
        }
    }

    static func residentsWithGrants(_ db: any SQLConnection, unitID: UnitID) throws -> UnitResidents {
        // Kinds: 'o' ring order, 'r' resident, 'd' direct permission, 's' sector permission;
        // the order is the ring order's positions and the residents' names, as the database
        // collates them.
        // A permission row needs the membership in the unit's company (as
        // `AccountStore.memberships` reads it) and comes only for the unit's residents.
        let rows = try db.query("""
            SELECT 'o' AS kind, o.user_id AS user_id, us.name AS name, o.position AS position, NULL AS permission
            FROM unit_ring_order o
            JOIN membership_units mu ON mu.unit_id = o.unit_id AND mu.user_id = o.user_id
            JOIN users us ON us.id = o.user_id
            WHERE o.unit_id = ? AND us.disabled = 0
            UNION ALL
            SELECT DISTINCT 'r', us.id, us.name, 0, NULL
            FROM membership_units mu JOIN users us ON us.id = mu.user_id
            WHERE mu.unit_id = ? AND us.disabled = 0
            UNION ALL
            SELECT 'd', mp.user_id, NULL, 0, mp.permission
            FROM units u
            JOIN memberships m ON m.company_id = u.company_id
            JOIN membership_permissions mp ON mp.user_id = m.user_id AND mp.company_id = m.company_id
            WHERE u.id = ? AND m.user_id IN (SELECT user_id FROM membership_units WHERE unit_id = ?)
            UNION ALL
            SELECT 's', ms.user_id, NULL, 0, sp.permission
            FROM units u
            JOIN memberships m ON m.company_id = u.company_id
            JOIN membership_sectors ms ON ms.user_id = m.user_id AND ms.company_id = m.company_id
            JOIN sectors s ON s.id = ms.sector_id
            JOIN sector_permissions sp ON sp.sector_id = s.id
            WHERE u.id = ? AND m.user_id IN (SELECT user_id FROM membership_units WHERE unit_id = ?)
            ORDER BY kind, position, name, user_id
            """, .id(unitID), .id(unitID), .id(unitID), .id(unitID), .id(unitID), .id(unitID))
        var unit = UnitResidents()
        for row in rows {
            let kind = try row.required.string("kind")
            let user = try row.required.string("user_id")
            switch kind {
            case "o": unit.ringOrder.append(PersonRef(id: user, name: try row.required.string("name")))
            case "r": unit.residents.append(PersonRef(id: user, name: try row.required.string("name")))
            case "d": unit.permissions[user, default: ([], [])].direct.append(try row.required.string("permission"))
            default: unit.permissions[user, default: ([], [])].sectors.append(try row.required.string("permission"))
            }
        }
        return unit
    }

    /// Users rung so far for a visit (for ring cancellations).
    static func rungUsers(_ db: any SQLConnection, visitID: VisitID) throws -> [String] {
        var seen = Set<String>()
        return try db.query("SELECT user_id FROM visit_attempts WHERE visit_id = ? AND kind = 'ring' ORDER BY id", .id(visitID))
            .compactMap { try $0.string("user_id") }.filter { seen.insert($0).inserted }
    }
}
