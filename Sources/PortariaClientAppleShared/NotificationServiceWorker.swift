// The Notification Service Extension's work: acknowledge the push with its per-push
// capability and attach the visitor's photo. What to fetch (and what never to do: refresh
// the session) is `NotificationServicePlan`, tested on Linux.
#if canImport(UserNotifications)
import Foundation
import PortariaClient
import PortariaCore
import UserNotifications

public struct NotificationServiceWorker: Sendable {
    public let baseURL: URL
    public let secure: any SecureStore
    public let preferences: any PreferenceStore

    public init(baseURL: URL, secure: any SecureStore, preferences: any PreferenceStore) {
        self.baseURL = baseURL
        self.secure = secure
        self.preferences = preferences
    }

    /// Returns the content to show. Runs the receipt and the photo fetch side by side and
    /// finishes before `deadline` (the extension has ~30 s; the caller's
    /// `serviceExtensionTimeWillExpire` shows the original content if this overruns).
    public func process(_ request: UNNotificationRequest, deadline: Date) async -> UNNotificationContent {
        let content = (request.content.mutableCopy() as? UNMutableNotificationContent) ?? UNMutableNotificationContent()
        let json = (try? JSONSerialization.data(withJSONObject: request.content.userInfo)) ?? Data()
        let payload = (try? JSONCoding.decoder().decode(JSONValue.self, from: json)) ?? .object([:])
        let plan = NotificationServicePlan(payload: payload, accessToken: try? secure.string(for: SessionKeys.jwtToken),
                                           companyID: preferences.string(for: SessionKeys.selectedCompany), now: Date())
        if let body = plan.body { content.body = body }

        // The receipt and the photo side by side. `ack_token` travels in the payload: no
        // session, no Keychain needed for the receipt.
        async let receipt = PushReceiptSender(baseURL: baseURL).acknowledge(json: json, deadline: deadline)
        if let photo = plan.photoRequest, let attachment = await Self.fetchAttachment(photo, baseURL: baseURL, deadline: deadline) {
            content.attachments = [attachment]
        }
        _ = await receipt
        return content
    }

    static func fetchAttachment(_ photo: ClientHTTPRequest, baseURL: URL, deadline: Date) async -> UNNotificationAttachment? {
        guard let url = URL(string: photo.path, relativeTo: baseURL) else { return nil }
        var request = URLRequest(url: url, timeoutInterval: max(1, min(10, deadline.timeIntervalSinceNow)))
        for (name, value) in photo.headers { request.setValue(value, forHTTPHeaderField: name) }
        guard let (data, response) = try? await URLSession.shared.data(for: request),
              let http = response as? HTTPURLResponse, http.statusCode == 200,
              data.count <= NotificationServicePlan.attachmentLimit,
              let ext = NotificationServicePlan.attachmentExtension(contentType: http.value(forHTTPHeaderField: "Content-Type"), body: data)
        else { return nil }
        // The attachment API takes a file URL and moves the file into the notification store.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString).appendingPathExtension(ext)
        guard (try? data.write(to: file, options: [.atomic, .completeFileProtectionUntilFirstUserAuthentication])) != nil else { return nil }
        return try? UNNotificationAttachment(identifier: "photo", url: file, options: nil)
    }
}
#endif
