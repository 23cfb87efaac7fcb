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

// MARK: - Screens

extension ClientText {
    // MARK: Login (`login-ios.md`)

    public static let loginTitle = "Entrar"
    public static let usernameLabel = "Usuário"
    public static let passwordLabel = "Senha"
    public static let rememberMeLabel = "Lembrar meu usuário"
    public static let smsLoginLabel = "Entrar com código por SMS"
    public static let phoneLabel = "Celular"
    public static let codeLabel = "Código de 6 dígitos"
    public static let sendCodeAction = "Enviar código"
    public static let verifyCodeAction = "Confirmar código"
    public static let chooseCompanyTitle = "Escolha o condomínio"
    /// The `BiometricGate` prompt (Face ID asks for a reason).
    public static let biometricReason = "Desbloquear sua sessão da Portaria"

    public static func biometricAction(_ kind: BiometricAvailability) -> String? {
        switch kind {
        case .faceID: return "Entrar com Face ID"
        case .touchID: return "Entrar com Touch ID"
        case .biometric: return "Entrar com biometria"
        case .notEnrolled, .unavailable: return nil
        }
    }

    public static func codeSent(to phone: String) -> String {
        "Enviamos um código por SMS para \(maskedPhone(phone)). Ele vale por 10 minutos"
    }

    /// `+55 11 •••••-0001`: enough to recognise one's number, not to read it aloud in a lobby.
    public static func maskedPhone(_ phone: String) -> String {
        let digits = phone.filter(\.isNumber)
        guard digits.count >= 4 else { return phone }
        return "•••••-" + digits.suffix(4)
    }

    /// Why a login step failed — never a status code.
    public static func loginError(_ error: any Error) -> String {
        switch error {
        case APIClientError.server(_, let body):
            switch body.code {
            case .invalidCredentials: return "Usuário ou senha incorretos"
            case .invalidOTP: return "Código inválido ou expirado"
            case .rateLimited:
                // Bounded before converting (`Int(_:)` traps on a huge or infinite value);
                // beyond a day, "mais tarde" says as much.
                if case .number(let seconds)? = body.details["retry_after"], seconds > 0, seconds <= 86_400 {
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
        case SessionManager.SessionError.locked, BiometricGateError.cancelled:
            return "Desbloqueio cancelado"
        case BiometricGateError.invalidated, BiometricGateError.notEnabled:
            return "A biometria mudou neste aparelho. Entre com sua senha"
        default:
            return "Não foi possível entrar agora. Tente de novo"
        }
    }

    // MARK: Home

    public static let ringingSection = "Tocando agora"
    public static let pendingSection = "Pendências"
    public static let historySection = "Histórico"
    public static let queuedSection = "Aguardando envio"
    public static let emptyPending = "Nenhuma pendência"
    public static let voiceMessageBadge = "Recado de voz"

    public static func kindWord(_ kind: VisitKind) -> String { kind == .delivery ? "Entrega" : "Visita" }

    public static func visitStatus(_ status: VisitStatus, resolution: VisitResolution?, at: Date, timeZone: TimeZone) -> String {
        let time = ResolutionText.clock(at, timeZone: timeZone)
        switch status {
        case .ringing: return "Tocando"
        case .answered: return "Em atendimento"
        case .unanswered: return "Sem resposta"
        case .cancelled: return "O visitante desistiu às \(time)"
        case .expired: return "Expirou às \(time)"
        case .resolved:
            guard let resolution else { return "Resolvida às \(time)" }
            return ResolutionText.notice(resolution, timeZone: timeZone)
        }
    }

    /// What VoiceOver/TalkBack reads for a whole visit row.
    public static func visitRowAccessibility(title: String, subtitle: String, status: String, voice: Bool) -> String {
        [title, subtitle.replacingOccurrences(of: " · ", with: ", "), status, voice ? "Tem recado de voz" : nil]
            .compactMap { $0 }.joined(separator: ". ")
    }

    /// The label of a decision button on a row or a notification ("Autorizar: Loggi — Pedro").
    public static func decisionAccessibility(_ action: ResolutionAction, subject: String) -> String {
        "\(actionTitle(action)): \(subject)"
    }

    // MARK: Call

    public static let answerAction = "Atender"
    public static let muteAction = "Mudo"
    public static let unmuteAction = "Ativar som"
    public static let muteAccessibility = "Silenciar o microfone"
    public static let unmuteAccessibility = "Ativar o microfone"
    public static let endAction = "Encerrar"
    public static let endAccessibility = "Encerrar a chamada"

    /// The badge as read aloud: symbols become words, `m` becomes metres.
    public static func badgeAccessibility(_ badge: String) -> String {
        badge.replacingOccurrences(of: "✓ ", with: "Confirmado: ")
            .replacingOccurrences(of: "⚠ ", with: "Atenção: ")
            .replacingOccurrences(of: "km da", with: " quilômetros da")
            .replacingOccurrences(of: "m da", with: " metros da")
    }

    public static func callPhase(_ phase: CallPhase) -> String {
        switch phase {
        case .ringing: return "Chamando…"
        case .answering: return "Atendendo…"
        case .connecting: return "Conectando o vídeo…"
        case .inCall: return "Em chamada"
        case .ended(let reason):
            switch reason {
            case .answeredElsewhere: return "Atendida em outro aparelho"
            case .declinedElsewhere: return "Recusada em outro aparelho"
            case .remoteEnded: return "O visitante encerrou"
            case .unanswered: return "Sem resposta"
            case .failed: return "A chamada não pôde continuar"
            case .localEnded: return "Chamada encerrada"
            }
        }
    }

    // MARK: Visit detail

    public static let photoAccessibility = "Foto tirada na portaria"
    public static let noPhoto = "Sem foto"
    public static let playVoiceMessage = "Ouvir recado"

    /// The eight compass points, in pt-BR, for a bearing in degrees.
    public static func compassPoint(_ degrees: Int) -> String {
        let names = ["norte", "nordeste", "leste", "sudeste", "sul", "sudoeste", "oeste", "noroeste"]
        let normalized = (degrees % 360 + 360) % 360
        return names[((normalized * 2 + 45) / 90) % 8]
    }

    /// "A 340m da portaria, a nordeste", "Na entrada (a 12m da portaria)", "Localização desconhecida".
    public static func location(_ geofence: GeofenceResult) -> String {
        switch geofence.status {
        case .unknown: return "Localização desconhecida"
        case .atEntrance:
            guard let distance = geofence.distanceM else { return "Na entrada" }
            return "Na entrada (a \(Geofence.formatDistance(Double(distance))) da portaria)"
        case .away:
            let distance = Geofence.formatDistance(Double(geofence.distanceM ?? 0))
            guard let bearing = geofence.bearingDeg else { return "A \(distance) da portaria" }
            return "A \(distance) da portaria, a \(compassPoint(bearing))"
        }
    }

    /// One line of the attempts timeline ("14:32 · Tocou para Maria (etapa 1)"). The
    /// visit's resolution names the decision on its line ("João autorizou"), as the web
    /// app says it.
    public static func attempt(_ attempt: VisitAttempt, timeZone: TimeZone, resolution: VisitResolution? = nil) -> String {
        let who = attempt.user.map { ResolutionText.firstName($0.name) }.flatMap { $0.isEmpty ? nil : $0 }
        let text: String
        switch attempt.kind {
        case .ring:
            let step = attempt.step.map { " (etapa \($0 + 1))" } ?? ""
            text = who.map { "Tocou para \($0)\(step)" } ?? "Tocou\(step)"
        case .pushSent: text = who.map { "Notificação enviada para \($0)" } ?? "Notificação enviada"
        case .pushReceipt: text = who.map { "Notificação recebida por \($0)" } ?? "Notificação recebida"
        case .answer: text = who.map { "\($0) atendeu" } ?? "Atendida"
        case .decline: text = who.map { "\($0) recusou a chamada" } ?? "Chamada recusada"
        case .timeout: text = who.map { "\($0) não atendeu" } ?? "Ninguém atendeu"
        case .resolution: text = resolutionLine(who: who, attempt: attempt, resolution: resolution)
        case .cancel: text = "O visitante desistiu"
        case .expire: text = "Expirou sem resposta"
        case .callStarted: text = "Chamada de vídeo iniciada"
        case .callConnected: text = "Vídeo conectado"
        case .callEnded: text = "Chamada de vídeo encerrada"
        }
        return "\(ResolutionText.clock(attempt.at, timeZone: timeZone)) · \(text)"
    }

    /// "João autorizou", "Maria negou", "Deixado na portaria automaticamente".
    private static func resolutionLine(who: String?, attempt: VisitAttempt, resolution: VisitResolution?) -> String {
        let action = resolution?.action
        if attempt.channel == "auto" || resolution?.via == .auto {
            return action == .leaveAtConcierge ? "Deixado na portaria automaticamente" : "Decidido automaticamente"
        }
        guard let action else { return who.map { "\($0) decidiu" } ?? "Decidido" }
        let verb: String
        switch action {
        case .authorize: verb = "autorizou"
        case .deny: verb = "negou"
        case .leaveAtConcierge: verb = "pediu para deixar na portaria"
        }
        guard let who else {
            let outcome = action == .leaveAtConcierge ? actionTitle(action) : (action == .authorize ? "Autorizado" : "Negado")
            return "Decidido: \(outcome)"
        }
        return "\(who) \(verb)"
    }

    // MARK: Settings

    public static let deliveryRuleTitle = "Entregas"
    public static let ringOrderTitle = "Ordem de chamada"
    public static let devicesTitle = "Aparelhos"
    public static let notificationsTitle = "Notificações"

    public static func deliveryRule(_ rule: DeliveryRule) -> String {
        switch rule {
        case .ask: return "Sempre me perguntar"
        case .askThenConcierge: return "Perguntar; sem resposta, deixar na portaria"
        case .leaveAtConcierge: return "Deixar na portaria sem perguntar"
        }
    }

    public static func ringMode(_ mode: RingMode) -> String {
        switch mode {
        case .sequential: return "Um morador por vez, na ordem abaixo"
        case .simultaneous: return "Todos ao mesmo tempo"
        }
    }

    public static func ringPosition(_ index: Int, name: String) -> String { "\(index + 1)º \(name)" }
    public static func moveUpAccessibility(_ name: String) -> String { "Mover \(name) para cima na ordem de chamada" }
    public static func moveDownAccessibility(_ name: String) -> String { "Mover \(name) para baixo na ordem de chamada" }
    public static func removeDeviceAccessibility(_ name: String) -> String { "Remover o aparelho \(name)" }
    public static let thisDevice = "Este aparelho"
    public static let unnamedDevice = "Aparelho sem nome"

    public static func platform(_ platform: String) -> String {
        switch platform {
        case "ios": return "iPhone"
        case "android": return "Android"
        case "web": return "Navegador"
        default: return platform
        }
    }

    /// What the phone reports, in the words of the fix.
    public static func notificationStatus(_ status: NotificationStatus) -> String {
        switch status {
        case .allowed: return "Ativadas — você será chamado com o app fechado"
        case .denied: return "Desativadas — ative nas Configurações para receber chamadas"
        case .notDetermined: return "Ainda não autorizadas — toque para permitir"
        case .fullScreenIntentRevoked: return "Chamadas em tela cheia bloqueadas — permita nas Configurações"
        case .batteryOptimized: return "A economia de bateria pode impedir as chamadas — desative-a para este app"
        case .noVoIPToken: return "Este iPhone ainda não pode tocar com o app fechado — abra o app uma vez"
        }
    }

    public static func settingsSaveError(_ error: any Error) -> String {
        switch error {
        case APIClientError.transport: return "Sem conexão. Suas alterações não foram salvas"
        case APIClientError.server(let status, _) where status == 403: return "Você não pode alterar as configurações desta unidade"
        default: return "Não foi possível salvar agora. Tente de novo"
        }
    }

    public static let loadError = "Não foi possível carregar agora. Puxe para atualizar"
}

// MARK: - The app shell's own words

/// What the SwiftUI (or any) shell writes around the view models: titles, section names,
/// VoiceOver labels and hints, and the sentences for what only the platform can fail at.
/// Here, not in the shell, so that every word a resident reads is in one table and none
/// is an English error description.
extension ClientText {
    public static let appTitle = "Portaria"
    public static let settingsTitle = "Configurações"
    public static let visitTitle = "Visita"
    public static let loading = "Carregando…"

    public static func connectionAccessibility(_ text: String) -> String { "Conexão: \(text)" }
    public static func errorAccessibility(_ text: String) -> String { "Erro: \(text)" }

    // Login
    public static let passwordLoginLabel = "Entrar com usuário e senha"
    public static let biometricHint = "Usa a biometria deste aparelho para abrir sua sessão"
    public static func companyHint(_ name: String) -> String { "Entrar em \(name)" }

    // Call
    public static let remoteVideoAccessibility = "Vídeo do visitante"
    public static let selfPreviewAccessibility = "Sua câmera"
    /// Why the video of a call ended (the web app's sentences, `Web/shared/call.js`).
    public static func callMediaEnded(_ ending: CallMediaEnding) -> String {
        switch ending {
        case .hungUpHere, .callOver: return "Chamada encerrada"
        case .connectionLost: return "A conexão de vídeo caiu"
        case .couldNotConnect: return "Não foi possível conectar o vídeo"
        case .unavailable: return "Vídeo indisponível neste servidor (sem relay de vídeo): decida pelos botões."
        case .server(let reason, let endedBy):
            switch reason {
            case .hangup: return endedBy == .visitor ? "O visitante encerrou a chamada" : "Chamada encerrada"
            case .participantLeft: return endedBy == .resident ? "A conexão com a portaria caiu" : "O visitante saiu da chamada"
            case .negotiationTimeout: return "Não foi possível conectar o vídeo"
            case .maxDuration: return "A chamada chegou ao tempo máximo"
            case .visitClosed: return "Chamada encerrada"
            case .serverShutdown: return "Chamada encerrada pelo servidor"
            }
        }
    }
    /// CallKit refused to show the call (Não perturbe, a call already up): it keeps ringing
    /// the other residents.
    public static let callNotShown = "Não foi possível tocar esta chamada neste aparelho. Os outros moradores continuam sendo chamados"

    // Visit detail
    public static let voiceMessageTitle = "Recado"
    public static let stopVoiceMessage = "Parar recado"
    /// The recording's format is one this phone cannot play: on iOS, the WebM/Ogg Opus a
    /// visitor's browser uploads only when it could not convert its recording to WAV.
    public static let voiceMessageUnplayable = "Este recado não pode ser tocado neste aparelho"
    public static let decideTitle = "Decidir"
    public static let timelineTitle = "Linha do tempo"

    // Settings
    public static func unitSection(_ label: String) -> String { "Unidade \(label)" }
    public static let ringModeTitle = "Como tocar"
    public static let moveUpAction = "Subir"
    public static let moveDownAction = "Descer"
    public static let removeAction = "Remover"
    public static let securityTitle = "Segurança"
    public static let biometricToggle = "Entrar com Face ID ou Touch ID"
    public static let biometricUnavailable = "Biometria indisponível neste aparelho"
    public static let openSettingsAction = "Abrir Ajustes"
    public static let logoutAction = "Sair"

    // Notifications
    /// The system refused to register for notifications (no network at first launch, a
    /// missing entitlement): the phone cannot ring until it succeeds.
    public static let notificationsRegistrationFailed = "Não foi possível ativar as notificações neste aparelho. Abra o app de novo com internet"
    /// A notification button whose decision could not even be stored on the phone.
    public static let decisionNotStored = "Não foi possível guardar sua decisão. Abra o app e tente de novo"
}

extension String {
    var lowercasedFirst: String { prefix(1).lowercased() + dropFirst() }
}
