import Foundation
import PortariaCore

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
