// Stand-in for the parts of LocalAuthentication our Keychain adapter uses, from
// developer.apple.com/documentation/localauthentication (LAContext, LAPolicy,
// LABiometryType, LAError). Bodies trap.
//
// `canEvaluatePolicy(_:error:)` takes an `NSErrorPointer` (an
// AutoreleasingUnsafeMutablePointer, which exists only with Objective-C interop); here it
// is an UnsafeMutablePointer, which `&error` on an `NSError?` fills the same way.
@_exported import Foundation   // as the framework's umbrella header imports Foundation

/// developer.apple.com/documentation/localauthentication/lapolicy
public enum LAPolicy: Int, Sendable {
    case deviceOwnerAuthenticationWithBiometrics = 1
    case deviceOwnerAuthentication = 2
}

/// developer.apple.com/documentation/localauthentication/labiometrytype
public enum LABiometryType: Int, Sendable {
    case none = 0, touchID = 1, faceID = 2, opticID = 4
}

/// developer.apple.com/documentation/localauthentication/laerror
public struct LAError: Error, Sendable {
    /// developer.apple.com/documentation/localauthentication/laerror-swift.struct/code
    public enum Code: Int, Sendable {
        case authenticationFailed = -1, userCancel = -2, userFallback = -3, systemCancel = -4, passcodeNotSet = -5
        case appCancel = -9, invalidContext = -10, notInteractive = -1004
        case biometryNotAvailable = -6, biometryNotEnrolled = -7, biometryLockout = -8
    }
    public let code: Code
    public static var biometryNotAvailable: Code { .biometryNotAvailable }
    public static var biometryNotEnrolled: Code { .biometryNotEnrolled }
    public static var biometryLockout: Code { .biometryLockout }
    public static var userCancel: Code { .userCancel }
}

/// developer.apple.com/documentation/localauthentication/lacontext
open class LAContext: NSObject {
    public override init() {}
    /// `var localizedReason: String`
    open var localizedReason: String = ""
    /// `var interactionNotAllowed: Bool`
    open var interactionNotAllowed = false
    /// `var biometryType: LABiometryType { get }`
    open var biometryType: LABiometryType { fatalError("stand-in") }
    /// `func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool`
    open func canEvaluatePolicy(_ policy: LAPolicy, error: UnsafeMutablePointer<NSError?>?) -> Bool { fatalError("stand-in") }
}
