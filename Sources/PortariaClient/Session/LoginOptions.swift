import Foundation
import PortariaCore

/// The kind of biometry the phone offers, for the button's words.
public enum BiometricKind: String, Sendable, Equatable {
    case faceID = "face_id"
    case touchID = "touch_id"
    case opticID = "optic_id"

    /// "Entrar com Face ID".
    public var buttonTitle: String {
        switch self {
        case .faceID: return "Entrar com Face ID"
        case .touchID: return "Entrar com Touch ID"
        case .opticID: return "Entrar com Optic ID"
        }
    }
}

/// Why a biometric unlock did not open the session.
public enum BiometricUnlockError: Error, Sendable, Equatable {
    /// The user cancelled or failed the prompt: stay on the login screen, quietly.
    case cancelled
    /// The enrolled fingers/face changed (the Keychain item bound to `.biometryCurrentSet`
    /// is gone) or biometry was turned off: log in with the password once more.
    case invalidated
}

/// Biometric unlock through a Keychain item readable only after Face ID / Touch ID
/// (`SecAccessControl` `.biometryCurrentSet`) — never `LAContext.evaluatePolicy` alone,
/// whose "yes" a patched process can fake (DESIGN §3, MASVS-AUTH). The iOS adapter keeps
/// `LAContext` for `availableKind()` and the prompt's reason only.
public protocol BiometricGate: Sendable {
    /// nil when the phone has no usable biometry (none enrolled, disabled, passcode off).
    func availableKind() -> BiometricKind?
    /// Stores `secret` in the biometry-protected item (replacing any previous one).
    func store(_ secret: String) throws
    /// Reads the item; the system shows the biometric prompt with `reason`.
    func unlock(reason: String) async throws(BiometricUnlockError) -> String
    /// Deletes the item (logout, "lembrar" turned off).
    func remove()
}

/// The keys of the login options (`login-ios.md`: "Lembrar senha — flag em UserDefaults +
/// Keychain para credenciais"; biometry: "LAContext + JWT salvo no Keychain").
public enum LoginOptionKeys {
    /// UserDefaults flag.
    public static let rememberPassword = "remember_password"
    /// UserDefaults flag: the user turned biometric unlock on.
    public static let biometricUnlock = "biometric_unlock"
    /// Keychain: the remembered username and password.
    public static let savedUsername = "saved_username"
    public static let savedPassword = "saved_password"
}

/// "Lembrar senha" and biometric unlock, over the same stores as the session.
///
/// What the biometric item protects is the refresh token: unlocking reads it (prompt),
/// then `SessionManager` refreshes with it, so a stolen unlocked phone without the owner's
/// face gets nothing it could not get from the login screen.
public struct LoginOptions: Sendable {
    let secure: any SecureStore
    let preferences: any PreferenceStore
    let gate: (any BiometricGate)?

    public init(secure: any SecureStore, preferences: any PreferenceStore, gate: (any BiometricGate)?) {
        self.secure = secure
        self.preferences = preferences
        self.gate = gate
    }

    public var remembersPassword: Bool { preferences.string(for: LoginOptionKeys.rememberPassword) == "true" }
    public var biometricUnlockEnabled: Bool { preferences.string(for: LoginOptionKeys.biometricUnlock) == "true" }

    /// The credentials to pre-fill, when "lembrar senha" is on.
    public func rememberedCredentials() -> (username: String, password: String)? {
        guard remembersPassword, let username = try? secure.string(for: LoginOptionKeys.savedUsername),
              let password = try? secure.string(for: LoginOptionKeys.savedPassword), !username.isEmpty else { return nil }
        return (username, password)
    }

    /// After a successful password login: keep or forget the credentials as the switch says.
    public func passwordLoginSucceeded(username: String, password: String, remember: Bool) throws {
        preferences.set(remember ? "true" : "false", for: LoginOptionKeys.rememberPassword)
        try secure.set(remember ? username : nil, for: LoginOptionKeys.savedUsername)
        try secure.set(remember ? password : nil, for: LoginOptionKeys.savedPassword)
    }

    /// The button to show on the login screen, nil when biometric unlock cannot be offered.
    public func biometricButtonTitle() -> String? {
        guard biometricUnlockEnabled, let kind = gate?.availableKind() else { return nil }
        return kind.buttonTitle
    }

    /// Turns biometric unlock on: the current refresh token goes into the protected item.
    public func enableBiometricUnlock() throws {
        guard let gate, gate.availableKind() != nil, let refresh = try secure.string(for: SessionKeys.refreshToken) else {
            throw BiometricUnlockError.invalidated
        }
        try gate.store(refresh)
        preferences.set("true", for: LoginOptionKeys.biometricUnlock)
    }

    /// Reads the protected refresh token (prompt) and puts it where the session reads it, so
    /// `SessionManager.refresh()` can open the session. The caller then refreshes.
    public func unlockWithBiometrics() async throws(BiometricUnlockError) {
        guard biometricUnlockEnabled, let gate else { throw .invalidated }
        let refresh: String
        do { refresh = try await gate.unlock(reason: "Entrar no Portaria") } catch {
            if error == .invalidated { disableBiometricUnlock() }
            throw error
        }
        do { try secure.set(refresh, for: SessionKeys.refreshToken) } catch { throw .invalidated }
    }

    /// After a refresh, the protected item must hold the new refresh token (the old one is
    /// spent; presenting it later would revoke the family).
    public func sessionRefreshed() {
        guard biometricUnlockEnabled, let gate, let refresh = try? secure.string(for: SessionKeys.refreshToken) else { return }
        try? gate.store(refresh)
    }

    public func disableBiometricUnlock() {
        gate?.remove()
        preferences.set("false", for: LoginOptionKeys.biometricUnlock)
    }

    /// Logout forgets the biometric item; the remembered password stays if the user asked.
    public func loggedOut() {
        disableBiometricUnlock()
    }
}
