import Foundation
import Observation
import PortariaCore

// A screen's view model: plain observable state (`@Observable`, from the Swift standard
// library's Observation module — no UIKit, no SwiftUI; SwiftUI observes it directly, a
// UIKit shell uses `withObservationTracking`) and intents that call the core. It runs on
// the main actor because that is where the screen reads it; the work it starts runs in
// the core's actors.

@MainActor @Observable
public final class SettingsViewModel {
    public var state = SettingsState()
    @ObservationIgnored let api: ResidentAPI

    public init(api: ResidentAPI, thisDeviceID: String?) {
        self.api = api
        state.thisDeviceID = thisDeviceID
    }

    /// The shell reports what the OS says (on launch, on foreground).
    public func setNotificationStatuses(_ statuses: [NotificationStatus]) { state.notificationStatuses = statuses }

    /// The user's unit (the first of `GET /v1/me`), its settings, and the user's devices.
    public func load() async {
        state.isLoading = true
        defer { state.isLoading = false }
        do {
            let me = try await api.me()
            if let unit = me.units.first {
                state.loaded(try await api.unitSettings(unit.id), unitLabel: unit.label)
            }
            state.loaded(devices: try await api.devices())
            state.error = nil
        } catch {
            state.error = ClientText.loadError
        }
    }

    public func setDeliveryRule(_ rule: DeliveryRule) async {
        guard var settings = state.settings else { return }
        settings.deliveryRule = rule
        await save(settings)
    }

    public func setRingMode(_ mode: RingMode) async {
        guard var settings = state.settings else { return }
        settings.ringMode = mode
        await save(settings)
    }

    /// Moves a resident up (−1) or down (+1) the ring order.
    public func moveResident(_ residentID: String, by offset: Int) async {
        guard let settings = state.movingResident(residentID, by: offset) else { return }
        await save(settings)
    }

    public func removeDevice(_ id: String) async {
        let before = state.devices
        state.loaded(devices: before.filter { $0.id != id })
        do {
            try await api.deleteDevice(id)
            state.error = nil
        } catch {
            state.loaded(devices: before)
            state.error = ClientText.settingsSaveError(error)
        }
    }

    /// Optimistic: the screen shows the change at once, and the server's answer (or the
    /// old value, with a sentence, when it refuses) replaces it.
    private func save(_ settings: UnitSettings) async {
        guard let unitID = state.unitID, let before = state.settings else { return }
        state.set(settings)
        state.isSaving = true
        defer { state.isSaving = false }
        do {
            let saved = try await api.updateUnitSettings(unitID, settings)
            state.loaded(saved, unitLabel: state.unitLabel)
            state.error = nil
        } catch {
            state.set(before)
            state.error = ClientText.settingsSaveError(error)
        }
    }
}
