import PortariaClient
import PortariaCore
import SwiftUI
import UIKit
import UserNotifications

/// fase-5 §5 Configurações: delivery rule per unit, ring order, active devices,
/// notifications; plus biometric unlock and logout. Built on the DTOs; a tested view model
/// for this screen is the client core's work (docs/ios.md, gaps).
struct SettingsView: View {
    @EnvironmentObject private var model: AppModel
    @State private var units: [UnitSummary] = []
    @State private var settings: [String: UnitSettingsResponse] = [:]
    @State private var devices: [DeviceView] = []
    @State private var notificationsAllowed: Bool?
    @State private var biometric = false

    var body: some View {
        Form {
            ForEach(units, id: \.id) { unit in
                if let current = settings[unit.id] {
                    Section("Unidade \(unit.label)") {
                        Picker("Entregas", selection: rule(unit.id)) {
                            Text("Perguntar").tag(DeliveryRule.ask)
                            Text("Perguntar; sem resposta, deixar na portaria").tag(DeliveryRule.askThenConcierge)
                            Text("Sempre deixar na portaria").tag(DeliveryRule.leaveAtConcierge)
                        }
                        Text(current.settings.ringMode == .sequential ? "Toca um morador por vez" : "Toca para todos ao mesmo tempo")
                        ForEach(Array(current.settings.ringOrder.enumerated()), id: \.offset) { index, userID in
                            Text("\(index + 1). \(current.residents.first { $0.id == userID }?.name ?? "Morador")")
                        }
                    }
                }
            }
            Section("Aparelhos ativos") {
                ForEach(devices, id: \.id) { device in
                    Text("\(device.deviceName ?? device.platform) · \(device.platform)")
                }
            }
            Section("Notificações") {
                switch notificationsAllowed {
                case true?: Text("Ativadas")
                case false?:
                    Text("Desativadas: você não será avisado quando alguém tocar.")
                    Button("Abrir Ajustes") {
                        if let url = URL(string: UIApplication.openSettingsURLString) { UIApplication.shared.open(url) }
                    }
                case nil: ProgressView()
                }
            }
            Section("Segurança") {
                Toggle("Entrar com Face ID / Touch ID", isOn: $biometric)
                    .onChange(of: biometric) { _, on in model.setBiometricUnlock(on) }
                Button("Sair", role: .destructive) { model.logout() }
            }
        }
        .navigationTitle("Configurações")
        .task { await load() }
    }

    private func rule(_ unitID: String) -> Binding<DeliveryRule> {
        Binding(get: { settings[unitID]?.settings.deliveryRule ?? .ask }, set: { newRule in
            guard var changed = settings[unitID] else { return }
            changed.settings.deliveryRule = newRule
            settings[unitID] = changed
            Task {
                let saved: UnitSettingsResponse? = try? await model.session.send("PUT", "/v1/units/\(unitID)/settings", body: changed.settings)
                if let saved { settings[unitID] = saved } else { model.banner = "Não foi possível salvar. Tente de novo" }
            }
        })
    }

    private func load() async {
        biometric = model.options.biometricUnlockEnabled
        notificationsAllowed = await UNUserNotificationCenter.current().notificationSettings().authorizationStatus == .authorized
        if let me = try? await model.session.me() {
            units = me.units
            for unit in me.units {
                settings[unit.id] = try? await model.session.send("GET", "/v1/units/\(unit.id)/settings")
            }
        }
        if let list: DeviceList = try? await model.session.send("GET", "/v1/devices") { devices = list.devices }
    }
}
