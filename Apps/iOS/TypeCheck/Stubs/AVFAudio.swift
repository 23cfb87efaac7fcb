// Stand-in for the parts of AVFAudio our iOS files use, from
// developer.apple.com/documentation/avfaudio/avaudiosession (and avaudioplayer,
// avaudioapplication). Bodies trap: the module exists only to type-check against.
@_exported import Foundation   // as the framework's umbrella header imports Foundation

/// developer.apple.com/documentation/avfaudio/avaudiosession
open class AVAudioSession: NSObject {
    /// `class func sharedInstance() -> AVAudioSession`
    open class func sharedInstance() -> AVAudioSession { fatalError("stand-in") }

    /// developer.apple.com/documentation/avfaudio/avaudiosession/category-swift.struct
    public struct Category: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let ambient = Category(rawValue: "AVAudioSessionCategoryAmbient")
        public static let soloAmbient = Category(rawValue: "AVAudioSessionCategorySoloAmbient")
        public static let playback = Category(rawValue: "AVAudioSessionCategoryPlayback")
        public static let record = Category(rawValue: "AVAudioSessionCategoryRecord")
        public static let playAndRecord = Category(rawValue: "AVAudioSessionCategoryPlayAndRecord")
    }

    /// developer.apple.com/documentation/avfaudio/avaudiosession/mode-swift.struct
    public struct Mode: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let `default` = Mode(rawValue: "AVAudioSessionModeDefault")
        public static let voiceChat = Mode(rawValue: "AVAudioSessionModeVoiceChat")
        public static let videoChat = Mode(rawValue: "AVAudioSessionModeVideoChat")
        public static let spokenAudio = Mode(rawValue: "AVAudioSessionModeSpokenAudio")
    }

    /// developer.apple.com/documentation/avfaudio/avaudiosession/categoryoptions-swift.struct
    public struct CategoryOptions: OptionSet, Sendable {
        public var rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let mixWithOthers = CategoryOptions(rawValue: 0x1)
        public static let duckOthers = CategoryOptions(rawValue: 0x2)
        public static let allowBluetooth = CategoryOptions(rawValue: 0x4)
        public static let defaultToSpeaker = CategoryOptions(rawValue: 0x8)
        public static let allowBluetoothA2DP = CategoryOptions(rawValue: 0x20)
    }

    /// developer.apple.com/documentation/avfaudio/avaudiosession/setactiveoptions
    public struct SetActiveOptions: OptionSet, Sendable {
        public var rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 1)
    }

    /// `var category: AVAudioSession.Category { get }`
    open var category: Category { fatalError("stand-in") }
    /// `var mode: AVAudioSession.Mode { get }`
    open var mode: Mode { fatalError("stand-in") }
    /// `var categoryOptions: AVAudioSession.CategoryOptions { get }`
    open var categoryOptions: CategoryOptions { fatalError("stand-in") }
    /// `func setCategory(_ category: AVAudioSession.Category) throws`
    open func setCategory(_ category: Category) throws { fatalError("stand-in") }
    /// `func setCategory(_ category: AVAudioSession.Category, mode: AVAudioSession.Mode, options: AVAudioSession.CategoryOptions = []) throws`
    open func setCategory(_ category: Category, mode: Mode, options: CategoryOptions = []) throws { fatalError("stand-in") }
    /// `func setActive(_ active: Bool, options: AVAudioSession.SetActiveOptions = []) throws`
    open func setActive(_ active: Bool, options: SetActiveOptions = []) throws { fatalError("stand-in") }
}

/// developer.apple.com/documentation/avfaudio/avaudioapplication (iOS 17)
open class AVAudioApplication: NSObject {
    /// developer.apple.com/documentation/avfaudio/avaudioapplication/recordpermission-swift.enum
    public enum recordPermission: Int, Sendable {
        case undetermined, denied, granted
    }
    open class func shared() -> AVAudioApplication { fatalError("stand-in") }
    /// `var recordPermission: AVAudioApplication.recordPermission { get }`
    open var recordPermission: recordPermission { fatalError("stand-in") }
    /// `class func requestRecordPermission() async -> Bool`
    open class func requestRecordPermission() async -> Bool { fatalError("stand-in") }
}

/// developer.apple.com/documentation/avfaudio/avaudioplayer
open class AVAudioPlayer: NSObject {
    /// `init(data: Data) throws`
    public init(data: Data) throws { fatalError("stand-in") }
    /// `init(contentsOf url: URL) throws`
    public init(contentsOf url: URL) throws { fatalError("stand-in") }
    /// `var isPlaying: Bool { get }`
    open var isPlaying: Bool { fatalError("stand-in") }
    /// `var duration: TimeInterval { get }`
    open var duration: TimeInterval { fatalError("stand-in") }
    /// `func play() -> Bool`
    @discardableResult open func play() -> Bool { fatalError("stand-in") }
    /// `func stop()`
    open func stop() { fatalError("stand-in") }
    /// `weak var delegate: (any AVAudioPlayerDelegate)?`
    open weak var delegate: (any AVAudioPlayerDelegate)?
}

/// developer.apple.com/documentation/avfaudio/avaudioplayerdelegate (every method optional).
public protocol AVAudioPlayerDelegate: AnyObject {
    func audioPlayerDidFinishPlaying(_ player: AVAudioPlayer, successfully flag: Bool)
}
extension AVAudioPlayerDelegate {
    public func audioPlayerDidFinishPlaying(_ player: AVAudioPlayer, successfully flag: Bool) {}
}
