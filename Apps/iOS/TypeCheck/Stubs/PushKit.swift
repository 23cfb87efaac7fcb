// Stand-in for PushKit, from developer.apple.com/documentation/pushkit (PKPushRegistry,
// PKPushType, PKPushCredentials, PKPushPayload, PKPushRegistryDelegate). Bodies trap.
// The delegate's optional methods the app implements are required here, so a
// near-miss signature fails the type-check.
@_exported import Foundation   // as the framework's umbrella header imports Foundation

/// developer.apple.com/documentation/pushkit/pkpushtype
public struct PKPushType: RawRepresentable, Hashable, Sendable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let voIP = PKPushType(rawValue: "PKPushTypeVoIP")
    public static let fileProvider = PKPushType(rawValue: "PKPushTypeFileProvider")
}

/// developer.apple.com/documentation/pushkit/pkpushcredentials
open class PKPushCredentials: NSObject {
    /// `var token: Data { get }`
    open var token: Data { fatalError("stand-in") }
    open var type: PKPushType { fatalError("stand-in") }
}

/// developer.apple.com/documentation/pushkit/pkpushpayload
open class PKPushPayload: NSObject {
    /// `var dictionaryPayload: [AnyHashable : Any] { get }`
    open var dictionaryPayload: [AnyHashable: Any] { fatalError("stand-in") }
    open var type: PKPushType { fatalError("stand-in") }
}

/// developer.apple.com/documentation/pushkit/pkpushregistry
open class PKPushRegistry: NSObject {
    /// `init(queue: dispatch_queue_t?)`
    public init(queue: DispatchQueue?) {}
    /// `weak var delegate: (any PKPushRegistryDelegate)?`
    open weak var delegate: (any PKPushRegistryDelegate)?
    /// `var desiredPushTypes: Set<PKPushType>?`
    open var desiredPushTypes: Set<PKPushType>?
    /// `func pushToken(for type: PKPushType) -> Data?`
    open func pushToken(for type: PKPushType) -> Data? { fatalError("stand-in") }
}

/// developer.apple.com/documentation/pushkit/pkpushregistrydelegate
public protocol PKPushRegistryDelegate: NSObjectProtocol {
    /// `func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType)` (required)
    func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType)
    /// `optional func pushRegistry(_ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload, for type: PKPushType, completion: @escaping @Sendable () -> Void)`
    func pushRegistry(_ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload, for type: PKPushType,
                      completion: @escaping @Sendable () -> Void)
    /// `optional func pushRegistry(_ registry: PKPushRegistry, didInvalidatePushTokenFor type: PKPushType)`
    func pushRegistry(_ registry: PKPushRegistry, didInvalidatePushTokenFor type: PKPushType)
}
