// Stand-in for Google WebRTC's Objective-C API as Swift imports it (the `WebRTC`
// framework of the pinned binary package), written from the framework's public headers
// in webrtc/sdk/objc: api/peerconnection/RTCPeerConnection.h, RTCPeerConnectionFactory.h,
// RTCConfiguration.h, RTCIceServer.h, RTCIceCandidate.h, RTCSessionDescription.h,
// RTCMediaConstraints.h, RTCRtpTransceiver.h, RTCRtpReceiver.h, RTCMediaStreamTrack.h,
// RTCAudioTrack.h, RTCVideoTrack.h, RTCVideoSource.h; components/audio/RTCAudioSession.h,
// RTCAudioSessionConfiguration.h; components/capturer/RTCCameraVideoCapturer.h;
// components/renderer/metal/RTCMTLVideoView.h; components/video_codec/
// RTCDefaultVideo{En,De}coderFactory.h; base/RTCSSLAdapter.h. Class names are the
// unprefixed `RTC_OBJC_TYPE` ones the framework ships. Bodies trap.
//
// RTCPeerConnectionDelegate's methods are all required in the header, as here.
import AVFoundation
@_exported import Foundation   // as the framework's umbrella header imports Foundation
import UIKit

/// RTCSSLAdapter.h — `BOOL RTCInitializeSSL(void)`.
@discardableResult public func RTCInitializeSSL() -> Bool { fatalError("stand-in") }

public protocol RTCVideoEncoderFactory: AnyObject {}
public protocol RTCVideoDecoderFactory: AnyObject {}
open class RTCDefaultVideoEncoderFactory: NSObject, RTCVideoEncoderFactory { public override init() {} }
open class RTCDefaultVideoDecoderFactory: NSObject, RTCVideoDecoderFactory { public override init() {} }

/// RTCMediaConstraints.h — `initWithMandatoryConstraints:optionalConstraints:`.
open class RTCMediaConstraints: NSObject {
    public init(mandatoryConstraints: [String: String]?, optionalConstraints: [String: String]?) {}
}

/// RTCIceServer.h — `initWithURLStrings:username:credential:`.
open class RTCIceServer: NSObject {
    public init(urlStrings: [String], username: String?, credential: String?) {}
}

public enum RTCSdpSemantics: Int, Sendable { case planB, unifiedPlan }
public enum RTCBundlePolicy: Int, Sendable { case balanced, maxCompat, maxBundle }
public enum RTCRtcpMuxPolicy: Int, Sendable { case negotiate, require }
public enum RTCSdpType: Int, Sendable { case offer, prAnswer, answer, rollback }
public enum RTCRtpMediaType: Int, Sendable { case audio, video, data, unsupported }
public enum RTCSignalingState: Int, Sendable { case stable, haveLocalOffer, haveLocalPrAnswer, haveRemoteOffer, haveRemotePrAnswer, closed }
public enum RTCIceConnectionState: Int, Sendable { case new, checking, connected, completed, failed, disconnected, closed, count }
public enum RTCIceGatheringState: Int, Sendable { case new, gathering, complete }
public enum RTCPeerConnectionState: Int, Sendable { case new, connecting, connected, disconnected, failed, closed }

/// RTCConfiguration.h
open class RTCConfiguration: NSObject {
    public override init() {}
    open var iceServers: [RTCIceServer] = []
    open var sdpSemantics: RTCSdpSemantics = .unifiedPlan
    open var bundlePolicy: RTCBundlePolicy = .balanced
    open var rtcpMuxPolicy: RTCRtcpMuxPolicy = .require
}

/// RTCSessionDescription.h — `initWithType:sdp:`, `type`, `sdp`.
open class RTCSessionDescription: NSObject {
    public init(type: RTCSdpType, sdp: String) {}
    open var type: RTCSdpType { fatalError("stand-in") }
    open var sdp: String { fatalError("stand-in") }
}

/// RTCIceCandidate.h — `initWithSdp:sdpMLineIndex:sdpMid:`.
open class RTCIceCandidate: NSObject {
    public init(sdp: String, sdpMLineIndex: Int32, sdpMid: String?) {}
    open var sdpMid: String? { fatalError("stand-in") }
    open var sdpMLineIndex: Int32 { fatalError("stand-in") }
    open var sdp: String { fatalError("stand-in") }
}

/// RTCVideoRenderer.h (a protocol the Metal view adopts).
public protocol RTCVideoRenderer: AnyObject {}

/// RTCMTLVideoView.h — a UIView; `videoContentMode`.
@MainActor open class RTCMTLVideoView: UIView, RTCVideoRenderer {
    open var videoContentMode: UIView.ContentMode = .scaleAspectFill
}

/// RTCMediaStreamTrack.h
open class RTCMediaStreamTrack: NSObject {
    open var kind: String { fatalError("stand-in") }
    open var trackId: String { fatalError("stand-in") }
    open var isEnabled: Bool = true
}
/// RTCAudioTrack.h
open class RTCAudioTrack: RTCMediaStreamTrack {}
/// RTCVideoTrack.h — `addRenderer:`, `removeRenderer:`.
open class RTCVideoTrack: RTCMediaStreamTrack {
    open func add(_ renderer: any RTCVideoRenderer) { fatalError("stand-in") }
    open func remove(_ renderer: any RTCVideoRenderer) { fatalError("stand-in") }
}
open class RTCMediaSource: NSObject {}
open class RTCAudioSource: RTCMediaSource {}
/// RTCVideoCapturer.h's delegate, which RTCVideoSource adopts.
public protocol RTCVideoCapturerDelegate: AnyObject {}
open class RTCVideoSource: RTCMediaSource, RTCVideoCapturerDelegate {}
open class RTCMediaStream: NSObject {}
open class RTCDataChannel: NSObject {}
open class RTCRtpSender: NSObject {}

/// RTCRtpReceiver.h — `track`.
open class RTCRtpReceiver: NSObject {
    open var track: RTCMediaStreamTrack? { fatalError("stand-in") }
}
/// RTCRtpTransceiver.h — `mediaType`, `receiver`.
open class RTCRtpTransceiver: NSObject {
    open var mediaType: RTCRtpMediaType { fatalError("stand-in") }
    open var receiver: RTCRtpReceiver { fatalError("stand-in") }
}

/// RTCCameraVideoCapturer.h
open class RTCCameraVideoCapturer: NSObject {
    public init(delegate: any RTCVideoCapturerDelegate) {}
    /// `+ (NSArray<AVCaptureDevice *> *)captureDevices`
    open class func captureDevices() -> [AVCaptureDevice] { fatalError("stand-in") }
    /// `+ (NSArray<AVCaptureDeviceFormat *> *)supportedFormatsForDevice:`
    open class func supportedFormats(for device: AVCaptureDevice) -> [AVCaptureDevice.Format] { fatalError("stand-in") }
    /// `- startCaptureWithDevice:format:fps:`
    open func startCapture(with device: AVCaptureDevice, format: AVCaptureDevice.Format, fps: Int) { fatalError("stand-in") }
    /// `- stopCapture`
    open func stopCapture() { fatalError("stand-in") }
}

/// RTCPeerConnection.h
open class RTCPeerConnection: NSObject {
    open var transceivers: [RTCRtpTransceiver] { fatalError("stand-in") }
    /// `- addTrack:streamIds:` (nullable result)
    @discardableResult open func add(_ track: RTCMediaStreamTrack, streamIds: [String]) -> RTCRtpSender? { fatalError("stand-in") }
    /// `- answerForConstraints:completionHandler:`
    open func answer(for constraints: RTCMediaConstraints,
                     completionHandler: ((RTCSessionDescription?, (any Error)?) -> Void)? = nil) { fatalError("stand-in") }
    /// `- setLocalDescription:completionHandler:`
    open func setLocalDescription(_ sdp: RTCSessionDescription, completionHandler: (((any Error)?) -> Void)? = nil) { fatalError("stand-in") }
    /// `- setRemoteDescription:completionHandler:`
    open func setRemoteDescription(_ sdp: RTCSessionDescription, completionHandler: (((any Error)?) -> Void)? = nil) { fatalError("stand-in") }
    /// `- addIceCandidate:completionHandler:`
    open func add(_ candidate: RTCIceCandidate, completionHandler: @escaping ((any Error)?) -> Void) { fatalError("stand-in") }
    /// `- close`
    open func close() { fatalError("stand-in") }
}

/// RTCPeerConnection.h — RTCPeerConnectionDelegate (all required).
public protocol RTCPeerConnectionDelegate: NSObjectProtocol {
    func peerConnection(_ peerConnection: RTCPeerConnection, didChange stateChanged: RTCSignalingState)
    func peerConnection(_ peerConnection: RTCPeerConnection, didAdd stream: RTCMediaStream)
    func peerConnection(_ peerConnection: RTCPeerConnection, didRemove stream: RTCMediaStream)
    func peerConnectionShouldNegotiate(_ peerConnection: RTCPeerConnection)
    func peerConnection(_ peerConnection: RTCPeerConnection, didChange newState: RTCIceConnectionState)
    func peerConnection(_ peerConnection: RTCPeerConnection, didChange newState: RTCIceGatheringState)
    func peerConnection(_ peerConnection: RTCPeerConnection, didGenerate candidate: RTCIceCandidate)
    func peerConnection(_ peerConnection: RTCPeerConnection, didRemove candidates: [RTCIceCandidate])
    func peerConnection(_ peerConnection: RTCPeerConnection, didOpen dataChannel: RTCDataChannel)
    /// `@optional - peerConnection:didChangeConnectionState:` — implemented by the app, required here.
    func peerConnection(_ peerConnection: RTCPeerConnection, didChange newState: RTCPeerConnectionState)
}

/// RTCPeerConnectionFactory.h
open class RTCPeerConnectionFactory: NSObject {
    public init(encoderFactory: (any RTCVideoEncoderFactory)?, decoderFactory: (any RTCVideoDecoderFactory)?) {}
    open func audioSource(with constraints: RTCMediaConstraints?) -> RTCAudioSource { fatalError("stand-in") }
    open func audioTrack(with source: RTCAudioSource, trackId: String) -> RTCAudioTrack { fatalError("stand-in") }
    open func videoSource() -> RTCVideoSource { fatalError("stand-in") }
    open func videoTrack(with source: RTCVideoSource, trackId: String) -> RTCVideoTrack { fatalError("stand-in") }
    /// `- peerConnectionWithConfiguration:constraints:delegate:` (nullable)
    open func peerConnection(with configuration: RTCConfiguration, constraints: RTCMediaConstraints,
                             delegate: (any RTCPeerConnectionDelegate)?) -> RTCPeerConnection? { fatalError("stand-in") }
}

/// RTCAudioSessionConfiguration.h — `category`/`mode` are AVAudioSession's string constants.
open class RTCAudioSessionConfiguration: NSObject {
    public override init() {}
    open var category: String = ""
    open var categoryOptions: AVAudioSession.CategoryOptions = []
    open var mode: String = ""
    /// `+ (instancetype)webRTCConfiguration`
    open class func webRTC() -> RTCAudioSessionConfiguration { fatalError("stand-in") }
    /// `+ (void)setWebRTCConfiguration:`
    open class func setWebRTC(_ configuration: RTCAudioSessionConfiguration) { fatalError("stand-in") }
}

/// RTCAudioSession.h — the wrapper WebRTC requires apps to configure the session through
/// (lockForConfiguration / set… / unlockForConfiguration), and its CallKit hooks.
open class RTCAudioSession: NSObject {
    open class func sharedInstance() -> RTCAudioSession { fatalError("stand-in") }
    /// "If YES, WebRTC will not initialize the audio unit automatically … the app must set
    /// isAudioEnabled" — for CallKit, which activates the session itself.
    open var useManualAudio = false
    open var isAudioEnabled = false
    open var session: AVAudioSession { fatalError("stand-in") }
    open var isActive: Bool { fatalError("stand-in") }
    open var category: String { fatalError("stand-in") }
    /// `- lockForConfiguration` / `- unlockForConfiguration`
    open func lockForConfiguration() { fatalError("stand-in") }
    open func unlockForConfiguration() { fatalError("stand-in") }
    /// `- setCategory:withOptions:error:`
    open func setCategory(_ category: AVAudioSession.Category, with options: AVAudioSession.CategoryOptions) throws { fatalError("stand-in") }
    /// `- setMode:error:`
    open func setMode(_ mode: AVAudioSession.Mode) throws { fatalError("stand-in") }
    /// `- setActive:error:`
    open func setActive(_ active: Bool) throws { fatalError("stand-in") }
    /// `- setConfiguration:error:`
    open func setConfiguration(_ configuration: RTCAudioSessionConfiguration) throws { fatalError("stand-in") }
    /// `- audioSessionDidActivate:` / `- audioSessionDidDeactivate:` — CallKit's
    /// provider(_:didActivate:) / didDeactivate, forwarded.
    open func audioSessionDidActivate(_ session: AVAudioSession) { fatalError("stand-in") }
    open func audioSessionDidDeactivate(_ session: AVAudioSession) { fatalError("stand-in") }
}
