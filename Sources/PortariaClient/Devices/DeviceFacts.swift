import PortariaCore

/// What the shell knows about this phone when it registers it (asked at every
/// registration: the user may have turned notifications off in the meantime).
public struct DeviceFacts: Sendable, Equatable {
    public var platform: String
    public var appVersion: String?
    public var deviceName: String?
    public var locale: String?
    public var capabilities: DeviceCapabilities?

    public init(platform: String, appVersion: String? = nil, deviceName: String? = nil, locale: String? = nil,
                capabilities: DeviceCapabilities? = nil) {
        self.platform = platform
        self.appVersion = appVersion
        self.deviceName = deviceName
        self.locale = locale
        self.capabilities = capabilities
    }
}
