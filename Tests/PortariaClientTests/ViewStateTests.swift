import Foundation
import PortariaClient
import PortariaCore
import Testing

@Suite("Screen states")
struct ViewStateTests {
    static let zone = TimeZone(identifier: "America/Sao_Paulo")!

    @Test("Home: REST snapshot, then live events move rows between ringing, pendências and history")
    func home() {
        var home = HomeState(timeZone: Self.zone)
        home.apply(.state(.live), now: Fixtures.at1432)
        #expect(home.connectionText == "Conectado")
        let pendencia = Fixtures.visit(id: "p-1", kind: .delivery, status: .unanswered)
        let ringing = Fixtures.visit(id: "r-1", kind: .visit, status: .ringing)
        home.apply(.snapshot(pending: [pendencia], recent: [ringing, Fixtures.visit(id: "h-1", kind: .visit, status: .cancelled)]),
                   now: Fixtures.at1432)
        #expect(home.pending.map(\.id) == ["p-1"])
        #expect(home.ringing.map(\.id) == ["r-1"])
        #expect(home.history.map(\.id) == ["h-1"])
        #expect(home.pending[0].title == "Loggi — Pedro")
        #expect(home.pending[0].subtitle == "A-101 · Entrega · 14:31")

        home.apply(.event(.created, seq: 1, VisitEventData(visitID: "n-1", unitLabel: "A-101", kind: .visit, visitorName: "Lia")),
                   now: Fixtures.at1432)
        #expect(home.ringing.map(\.id) == ["n-1", "r-1"])
        home.apply(.event(.unanswered, seq: 2, VisitEventData(visitID: "n-1")), now: Fixtures.at1432)
        #expect(home.pending.map(\.id) == ["n-1", "p-1"])
        #expect(home.pending[0].statusText == "Sem resposta")
        home.apply(.event(.voiceMessageAdded, seq: 3, VisitEventData(visitID: "n-1")), now: Fixtures.at1432)
        #expect(home.pending[0].hasVoiceMessage)
        #expect(home.pending[0].accessibilityLabel == "Lia. A-101, Visita, 14:32. Sem resposta. Tem recado de voz")
        home.apply(.event(.resolved, seq: 4, VisitEventData(visitID: "p-1", action: .leaveAtConcierge, at: Fixtures.at1432,
                                                             via: .auto).with(by: .automatic)), now: Fixtures.at1432)
        #expect(home.pending.map(\.id) == ["n-1"])
        #expect(home.history.first?.statusText == "Deixado na portaria automaticamente às 14:32")
        home.apply(.state(.reconnecting), now: Fixtures.at1432)
        #expect(home.connectionText == "Reconectando…")
    }

    @Test("Call screen: the badge's text and colour, the actions in order, labels for each")
    func call() throws {
        var coordinator = IncomingCallCoordinator(myUserID: "u-me", deviceID: "i-1")
        let effects = coordinator.handle(.voipPush(payload: IncomingCallCoordinatorTests.ring(), fallbackCallID: UUID()), now: Fixtures.at1432)
        #expect(!effects.isEmpty)
        let record = try #require(coordinator.calls[IncomingCallCoordinatorTests.visitID])
        let screen = CallScreenState(record)
        #expect(screen.callerName == "Pedro")
        #expect(screen.unitLine == "A-101 · Visita")
        #expect(screen.badgeText == "⚠ A 340m da portaria")
        #expect(screen.badgeColor == .amber)
        #expect(screen.badgeAccessibilityLabel == "Atenção: A 340 metros da portaria")
        #expect(screen.actions.map(\.title) == ["Atender", "Autorizar", "Negar", "Mudo", "Encerrar"])
        #expect(screen.actions.filter(\.isPrimary).map(\.title) == ["Autorizar"])
        #expect(screen.actions[1].accessibilityLabel == "Autorizar Pedro, A-101 · Visita")
    }

    @Test("Login: errors in pt-BR, never a status")
    func login() {
        var login = LoginState()
        login.username = "maria"
        login.password = "demo1234"
        #expect(login.canSubmit)
        login.submitting()
        #expect(!login.canSubmit)
        login.failed(APIClientError.server(status: 401, error: ErrorBody(code: .invalidCredentials, message: "invalid credentials")))
        #expect(login.error == "Usuário ou senha incorretos")
        login.failed(APIClientError.server(status: 429, error: ErrorBody(code: .rateLimited, message: "x", details: ["retry_after": .number(290)])))
        #expect(login.error == "Muitas tentativas. Tente de novo em 5 min")
        login.failed(APIClientError.transport("The request timed out."))
        #expect(login.error == "Sem conexão. Verifique a internet e tente de novo")
        let demo = CompanyGrant(id: "c-1", name: "Residencial Demo", permissions: [], sectors: [])
        login.finished(.needsCompanySelection([demo]))
        #expect(login.phase == .choosingCompany([demo]))
        login.companyChosen(demo)
        #expect(login.phase == .loggedIn(companyName: "Residencial Demo"))
    }
}

extension VisitEventData {
    func with(by person: PersonRef) -> VisitEventData {
        var copy = self
        copy.by = person
        return copy
    }
}
