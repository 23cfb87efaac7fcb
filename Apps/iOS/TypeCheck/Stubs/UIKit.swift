// Stand-in for the parts of UIKit our iOS files use, from
// developer.apple.com/documentation/uikit (UIApplication, UIApplicationDelegate,
// UIView, UIColor, UIImage, UIDevice, the text-input traits). Bodies trap. UIKit
// re-exports CoreGraphics, as the real framework does.
@_exported import CoreGraphics
@_exported import Foundation   // as the framework's umbrella header imports Foundation

/// developer.apple.com/documentation/uikit/uiresponder
@MainActor open class UIResponder: NSObject {}

/// developer.apple.com/documentation/uikit/uicolor
open class UIColor: NSObject, @unchecked Sendable {
    open class var black: UIColor { fatalError("stand-in") }
    open class var clear: UIColor { fatalError("stand-in") }
}

/// developer.apple.com/documentation/uikit/uiimage
open class UIImage: NSObject, @unchecked Sendable {
    /// `init?(data: Data)`
    public init?(data: Data) { fatalError("stand-in") }
    /// `init?(named name: String)`
    public init?(named name: String) { fatalError("stand-in") }
    /// developer.apple.com/documentation/uikit/uiimage/pngdata() — `func pngData() -> Data?`
    open func pngData() -> Data? { fatalError("stand-in") }
}

/// developer.apple.com/documentation/uikit/uiview
@MainActor open class UIView: UIResponder {
    public override init() {}
    public init(frame: CGRect) {}
    /// developer.apple.com/documentation/uikit/uiview/contentmode-swift.enum
    public enum ContentMode: Int, Sendable {
        case scaleToFill, scaleAspectFit, scaleAspectFill, redraw, center
    }
    open var backgroundColor: UIColor?
    open var transform: CGAffineTransform = .identity
    open var contentMode: ContentMode = .scaleToFill
}

/// developer.apple.com/documentation/uikit/uidevice
@MainActor open class UIDevice: NSObject {
    open class var current: UIDevice { fatalError("stand-in") }
    open var model: String { fatalError("stand-in") }
    open var systemVersion: String { fatalError("stand-in") }
}

/// developer.apple.com/documentation/uikit/uibackgroundtaskidentifier
public struct UIBackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let invalid = UIBackgroundTaskIdentifier(rawValue: 0)
}

/// developer.apple.com/documentation/uikit/uibackgroundfetchresult
public enum UIBackgroundFetchResult: UInt, Sendable {
    case newData, noData, failed
}

/// developer.apple.com/documentation/uikit/uiapplication
@MainActor open class UIApplication: UIResponder {
    /// `class var shared: UIApplication { get }`
    open class var shared: UIApplication { fatalError("stand-in") }
    /// developer.apple.com/documentation/uikit/uiapplication/opensettingsurlstring
    public static let openSettingsURLString = "app-settings:"
    /// developer.apple.com/documentation/uikit/uiapplication/launchoptionskey
    public struct LaunchOptionsKey: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
    }
    /// developer.apple.com/documentation/uikit/uiapplication/openexternalurloptionskey
    public struct OpenExternalURLOptionsKey: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
    }
    /// `func open(_ url: URL, options: [UIApplication.OpenExternalURLOptionsKey : Any] = [:],
    /// completionHandler completion: (@MainActor @Sendable (Bool) -> Void)? = nil)`
    open func open(_ url: URL, options: [OpenExternalURLOptionsKey: Any] = [:],
                   completionHandler completion: (@MainActor @Sendable (Bool) -> Void)? = nil) { fatalError("stand-in") }
    /// `func registerForRemoteNotifications()`
    open func registerForRemoteNotifications() { fatalError("stand-in") }
    /// `func unregisterForRemoteNotifications()`
    open func unregisterForRemoteNotifications() { fatalError("stand-in") }
    /// `func beginBackgroundTask(withName taskName: String?, expirationHandler handler: (@MainActor @Sendable () -> Void)? = nil)
    /// -> UIBackgroundTaskIdentifier`
    open func beginBackgroundTask(withName taskName: String?,
                                  expirationHandler handler: (@MainActor @Sendable () -> Void)? = nil) -> UIBackgroundTaskIdentifier {
        fatalError("stand-in")
    }
    /// `func endBackgroundTask(_ identifier: UIBackgroundTaskIdentifier)`
    open func endBackgroundTask(_ identifier: UIBackgroundTaskIdentifier) { fatalError("stand-in") }
}

/// developer.apple.com/documentation/uikit/uiapplicationdelegate. Every method is optional
/// in the SDK; the ones the app implements are required here, so a near-miss signature
/// (which the system would never call) fails the type-check.
@MainActor public protocol UIApplicationDelegate: NSObjectProtocol {
    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool
    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data)
    func application(_ application: UIApplication, didFailToRegisterForRemoteNotificationsWithError error: any Error)
    /// `optional func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable : Any])
    /// async -> UIBackgroundFetchResult`
    func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any]) async -> UIBackgroundFetchResult
}

/// developer.apple.com/documentation/uikit/uikeyboardtype
public enum UIKeyboardType: Int, Sendable {
    case `default`, asciiCapable, numbersAndPunctuation, URL, numberPad, phonePad, namePhonePad, emailAddress, decimalPad
}

/// developer.apple.com/documentation/uikit/uitextcontenttype
public struct UITextContentType: RawRepresentable, Hashable, Sendable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let username = UITextContentType(rawValue: "username")
    public static let password = UITextContentType(rawValue: "password")
    public static let newPassword = UITextContentType(rawValue: "new-password")
    public static let oneTimeCode = UITextContentType(rawValue: "one-time-code")
    public static let telephoneNumber = UITextContentType(rawValue: "tel")
}
