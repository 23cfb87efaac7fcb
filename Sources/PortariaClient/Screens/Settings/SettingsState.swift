import Foundation
import PortariaCore

/// What the phone knows about its own ability to ring, reported by the shell
/// (UNUserNotificationCenter, PushKit, Android's NotificationManager and PowerManager).
public enum NotificationStatus: String, Sendable, Equatable, CaseIterable {
    case allowed
    case denied
    case notDetermined = "not_determined"
    /// Android 14+: full-screen call notifications need a permission the user can revoke.
    case fullScreenIntentRevoked = "full_screen_intent_revoked"
    /// Android: battery optimisation on a manufacturer known to kill pushes.
    case batteryOptimized = "battery_optimized"
    /// iOS: no PushKit token yet — the iPhone cannot ring with the app closed.
    case noVoIPToken = "no_voip_token"

    /// Problems first: what the user must fix before a visitor is left at the gate.
    public var isProblem: Bool { self != .allowed }

    /// The statuses a registration's facts imply (the same facts push health flags).
    public static func from(_ capabilities: DeviceCapabilities?, platform: String, hasVoIPToken: Bool) -> [NotificationStatus] {
        var statuses: [NotificationStatus] = []
        switch capabilities?.notificationsEnabled {
        case true?: break
        case false?: statuses.append(.denied)
        case nil: statuses.append(.notDetermined)
        }
        if platform == "android" {
            if capabilities?.fullScreenIntentAllowed == false { statuses.append(.fullScreenIntentRevoked) }
            if capabilities?.ignoringBatteryOptimizations == false { statuses.append(.batteryOptimized) }
        }
        if platform == "ios" && !hasVoIPToken { statuses.append(.noVoIPToken) }
        return statuses.isEmpty ? [.allowed] : statuses
    }
}

/// The settings screen: the unit's delivery rule and ring order, this user's devices, and
/// whether this phone can ring.
public struct SettingsState: Sendable, Equatable {
    public struct Option<Value: Sendable & Equatable>: Sendable, Equatable {
        public var value: Value
        public var title: String
        public var isSelected: Bool
    }

    public struct Resident: Sendable, Equatable, Identifiable {
        public var id: String
        /// "1º Maria Souza".
        public var title: String
        public var canMoveUp: Bool
        public var canMoveDown: Bool
        public var moveUpAccessibilityLabel: String
        public var moveDownAccessibilityLabel: String
    }

    public struct Device: Sendable, Equatable, Identifiable {
        public var id: String
        public var title: String
        /// "iPhone · Este aparelho".
        public var subtitle: String
        public var isThisDevice: Bool
        public var removeAccessibilityLabel: String
    }

    public var unitID: String?
    public var unitLabel: String?
    public private(set) var settings: UnitSettings?
    public private(set) var residents: [PersonRef] = []
    public private(set) var devices: [DeviceView] = []
    public var thisDeviceID: String?
    public var notificationStatuses: [NotificationStatus] = [.notDetermined]
    public var isLoading = false
    public var isSaving = false
    /// pt-BR; cleared by the next success.
    public var error: String?

    public init() {}

    public mutating func loaded(_ response: UnitSettingsResponse, unitLabel: String?) {
        unitID = response.unitID
        self.unitLabel = unitLabel
        settings = response.settings
        residents = response.residents
    }

    public mutating func loaded(devices: [DeviceView]) { self.devices = devices }

    /// Optimistic edits: the screen changes at once; `SettingsViewModel` puts the old
    /// value back if the server refuses.
    public mutating func set(_ settings: UnitSettings) { self.settings = settings }

    public var deliveryRuleOptions: [Option<DeliveryRule>] {
        DeliveryRule.allCases.map { Option(value: $0, title: ClientText.deliveryRule($0), isSelected: settings?.deliveryRule == $0) }
    }

    public var ringModeOptions: [Option<RingMode>] {
        RingMode.allCases.map { Option(value: $0, title: ClientText.ringMode($0), isSelected: settings?.ringMode == $0) }
    }

    /// The residents in ring order (anyone the order leaves out comes last, as the server rings them).
    public var ringOrder: [Resident] {
        let order = settings?.ringOrder ?? []
        let known = order.compactMap { id in residents.first { $0.id == id } } + residents.filter { !order.contains($0.id) }
        return known.enumerated().map { index, person in
            Resident(id: person.id, title: ClientText.ringPosition(index, name: person.name),
                     canMoveUp: index > 0, canMoveDown: index < known.count - 1,
                     moveUpAccessibilityLabel: ClientText.moveUpAccessibility(person.name),
                     moveDownAccessibilityLabel: ClientText.moveDownAccessibility(person.name))
        }
    }

    public var deviceRows: [Device] {
        devices.map { device in
            let name = device.deviceName.flatMap { $0.isEmpty ? nil : $0 } ?? ClientText.unnamedDevice
            let mine = device.id == thisDeviceID
            return Device(id: device.id, title: name,
                          subtitle: ([ClientText.platform(device.platform)] + (mine ? [ClientText.thisDevice] : [])).joined(separator: " · "),
                          isThisDevice: mine, removeAccessibilityLabel: ClientText.removeDeviceAccessibility(name))
        }
    }

    /// One line of "can this phone ring": the sentence and whether it is a problem (shown
    /// in orange, with the Settings button).
    public struct NotificationLine: Sendable, Equatable {
        public var text: String
        public var isProblem: Bool
    }

    /// Problems first, one line each (sentence and colour together, so they cannot drift apart).
    public var notificationLines: [NotificationLine] {
        notificationStatuses.sorted { $0.isProblem && !$1.isProblem }
            .map { NotificationLine(text: ClientText.notificationStatus($0), isProblem: $0.isProblem) }
    }

    /// The ring order with `residentID` moved by `offset` (−1 up, +1 down); nil when it cannot move.
    public func movingResident(_ residentID: String, by offset: Int) -> UnitSettings? {
        guard var settings else { return nil }
        var order = ringOrder.map(\.id)
        guard let index = order.firstIndex(of: residentID), order.indices.contains(index + offset) else { return nil }
        order.swapAt(index, index + offset)
        settings.ringOrder = order
        return settings
    }
}
