import Foundation
import PortariaCore

/// The call screen: name, unit, the geofence badge (the most useful security signal on the
/// screen: someone ringing from far away), the actions, and the sentence when the call
/// ended without us. Built from the coordinator's record, so it shows the push's data at
/// once and the visit's details when they arrive.
public struct CallScreenState: Sendable, Equatable {
    public enum BadgeColor: String, Sendable, Equatable {
        /// `✓ Na entrada`.
        case green
        /// `⚠ A 340m da portaria`.
        case amber
        /// `Localização desconhecida`.
        case gray
    }

    public struct Action: Sendable, Equatable {
        public var intent: CallIntent
        public var title: String
        public var accessibilityLabel: String
        public var isPrimary: Bool
    }

    public var callerName: String
    public var unitLine: String
    public var badgeText: String
    public var badgeColor: BadgeColor
    public var badgeAccessibilityLabel: String
    /// Autorizar (primary, green), Negar, Deixar na portaria (deliveries).
    public var decisions: [ResolutionAction]
    public var isMuted: Bool
    public var phase: CallPhase
    /// A sentence to show over the screen ("João já atendeu às 14:32").
    public var message: String?

    public init(_ call: CallRecord, isMuted: Bool = false, message: String? = nil) {
        let visit = call.visit
        callerName = visit.map { [$0.carrier, $0.visitorName].compactMap { $0 }.joined(separator: " — ") } ?? call.report.callerName
        unitLine = call.report.handle
        let geofence = visit?.geofence
        badgeText = geofence?.badge ?? call.report.geofenceBadge
        switch geofence?.status {
        case .atEntrance?: badgeColor = .green
        case .away?: badgeColor = .amber
        case .unknown?: badgeColor = .gray
        case nil:
            badgeColor = badgeText.hasPrefix("✓") ? .green : badgeText.hasPrefix("⚠") ? .amber : .gray
        }
        badgeAccessibilityLabel = ClientText.badgeAccessibility(badgeText)
        decisions = call.report.kind == .delivery ? [.authorize, .leaveAtConcierge, .deny] : [.authorize, .deny]
        self.isMuted = isMuted
        phase = call.phase
        self.message = message
    }

    /// "Chamando…", "Em chamada", "Atendida em outro aparelho".
    public var phaseText: String { ClientText.callPhase(phase) }

    /// Buttons in order, with their pt-BR titles and labels. While ringing the first is
    /// "Atender" (CallKit's own screen answers on a locked phone; this is the in-app one).
    public var actions: [Action] {
        guard !phase.isEnded else { return [] }
        var actions: [Action] = []
        if phase == .ringing {
            actions.append(Action(intent: .answer, title: ClientText.answerAction,
                                  accessibilityLabel: "\(ClientText.answerAction) \(callerName), \(unitLine)", isPrimary: false))
        }
        actions += decisions.map { decision in
            Action(intent: .decide(decision), title: ClientText.actionTitle(decision),
                   accessibilityLabel: "\(ClientText.actionTitle(decision)) \(callerName), \(unitLine)",
                   isPrimary: decision == .authorize)
        }
        actions.append(Action(intent: .setMuted(!isMuted), title: isMuted ? ClientText.unmuteAction : ClientText.muteAction,
                              accessibilityLabel: isMuted ? ClientText.unmuteAccessibility : ClientText.muteAccessibility,
                              isPrimary: false))
        actions.append(Action(intent: .end, title: ClientText.endAction, accessibilityLabel: ClientText.endAccessibility, isPrimary: false))
        return actions
    }
}

/// What a call-screen button asks for. The owner of the coordinator turns it into a
/// `CallEvent` (`event(visitID:key:)`); mute is the media layer's business only.
public enum CallIntent: Sendable, Equatable {
    case answer
    case decide(ResolutionAction)
    case setMuted(Bool)
    case end

    /// The coordinator event for this intent; `key` is the Idempotency-Key made at tap
    /// time for `/answer` and `/decline`. Nil for mute (no call state changes).
    public func event(visitID: String, key: String) -> CallEvent? {
        switch self {
        case .answer: return .userAnswered(visitID: visitID, idempotencyKey: key)
        case .decide(let action): return .decided(visitID: visitID, action)
        case .setMuted: return nil
        case .end: return .userEnded(visitID: visitID, idempotencyKey: key)
        }
    }
}
