// Stand-in for the parts of CallKit our iOS files use, from
// developer.apple.com/documentation/callkit (CXProvider, CXProviderConfiguration,
// CXCallUpdate, CXHandle, CXCallController, CXTransaction, the actions,
// CXProviderDelegate, CXErrorCodeIncomingCallError). Bodies trap.
//
// CXProviderDelegate's methods other than `providerDidReset(_:)` are optional in the
// SDK; here the ones the app implements are required, so a near-miss signature (which
// the system would silently never call) fails the type-check instead.
@_exported import AVFAudio
@_exported import Foundation   // as the framework's umbrella header imports Foundation

/// developer.apple.com/documentation/callkit/cxhandle
open class CXHandle: NSObject {
    /// developer.apple.com/documentation/callkit/cxhandle/handletype
    public enum HandleType: Int, Sendable {
        case generic = 1, phoneNumber = 2, emailAddress = 3
    }
    /// `init(type: CXHandle.HandleType, value: String)`
    public init(type: HandleType, value: String) {}
    open var type: HandleType { fatalError("stand-in") }
    open var value: String { fatalError("stand-in") }
}

/// developer.apple.com/documentation/callkit/cxcallupdate
open class CXCallUpdate: NSObject {
    public override init() {}
    open var remoteHandle: CXHandle?
    open var localizedCallerName: String?
    open var supportsHolding = false
    open var supportsGrouping = false
    open var supportsUngrouping = false
    open var supportsDTMF = false
    open var hasVideo = false
}

/// developer.apple.com/documentation/callkit/cxcallendedreason
public enum CXCallEndedReason: Int, Sendable {
    case failed = 1, remoteEnded = 2, unanswered = 3, answeredElsewhere = 4, declinedElsewhere = 5
}

/// developer.apple.com/documentation/callkit/cxerrorcodeincomingcallerror — the error
/// `reportNewIncomingCall`'s completion passes (`error as? CXErrorCodeIncomingCallError`,
/// then `.code`).
public struct CXErrorCodeIncomingCallError: Error, Sendable {
    /// developer.apple.com/documentation/callkit/cxerrorcodeincomingcallerror/code
    public enum Code: Int, Sendable {
        case unknown = 0
        case unentitled = 1
        case callUUIDAlreadyExists = 2
        case filteredByDoNotDisturb = 3
        case filteredByBlockList = 4
        case filteredDuringRestrictedSharingMode = 5
        case callIsProtected = 6
    }
    public let code: Code
    public init(_ code: Code) { self.code = code }
    public static var unknown: Code { .unknown }
    public static var unentitled: Code { .unentitled }
    public static var callUUIDAlreadyExists: Code { .callUUIDAlreadyExists }
    public static var filteredByDoNotDisturb: Code { .filteredByDoNotDisturb }
    public static var filteredByBlockList: Code { .filteredByBlockList }
}

/// developer.apple.com/documentation/callkit/cxproviderconfiguration
open class CXProviderConfiguration: NSObject {
    /// `init()` (iOS 14)
    public override init() {}
    open var localizedName: String? { fatalError("stand-in") }
    /// `var ringtoneSound: String?` — a sound file in the app bundle.
    open var ringtoneSound: String?
    /// `var iconTemplateImageData: Data?` — PNG, 40×40 pt, alpha only.
    open var iconTemplateImageData: Data?
    open var maximumCallGroups: Int = 2
    open var maximumCallsPerCallGroup: Int = 5
    open var includesCallsInRecents = true
    open var supportsVideo = false
    open var supportedHandleTypes: Set<CXHandle.HandleType> = []
}

/// developer.apple.com/documentation/callkit/cxaction
open class CXAction: NSObject {
    open var isComplete: Bool { fatalError("stand-in") }
    open var timeoutDate: Date { fatalError("stand-in") }
    /// `func fulfill()`
    open func fulfill() { fatalError("stand-in") }
    /// `func fail()`
    open func fail() { fatalError("stand-in") }
}

/// developer.apple.com/documentation/callkit/cxcallaction
open class CXCallAction: CXAction {
    /// `init(call callUUID: UUID)`
    public init(call callUUID: UUID) {}
    open var callUUID: UUID { fatalError("stand-in") }
}

/// developer.apple.com/documentation/callkit/cxanswercallaction
open class CXAnswerCallAction: CXCallAction {
    /// `func fulfill(withDateConnected dateConnected: Date)`
    open func fulfill(withDateConnected dateConnected: Date) { fatalError("stand-in") }
}

/// developer.apple.com/documentation/callkit/cxendcallaction
open class CXEndCallAction: CXCallAction {
    /// `func fulfill(withDateEnded dateEnded: Date)`
    open func fulfill(withDateEnded dateEnded: Date) { fatalError("stand-in") }
}

/// developer.apple.com/documentation/callkit/cxsetmutedcallaction
open class CXSetMutedCallAction: CXCallAction {
    /// `init(call callUUID: UUID, muted: Bool)`
    public init(call callUUID: UUID, muted: Bool) { super.init(call: callUUID) }
    open var isMuted: Bool { fatalError("stand-in") }
}

/// developer.apple.com/documentation/callkit/cxtransaction
open class CXTransaction: NSObject {
    /// `convenience init(action: CXAction)`
    public init(action: CXAction) {}
    public init(actions: [CXAction]) {}
}

/// developer.apple.com/documentation/callkit/cxcallcontroller
open class CXCallController: NSObject {
    /// `convenience init()`
    public override init() {}
    /// `init(queue: dispatch_queue_t)`
    public init(queue: DispatchQueue) {}
    /// `func request(_ transaction: CXTransaction, completion: @escaping @Sendable ((any Error)?) -> Void)`
    open func request(_ transaction: CXTransaction, completion: @escaping @Sendable ((any Error)?) -> Void) { fatalError("stand-in") }
}

/// developer.apple.com/documentation/callkit/cxprovider
open class CXProvider: NSObject {
    /// `init(configuration: CXProviderConfiguration)`
    public init(configuration: CXProviderConfiguration) { self.configuration = configuration }
    open var configuration: CXProviderConfiguration
    /// `func setDelegate(_ delegate: (any CXProviderDelegate)?, queue: DispatchQueue?)`
    open func setDelegate(_ delegate: (any CXProviderDelegate)?, queue: DispatchQueue?) { fatalError("stand-in") }
    /// `func reportNewIncomingCall(with UUID: UUID, update: CXCallUpdate, completion: @escaping @Sendable ((any Error)?) -> Void)`
    open func reportNewIncomingCall(with UUID: UUID, update: CXCallUpdate,
                                    completion: @escaping @Sendable ((any Error)?) -> Void) { fatalError("stand-in") }
    /// `func reportCall(with UUID: UUID, updated update: CXCallUpdate)`
    open func reportCall(with UUID: UUID, updated update: CXCallUpdate) { fatalError("stand-in") }
    /// `func reportCall(with UUID: UUID, endedAt dateEnded: Date?, reason endedReason: CXCallEndedReason)`
    open func reportCall(with UUID: UUID, endedAt dateEnded: Date?, reason endedReason: CXCallEndedReason) { fatalError("stand-in") }
    /// `func invalidate()`
    open func invalidate() { fatalError("stand-in") }
}

/// developer.apple.com/documentation/callkit/cxproviderdelegate
public protocol CXProviderDelegate: NSObjectProtocol {
    /// `func providerDidReset(_ provider: CXProvider)` (required)
    func providerDidReset(_ provider: CXProvider)
    /// `optional func provider(_ provider: CXProvider, perform action: CXAnswerCallAction)`
    func provider(_ provider: CXProvider, perform action: CXAnswerCallAction)
    /// `optional func provider(_ provider: CXProvider, perform action: CXEndCallAction)`
    func provider(_ provider: CXProvider, perform action: CXEndCallAction)
    /// `optional func provider(_ provider: CXProvider, perform action: CXSetMutedCallAction)`
    func provider(_ provider: CXProvider, perform action: CXSetMutedCallAction)
    /// `optional func provider(_ provider: CXProvider, timedOutPerforming action: CXAction)`
    func provider(_ provider: CXProvider, timedOutPerforming action: CXAction)
    /// `optional func provider(_ provider: CXProvider, didActivate audioSession: AVAudioSession)`
    func provider(_ provider: CXProvider, didActivate audioSession: AVAudioSession)
    /// `optional func provider(_ provider: CXProvider, didDeactivate audioSession: AVAudioSession)`
    func provider(_ provider: CXProvider, didDeactivate audioSession: AVAudioSession)
}
