import Foundation
import PortariaCore

/// Where the session's secrets live: the Keychain on Apple platforms (see
/// PortariaClientApple), a 0600 file for the terminal client, memory in tests.
public protocol SecureStore: Sendable {
    func string(for key: String) throws -> String?
    func set(_ value: String?, for key: String) throws
}

/// Non-secret preferences (UserDefaults on Apple platforms), with the spec's keys.
public protocol PreferenceStore: Sendable {
    func string(for key: String) -> String?
    func strings(for key: String) -> [String]
    /// A boolean stored as a boolean (`UserDefaults.bool`/`object(forKey:) as? Bool`), nil
    /// when absent — `master` and `driver` are booleans in `login-ios.md`, not strings.
    func bool(for key: String) -> Bool?
    func set(_ value: String?, for key: String)
    func set(_ values: [String], for key: String)
    func set(_ value: Bool?, for key: String)
    /// Removes the key, whatever its type.
    func remove(_ key: String)
}

/// The storage keys of `login-ios.md` ("Persistência").
public enum SessionKeys {
    public static let jwtToken = "jwt_token"
    public static let refreshToken = "refresh_token"
    public static let permissions = "perms_user"
    public static let selectedCompany = "selected_company"
    public static let userID = "user_id"
    public static let master = "master"
    public static let driver = "driver"
    /// "Lembrar": the username is kept for the next login (Bool).
    public static let rememberMe = "remember_me"
    public static let rememberedUsername = "remembered_username"
    /// Biometric unlock is on: the refresh token lives behind the `BiometricGate` (Bool).
    public static let biometricUnlock = "biometric_unlock"
    /// Every key a logout removes (`remember_me`/`remembered_username` stay when the user
    /// asked to be remembered; see `SessionManager.logout`).
    public static let clearedAtLogout = [permissions, selectedCompany, userID, master, driver, companies, biometricUnlock]
    /// The companies of the last login (JSON), for the selection screen after a relaunch.
    public static let companies = "companies"
    /// The company's IANA time zone from `GET /v1/me` (times in pt-BR sentences).
    public static func timeZone(companyID: String) -> String { "time_zone." + companyID }
}

/// An authenticated HTTP exchange with token refresh: what the resolve queue, the
/// device registrar and the realtime reconcile send through (`SessionManager`).
public protocol AuthorizedHTTP: Sendable {
    func sendAuthorized(_ request: ClientHTTPRequest) async throws -> ClientHTTPResponse
    /// The logged-in user, nil when logged out.
    var userID: String? { get async }
}

public final class InMemorySecureStore: SecureStore {
    private let values = Locked<[String: String]>([:])
    public init() {}
    public func string(for key: String) throws -> String? { values.withLock { $0[key] } }
    public func set(_ value: String?, for key: String) throws { values.withLock { $0[key] = value } }
}

public final class InMemoryPreferences: PreferenceStore {
    /// Typed, as UserDefaults keeps them: a Bool is never read back as a string.
    public enum Value: Sendable, Equatable {
        case string(String)
        case strings([String])
        case bool(Bool)
    }

    private let values = Locked<[String: Value]>([:])
    public init() {}
    /// Everything stored (tests check what logout leaves behind).
    public var all: [String: Value] { values.withLock { $0 } }
    public func string(for key: String) -> String? {
        values.withLock { if case .string(let value)? = $0[key] { return value } else { return nil } }
    }
    public func strings(for key: String) -> [String] {
        values.withLock { if case .strings(let value)? = $0[key] { return value } else { return [] } }
    }
    public func bool(for key: String) -> Bool? {
        values.withLock { if case .bool(let value)? = $0[key] { return value } else { return nil } }
    }
    public func set(_ value: String?, for key: String) { values.withLock { $0[key] = value.map(Value.string) } }
    public func set(_ values: [String], for key: String) { self.values.withLock { $0[key] = .strings(values) } }
    public func set(_ value: Bool?, for key: String) { values.withLock { $0[key] = value.map(Value.bool) } }
    public func remove(_ key: String) { _ = values.withLock { $0.removeValue(forKey: key) } }
}

/// A JSON file readable only by its owner, for `portaria client` on a terminal.
public final class FileSecureStore: SecureStore {
    let path: String
    private let lock = Locked(())

    public init(path: String) { self.path = path }

    private func load() -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path),
              let values = try? JSONDecoder().decode([String: String].self, from: data) else { return [:] }
        return values
    }

    public func string(for key: String) throws -> String? { lock.withLock { _ in load()[key] } }

    public func set(_ value: String?, for key: String) throws {
        try lock.withLock { _ in
            var values = load()
            values[key] = value
            let directory = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let data = try JSONEncoder().encode(values)
            _ = FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600])
        }
    }
}

/// Preferences kept in a `SecureStore` (the terminal client keeps everything in one file).
public struct SecureStorePreferences: PreferenceStore {
    let store: any SecureStore
    public init(store: any SecureStore) { self.store = store }
    public func string(for key: String) -> String? { (try? store.string(for: "pref." + key)) ?? nil }
    public func strings(for key: String) -> [String] {
        guard let text = string(for: key), !text.isEmpty else { return [] }
        return text.split(separator: "\n").map(String.init)
    }
    /// The file holds strings: a boolean is written `true`/`false` and read back as a Bool.
    public func bool(for key: String) -> Bool? {
        switch string(for: key) {
        case "true": return true
        case "false": return false
        default: return nil
        }
    }
    public func set(_ value: String?, for key: String) { try? store.set(value, for: "pref." + key) }
    public func set(_ values: [String], for key: String) { try? store.set(values.joined(separator: "\n"), for: "pref." + key) }
    public func set(_ value: Bool?, for key: String) { set(value.map { $0 ? "true" : "false" }, for: key) }
    public func remove(_ key: String) { try? store.set(nil, for: "pref." + key) }
}
