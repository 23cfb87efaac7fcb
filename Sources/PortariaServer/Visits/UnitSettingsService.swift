import Foundation
import PortariaCore

/// `GET/PUT /v1/units/{id}/settings`: the delivery rule and how the unit is rung. Takes
/// domain values (the route decodes the body), refuses with `UnitSettingsError` or the
/// generic 400 of `require(_:field:_:)`; the SQL is `UnitSettingsStore`'s.
struct UnitSettingsService: Sendable {
    let store: UnitSettingsStore

    init(database: any SQLDatabase) { store = UnitSettingsStore(database: database) }

    /// Residents of the unit with `units.settings` may read and change; the company's
    /// operators and admins may read. Everyone else: 404.
    func settings(unitID: UnitID, caller: Caller) async throws -> UnitSettingsResponse {
        let mayRead = caller.unitIDs.contains(unitID) ? caller.has(Permission.unitsSettings) : caller.has(Permission.operatorConsole)
        guard mayRead, let response = try await store.settings(unitID: unitID, companyID: caller.companyID) else {
            throw UnitSettingsError.unitNotFound
        }
        return response
    }

    /// Whether `caller` may change the unit's settings, asked before the body is read:
    /// a stranger learns nothing from how their body is refused.
    func authorizeChange(unitID: UnitID, caller: Caller) async throws {
        guard caller.unitIDs.contains(unitID), caller.has(Permission.unitsSettings) else {
            // Operators may read but not change a household's settings.
            if caller.has(Permission.operatorConsole), try await settings(unitID: unitID, caller: caller).unitID == unitID.rawValue {
                throw UnitSettingsError.residentsOnly
            }
            throw UnitSettingsError.unitNotFound
        }
    }

    /// Strict: out-of-range timings, duplicates and non-residents in the ring order are
    /// 400s naming the field (unknown fields are refused where the body is decoded);
    /// nothing is changed then.
    func update(unitID: UnitID, caller: Caller, settings: UnitSettings) async throws -> UnitSettingsResponse {
        try await authorizeChange(unitID: unitID, caller: caller)
        try require(UnitSettings.stepRange.contains(settings.ringStepSeconds), field: "ring_step_seconds",
                    "ring_step_seconds must be between \(UnitSettings.stepRange.lowerBound) and \(UnitSettings.stepRange.upperBound)")
        try require(UnitSettings.windowRange.contains(settings.ringWindowSeconds), field: "ring_window_seconds",
                    "ring_window_seconds must be between \(UnitSettings.windowRange.lowerBound) and \(UnitSettings.windowRange.upperBound)")
        try require(settings.ringStepSeconds <= settings.ringWindowSeconds, field: "ring_step_seconds",
                    "ring_step_seconds must not exceed ring_window_seconds")
        try require(settings.ringOrder.count <= 50, field: "ring_order", "ring_order has too many entries")
        var seen = Set<String>()
        for (index, id) in settings.ringOrder.enumerated() {
            try require(seen.insert(id).inserted, field: "ring_order[\(index)]", "ring_order[\(index)] repeats a resident")
        }
        // Who rings, in which order: the first thing asked after a missed visit.
        let audit = AuditLog.entry(caller, "unit.settings_change", objectType: "unit", objectID: unitID.rawValue,
                                   detail: ["delivery_rule": .string(settings.deliveryRule.rawValue),
                                            "ring_mode": .string(settings.ringMode.rawValue),
                                            "ring_step_seconds": .number(Double(settings.ringStepSeconds)),
                                            "ring_window_seconds": .number(Double(settings.ringWindowSeconds)),
                                            "ring_order": .array(settings.ringOrder.map(JSONValue.string))], at: Date())
        return try await store.update(unitID: unitID, companyID: caller.companyID, settings: settings, audit: audit)
    }

    static let fields: Set<String> = ["delivery_rule", "ring_order", "ring_mode", "ring_step_seconds", "ring_window_seconds"]
}

/// How the unit settings capability refuses (the router renders it).
enum UnitSettingsError: TabulatedError, Equatable {
    /// Unknown, another company's, or not the caller's to see: one answer.
    case unitNotFound
    /// An operator may read a household's settings but not change them.
    case residentsOnly
    /// `ring_order[index]` names someone who is not a resident of the unit.
    case notAResident(index: Int)

    var answer: ErrorAnswer {
        switch self {
        case .unitNotFound: return ErrorAnswer(404, .notFound, "unit not found")
        case .residentsOnly: return ErrorAnswer(403, .forbidden, "only the unit's residents change its settings")
        case .notAResident(let index):
            return ErrorAnswer(400, .invalidRequest, "ring_order[\(index)] is not a resident of this unit")
        }
    }

    var details: [String: JSONValue] {
        guard case .notAResident(let index) = self else { return [:] }
        return ["field": .string("ring_order[\(index)]")]
    }
}

/// Every statement on a unit's settings (`units`' ring columns and `unit_ring_order`).
struct UnitSettingsStore: Sendable {
    let database: any SQLDatabase

    /// The unit's settings and residents, nil when the company has no such unit.
    func settings(unitID: UnitID, companyID: String) async throws -> UnitSettingsResponse? {
        try await database.read { db in try Self.load(db, unitID: unitID, companyID: companyID) }
    }

    /// Replaces the settings in one commit, after checking every ring order entry is a
    /// resident (`UnitSettingsError.notAResident`, nothing written).
    func update(unitID: UnitID, companyID: String, settings: UnitSettings,
                audit: AuditEntry? = nil) async throws -> UnitSettingsResponse {
        return try await database.write { db in
            guard try db.queryOne("SELECT id FROM units WHERE id = ? AND company_id = ?" + db.dialect.forUpdate,
                                  .id(unitID), .text(companyID)) != nil else { throw UnitSettingsError.unitNotFound }
            let residents = Set(try AccountStore.residents(db, unitID: unitID).map(\.id))
            if let index = settings.ringOrder.firstIndex(where: { !residents.contains($0) }) {
                throw UnitSettingsError.notAResident(index: index)
            }
            try db.execute("""
                UPDATE units SET delivery_rule = ?, ring_mode = ?, ring_step_seconds = ?, ring_window_seconds = ? WHERE id = ?
                """, .text(settings.deliveryRule.rawValue), .text(settings.ringMode.rawValue),
                     .integer(Int64(settings.ringStepSeconds)), .integer(Int64(settings.ringWindowSeconds)), .id(unitID))
            try db.execute("DELETE FROM unit_ring_order WHERE unit_id = ?", .id(unitID))
            for (position, id) in settings.ringOrder.enumerated() {
                try db.execute("INSERT INTO unit_ring_order (unit_id, position, user_id) VALUES (?, ?, ?)",
                               .id(unitID), .integer(Int64(position)), .text(id))
            }
            guard let response = try Self.load(db, unitID: unitID, companyID: companyID) else { throw UnitSettingsError.unitNotFound }
            if let audit { try AuditLog.append(db, audit) }
            return response
        }
    }

    static func load(_ db: any SQLConnection, unitID: UnitID, companyID: String) throws -> UnitSettingsResponse? {
        guard let row = try db.queryOne("""
            SELECT delivery_rule, ring_mode, ring_step_seconds, ring_window_seconds FROM units WHERE id = ? AND company_id = ?
            """, .id(unitID), .text(companyID)) else { return nil }
        let order = try db.query("SELECT user_id FROM unit_ring_order WHERE unit_id = ? ORDER BY position", .id(unitID))
            .compactMap { try $0.string("user_id") }
        let settings = UnitSettings(deliveryRule: try row.string("delivery_rule").flatMap(DeliveryRule.init(rawValue:)) ?? .ask,
                                    ringOrder: order,
                                    ringMode: try row.string("ring_mode").flatMap(RingMode.init(rawValue:)) ?? .sequential,
                                    ringStepSeconds: Int(try row.int("ring_step_seconds") ?? 20),
                                    ringWindowSeconds: Int(try row.int("ring_window_seconds") ?? 60))
        return UnitSettingsResponse(unitID: unitID.rawValue, settings: settings, residents: try AccountStore.residents(db, unitID: unitID))
    }
}
