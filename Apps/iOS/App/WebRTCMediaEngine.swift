import AVFoundation
import PortariaClient
import PortariaCore
import UIKit
import WebRTC

// `CallMediaEngine` over Google's WebRTC framework (the binary Swift package pinned in
// project.yml). Every decision — when to answer, which candidates leave and when, the
// deadline, how a call ends and what the resident reads — is `CallMediaSession`'s, tested
// on Linux (decision 0034); this file maps its few calls onto the framework.
//
// It lives in the app target, not in PortariaClientApple: a package target can import
// only what its manifest declares, and the root package cannot declare a WebRTC package
// (no package can be fetched where the server is built and tested).
//
// Type-checked on Linux against a stand-in written from the framework's Objective-C headers
// (scripts/ios-typecheck); never linked against the binary or run (docs/ios.md).

/// The two views the call screen shows: the visitor full screen, the self-preview in the corner.
@MainActor
final class VideoViews {
    let remote = RTCMTLVideoView()
    let local = RTCMTLVideoView()

    init() {
        remote.videoContentMode = .scaleAspectFill
        local.videoContentMode = .scaleAspectFill
        // The front camera shown as a mirror, as every video-call app does.
        local.transform = CGAffineTransform(scaleX: -1, y: 1)
    }
}

enum WebRTCEngineError: Error {
    case noPeerConnection
    case noAnswer
}

@MainActor
final class WebRTCMediaEngine: CallMediaEngine {
    let views: VideoViews
    private let factory: RTCPeerConnectionFactory
    private var capturer: RTCCameraVideoCapturer?

    init(views: VideoViews) {
        self.views = views
        RTCInitializeSSL()
        factory = RTCPeerConnectionFactory(encoderFactory: RTCDefaultVideoEncoderFactory(),
                                           decoderFactory: RTCDefaultVideoDecoderFactory())
        // WebRTC applies its own session configuration when its audio unit starts, over
        // what CallService set for CallKit: give it the same one (speaker, video chat).
        let session = RTCAudioSessionConfiguration.webRTC()
        session.category = AVAudioSession.Category.playAndRecord.rawValue
        session.mode = AVAudioSession.Mode.videoChat.rawValue
        session.categoryOptions = [.allowBluetooth, .defaultToSpeaker]
        RTCAudioSessionConfiguration.setWebRTC(session)
        // CallKit owns the audio session: WebRTC must not start its audio unit until CallKit
        // has activated the session (provider(_:didActivate:)), or the call has no sound.
        let audio = RTCAudioSession.sharedInstance()
        audio.useManualAudio = true
        audio.isAudioEnabled = false
    }

    func makePeerConnection(iceServers: [ICEServer],
                            events: @escaping @Sendable (PeerConnectionEvent) -> Void) async throws -> any PeerConnection {
        let configuration = RTCConfiguration()
        configuration.sdpSemantics = .unifiedPlan
        configuration.iceServers = iceServers.map { RTCIceServer(urlStrings: $0.urls, username: $0.username, credential: $0.credential) }
        configuration.bundlePolicy = .maxBundle
        configuration.rtcpMuxPolicy = .require
        let delegate = PeerDelegate(events: events)
        let constraints = RTCMediaConstraints(mandatoryConstraints: nil, optionalConstraints: nil)
        guard let connection = factory.peerConnection(with: configuration, constraints: constraints, delegate: delegate) else {
            throw WebRTCEngineError.noPeerConnection
        }
        return WebRTCPeerConnection(connection: connection, delegate: delegate, engine: self)
    }

    /// The call's audio configuration (play and record, video chat, speaker, Bluetooth),
    /// made through `RTCAudioSession` as WebRTC requires — lock, set, unlock — so its
    /// audio unit knows the session's state. Configured only: CallKit activates the
    /// session (`provider(_:didActivate:)` → `setAudioActive`).
    static func configureCallAudio() {
        let audio = RTCAudioSession.sharedInstance()
        audio.lockForConfiguration()
        defer { audio.unlockForConfiguration() }
        try? audio.setCategory(.playAndRecord, with: [.allowBluetooth, .defaultToSpeaker])
        try? audio.setMode(.videoChat)
    }

    /// Called when CallKit activated (after the server accepted the answer) or deactivated
    /// the session: WebRTC's audio unit follows it.
    func setAudioActive(_ active: Bool) async {
        let audio = RTCAudioSession.sharedInstance()
        if active {
            audio.audioSessionDidActivate(AVAudioSession.sharedInstance())
        } else {
            audio.audioSessionDidDeactivate(AVAudioSession.sharedInstance())
        }
        audio.isAudioEnabled = active
    }

    /// Microphone, and the front camera when there is one (drawn into the self-preview).
    fileprivate func localTracks() -> (audio: RTCAudioTrack, video: RTCVideoTrack?) {
        let noConstraints = RTCMediaConstraints(mandatoryConstraints: nil, optionalConstraints: nil)
        let audio = factory.audioTrack(with: factory.audioSource(with: noConstraints), trackId: "audio0")
        guard let camera = RTCCameraVideoCapturer.captureDevices().first(where: { $0.position == .front }),
              let format = Self.format(for: camera) else { return (audio, nil) }
        let source = factory.videoSource()
        let capturer = RTCCameraVideoCapturer(delegate: source)
        capturer.startCapture(with: camera, format: format, fps: 30)
        self.capturer = capturer
        let video = factory.videoTrack(with: source, trackId: "video0")
        video.add(views.local)
        return (audio, video)
    }

    fileprivate func stopCamera() {
        capturer?.stopCapture()
        capturer = nil
    }

    /// The smallest format at least 640 pixels wide: the gate page asks for 640×480; more
    /// costs battery and the visitor's mobile data for nothing.
    private static func format(for camera: AVCaptureDevice) -> AVCaptureDevice.Format? {
        let formats = RTCCameraVideoCapturer.supportedFormats(for: camera)
            .sorted { CMVideoFormatDescriptionGetDimensions($0.formatDescription).width
                < CMVideoFormatDescriptionGetDimensions($1.formatDescription).width }
        return formats.first { CMVideoFormatDescriptionGetDimensions($0.formatDescription).width >= 640 } ?? formats.last
    }
}

/// One `RTCPeerConnection`, the answering side.
@MainActor
final class WebRTCPeerConnection: PeerConnection {
    private let connection: RTCPeerConnection
    /// RTCPeerConnection holds its delegate weakly.
    private let delegate: PeerDelegate
    private let engine: WebRTCMediaEngine
    private var audioTrack: RTCAudioTrack?
    private var remoteVideo: RTCVideoTrack?

    init(connection: RTCPeerConnection, delegate: PeerDelegate, engine: WebRTCMediaEngine) {
        self.connection = connection
        self.delegate = delegate
        self.engine = engine
    }

    func answer(offer sdp: String) async throws -> String {
        try await setDescription(RTCSessionDescription(type: .offer, sdp: sdp), local: false)
        if audioTrack == nil {
            // After the offer: each track takes the transceiver the offer created for its
            // kind, so the answer sends and receives on both.
            let tracks = engine.localTracks()
            connection.add(tracks.audio, streamIds: ["resident"])
            if let video = tracks.video { connection.add(video, streamIds: ["resident"]) }
            audioTrack = tracks.audio
        }
        if remoteVideo == nil,
           let track = connection.transceivers.first(where: { $0.mediaType == .video })?.receiver.track as? RTCVideoTrack {
            track.add(engine.views.remote)
            remoteVideo = track
        }
        let constraints = RTCMediaConstraints(mandatoryConstraints: nil, optionalConstraints: nil)
        let answer: RTCSessionDescription = try await withCheckedThrowingContinuation { continuation in
            connection.answer(for: constraints) { description, error in
                if let description { continuation.resume(returning: description) }
                else { continuation.resume(throwing: error ?? WebRTCEngineError.noAnswer) }
            }
        }
        try await setDescription(answer, local: true)
        return answer.sdp
    }

    private func setDescription(_ description: RTCSessionDescription, local: Bool) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let done: (Error?) -> Void = { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
            if local {
                connection.setLocalDescription(description, completionHandler: done)
            } else {
                connection.setRemoteDescription(description, completionHandler: done)
            }
        }
    }

    func addRemoteCandidate(_ candidate: ICECandidate?) async {
        // The framework has no end-of-candidates call; "" ends one m-line, nothing to add.
        guard let candidate, !candidate.candidate.isEmpty else { return }
        let ice = RTCIceCandidate(sdp: candidate.candidate, sdpMLineIndex: Int32(candidate.sdpMLineIndex ?? 0),
                                  sdpMid: candidate.sdpMid)
        // A candidate WebRTC refuses is not a reason to end the call (the session's rule).
        connection.add(ice) { _ in }
    }

    func setMuted(_ muted: Bool) async {
        audioTrack?.isEnabled = !muted
    }

    func close() async {
        engine.stopCamera()
        remoteVideo?.remove(engine.views.remote)
        remoteVideo = nil
        audioTrack = nil
        connection.close()
    }
}

/// Forwards what the connection reports (on WebRTC's signalling thread) to the session.
final class PeerDelegate: NSObject, RTCPeerConnectionDelegate, @unchecked Sendable {
    private let events: @Sendable (PeerConnectionEvent) -> Void

    init(events: @escaping @Sendable (PeerConnectionEvent) -> Void) {
        self.events = events
    }

    func peerConnection(_ peerConnection: RTCPeerConnection, didGenerate candidate: RTCIceCandidate) {
        events(.localCandidate(ICECandidate(candidate: candidate.sdp, sdpMid: candidate.sdpMid,
                                            sdpMLineIndex: Int(candidate.sdpMLineIndex))))
    }

    func peerConnection(_ peerConnection: RTCPeerConnection, didChange newState: RTCIceGatheringState) {
        if newState == .complete { events(.localCandidate(nil)) }
    }

    func peerConnection(_ peerConnection: RTCPeerConnection, didChange newState: RTCPeerConnectionState) {
        let state: PeerConnectionState
        switch newState {
        case .new: state = .new
        case .connecting: state = .connecting
        case .connected: state = .connected
        case .disconnected: state = .disconnected
        case .failed: state = .failed
        case .closed: state = .closed
        @unknown default: return
        }
        events(.stateChanged(state))
    }

    // Required by the protocol; the call needs none of them (unified plan: tracks are read
    // from the transceivers after the offer).
    func peerConnection(_ peerConnection: RTCPeerConnection, didChange stateChanged: RTCSignalingState) {}
    func peerConnection(_ peerConnection: RTCPeerConnection, didAdd stream: RTCMediaStream) {}
    func peerConnection(_ peerConnection: RTCPeerConnection, didRemove stream: RTCMediaStream) {}
    func peerConnectionShouldNegotiate(_ peerConnection: RTCPeerConnection) {}
    func peerConnection(_ peerConnection: RTCPeerConnection, didChange newState: RTCIceConnectionState) {}
    func peerConnection(_ peerConnection: RTCPeerConnection, didRemove candidates: [RTCIceCandidate]) {}
    func peerConnection(_ peerConnection: RTCPeerConnection, didOpen dataChannel: RTCDataChannel) {}
}
