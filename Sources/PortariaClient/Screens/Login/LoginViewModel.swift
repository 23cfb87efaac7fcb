import Foundation
import Observation
import PortariaCore

// A screen's view model: plain observable state (`@Observable`, from the Swift standard
// library's Observation module — no UIKit, no SwiftUI; SwiftUI observes it directly, a
// UIKit shell uses `withObservationTracking`) and intents that call the core. It runs on
// the main actor because that is where the screen reads it; the work it starts runs in
// the core's actors.

@MainActor @Observable
public final class LoginViewModel {
    public var state = LoginState()
    @ObservationIgnored let session: SessionManager
    @ObservationIgnored let biometrics: (any BiometricGate)?

    public init(session: SessionManager, biometrics: (any BiometricGate)? = nil) {
        self.session = session
        self.biometrics = biometrics
    }

    /// The screen appears: the remembered username, and Face ID when a session can be resumed.
    public func load() async {
        let username = await session.rememberedUsername
        var biometric: BiometricAvailability?
        if await session.canUnlockWithBiometrics, let biometrics { biometric = await biometrics.availability() }
        state.prefill(username: username, biometric: biometric)
    }

    public func use(_ method: LoginState.Method) { state.use(method) }

    /// The primary button: password login, send the SMS code, or verify it.
    public func submit() async {
        guard state.canSubmit else { return }
        switch (state.method, state.phase) {
        case (.password, _):
            state.submitting()
            do {
                state.finished(try await session.login(username: state.username.trimmingCharacters(in: .whitespaces),
                                                       password: state.password, rememberMe: state.rememberMe))
                state.password = ""
            } catch { state.failed(error) }
        case (.sms, .awaitingCode(let phone)):
            state.submitting()
            do { state.finished(try await session.verifyCode(phone: phone, code: state.code)) } catch { state.failed(error) }
        case (.sms, _):
            let phone = state.phone
            state.submitting()
            do {
                try await session.requestCode(phone: phone)
                state.codeSent(to: phone)
            } catch { state.failed(error) }
        }
    }

    public func chooseCompany(_ company: CompanyGrant) async {
        do {
            try await session.selectCompany(id: company.id)
            state.companyChosen(company)
        } catch { state.failed(error) }
    }

    /// "Entrar com Face ID": the gate prompts while reading the refresh token.
    public func unlockWithBiometrics() async {
        state.submitting()
        do {
            try await session.unlockWithBiometrics()
            let companies = await session.availableCompanies
            if let selected = await session.selectedCompanyID, let company = companies.first(where: { $0.id == selected }) {
                state.finished(.ready(company))
            } else {
                state.finished(.needsCompanySelection(companies))
            }
        } catch { state.failed(error) }
    }
}
