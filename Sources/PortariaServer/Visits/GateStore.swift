import Foundation
import PortariaCore

/// A gate as the visits capability uses it: its company, and where it stands.
struct Gate: Sendable {
    var id: String
    var companyID: String
    var companyName: String
    var gate: GeoPoint?
    var radius: Double
}

/// How a unit is rung, read in the gate POST's transaction.
struct UnitRingSettings: Sendable {
    var rule: DeliveryRule
    var mode: RingMode
    var stepSeconds: Int
    var windowSeconds: Int
}

/// Reads of the `gates`, `companies` and `units` rows the gate page and the gate POST need.
enum GateStore {
    /// The gate whose token this is; nil for an unknown token.
    static func gate(_ db: any SQLConnection, token: String) throws -> Gate? {
        guard let row = try db.queryOne("""
            SELECT g.id, g.company_id, c.name, c.gate_lat, c.gate_lon, c.gate_radius_m
            FROM gates g JOIN companies c ON c.id = g.company_id WHERE g.token = ?
            """, .text(token)) else { return nil }
        var point: GeoPoint?
        if let lat = try row.double("gate_lat"), let lon = try row.double("gate_lon") { point = GeoPoint(lat: lat, lon: lon) }
        let required = row.required
        return Gate(id: try required.string("id"), companyID: try required.string("company_id"), companyName: try required.string("name"),
                    gate: point, radius: try required.double("gate_radius_m"))
    }

    /// The company's units, by label (the gate page's list; never their residents).
    static func units(_ db: any SQLConnection, companyID: String) throws -> [UnitSummary] {
        try db.query("SELECT id, label FROM units WHERE company_id = ? ORDER BY label", .text(companyID))
            .map { UnitSummary(id: try $0.required.string("id"), label: try $0.required.string("label")) }
    }

    /// How the company's unit `unitID` is rung; nil when the company has no such unit.
    static func ringSettings(_ db: any SQLConnection, unitID: String, companyID: String) throws -> UnitRingSettings? {
        guard let unit = try db.queryOne("""
            SELECT id, delivery_rule, ring_mode, ring_step_seconds, ring_window_seconds FROM units WHERE id = ? AND company_id = ?
            """, .text(unitID), .text(companyID)) else { return nil }
        return UnitRingSettings(rule: try unit.string("delivery_rule").flatMap(DeliveryRule.init(rawValue:)) ?? .ask,
                                mode: try unit.string("ring_mode").flatMap(RingMode.init(rawValue:)) ?? .sequential,
                                stepSeconds: Int(try unit.int("ring_step_seconds") ?? 20),
                                windowSeconds: Int(try unit.int("ring_window_seconds") ?? 60))
    }
}
