import Foundation

/// Face ID / Touch ID / fingerprint unlock of a stored session (`login-ios.md`,
/// "Biometria"), as the core needs it. On Apple platforms this is a Keychain item whose
/// `SecAccessControl` is `.biometryCurrentSet`: reading it is what prompts, and enrolling
/// a new finger or face invalidates it. Never `LAContext.evaluatePolicy` alone — a
/// yes/no answer unlocks nothing an attacker with the device could not flip (DESIGN §3
/// security rules, MASVS-AUTH-2).
///
/// While biometric unlock is on the gate holds a random unlock secret, and a launch with a
/// stored session opens only once the owner's biometry reads it. The refresh token stays in
/// the secure store, so work the system runs on a locked phone (a call answered on the lock
/// screen, a notification button) can renew the session without a prompt (decision 0076).
public protocol BiometricGate: Sendable {
    /// What the device offers now.
    func availability() async -> BiometricAvailability
    /// Stores `secret` behind biometry, replacing any earlier one. Does not prompt.
    func store(_ secret: String) async throws
    /// Reads the secret, prompting with `reason` (pt-BR). Nil when the user cancelled.
    /// Throws `BiometricGateError.invalidated` when the biometry changed since `store`
    /// (`.biometryCurrentSet`) or the item is gone.
    func unlock(reason: String) async throws -> String?
    /// Removes the secret (logout, biometric unlock turned off).
    func clear() async throws
}

public enum BiometricAvailability: Sendable, Equatable {
    case faceID
    case touchID
    /// Android's BiometricPrompt (fingerprint or face).
    case biometric
    /// Hardware present, nothing enrolled.
    case notEnrolled
    case unavailable
}

public enum BiometricGateError: Error, Sendable, Equatable {
    /// The enrolled biometry changed or the item vanished: log in with the password.
    case invalidated
    /// The user cancelled the prompt.
    case cancelled
    /// Biometric unlock is not on for this installation.
    case notEnabled
}
