/// The permission catalogue, arranged as a tree: granting a node grants every node
/// below it (`visits` grants `visits.view` and `visits.resolve`).
///
/// One function, `Permissions.effective`, resolves what a user may do in a company, and
/// both the server (enforcement) and the app (which screens to show — the spec's
/// `perms_user`) call it, so they cannot disagree.
public enum Permission {
    public static let visits = "visits"
    public static let visitsView = "visits.view"
    public static let visitsResolve = "visits.resolve"
    public static let units = "units"
    public static let unitsSettings = "units.settings"
    public static let devices = "devices"
    public static let devicesManage = "devices.manage"
    public static let `operator` = "operator"
    public static let operatorConsole = "operator.console"
    public static let admin = "admin"
    public static let adminPushHealth = "admin.push_health"
    public static let adminUsers = "admin.users"

    /// Parent → children. Ids are dotted paths, but the tree is explicit so that a
    /// future node may sit under a parent whose name it does not share.
    public static let tree: [String: [String]] = [
        visits: [visitsView, visitsResolve],
        units: [unitsSettings],
        devices: [devicesManage],
        `operator`: [operatorConsole],
        admin: [adminPushHealth, adminUsers],
    ]

    /// Every permission id in the catalogue.
    public static let catalogue: Set<String> = {
        var all = Set(tree.keys)
        for children in tree.values { all.formUnion(children) }
        return all
    }()

    public static func isKnown(_ id: String) -> Bool { catalogue.contains(id) }
}

public enum Permissions {
    /// A user's effective permissions in one company: their own grants there ∪ the grants
    /// of their sectors there, expanded down the tree. Unknown ids are dropped (a grant
    /// from a newer server version never widens an older client's view by accident).
    public static func effective(user: [String], sectors: [[String]]) -> Set<String> {
        var result = Set<String>()
        var pending = user + sectors.flatMap { $0 }
        while let id = pending.popLast() {
            guard Permission.isKnown(id), result.insert(id).inserted else { continue }
            pending.append(contentsOf: Permission.tree[id] ?? [])
        }
        return result
    }

    /// Sorted, for stable JSON.
    public static func sorted(_ permissions: Set<String>) -> [String] { permissions.sorted() }
}

/// The app's two faces (plus the admin panel), decided by `GET /v1/me`.
public enum Profile: String, Codable, Sendable, CaseIterable {
    case resident, `operator`, admin

    /// Admin rights win, then the operator console; everyone else is a resident.
    public static func decide(permissions: Set<String>) -> Profile {
        if permissions.contains(Permission.adminUsers) || permissions.contains(Permission.adminPushHealth) { return .admin }
        if permissions.contains(Permission.operatorConsole) { return .operator }
        return .resident
    }
}
