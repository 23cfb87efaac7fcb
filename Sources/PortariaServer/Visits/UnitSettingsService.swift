import Foundation
import PortariaCore

/// `GET/PUT /v1/units/{id}/settings`: the delivery rule and how the unit is rung.
struct UnitSettingsService: Sendable {
    let database: any SQLDatabase

    /// Residents of the unit with `units.settings` may read and change; the company's
    /// operators and admins may read. Everyone else: 404.
    func settings(unitID: String, caller: Caller) async throws -> UnitSettingsResponse {
        let mayRead = caller.unitIDs.contains(unitID) ? caller.has(Permission.unitsSettings) : caller.has(Permission.operatorConsole)
        guard mayRead, UnitID(rawValue: unitID) != nil else { throw HTTPError.notFound("unit not found") }
        let companyID = caller.companyID
        let response = try await database.read { db in try Self.load(db, unitID: unitID, companyID: companyID) }
        guard let response else { throw HTTPError.notFound("unit not found") }
        return response
    }

    static func load(_ db: any SQLConnection, unitID: String, companyID: String) throws -> UnitSettingsResponse? {
        guard let row = try db.queryOne("""
            SELECT delivery_rule, ring_mode, ring_step_seconds, ring_window_seconds FROM units WHERE id = ? AND company_id = ?
            """, .text(unitID), .text(companyID)) else { return nil }
        let order = try db.query("SELECT user_id FROM unit_ring_order WHERE unit_id = ? ORDER BY position", .text(unitID))
            .compactMap { try $0.string("user_id") }
        let settings = UnitSettings(deliveryRule: try row.string("delivery_rule").flatMap(DeliveryRule.init(rawValue:)) ?? .ask,
                                    ringOrder: order,
                                    ringMode: try row.string("ring_mode").flatMap(RingMode.init(rawValue:)) ?? .sequential,
                                    ringStepSeconds: Int(try row.int("ring_step_seconds") ?? 20),
                                    ringWindowSeconds: Int(try row.int("ring_window_seconds") ?? 60))
        return UnitSettingsResponse(unitID: unitID, settings: settings, residents: try VisitStore.residents(db, unitID: unitID))
    }

    static let fields: Set<String> = ["delivery_rule", "ring_order", "ring_mode", "ring_step_seconds", "ring_window_seconds"]

    /// Strict: unknown fields, out-of-range timings, duplicates and non-residents in the
    /// ring order are 400s naming the field; nothing is changed then.
    func update(unitID: String, caller: Caller, request: HTTPRequest) async throws -> UnitSettingsResponse {
        guard caller.unitIDs.contains(unitID), caller.has(Permission.unitsSettings) else {
            // Operators may read but not change a household's settings.
            if caller.has(Permission.operatorConsole), try await settings(unitID: unitID, caller: caller).unitID == unitID {
                throw HTTPError.forbidden("only the unit's residents change its settings")
            }
            throw HTTPError.notFound("unit not found")
        }
        let raw = try request.decode(JSONValue.self)
        guard case .object(let object) = raw else { throw HTTPError.invalidRequest("the request body must be a JSON object") }
        if let unknown = object.keys.sorted().first(where: { !Self.fields.contains($0) }) {
            throw HTTPError.invalidRequest("\(unknown) is not a unit setting", field: unknown)
        }
        let settings = try request.decode(UnitSettings.self)
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
        let companyID = caller.companyID
        return try await database.write { db in
            guard try db.queryOne("SELECT id FROM units WHERE id = ? AND company_id = ?" + db.dialect.forUpdate,
                                  .text(unitID), .text(companyID)) != nil else { throw HTTPError.notFound("unit not found") }
            let residents = Set(try VisitStore.residents(db, unitID: unitID).map(\.id))
            for (index, id) in settings.ringOrder.enumerated() {
                try require(residents.contains(id), field: "ring_order[\(index)]", "ring_order[\(index)] is not a resident of this unit")
            }
            try db.execute("""
                UPDATE units SET delivery_rule = ?, ring_mode = ?, ring_step_seconds = ?, ring_window_seconds = ? WHERE id = ?
                """, .text(settings.deliveryRule.rawValue), .text(settings.ringMode.rawValue),
                     .integer(Int64(settings.ringStepSeconds)), .integer(Int64(settings.ringWindowSeconds)), .text(unitID))
            try db.execute("DELETE FROM unit_ring_order WHERE unit_id = ?", .text(unitID))
            for (position, id) in settings.ringOrder.enumerated() {
                try db.execute("INSERT INTO unit_ring_order (unit_id, position, user_id) VALUES (?, ?, ?)",
                               .text(unitID), .integer(Int64(position)), .text(id))
            }
            guard let response = try Self.load(db, unitID: unitID, companyID: companyID) else { throw HTTPError.notFound("unit not found") }
            return response
        }
    }
}
