import PortariaClient
import PortariaCore
import SwiftUI

/// login-ios.md: password, SMS code, biometrics, "lembrar" (the username; decision 0017), company choice. The
/// states and every sentence are `LoginState` / `LoginText` (PortariaClient).
struct LoginView: View {
    @EnvironmentObject private var model: AppModel
    @State private var usingSMS = false
    @State private var phone = ""
    @State private var code = ""

    var body: some View {
        NavigationStack {
            Form {
                if usingSMS { smsSection } else { passwordSection }
                if let error = model.login.error {
                    Section { Text(error).foregroundStyle(.red).accessibilityLabel("Erro: \(error)") }
                }
                Section {
                    Button(usingSMS ? "Entrar com usuário e senha" : "Entrar com código por SMS") { usingSMS.toggle() }
                    if let title = model.biometricTitle {
                        Button(title) { model.unlockWithBiometrics() }
                            .accessibilityHint("Usa a biometria deste aparelho para abrir sua sessão")
                    }
                }
            }
            .navigationTitle("Portaria")
            .disabled(model.login.phase == .submitting)
            .sheet(isPresented: choosingCompany) { CompanyChoiceView() }
        }
    }

    private var passwordSection: some View {
        Section("Entrar") {
            TextField("Usuário", text: $model.login.username)
                .textContentType(.username)
                .textInputAutocapitalization(.never)
                .autocorrectionDisabled()
            SecureField("Senha", text: $model.login.password)
                .textContentType(.password)
            Toggle(ClientText.rememberMeLabel, isOn: $model.login.rememberMe)
            Button("Entrar") { model.submitPassword() }
                .disabled(!model.login.canSubmit)
        }
    }

    @ViewBuilder private var smsSection: some View {
        Section("Código por SMS") {
            TextField("Celular com DDD", text: $phone)
                .textContentType(.telephoneNumber)
                .keyboardType(.phonePad)
            if case .smsSent = model.login.phase {
                TextField("Código de 6 dígitos", text: $code)
                    .textContentType(.oneTimeCode)
                    .keyboardType(.numberPad)
                Button("Confirmar código") { model.verifyCode(phone: phone, code: code) }
                    .disabled(code.count != 6)
            } else {
                Button("Enviar código") { model.requestCode(phone: phone) }
                    .disabled(phone.count < 10)
            }
        }
    }

    private var choosingCompany: Binding<Bool> {
        Binding(get: { if case .choosingCompany = model.login.phase { return true } else { return false } }, set: { _ in })
    }
}

/// "Se houver múltiplas empresas, exibe modal de seleção."
struct CompanyChoiceView: View {
    @EnvironmentObject private var model: AppModel

    var body: some View {
        NavigationStack {
            List {
                if case .choosingCompany(let companies) = model.login.phase {
                    ForEach(companies, id: \.id) { company in
                        Button(company.name) { model.choose(company) }
                            .accessibilityHint("Entrar em \(company.name)")
                    }
                }
            }
            .navigationTitle("Escolha o condomínio")
        }
        .interactiveDismissDisabled()
    }
}
