import PortariaClient
import PortariaCore
import SwiftUI
import UIKit

/// fase-5 §5 Configurações: the unit's delivery rule and ring order, this user's devices,
/// whether this phone can ring (problems first, each with its fix); biometric unlock and
/// logout. Options, titles, labels and the optimistic edits are `SettingsViewModel` /
/// `SettingsState`; the toggle and logout are `ResidentAppModel`'s.
struct SettingsView: View {
    let app: ResidentAppModel

    var body: some View {
        let settings = app.settings
        let state = settings.state
        Form {
            if let error = state.error {
                Section { Text(error).foregroundStyle(.red).accessibilityLabel(ClientText.errorAccessibility(error)) }
            }
            Section(ClientText.notificationsTitle) {
                ForEach(Array(state.notificationLines.enumerated()), id: \.offset) { _, line in
                    Text(line.text).foregroundStyle(line.isProblem ? Color.orange : Color.primary)
                }
                if state.notificationStatuses.contains(where: \.isProblem) {
                    Button(ClientText.openSettingsAction) {
                        if let url = URL(string: UIApplication.openSettingsURLString) { UIApplication.shared.open(url) }
                    }
                }
            }
            if state.settings != nil {
                Section(state.unitLabel.map(ClientText.unitSection) ?? ClientText.deliveryRuleTitle) {
                    Picker(ClientText.deliveryRuleTitle, selection: Binding(
                        get: { state.deliveryRuleOptions.first(where: \.isSelected)?.value ?? .ask },
                        set: { rule in Task { await settings.setDeliveryRule(rule) } })) {
                        ForEach(state.deliveryRuleOptions, id: \.value) { Text($0.title).tag($0.value) }
                    }
                    Picker(ClientText.ringModeTitle, selection: Binding(
                        get: { state.ringModeOptions.first(where: \.isSelected)?.value ?? .sequential },
                        set: { mode in Task { await settings.setRingMode(mode) } })) {
                        ForEach(state.ringModeOptions, id: \.value) { Text($0.title).tag($0.value) }
                    }
                }
                Section(ClientText.ringOrderTitle) {
                    ForEach(state.ringOrder) { resident in
                        HStack {
                            Text(resident.title)
                            Spacer()
                            Button(ClientText.moveUpAction) { Task { await settings.moveResident(resident.id, by: -1) } }
                                .disabled(!resident.canMoveUp)
                                .accessibilityLabel(resident.moveUpAccessibilityLabel)
                            Button(ClientText.moveDownAction) { Task { await settings.moveResident(resident.id, by: 1) } }
                                .disabled(!resident.canMoveDown)
                                .accessibilityLabel(resident.moveDownAccessibilityLabel)
                        }
                        .buttonStyle(.borderless)
                    }
                }
            }
            Section(ClientText.devicesTitle) {
                ForEach(state.deviceRows) { device in
                    HStack {
                        VStack(alignment: .leading) {
                            Text(device.title)
                            Text(device.subtitle).font(.footnote).foregroundStyle(.secondary)
                        }
                        Spacer()
                        if !device.isThisDevice {
                            Button(ClientText.removeAction, role: .destructive) { Task { await settings.removeDevice(device.id) } }
                                .buttonStyle(.borderless)
                                .accessibilityLabel(device.removeAccessibilityLabel)
                        }
                    }
                }
            }
            Section(ClientText.securityTitle) {
                // Binding's closures are `@isolated(any) @Sendable`: these read and act on the
                // main-actor model, so they say so.
                Toggle(ClientText.biometricToggle, isOn: Binding(
                    get: { @MainActor in app.biometricUnlockEnabled },
                    set: { @MainActor on in Task { await app.setBiometricUnlock(on) } }))
                Button(ClientText.logoutAction, role: .destructive) { Task { await app.logout() } }
            }
        }
        .disabled(state.isSaving)
        .navigationTitle(ClientText.settingsTitle)
        .task {
            await app.refreshNotificationStatus()
            await settings.load()
        }
        .refreshable { await settings.load() }
    }
}
