import Foundation
import PortariaClient
import PortariaClientAppleShared
import UserNotifications

/// Runs for every alert with `mutable-content: 1` (deliveries, alert rings, resolution
/// notices, push tests): acknowledges receipt with the push's `ack_token` and attaches the
/// visitor's photo. The work is `NotificationServiceWorker` / `NotificationServicePlan`.
final class NotificationService: UNNotificationServiceExtension {
    private let lock = NSLock()
    private var contentHandler: ((UNNotificationContent) -> Void)?
    private var original: UNNotificationContent?
    private var work: Task<Void, Never>?

    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        self.contentHandler = contentHandler
        original = request.content
        guard let base = (Bundle.main.object(forInfoDictionaryKey: "PortariaServerURL") as? String).flatMap(URL.init(string:)) else {
            contentHandler(request.content)
            return
        }
        let worker = NotificationServiceWorker(baseURL: base, secure: KeychainSecureStore(), preferences: UserDefaultsPreferenceStore())
        // iOS allows ~30 s; finish well before serviceExtensionTimeWillExpire.
        let deadline = Date().addingTimeInterval(25)
        work = Task { [weak self] in
            let content = await worker.process(request, deadline: deadline)
            self?.finish(content)
        }
    }

    override func serviceExtensionTimeWillExpire() {
        work?.cancel()
        if let original { finish(original) }
    }

    private func finish(_ content: UNNotificationContent) {
        // Exactly once: whichever of the work and the expiry comes first (two threads).
        let handler: ((UNNotificationContent) -> Void)? = lock.withLock {
            defer { contentHandler = nil }
            return contentHandler
        }
        handler?(content)
    }
}
