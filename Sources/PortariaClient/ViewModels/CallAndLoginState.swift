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

/// The login screen (`login-ios.md`): password or SMS code, biometric unlock of a stored
/// session, "Lembrar", then the company choice.
public struct LoginState: Sendable, Equatable {
    public enum Method: Sendable, Equatable {
        case password
        case sms
    }

    public enum Phase: Sendable, Equatable {
        case editing
        case submitting
        /// The SMS was sent; waiting for the code.
        case awaitingCode(phone: String)
        /// Several companies: the selection modal.
        case choosingCompany([CompanyGrant])
        case loggedIn(companyName: String)
    }

    public var method: Method = .password
    public var username = ""
    public var password = ""
    public var rememberMe = false
    public var phone = ""
    public var code = ""
    public private(set) var phase: Phase = .editing
    /// pt-BR, never a status code.
    public private(set) var error: String?
    /// A pt-BR note that is not an error ("Enviamos um código…").
    public private(set) var notice: String?
    /// "Entrar com Face ID" when a stored session can be resumed with biometry.
    public private(set) var biometricAction: String?

    public init() {}

    public var canSubmit: Bool {
        guard phase != .submitting else { return false }
        switch (method, phase) {
        case (.password, _): return !username.trimmingCharacters(in: .whitespaces).isEmpty && (8...128).contains(password.count)
        case (.sms, .awaitingCode): return code.count == 6 && code.allSatisfy(\.isNumber)
        case (.sms, _): return phone.filter(\.isNumber).count >= 10
        }
    }

    /// The primary button's title for the current step.
    public var submitTitle: String {
        switch (method, phase) {
        case (.password, _): return ClientText.loginTitle
        case (.sms, .awaitingCode): return ClientText.verifyCodeAction
        case (.sms, _): return ClientText.sendCodeAction
        }
    }

    public mutating func prefill(username: String?, biometric: BiometricAvailability?) {
        if let username {
            self.username = username
            rememberMe = true
        }
        biometricAction = biometric.flatMap(ClientText.biometricAction)
    }

    public mutating func use(_ method: Method) {
        self.method = method
        phase = .editing
        codePhone = nil
        error = nil
        notice = nil
    }

    public mutating func submitting() {
        phase = .submitting
        error = nil
    }

    public mutating func finished(_ result: SessionManager.LoginResult) {
        notice = nil
        switch result {
        case .ready(let company): phase = .loggedIn(companyName: company.name)
        case .needsCompanySelection(let companies): phase = .choosingCompany(companies)
        }
    }

    public mutating func companyChosen(_ company: CompanyGrant) {
        phase = .loggedIn(companyName: company.name)
    }

    public mutating func codeSent(to phone: String) {
        codePhone = phone
        phase = .awaitingCode(phone: phone)
        notice = ClientText.codeSent(to: phone)
    }

    public mutating func failed(_ error: any Error) {
        // A wrong code keeps the code step (the SMS was sent; typing it again is the fix).
        if method == .sms, let codePhone { phase = .awaitingCode(phone: codePhone) } else { phase = .editing }
        self.error = ClientText.loginError(error)
    }

    /// Where the last code was sent.
    private var codePhone: String?
}
