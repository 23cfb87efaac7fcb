import Foundation
import PortariaCore

/// Every pt-BR sentence the client core shows, in one table (the server's shared ones —
/// "Maria já autorizou às 14:32", the geofence badge — live in `PortariaCore` and are
/// reused from here). Times are `HH:mm` in the condominium's time zone.
///
/// Rule: the user never reads an HTTP status, an error code or an English word.
public enum ClientText {
    // MARK: Actions

    /// The button / notification action title.
    public static func actionTitle(_ action: ResolutionAction) -> String {
        switch action {
        case .authorize: return "Autorizar"
        case .deny: return "Negar"
        case .leaveAtConcierge: return "Deixar na portaria"
        }
    }

    /// The decision as the object of a sentence ("sua decisão (autorizar)").
    static func actionInfinitive(_ action: ResolutionAction) -> String {
        switch action {
        case .authorize: return "autorizar"
        case .deny: return "negar"
        case .leaveAtConcierge: return "deixar na portaria"
        }
    }

    // MARK: Resolve outcomes

    /// "Entrega: deixar na portaria ✓", "Visita autorizada ✓".
    public static func resolved(_ action: ResolutionAction, kind: VisitKind) -> String {
        switch (kind, action) {
        case (.delivery, .authorize): return "Entrega: autorizada ✓"
        case (.delivery, .deny): return "Entrega: recusada ✓"
        case (.delivery, .leaveAtConcierge): return "Entrega: deixar na portaria ✓"
        case (.visit, .authorize): return "Visita autorizada ✓"
        case (.visit, .deny): return "Visita negada ✓"
        case (.visit, .leaveAtConcierge): return "Visita: deixar na portaria ✓"
        }
    }

    /// Someone decided first. The user themself (another phone, an earlier tap) reads
    /// "Você já …"; a delivery rule reads as automatic; anyone else by first name.
    public static func alreadyResolved(_ resolution: VisitResolution, myUserID: String?, timeZone: TimeZone) -> String {
        let time = ResolutionText.clock(resolution.at, timeZone: timeZone)
        if resolution.via == .auto || resolution.by == .automatic {
            return "Deixado na portaria automaticamente às \(time)"
        }
        if let myUserID, resolution.by.id == myUserID {
            switch resolution.action {
            case .authorize: return "Você já autorizou às \(time)"
            case .deny: return "Você já negou às \(time)"
            case .leaveAtConcierge: return "Você já pediu para deixar na portaria às \(time)"
            }
        }
        return ResolutionText.alreadyResolved(resolution, timeZone: timeZone)
    }

    /// The visit ended without a decision (visitor left, 24 h passed).
    public static func closed(_ status: VisitStatus, kind: VisitKind?, at: Date?, timeZone: TimeZone) -> String {
        let time = at.map { " às " + ResolutionText.clock($0, timeZone: timeZone) } ?? ""
        let who = kind == .delivery ? "O entregador" : "O visitante"
        switch status {
        case .cancelled: return "\(who) desistiu\(time)"
        case .expired: return "A visita expirou\(time) sem resposta"
        case .resolved: return "Esta visita já foi resolvida\(time)"
        case .ringing, .answered, .unanswered: return "Esta visita não pode ser decidida agora"
        }
    }

    /// The server refused for good (the visit is gone for this user, rights changed…).
    public static func refused(_ reason: RefusalReason) -> String {
        switch reason {
        case .visitNotFound: return "Esta visita não está mais disponível para você"
        case .forbidden: return "Você não tem permissão para decidir esta visita"
        case .invalid: return "Não foi possível registrar a decisão. Tente de novo pelo app"
        }
    }

    public enum RefusalReason: String, Sendable, Codable, Equatable {
        case visitNotFound = "visit_not_found"
        case forbidden
        case invalid
    }

    // MARK: Queued (still being sent)

    /// The tap was kept and is being retried: what the user reads meanwhile.
    public static func queued(_ action: ResolutionAction, because reason: QueueReason) -> String {
        let decision = "Sua decisão (\(actionInfinitive(action)))"
        switch reason {
        case .unreachable:
            return "Sem conexão com a portaria. \(decision) foi guardada e será enviada assim que possível"
        case .serverBusy:
            return "A portaria está ocupada. \(decision) foi guardada e será enviada em instantes"
        case .needsLogin:
            return "Sua sessão expirou. Entre novamente para enviar \(decision.lowercasedFirst)"
        case .otherUser:
            return "\(decision) pertence a outra conta e será enviada quando ela entrar de novo"
        }
    }

    /// Why a queued action has not landed yet.
    public enum QueueReason: String, Sendable, Codable, Equatable {
        /// No answer: no network, refused, reset, timed out.
        case unreachable
        /// 429 or 5xx: the server answered "later".
        case serverBusy = "server_busy"
        /// The session ended (refresh refused): the action waits for the same user to log in.
        case needsLogin = "needs_login"
        /// Another user is logged in on this device now.
        case otherUser = "other_user"
    }

    // MARK: Realtime

    public static func connection(_ state: ConnectionState) -> String {
        switch state {
        case .connecting: return "Conectando…"
        case .live: return "Conectado"
        case .reconnecting: return "Reconectando…"
        case .offline: return "Sem conexão — mostrando o que já sabemos"
        }
    }
}

extension String {
    var lowercasedFirst: String { prefix(1).lowercased() + dropFirst() }
}
