// Stand-in for the parts of Security our Keychain adapter uses, from
// developer.apple.com/documentation/security/keychain-services (SecItemAdd,
// SecItemCopyMatching, SecItemUpdate, SecItemDelete, SecAccessControlCreateWithFlags,
// SecCopyErrorMessageString, the kSec… attribute keys and errSec… codes).
//
// The CF types are modelled on what swift-corelibs-foundation has: `CFDictionary` is
// `NSDictionary` (so `query as CFDictionary` type-checks as on Apple platforms), `CFString`
// is `NSString` (so `kSecClass as String` does). The constants are computed globals, as
// imported C constants carry no shared-mutable-state concern. Bodies trap.
@_exported import Foundation   // as the framework's umbrella header imports Foundation

public typealias OSStatus = Int32
public typealias CFTypeRef = AnyObject
public typealias CFDictionary = NSDictionary
public typealias CFString = NSString
public typealias CFError = NSError
public typealias CFAllocator = NSObject
public typealias CFData = NSData

/// developer.apple.com/documentation/security/secaccesscontrol
public final class SecAccessControl: @unchecked Sendable {}

/// developer.apple.com/documentation/security/secaccesscontrolcreateflags
public struct SecAccessControlCreateFlags: OptionSet, Sendable {
    public var rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)
}

private func key(_ name: String) -> CFString { NSString(string: name) }

// developer.apple.com/documentation/security/item-class-keys-and-values
public var kSecClass: CFString { key("class") }
public var kSecClassGenericPassword: CFString { key("genp") }
// developer.apple.com/documentation/security/item-attribute-keys-and-values
public var kSecAttrService: CFString { key("svce") }
public var kSecAttrAccount: CFString { key("acct") }
public var kSecAttrAccessGroup: CFString { key("agrp") }
public var kSecAttrAccessible: CFString { key("pdmn") }
public var kSecAttrAccessControl: CFString { key("accc") }
public var kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString { key("cku") }
public var kSecAttrAccessibleAfterFirstUnlock: CFString { key("ck") }
public var kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString { key("aku") }
public var kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString { key("akpu") }
// developer.apple.com/documentation/security/item-return-result-keys
public var kSecReturnData: CFString { key("r_Data") }
public var kSecValueData: CFString { key("v_Data") }
// developer.apple.com/documentation/security/search-attribute-keys-and-values
public var kSecMatchLimit: CFString { key("m_Limit") }
public var kSecMatchLimitOne: CFString { key("m_LimitOne") }
// developer.apple.com/documentation/security/ksecuseauthenticationcontext
public var kSecUseAuthenticationContext: CFString { key("u_AuthCtx") }
// developer.apple.com/documentation/security/ksecuseauthenticationui
public var kSecUseAuthenticationUI: CFString { key("u_AuthUI") }
public var kSecUseAuthenticationUIFail: CFString { key("u_AuthUIF") }

// developer.apple.com/documentation/security/security-framework-result-codes
public var errSecSuccess: OSStatus { 0 }
public var errSecParam: OSStatus { -50 }
public var errSecUserCanceled: OSStatus { -128 }
public var errSecAuthFailed: OSStatus { -25293 }
public var errSecDuplicateItem: OSStatus { -25299 }
public var errSecItemNotFound: OSStatus { -25300 }
public var errSecInteractionNotAllowed: OSStatus { -25308 }

/// `func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus`
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { fatalError("stand-in") }
/// `func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus`
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { fatalError("stand-in") }
/// `func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus`
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus { fatalError("stand-in") }
/// `func SecItemDelete(_ query: CFDictionary) -> OSStatus`
public func SecItemDelete(_ query: CFDictionary) -> OSStatus { fatalError("stand-in") }
/// `func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString?`
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? { fatalError("stand-in") }
/// `func SecAccessControlCreateWithFlags(_ allocator: CFAllocator?, _ protection: CFTypeRef,
/// _ flags: SecAccessControlCreateFlags, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecAccessControl?`
public func SecAccessControlCreateWithFlags(_ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
                                            _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecAccessControl? {
    fatalError("stand-in")
}
