import PortariaClient
import PortariaCore
import SwiftUI

/// login-ios.md: password, SMS code, biometrics, "lembrar" (the username; decision 0017),
/// company choice. State, titles, errors and notices are `LoginViewModel` / `LoginState`;
/// the transitions (and going home) are `ResidentAppModel`'s.
struct LoginView: View {
    let app: ResidentAppModel

    var body: some View {
        @Bindable var login = app.login
        let state = login.state
        NavigationStack {
            Form {
                switch state.method {
                case .password: passwordSection(login)
                case .sms: smsSection(login)
                }
                if let notice = state.notice {
                    Section { Text(notice) }
                }
                if let error = state.error {
                    Section {
                        Text(error).foregroundStyle(.red).accessibilityLabel(ClientText.errorAccessibility(error))
                    }
                }
                Section {
                    Button(state.submitTitle) { Task { await app.submitLogin() } }
                        .disabled(!state.canSubmit)
                    Button(state.method == .sms ? ClientText.passwordLoginLabel : ClientText.smsLoginLabel) {
                        login.use(state.method == .sms ? .password : .sms)
                    }
                    if let title = state.biometricAction {
                        Button(title) { Task { await app.unlockWithBiometrics() } }
                            .accessibilityHint(ClientText.biometricHint)
                    }
                }
            }
            .navigationTitle(ClientText.appTitle)
            .disabled(state.phase == .submitting)
            .sheet(isPresented: .constant(state.isChoosingCompany)) { CompanyChoiceView(app: app) }
        }
    }

    private func passwordSection(_ login: LoginViewModel) -> some View {
        @Bindable var login = login
        return Section(ClientText.loginTitle) {
            TextField(ClientText.usernameLabel, text: $login.state.username)
                .textContentType(.username)
                .textInputAutocapitalization(.never)
                .autocorrectionDisabled()
            SecureField(ClientText.passwordLabel, text: $login.state.password)
                .textContentType(.password)
            Toggle(ClientText.rememberMeLabel, isOn: $login.state.rememberMe)
        }
    }

    private func smsSection(_ login: LoginViewModel) -> some View {
        @Bindable var login = login
        return Section(ClientText.smsLoginLabel) {
            TextField(ClientText.phoneLabel, text: $login.state.phone)
                .textContentType(.telephoneNumber)
                .keyboardType(.phonePad)
            if case .awaitingCode = login.state.phase {
                TextField(ClientText.codeLabel, text: $login.state.code)
                    .textContentType(.oneTimeCode)
                    .keyboardType(.numberPad)
            }
        }
    }
}

/// "Se houver múltiplas empresas, exibe modal de seleção."
struct CompanyChoiceView: View {
    let app: ResidentAppModel

    var body: some View {
        NavigationStack {
            List {
                if case .choosingCompany(let companies) = app.login.state.phase {
                    ForEach(companies, id: \.id) { company in
                        Button(company.name) { Task { await app.chooseCompany(company) } }
                            .accessibilityHint(ClientText.companyHint(company.name))
                    }
                }
            }
            .navigationTitle(ClientText.chooseCompanyTitle)
        }
        .interactiveDismissDisabled()
    }
}

extension LoginState {
    /// The company sheet is up while the login waits for the choice.
    var isChoosingCompany: Bool {
        if case .choosingCompany = phase { return true }
        return false
    }
}
