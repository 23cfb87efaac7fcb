// PortariaClientApple: thin adapters between PortariaClient and Apple's frameworks.
//
//   CallService                  CXProvider / CXCallController / PKPushRegistry / AVAudioSession;
//                                owns the call screens' CallViewModels; hands every effect to
//                                CallMediaController (iOS only: AVAudioSession is unavailable on
//                                macOS). The WebRTC engine itself is in the app target
//                                (Apps/iOS/App/WebRTCMediaEngine.swift, decision 0034).
//   NotificationCenterAdapter    UNUserNotificationCenter categories + responses, BGTaskScheduler
//   NotificationServiceWorker    the Notification Service Extension (photo + receipt)
//   KeychainSecureStore          SecureStore over the Keychain (shared access group)
//   KeychainBiometricGate        BiometricGate: a `.biometryCurrentSet` Keychain item, LAContext
//   UserDefaultsPreferenceStore  PreferenceStore over the App Group's UserDefaults
//   URLSessionRealtimeTransport  RealtimeTransport over URLSessionWebSocketTask
//
// Every file is wrapped in `#if canImport(…)` (and `os(iOS)` where the API is iOS-only): on
// Linux the module is empty, and `swift build` is unaffected. None of it has been compiled
// here (no Apple SDK on this machine); see docs/ios.md for what was and was not verified.
// Decisions are not made here: routes, registration, which button goes through CallKit,
// what a notification button means are PortariaClient's, tested on Linux.
