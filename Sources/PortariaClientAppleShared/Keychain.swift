// Keychain adapters: the session's secrets (`SecureStore`) and the biometric unlock item
// (`BiometricGate`). Apple platforms only; on Linux this file compiles to nothing.
#if canImport(Security) && canImport(LocalAuthentication)
import Foundation
import LocalAuthentication
import PortariaClient
import Security

/// `SecureStore` over generic-password Keychain items.
///
/// Items are `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`: a VoIP push or a
/// notification action may wake the app (and the Notification Service Extension) while
/// the phone is locked, and they must read the access token then; "ThisDevice" keeps the
/// tokens out of backups and off other phones. The access group is shared with the
/// extension (`keychain-access-groups` entitlement).
public struct KeychainSecureStore: SecureStore {
    public let service: String
    /// `<TeamID>.br.com.portaria.shared` — read from the app's Info.plist
    /// (`PortariaKeychainGroup`), where `$(AppIdentifierPrefix)` is expanded at build time.
    public let accessGroup: String?

    public init(service: String = "br.com.portaria.session", accessGroup: String? = Bundle.main.object(forInfoDictionaryKey: "PortariaKeychainGroup") as? String) {
        self.service = service
        self.accessGroup = accessGroup
    }

    private func query(_ key: String) -> [String: Any] {
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                    kSecAttrService as String: service,
                                    kSecAttrAccount as String: key]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    public func string(for key: String) throws -> String? {
        var query = query(key)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = result as? Data else { throw KeychainError(status: status) }
        return String(data: data, encoding: .utf8)
    }

    public func set(_ value: String?, for key: String) throws {
        let base = query(key)
        guard let value else {
            let status = SecItemDelete(base as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
            return
        }
        let data = Data(value.utf8)
        let update = SecItemUpdate(base as CFDictionary, [kSecValueData as String: data] as CFDictionary)
        if update == errSecSuccess { return }
        guard update == errSecItemNotFound else { throw KeychainError(status: update) }
        var add = base
        add[kSecValueData as String] = data
        add[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let status = SecItemAdd(add as CFDictionary, nil)
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }
}

public struct KeychainError: Error, Equatable, CustomStringConvertible {
    public let status: OSStatus
    public var description: String { "Keychain error \(status): \(SecCopyErrorMessageString(status, nil) as String? ?? "?")" }
}

/// `BiometricGate` over a Keychain item bound to the current biometric enrolment
/// (`SecAccessControl` `.biometryCurrentSet`): the system, not this process, decides
/// whether the face matched, and enrolling another face deletes the item. `LAContext`
/// only reports what biometry exists and carries the prompt's reason.
public struct KeychainBiometricGate: BiometricGate {
    public let service: String
    public let account = "biometric_unlock"

    public init(service: String = "br.com.portaria.biometric") { self.service = service }

    public func availability() async -> BiometricAvailability {
        let context = LAContext()
        var error: NSError?
        guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) else {
            return error?.code == LAError.biometryNotEnrolled.rawValue ? .notEnrolled : .unavailable
        }
        switch context.biometryType {
        case .faceID: return .faceID
        case .touchID: return .touchID
        case .opticID: return .biometric
        default: return .unavailable
        }
    }

    private var base: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    public func store(_ secret: String) async throws {
        _ = SecItemDelete(base as CFDictionary)
        var error: Unmanaged<CFError>?
        // WhenPasscodeSet: the item disappears if the passcode is removed; ThisDeviceOnly:
        // never in a backup.
        guard let access = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
                                                           .biometryCurrentSet, &error) else {
            throw KeychainError(status: errSecParam)
        }
        var add = base
        add[kSecValueData as String] = Data(secret.utf8)
        add[kSecAttrAccessControl as String] = access
        let status = SecItemAdd(add as CFDictionary, nil)
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }

    /// Nil when the user cancelled or no prompt could be shown; `BiometricGateError.invalidated`
    /// only when the item is gone (the enrolment changed: `.biometryCurrentSet` deleted it).
    ///
    /// The difference matters: `SessionManager` clears the session on `.invalidated` and
    /// waits (`SessionError.locked`, nothing lost) on anything else. A background refresh —
    /// a notification action, a VoIP wake — cannot show Face ID and gets
    /// `errSecInteractionNotAllowed`; mapping that to `.invalidated` would log the
    /// resident out every time a decision was taken from the lock screen.
    public func unlock(reason: String) async throws -> String? {
        let service = service, account = account
        // SecItemCopyMatching blocks while the prompt is up: never on the main thread.
        let outcome = await Task.detached { () -> Result<String?, BiometricGateError> in
            let context = LAContext()
            context.localizedReason = reason
            let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                        kSecAttrAccount as String: account, kSecReturnData as String: true,
                                        kSecMatchLimit as String: kSecMatchLimitOne,
                                        kSecUseAuthenticationContext as String: context]
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            switch status {
            case errSecSuccess:
                guard let data = result as? Data, let text = String(data: data, encoding: .utf8) else { return .failure(.invalidated) }
                return .success(text)
            case errSecItemNotFound:
                return .failure(.invalidated)   // enrolment changed (or never stored)
            case errSecUserCanceled, errSecAuthFailed, errSecInteractionNotAllowed:
                return .success(nil)             // cancelled, failed, or no UI to prompt: try again later
            default:
                return .failure(.cancelled)      // anything else: not a reason to drop the session
            }
        }.value
        return try outcome.get()
    }

    public func clear() async throws {
        let status = SecItemDelete(base as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
    }
}
#endif
