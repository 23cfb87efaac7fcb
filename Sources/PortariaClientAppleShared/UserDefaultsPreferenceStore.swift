// `PreferenceStore` over UserDefaults (login-ios.md keys: selected_company, perms_user,
// user_id, master, driver; and remember_me, remembered_username, biometric_unlock — see
// `SessionKeys`). Apple platforms only.
#if canImport(Darwin)
import Foundation
import PortariaClient

/// Preferences in the App Group's suite, so the Notification Service Extension reads the
/// selected company (for `X-Company-Id`) the app chose.
public final class UserDefaultsPreferenceStore: PreferenceStore, @unchecked Sendable {
    // UserDefaults is documented thread-safe; @unchecked only because it is not Sendable.
    private let defaults: UserDefaults

    public init(suiteName: String? = Bundle.main.object(forInfoDictionaryKey: "PortariaAppGroup") as? String) {
        defaults = suiteName.flatMap(UserDefaults.init(suiteName:)) ?? .standard
    }

    public func string(for key: String) -> String? { defaults.string(forKey: key) }
    public func strings(for key: String) -> [String] { defaults.stringArray(forKey: key) ?? [] }
    /// `master` and `driver` are stored as real booleans; nil when absent (`bool(forKey:)`
    /// would say false for a key never written).
    public func bool(for key: String) -> Bool? { defaults.object(forKey: key) as? Bool }

    public func set(_ value: String?, for key: String) {
        if let value { defaults.set(value, forKey: key) } else { defaults.removeObject(forKey: key) }
    }

    public func set(_ values: [String], for key: String) { defaults.set(values, forKey: key) }

    public func set(_ value: Bool?, for key: String) {
        if let value { defaults.set(value, forKey: key) } else { defaults.removeObject(forKey: key) }
    }

    public func remove(_ key: String) { defaults.removeObject(forKey: key) }
}
#endif
