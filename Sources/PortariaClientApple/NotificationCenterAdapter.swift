// UserNotifications: the DELIVERY and VISIT categories, and what a tap on them does.
// The categories and the meaning of each button are `NotificationCategories` and
// `NotificationResponseRouter` (PortariaClient, tested on Linux).
#if canImport(UserNotifications) && canImport(UIKit) && canImport(BackgroundTasks)
import BackgroundTasks
import Foundation
import PortariaClient
import PortariaCore
import UIKit
import UserNotifications

@MainActor
public final class NotificationCenterAdapter: NSObject {
    public struct Dependencies: Sendable {
        public var queue: ResolveQueue
        public var session: SessionManager
        public init(queue: ResolveQueue, session: SessionManager) {
            self.queue = queue
            self.session = session
        }
    }

    /// `BGTaskSchedulerPermittedIdentifiers` in Info.plist.
    public static let syncTaskIdentifier = "br.com.portaria.sync"
    /// How long a tap may keep trying before the app is suspended (iOS grants ~30 s).
    static let backgroundBudget: TimeInterval = 25

    private let dependencies: Dependencies
    /// Opens the app on a visit (call screen or detail): `ResidentAppModel.open`.
    public var open: @MainActor (NotificationIntent) -> Void = { _ in }

    public init(dependencies: Dependencies) {
        self.dependencies = dependencies
        super.init()
    }

    /// Registers the categories and becomes the delegate. Call in
    /// `application(_:didFinishLaunchingWithOptions:)`, before it returns, so a tap that
    /// launched the app is delivered.
    public func install() {
        let center = UNUserNotificationCenter.current()
        center.delegate = self
        center.setNotificationCategories(Set(NotificationCategories.all.map(Self.category)))
    }

    public func requestAuthorization() async -> Bool {
        (try? await UNUserNotificationCenter.current().requestAuthorization(options: [.alert, .sound, .badge])) ?? false
    }

    /// Nonisolated: it only builds values, and `map` takes a nonisolated function (a
    /// main-actor static method passed there would not convert).
    nonisolated static func category(_ spec: NotificationCategorySpec) -> UNNotificationCategory {
        let actions = spec.actions.map { action in
            var options: UNNotificationActionOptions = []
            if action.isDestructive { options.insert(.destructive) }
            if action.opensApp { options.insert(.foreground) }
            if action.requiresUnlockedDevice { options.insert(.authenticationRequired) }
            return UNNotificationAction(identifier: action.identifier, title: action.title, options: options)
        }
        return UNNotificationCategory(identifier: spec.identifier, actions: actions, intentIdentifiers: [],
                                      hiddenPreviewsBodyPlaceholder: spec.hiddenPreviewsSummary, options: [])
    }

    /// Sends one decision from a notification button while iOS gives us background time.
    /// The decision is on disk (`ResolveQueue.tap`) before anything is sent, so running out
    /// of time only delays it; the resident is told either way — never silence.
    func resolve(visitID: String, action: ResolutionAction) async {
        let background = BackgroundTask(name: "resolve \(visitID)")
        defer { background.end() }
        let company = await dependencies.session.selectedCompanyID
        let sentence: String
        do {
            let report = try await dependencies.queue.resolve(visitID: visitID, action: action, via: .notification, companyID: company,
                                                             until: Date().addingTimeInterval(Self.backgroundBudget))
            sentence = report.sentence
            if !report.isFinished { Self.scheduleSync() }
        } catch {
            sentence = ClientText.decisionNotStored
        }
        await Self.tell(sentence, visitID: visitID)
    }

    /// Replaces the visit's notification (same identifier as the server's collapse id) with
    /// what happened: "Entrega: deixar na portaria ✓", "Maria já autorizou às 14:32",
    /// "Sem conexão… será enviada assim que possível".
    static func tell(_ sentence: String, visitID: String) async {
        let content = UNMutableNotificationContent()
        content.title = ClientText.appTitle
        content.body = sentence
        content.interruptionLevel = .passive
        let request = UNNotificationRequest(identifier: visitID, content: content, trigger: nil)
        try? await UNUserNotificationCenter.current().add(request)
    }

    // MARK: Background sync of queued decisions

    /// Call before the app finishes launching.
    ///
    /// The launch handler runs on the main queue (`using: .main`): it is formed here, on
    /// the main actor, so Swift 6 checks at run time that it runs there — with `nil` the
    /// system would call it on a background queue and that check would trap.
    public func registerBackgroundSync() {
        let queue = dependencies.queue
        _ = BGTaskScheduler.shared.register(forTaskWithIdentifier: Self.syncTaskIdentifier, using: .main) { task in
            let work = Task { @MainActor in
                let reports = await queue.sync(until: Date().addingTimeInterval(Self.backgroundBudget))
                for report in reports where report.isFinished { await Self.tell(report.sentence, visitID: report.item.visitID) }
                if reports.contains(where: { !$0.isFinished }) { Self.scheduleSync() }
                task.setTaskCompleted(success: !Task.isCancelled)
            }
            // Called on a queue of the system's choosing: Sendable, touching only the task.
            task.expirationHandler = { @Sendable in work.cancel() }
        }
    }

    static func scheduleSync() {
        let request = BGAppRefreshTaskRequest(identifier: syncTaskIdentifier)
        request.earliestBeginDate = Date().addingTimeInterval(60)
        try? BGTaskScheduler.shared.submit(request)
    }
}

// The completion-handler forms, nonisolated: the system does not promise the main thread
// for these, and the `async` forms have been seen to finish off the main thread under
// Swift 6 (UIKit's "Call must be made on main thread"). What the response means is read
// synchronously into Sendable values; the work hops to the main actor and calls the
// handler when done (the system keeps the app awake until then).
extension NotificationCenterAdapter: UNUserNotificationCenterDelegate {
    public nonisolated func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
                                                  withCompletionHandler completionHandler: @escaping @Sendable () -> Void) {
        let json = (try? JSONSerialization.data(withJSONObject: response.notification.request.content.userInfo)) ?? Data()
        let intent = NotificationResponseRouter.intent(actionIdentifier: response.actionIdentifier, payloadJSON: json)
        Task { @MainActor in
            switch intent {
            case .resolve(let visitID, let action):
                await self.resolve(visitID: visitID, action: action)
            case .openCall, .openVisit:
                self.open(intent)
            case .ignore:
                break
            }
            completionHandler()
        }
    }

    public nonisolated func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification,
                                                  withCompletionHandler completionHandler: @escaping @Sendable (UNNotificationPresentationOptions) -> Void) {
        completionHandler([.banner, .list, .sound])
    }
}

/// `beginBackgroundTask` / `endBackgroundTask`, ended exactly once: by the work, or by the
/// system's expiration handler (which UIKit calls on the main thread, `@MainActor @Sendable`
/// — so the identifier lives in a main-actor object, not a captured `var`).
@MainActor
final class BackgroundTask {
    private var identifier = UIBackgroundTaskIdentifier.invalid

    init(name: String) {
        identifier = UIApplication.shared.beginBackgroundTask(withName: name) { [weak self] in self?.end() }
    }

    func end() {
        guard identifier != .invalid else { return }
        UIApplication.shared.endBackgroundTask(identifier)
        identifier = .invalid
    }
}
#endif
