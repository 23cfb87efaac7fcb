// PortariaClientAppleShared: the adapters both the app and the Notification Service
// Extension link — only API an app extension may use (no CallKit, no
// UIApplication.shared, no BGTaskScheduler; the extension target builds with
// APPLICATION_EXTENSION_API_ONLY).
//
//   KeychainSecureStore          SecureStore over the Keychain (shared access group)
//   KeychainBiometricGate        BiometricGate: a `.biometryCurrentSet` Keychain item, LAContext
//   UserDefaultsPreferenceStore  PreferenceStore over the App Group's UserDefaults
//   NotificationServiceWorker    the Notification Service Extension (photo + receipt)
//
// Every file is wrapped in `#if canImport(…)`: on Linux the module is empty.
