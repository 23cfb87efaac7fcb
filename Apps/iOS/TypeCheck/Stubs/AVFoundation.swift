// Stand-in for the parts of AVFoundation our iOS files use (capture devices and their
// permission), from developer.apple.com/documentation/avfoundation/avcapturedevice.
// AVFoundation re-exports AVFAudio and CoreMedia, as the real framework does.
@_exported import AVFAudio
@_exported import CoreMedia
@_exported import Foundation   // as the framework's umbrella header imports Foundation

/// developer.apple.com/documentation/avfoundation/avmediatype
public struct AVMediaType: RawRepresentable, Hashable, Sendable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let video = AVMediaType(rawValue: "vide")
    public static let audio = AVMediaType(rawValue: "soun")
}

/// developer.apple.com/documentation/avfoundation/avauthorizationstatus
public enum AVAuthorizationStatus: Int, Sendable {
    case notDetermined, restricted, denied, authorized
}

/// developer.apple.com/documentation/avfoundation/avcapturedevice
open class AVCaptureDevice: NSObject {
    /// developer.apple.com/documentation/avfoundation/avcapturedevice/position-swift.enum
    public enum Position: Int, Sendable {
        case unspecified, back, front
    }
    /// developer.apple.com/documentation/avfoundation/avcapturedevice/format
    open class Format: NSObject {
        /// `var formatDescription: CMFormatDescription { get }`
        open var formatDescription: CMFormatDescription { fatalError("stand-in") }
    }
    /// `var position: AVCaptureDevice.Position { get }`
    open var position: Position { fatalError("stand-in") }
    /// `var formats: [AVCaptureDevice.Format] { get }`
    open var formats: [Format] { fatalError("stand-in") }
    /// `class func authorizationStatus(for mediaType: AVMediaType) -> AVAuthorizationStatus`
    open class func authorizationStatus(for mediaType: AVMediaType) -> AVAuthorizationStatus { fatalError("stand-in") }
    /// `class func requestAccess(for mediaType: AVMediaType) async -> Bool`
    open class func requestAccess(for mediaType: AVMediaType) async -> Bool { fatalError("stand-in") }
}
