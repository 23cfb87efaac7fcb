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
        badgeAccessibilityLabel = badgeText.replacingOccurrences(of: "✓ ", with: "Confirmado: ")
            .replacingOccurrences(of: "⚠ ", with: "Atenção: ").replacingOccurrences(of: "m da", with: " metros da")
        decisions = call.report.kind == .delivery ? [.authorize, .leaveAtConcierge, .deny] : [.authorize, .deny]
        self.isMuted = isMuted
        phase = call.phase
        self.message = message
    }

    /// Buttons in order, with their pt-BR titles and labels.
    public var actions: [Action] {
        var actions = decisions.map { decision in
            Action(title: ClientText.actionTitle(decision),
                   accessibilityLabel: "\(ClientText.actionTitle(decision)) \(callerName), \(unitLine)",
                   isPrimary: decision == .authorize)
        }
        actions.append(Action(title: isMuted ? "Ativar som" : "Mudo", accessibilityLabel: isMuted ? "Ativar o microfone" : "Silenciar o microfone",
                              isPrimary: false))
        actions.append(Action(title: "Encerrar", accessibilityLabel: "Encerrar a chamada", isPrimary: false))
        return actions
    }
}

/// The login screen (`login-ios.md`): password or SMS code, then the company choice.
public struct LoginState: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        case editing
        case submitting
        /// Several companies: the selection modal.
        case choosingCompany([CompanyGrant])
        case loggedIn(companyName: String)
        case smsSent(phone: String)
    }

    public var username = ""
    public var password = ""
    public var rememberMe = false
    public private(set) var phase: Phase = .editing
    /// pt-BR, never a status code.
    public private(set) var error: String?

    public init() {}

    public var canSubmit: Bool { !username.isEmpty && password.count >= 8 && phase != .submitting }

    public mutating func submitting() {
        phase = .submitting
        error = nil
    }

    public mutating func finished(_ result: SessionManager.LoginResult) {
        switch result {
        case .ready(let company): phase = .loggedIn(companyName: company.name)
        case .needsCompanySelection(let companies): phase = .choosingCompany(companies)
        }
    }

    public mutating func companyChosen(_ company: CompanyGrant) {
        phase = .loggedIn(companyName: company.name)
    }

    public mutating func codeSent(to phone: String) {
        phase = .smsSent(phone: phone)
    }

    public mutating func failed(_ error: any Error) {
        phase = .editing
        self.error = LoginText.sentence(for: error)
    }
}

public enum LoginText {
    public static func sentence(for error: any Error) -> String {
        switch error {
        case APIClientError.server(_, let body):
            switch body.code {
            case .invalidCredentials: return "Usuário ou senha incorretos"
            case .invalidOTP: return "Código inválido ou expirado"
            case .rateLimited:
                if case .number(let seconds)? = body.details["retry_after"], seconds > 0 {
                    let minutes = Int((seconds / 60).rounded(.up))
                    return "Muitas tentativas. Tente de novo em \(minutes) min"
                }
                return "Muitas tentativas. Tente de novo mais tarde"
            default: return "Não foi possível entrar agora. Tente de novo"
            }
        case APIClientError.transport:
            return "Sem conexão. Verifique a internet e tente de novo"
        case SessionManager.SessionError.sessionEnded:
            return "Sua sessão terminou. Entre novamente"
        default:
            return "Não foi possível entrar agora. Tente de novo"
        }
    }
}
