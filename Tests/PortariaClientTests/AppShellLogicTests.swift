import Foundation
import PortariaClient
import PortariaCore
import Testing

/// The decisions the iOS shell delegates to the core: what a notification button does, what
/// the Notification Service Extension fetches. Remember-me and biometric unlock are
/// `SessionManager`'s (ViewModelTests, SessionManagerTests).
@Suite("iOS shell logic: notification actions, service extension plan")
struct AppShellLogicTests {
    static let delivery: JSONValue = .object([
        "type": "delivery", "push_id": "p-1", "visit_id": "v-1", "unit_label": "A-101", "caller_name": "Rafael", "carrier": "iFood",
        "aps": .object(["category": "DELIVERY", "mutable-content": .number(1)]),
    ])
    static let alertRing: JSONValue = .object([
        "type": "visit.ring", "push_id": "p-2", "visit_id": "v-2", "unit_label": "A-101", "caller_name": "Pedro", "kind": "visit",
        "aps": .object(["category": "VISIT"]),
    ])
    static let resolved: JSONValue = .object([
        "type": "delivery.resolved", "push_id": "p-3", "visit_id": "v-1", "unit_label": "A-101", "action": "authorize",
        "resolved_by_name": "Maria Souza", "via": "notification", "text": "Maria autorizou às 14:32",
    ])

    @Test("the categories the server names, with the spec's pt-BR buttons")
    func categories() {
        #expect(NotificationCategories.all.map(\.identifier) == ["DELIVERY", "VISIT"])
        #expect(NotificationCategories.delivery.actions.map(\.title) == ["Autorizar subida", "Deixar na portaria", "Recusar"])
        #expect(NotificationCategories.delivery.actions.map(\.identifier) == ["authorize", "leave_at_concierge", "deny"])
        // Letting someone up needs an unlocked phone; the refusal is destructive (red).
        #expect(NotificationCategories.delivery.actions[0].requiresUnlockedDevice)
        #expect(NotificationCategories.delivery.actions[2].isDestructive)
        #expect(NotificationCategories.delivery.actions.allSatisfy { !$0.opensApp })
        #expect(NotificationCategories.visit.actions.map(\.title) == ["Atender", "Negar"])
        #expect(NotificationCategories.visit.actions[0].opensApp)
    }

    @Test("a delivery button resolves through the queue; a stale or forged one does nothing")
    func deliveryActions() {
        #expect(NotificationResponseRouter.intent(actionIdentifier: "authorize", payload: Self.delivery) == .resolve(visitID: "v-1", action: .authorize))
        #expect(NotificationResponseRouter.intent(actionIdentifier: "leave_at_concierge", payload: Self.delivery)
                == .resolve(visitID: "v-1", action: .leaveAtConcierge))
        #expect(NotificationResponseRouter.intent(actionIdentifier: "deny", payload: Self.delivery) == .resolve(visitID: "v-1", action: .deny))
        #expect(NotificationResponseRouter.intent(actionIdentifier: NotificationResponseRouter.defaultActionIdentifier, payload: Self.delivery)
                == .openVisit(visitID: "v-1"))
        #expect(NotificationResponseRouter.intent(actionIdentifier: NotificationResponseRouter.dismissActionIdentifier, payload: Self.delivery) == .ignore)
        #expect(NotificationResponseRouter.intent(actionIdentifier: "answer", payload: Self.delivery) == .ignore)
        #expect(NotificationResponseRouter.intent(actionIdentifier: "explode", payload: Self.delivery) == .ignore)
        #expect(NotificationResponseRouter.intent(actionIdentifier: "authorize", payload: .object(["type": "delivery"])) == .ignore)
        #expect(NotificationResponseRouter.intent(actionIdentifier: "authorize", payloadJSON: Data("not json".utf8)) == .ignore)
    }

    @Test("an alert ring: Atender and a tap open the call; Negar resolves; Autorizar is not offered there")
    func visitActions() {
        #expect(NotificationResponseRouter.intent(actionIdentifier: "answer", payload: Self.alertRing) == .openCall(visitID: "v-2"))
        #expect(NotificationResponseRouter.intent(actionIdentifier: NotificationResponseRouter.defaultActionIdentifier, payload: Self.alertRing)
                == .openCall(visitID: "v-2"))
        #expect(NotificationResponseRouter.intent(actionIdentifier: "deny", payload: Self.alertRing) == .resolve(visitID: "v-2", action: .deny))
        #expect(NotificationResponseRouter.intent(actionIdentifier: "authorize", payload: Self.alertRing) == .ignore)
        // A replaced (decided) delivery only opens its detail.
        #expect(NotificationResponseRouter.intent(actionIdentifier: "authorize", payload: Self.resolved) == .openVisit(visitID: "v-1"))
    }

    static func jwt(exp: TimeInterval) -> String {
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return part(#"{"alg":"HS256"}"#) + "." + part(#"{"sub":"u","exp":\#(Int(exp))}"#) + ".sig"
    }

    @Test("the extension fetches the photo only with a live access token, never refreshing")
    func servicePlan() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let live = Self.jwt(exp: now.timeIntervalSince1970 + 600)
        let plan = NotificationServicePlan(payload: Self.delivery, accessToken: live, companyID: "c-1", now: now)
        #expect(plan.photoRequest?.path == "/v1/visits/v-1/photo")
        #expect(plan.photoRequest?.headers["Authorization"] == "Bearer \(live)")
        #expect(plan.photoRequest?.headers["X-Company-Id"] == "c-1")
        #expect(NotificationServicePlan(payload: Self.alertRing, accessToken: live, companyID: nil, now: now).photoRequest?.path == "/v1/visits/v-2/photo")
        // Expired, about to expire, garbage, none: no request (a 401 would tempt a refresh).
        for token in [Self.jwt(exp: now.timeIntervalSince1970 - 1), Self.jwt(exp: now.timeIntervalSince1970 + 10), "a.b.c", "nonsense", nil] {
            #expect(NotificationServicePlan(payload: Self.delivery, accessToken: token, companyID: "c-1", now: now).photoRequest == nil)
        }
        // A replacement keeps the server's sentence and fetches nothing.
        let replaced = NotificationServicePlan(payload: Self.resolved, accessToken: live, companyID: "c-1", now: now)
        #expect(replaced.photoRequest == nil)
        #expect(replaced.body == "Maria autorizou às 14:32")
        #expect(NotificationServicePlan.attachmentExtension(contentType: "image/jpeg", body: Data()) == "jpg")
        #expect(NotificationServicePlan.attachmentExtension(contentType: "application/octet-stream", body: Data([0x89, 0x50, 0x4E, 0x47, 0x0D])) == "png")
        #expect(NotificationServicePlan.attachmentExtension(contentType: "text/html", body: Data("<html>".utf8)) == nil)
    }
}
