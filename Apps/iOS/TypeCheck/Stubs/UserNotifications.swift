// Stand-in for the parts of UserNotifications our iOS files use, from
// developer.apple.com/documentation/usernotifications. Bodies trap. The delegate
// methods the app implements are required here (optional in the SDK), so a near-miss
// signature fails the type-check.
@_exported import Foundation   // as the framework's umbrella header imports Foundation

/// developer.apple.com/documentation/usernotifications/unauthorizationoptions
public struct UNAuthorizationOptions: OptionSet, Sendable {
    public var rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let badge = UNAuthorizationOptions(rawValue: 1 << 0)
    public static let sound = UNAuthorizationOptions(rawValue: 1 << 1)
    public static let alert = UNAuthorizationOptions(rawValue: 1 << 2)
    public static let timeSensitive = UNAuthorizationOptions(rawValue: 1 << 8)
}

/// developer.apple.com/documentation/usernotifications/unauthorizationstatus
public enum UNAuthorizationStatus: Int, Sendable {
    case notDetermined = 0, denied = 1, authorized = 2, provisional = 3, ephemeral = 4
}

/// developer.apple.com/documentation/usernotifications/unnotificationsettings
open class UNNotificationSettings: NSObject, @unchecked Sendable {
    open var authorizationStatus: UNAuthorizationStatus { fatalError("stand-in") }
}

/// developer.apple.com/documentation/usernotifications/unnotificationinterruptionlevel
public enum UNNotificationInterruptionLevel: UInt, Sendable {
    case passive = 0, active = 1, timeSensitive = 2, critical = 3
}

/// developer.apple.com/documentation/usernotifications/unnotificationattachment
open class UNNotificationAttachment: NSObject {
    /// `convenience init(identifier: String, url URL: URL, options: [AnyHashable : Any]? = nil) throws`
    public init(identifier: String, url URL: URL, options: [AnyHashable: Any]? = nil) throws {}
}

/// developer.apple.com/documentation/usernotifications/unnotificationcontent
open class UNNotificationContent: NSObject, NSCopying, NSMutableCopying {
    public override init() {}
    open var title: String { fatalError("stand-in") }
    open var body: String { fatalError("stand-in") }
    open var userInfo: [AnyHashable: Any] { fatalError("stand-in") }
    open var attachments: [UNNotificationAttachment] { fatalError("stand-in") }
    open var interruptionLevel: UNNotificationInterruptionLevel { fatalError("stand-in") }
    open func copy(with zone: NSZone? = nil) -> Any { fatalError("stand-in") }
    open func mutableCopy(with zone: NSZone? = nil) -> Any { fatalError("stand-in") }
}

/// developer.apple.com/documentation/usernotifications/unmutablenotificationcontent
open class UNMutableNotificationContent: UNNotificationContent {
    open override var title: String { get { fatalError("stand-in") } set {} }
    open override var body: String { get { fatalError("stand-in") } set {} }
    open override var userInfo: [AnyHashable: Any] { get { fatalError("stand-in") } set {} }
    open override var attachments: [UNNotificationAttachment] { get { fatalError("stand-in") } set {} }
    open override var interruptionLevel: UNNotificationInterruptionLevel { get { fatalError("stand-in") } set {} }
}

/// developer.apple.com/documentation/usernotifications/unnotificationtrigger
open class UNNotificationTrigger: NSObject {}

/// developer.apple.com/documentation/usernotifications/unnotificationrequest
open class UNNotificationRequest: NSObject {
    /// `convenience init(identifier: String, content: UNNotificationContent, trigger: UNNotificationTrigger?)`
    public init(identifier: String, content: UNNotificationContent, trigger: UNNotificationTrigger?) {}
    open var identifier: String { fatalError("stand-in") }
    open var content: UNNotificationContent { fatalError("stand-in") }
}

/// developer.apple.com/documentation/usernotifications/unnotification
open class UNNotification: NSObject {
    open var request: UNNotificationRequest { fatalError("stand-in") }
    open var date: Date { fatalError("stand-in") }
}

/// developer.apple.com/documentation/usernotifications/unnotificationresponse
open class UNNotificationResponse: NSObject {
    open var notification: UNNotification { fatalError("stand-in") }
    open var actionIdentifier: String { fatalError("stand-in") }
}

/// developer.apple.com/documentation/usernotifications/unnotificationactionoptions
public struct UNNotificationActionOptions: OptionSet, Sendable {
    public var rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let authenticationRequired = UNNotificationActionOptions(rawValue: 1 << 0)
    public static let destructive = UNNotificationActionOptions(rawValue: 1 << 1)
    public static let foreground = UNNotificationActionOptions(rawValue: 1 << 2)
}

/// developer.apple.com/documentation/usernotifications/unnotificationaction
open class UNNotificationAction: NSObject {
    /// `convenience init(identifier: String, title: String, options: UNNotificationActionOptions = [])`
    public init(identifier: String, title: String, options: UNNotificationActionOptions = []) {}
}

/// developer.apple.com/documentation/usernotifications/unnotificationcategoryoptions
public struct UNNotificationCategoryOptions: OptionSet, Sendable {
    public var rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let customDismissAction = UNNotificationCategoryOptions(rawValue: 1 << 0)
    public static let hiddenPreviewsShowTitle = UNNotificationCategoryOptions(rawValue: 1 << 2)
}

/// developer.apple.com/documentation/usernotifications/unnotificationcategory
open class UNNotificationCategory: NSObject {
    /// `convenience init(identifier: String, actions: [UNNotificationAction], intentIdentifiers: [String],
    /// hiddenPreviewsBodyPlaceholder: String, options: UNNotificationCategoryOptions = [])`
    public init(identifier: String, actions: [UNNotificationAction], intentIdentifiers: [String],
                hiddenPreviewsBodyPlaceholder: String, options: UNNotificationCategoryOptions = []) {}
}

/// developer.apple.com/documentation/usernotifications/unnotificationpresentationoptions
public struct UNNotificationPresentationOptions: OptionSet, Sendable {
    public var rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let badge = UNNotificationPresentationOptions(rawValue: 1 << 0)
    public static let sound = UNNotificationPresentationOptions(rawValue: 1 << 1)
    public static let list = UNNotificationPresentationOptions(rawValue: 1 << 3)
    public static let banner = UNNotificationPresentationOptions(rawValue: 1 << 4)
}

/// developer.apple.com/documentation/usernotifications/unusernotificationcenter
open class UNUserNotificationCenter: NSObject {
    /// `class func current() -> UNUserNotificationCenter`
    open class func current() -> UNUserNotificationCenter { fatalError("stand-in") }
    /// `weak var delegate: (any UNUserNotificationCenterDelegate)?`
    open weak var delegate: (any UNUserNotificationCenterDelegate)?
    /// `func setNotificationCategories(_ categories: Set<UNNotificationCategory>)`
    open func setNotificationCategories(_ categories: Set<UNNotificationCategory>) { fatalError("stand-in") }
    /// `func requestAuthorization(options: UNAuthorizationOptions = []) async throws -> Bool`
    open func requestAuthorization(options: UNAuthorizationOptions = []) async throws -> Bool { fatalError("stand-in") }
    /// `func notificationSettings() async -> UNNotificationSettings`
    open func notificationSettings() async -> UNNotificationSettings { fatalError("stand-in") }
    /// `func add(_ request: UNNotificationRequest) async throws`
    open func add(_ request: UNNotificationRequest) async throws { fatalError("stand-in") }
    /// `func removeDeliveredNotifications(withIdentifiers identifiers: [String])`
    open func removeDeliveredNotifications(withIdentifiers identifiers: [String]) { fatalError("stand-in") }
}

/// developer.apple.com/documentation/usernotifications/unusernotificationcenterdelegate
public protocol UNUserNotificationCenterDelegate: NSObjectProtocol {
    /// `optional func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
    /// withCompletionHandler completionHandler: @escaping @Sendable () -> Void)`
    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
                                withCompletionHandler completionHandler: @escaping @Sendable () -> Void)
    /// `optional func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification,
    /// withCompletionHandler completionHandler: @escaping @Sendable (UNNotificationPresentationOptions) -> Void)`
    func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification,
                                withCompletionHandler completionHandler: @escaping @Sendable (UNNotificationPresentationOptions) -> Void)
}

/// developer.apple.com/documentation/usernotifications/unnotificationserviceextension
open class UNNotificationServiceExtension: NSObject {
    public override init() {}
    /// `func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void)`
    open func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        fatalError("stand-in")
    }
    /// `func serviceExtensionTimeWillExpire()`
    open func serviceExtensionTimeWillExpire() { fatalError("stand-in") }
}
