import Foundation
import PortariaCore

// The notification categories and what a tap on a notification means, as plain values:
// the iOS shell turns `NotificationCategories.all` into `UNNotificationCategory`s and
// hands every `UNNotificationResponse` to `NotificationResponseRouter`; an Android shell
// can do the same with `Notification.Action`s. Nothing here imports UserNotifications.

/// One button of a notification.
public struct NotificationActionSpec: Sendable, Equatable {
    /// `NotificationActionID` (the resolve actions are `ResolutionAction` raw values).
    public var identifier: String
    /// pt-BR, as the lock screen shows it.
    public var title: String
    /// Red (a refusal).
    public var isDestructive: Bool
    /// Opens the app (answering a visit needs the video); the others run in the background.
    public var opensApp: Bool
    /// Needs the phone unlocked: a stranger holding a locked phone must not let anyone in.
    public var requiresUnlockedDevice: Bool

    /// Runs without opening the app (a decision from the lock screen).
    static func inBackground(_ identifier: String, _ title: String, isDestructive: Bool = false,
                             requiresUnlockedDevice: Bool = false) -> NotificationActionSpec {
        NotificationActionSpec(identifier: identifier, title: title, isDestructive: isDestructive, opensApp: false,
                               requiresUnlockedDevice: requiresUnlockedDevice)
    }

    /// Opens the app, which needs the phone unlocked.
    static func opensApp(_ identifier: String, _ title: String) -> NotificationActionSpec {
        NotificationActionSpec(identifier: identifier, title: title, isDestructive: false, opensApp: true,
                               requiresUnlockedDevice: true)
    }
}

/// One category the server names in `aps.category`.
public struct NotificationCategorySpec: Sendable, Equatable {
    public var identifier: String
    public var actions: [NotificationActionSpec]
    /// What VoiceOver reads for the group when notifications are hidden.
    public var hiddenPreviewsSummary: String
}

public enum NotificationCategories {
    /// `DELIVERY`: Autorizar subida / Deixar na portaria / Recusar, resolved without opening
    /// the app (fase-5 §4). Letting a courier up needs an unlocked phone; leaving the parcel
    /// downstairs or refusing does not.
    public static let delivery = NotificationCategorySpec(
        identifier: NotificationCategoryID.delivery,
        actions: [.inBackground(NotificationActionID.authorize, "Autorizar subida", requiresUnlockedDevice: true),
                  .inBackground(NotificationActionID.leaveAtConcierge, "Deixar na portaria"),
                  .inBackground(NotificationActionID.deny, "Recusar", isDestructive: true)],
        hiddenPreviewsSummary: "Entrega na portaria")

    /// `VISIT`: an alert ring (an iPhone without a VoIP token). Atender opens the call
    /// screen (the visitor's video decides); Negar refuses from the lock screen.
    public static let visit = NotificationCategorySpec(
        identifier: NotificationCategoryID.visit,
        actions: [.opensApp(NotificationActionID.answer, "Atender"),
                  .inBackground(NotificationActionID.deny, "Negar", isDestructive: true)],
        hiddenPreviewsSummary: "Visitante na portaria")

    public static let all = [delivery, visit]
}

/// What the shell must do for a notification response.
public enum NotificationIntent: Sendable, Equatable {
    /// Put the decision in the `ResolveQueue` (`via: notification`) and send it inside a
    /// background task; show the queue's sentence as a local notification if it is not ✓.
    case resolve(visitID: String, action: ResolutionAction)
    /// Open the app on the visit's call screen (Atender on an alert ring).
    case openCall(visitID: String)
    /// Open the app on the visit's detail (a plain tap on the notification).
    case openVisit(visitID: String)
    /// Nothing to do (dismissed, an unknown action, an unreadable payload).
    case ignore
}

/// Maps a tapped notification (its action identifier and payload) to an intent.
public enum NotificationResponseRouter {
    /// `UNNotificationDefaultActionIdentifier` / `UNNotificationDismissActionIdentifier`
    /// (their documented values), so this file needs no UserNotifications import.
    public static let defaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
    public static let dismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"

    public static func intent(actionIdentifier: String, payload: JSONValue) -> NotificationIntent {
        guard let decoded = try? PushPayload.decode(payload) else { return .ignore }
        let visitID: String
        let kind: VisitKind
        switch decoded {
        case .delivery(let push):
            visitID = push.visitID
            kind = .delivery
        case .ring(let push):
            visitID = push.visitID
            kind = push.kind
        case .deliveryResolved(let push):
            // Already decided: a tap only opens the visit.
            return actionIdentifier == dismissActionIdentifier ? .ignore : .openVisit(visitID: push.visitID)
        case .ringCancelled, .test, .unknown:
            return .ignore
        }
        switch actionIdentifier {
        case dismissActionIdentifier:
            return .ignore
        case defaultActionIdentifier:
            // A tap on a ringing visit goes to the call; on a delivery, to its detail.
            return kind == .visit ? .openCall(visitID: visitID) : .openVisit(visitID: visitID)
        case NotificationActionID.answer where kind == .visit:
            return .openCall(visitID: visitID)
        default:
            guard let action = ResolutionAction(rawValue: actionIdentifier) else { return .ignore }
            // Only the buttons the category offers: a forged or stale identifier (authorize
            // on an alert ring, leave_at_concierge on a visit) does nothing.
            let category = kind == .delivery ? NotificationCategories.delivery : NotificationCategories.visit
            guard category.actions.contains(where: { $0.identifier == actionIdentifier }) else { return .ignore }
            return .resolve(visitID: visitID, action: action)
        }
    }

    /// The same from the notification's `userInfo` serialized as JSON.
    public static func intent(actionIdentifier: String, payloadJSON: Data) -> NotificationIntent {
        guard let payload = try? JSONCoding.decoder().decode(JSONValue.self, from: payloadJSON) else { return .ignore }
        return intent(actionIdentifier: actionIdentifier, payload: payload)
    }
}
