import Foundation
import PortariaCore

/// Who is at the other end of a realtime socket, and therefore which events it may see.
/// Every event carries its company, unit and visit, so the decision needs no database.
public struct Subscriber: Sendable, Equatable {
    public enum Role: Sendable, Equatable {
        /// Sees the visits of their own units.
        case resident(units: Set<String>)
        /// Sees every visit of the company (operators; admins hold `operator` too).
        case companyWide
        /// The gate page: sees its one visit, without resident names.
        case visitor(visitID: String)
    }

    public var companyID: String
    public var role: Role
    /// The user (nil for a visitor) and their session, checked while the socket lives.
    public var userID: String?
    public var sessionID: String?
    /// Device and push-health changes are for `admin.push_health` holders only.
    public var seesPushHealth: Bool
    /// The app installation behind the socket (`?device_id=`), so a call reaches the one
    /// device that answered. Sockets without one share the user's "default" device.
    public var deviceID: String?

    public init(companyID: String, role: Role, userID: String? = nil, sessionID: String? = nil, seesPushHealth: Bool = false) {
        self.companyID = companyID
        self.role = role
        self.userID = userID
        self.sessionID = sessionID
        self.seesPushHealth = seesPushHealth
    }

    /// A signed-in caller in their selected company.
    init(caller: Caller) {
        self.init(userID: caller.user.id, sessionID: caller.sessionID, membership: caller.membership)
    }

    /// What a user's membership lets a socket see (also used to re-check live sockets).
    init(userID: String, sessionID: String?, membership: CompanyMembership) {
        let permissions = membership.effectivePermissions
        // The same rule as GET /v1/visits: without `visits.view` a resident's socket carries
        // no visit of their units (device and push-health events follow their own permission).
        let units = permissions.contains(Permission.visitsView) ? Set(membership.units.map(\.id)) : []
        self.init(companyID: membership.company.id,
                  role: permissions.contains(Permission.operatorConsole) ? .companyWide : .resident(units: units),
                  userID: userID, sessionID: sessionID, seesPushHealth: permissions.contains(Permission.adminPushHealth))
    }

    public func sees(_ event: EventRecord) -> Bool {
        guard event.companyID == companyID else { return false }
        if event.type.hasPrefix("device.") || event.type.hasPrefix("push_health.") { return seesPushHealth }
        switch role {
        case .companyWide: return true
        case .resident(let units): return event.unitID.map(units.contains) ?? false
        case .visitor(let visitID): return event.visitID == visitID
        }
    }

    /// The frame this subscriber receives for `event`: `{"type", "seq", "data"}`. The gate
    /// page gets the visit's id, kind and status only — never who lives there or answered.
    public func frame(for event: EventRecord) -> String {
        var data = event.data
        if case .visitor = role {
            var visible: [String: JSONValue] = [:]
            for key in ["visit_id", "kind", "status", "reason", "action"] { visible[key] = event.data[key] }
            data = .object(visible)
        }
        return JSONValue.object(["type": .string(event.type), "seq": .number(Double(event.seq)), "data": data]).jsonText
    }
}
