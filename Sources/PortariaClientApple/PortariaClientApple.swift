// PortariaClientApple: thin adapters between PortariaClient and Apple's frameworks, for the
// app target only.
//
//   CallService                  CXProvider / CXCallController / PKPushRegistry; owns the call
//                                screens' CallViewModels; hands every effect to
//                                CallMediaController. The WebRTC engine itself is in the app
//                                target (Apps/iOS/App/WebRTCMediaEngine.swift, decision 0034).
//   NotificationCenterAdapter    UNUserNotificationCenter categories + responses, BGTaskScheduler
//   URLSessionRealtimeTransport  RealtimeTransport over URLSessionWebSocketTask
//
// What the Notification Service Extension links as well is PortariaClientAppleShared
// (KeychainSecureStore, KeychainBiometricGate, UserDefaultsPreferenceStore,
// NotificationServiceWorker): extension-safe API only.
//
// Every file is wrapped in `#if canImport(…)`: on Linux the module is empty and `swift
// build` is unaffected. scripts/ios-typecheck compiles them in Swift 6 mode against
// stand-ins written from Apple's documented signatures (docs/ios.md says what that proves
// and what only a Mac and a device can). Decisions are not made here: routes,
// registration, which button goes through CallKit, what a CallKit error or a notification
// button means are PortariaClient's, tested on Linux.
