import Foundation

/// What the app reports about the phone's ability to ring (`POST /v1/devices`).
/// Every field is optional: an older app simply does not know some of them.
public struct DeviceCapabilities: Codable, Sendable, Equatable {
    /// The user allowed notifications (Android 13+ `POST_NOTIFICATIONS`, iOS authorization).
    public var notificationsEnabled: Bool?
    /// Android 14+ `USE_FULL_SCREEN_INTENT` still granted (the user can revoke it).
    public var fullScreenIntentAllowed: Bool?
    /// The app is exempt from battery optimisation (Android).
    public var ignoringBatteryOptimizations: Bool?
    public var manufacturer: String?
    public var osVersion: String?

    public init(notificationsEnabled: Bool? = nil, fullScreenIntentAllowed: Bool? = nil,
                ignoringBatteryOptimizations: Bool? = nil, manufacturer: String? = nil, osVersion: String? = nil) {
        self.notificationsEnabled = notificationsEnabled
        self.fullScreenIntentAllowed = fullScreenIntentAllowed
        self.ignoringBatteryOptimizations = ignoringBatteryOptimizations
        self.manufacturer = manufacturer
        self.osVersion = osVersion
    }

    public static let fieldNames: Set<String> = ["notifications_enabled", "full_screen_intent_allowed",
                                                 "ignoring_battery_optimizations", "manufacturer", "os_version"]

    enum CodingKeys: String, CodingKey {
        case notificationsEnabled = "notifications_enabled"
        case fullScreenIntentAllowed = "full_screen_intent_allowed"
        case ignoringBatteryOptimizations = "ignoring_battery_optimizations"
        case manufacturer
        case osVersion = "os_version"
    }
}

/// `POST /v1/devices`: sent at login and whenever the system issues a new token.
public struct DeviceRegistration: Codable, Sendable, Equatable {
    /// Stable per app install (not per user): the upsert key.
    public var installationID: String
    public var platform: String
    /// APNs alert token (iOS), FCM registration token (Android). Web devices send
    /// `web_push` instead (absent in the JSON decodes as "").
    public var pushToken: String
    /// PushKit token (iOS only): the only way to ring with the app closed.
    public var voipToken: String?
    public var appVersion: String?
    public var deviceName: String?
    public var locale: String?
    public var capabilities: DeviceCapabilities?
    /// The browser's push subscription (`platform: "web"` only).
    public var webPush: WebPushSubscription?

    public init(installationID: String, platform: String, pushToken: String, voipToken: String? = nil,
                appVersion: String? = nil, deviceName: String? = nil, locale: String? = nil,
                capabilities: DeviceCapabilities? = nil, webPush: WebPushSubscription? = nil) {
        self.webPush = webPush
        self.installationID = installationID
        self.platform = platform
        self.pushToken = pushToken
        self.voipToken = voipToken
        self.appVersion = appVersion
        self.deviceName = deviceName
        self.locale = locale
        self.capabilities = capabilities
    }

    public static let fieldNames: Set<String> = ["installation_id", "platform", "push_token", "voip_token",
                                                 "app_version", "device_name", "locale", "capabilities", "web_push"]

    enum CodingKeys: String, CodingKey {
        case installationID = "installation_id"
        case platform
        case pushToken = "push_token"
        case voipToken = "voip_token"
        case appVersion = "app_version"
        case deviceName = "device_name"
        case locale, capabilities
        case webPush = "web_push"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        installationID = try container.decode(String.self, forKey: .installationID)
        platform = try container.decode(String.self, forKey: .platform)
        pushToken = try container.decodeIfPresent(String.self, forKey: .pushToken) ?? ""
        voipToken = try container.decodeIfPresent(String.self, forKey: .voipToken)
        appVersion = try container.decodeIfPresent(String.self, forKey: .appVersion)
        deviceName = try container.decodeIfPresent(String.self, forKey: .deviceName)
        locale = try container.decodeIfPresent(String.self, forKey: .locale)
        capabilities = try container.decodeIfPresent(DeviceCapabilities.self, forKey: .capabilities)
        webPush = try container.decodeIfPresent(WebPushSubscription.self, forKey: .webPush)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(installationID, forKey: .installationID)
        try container.encode(platform, forKey: .platform)
        if webPush == nil || !pushToken.isEmpty { try container.encode(pushToken, forKey: .pushToken) }
        try container.encodeIfPresent(voipToken, forKey: .voipToken)
        try container.encodeIfPresent(appVersion, forKey: .appVersion)
        try container.encodeIfPresent(deviceName, forKey: .deviceName)
        try container.encodeIfPresent(locale, forKey: .locale)
        try container.encodeIfPresent(capabilities, forKey: .capabilities)
        try container.encodeIfPresent(webPush, forKey: .webPush)
    }
}

/// A browser's `PushSubscription` as `toJSON()` gives it (RFC 8030 endpoint, RFC 8291 keys).
public struct WebPushSubscription: Codable, Sendable, Equatable {
    public struct Keys: Codable, Sendable, Equatable {
        /// The browser's P-256 public key, uncompressed point, base64url (65 bytes).
        public var p256dh: String
        /// The 16-byte authentication secret, base64url.
        public var auth: String
    }

    /// The push service's URL for this subscription (https).
    public var endpoint: String
    public var keys: Keys

    public static let fieldNames: Set<String> = ["endpoint", "keys"]
    public static let keyFieldNames: Set<String> = ["p256dh", "auth"]
}

/// A registered device as its owner sees it (`GET /v1/devices`). Tokens are not echoed:
/// only whether each one is usable.
public struct DeviceView: Codable, Sendable, Equatable {
    public var id: String
    public var installationID: String
    public var platform: String
    /// `active`, `unregistered` (the provider refused it), `moved` (another install took it) or `missing`.
    public var pushTokenStatus: String
    public var voipTokenStatus: String?
    public var appVersion: String?
    public var deviceName: String?
    public var locale: String?
    public var capabilities: DeviceCapabilities
    public var createdAt: Date
    public var updatedAt: Date
    public var tokenRefreshedAt: Date
    public var lastPushAt: Date?
    public var lastAckAt: Date?

    public init(id: String, installationID: String, platform: String, pushTokenStatus: String, voipTokenStatus: String?,
                appVersion: String?, deviceName: String?, locale: String?, capabilities: DeviceCapabilities,
                createdAt: Date, updatedAt: Date, tokenRefreshedAt: Date, lastPushAt: Date?, lastAckAt: Date?) {
        self.id = id
        self.installationID = installationID
        self.platform = platform
        self.pushTokenStatus = pushTokenStatus
        self.voipTokenStatus = voipTokenStatus
        self.appVersion = appVersion
        self.deviceName = deviceName
        self.locale = locale
        self.capabilities = capabilities
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.tokenRefreshedAt = tokenRefreshedAt
        self.lastPushAt = lastPushAt
        self.lastAckAt = lastAckAt
    }

    enum CodingKeys: String, CodingKey {
        case id
        case installationID = "installation_id"
        case platform
        case pushTokenStatus = "push_token_status"
        case voipTokenStatus = "voip_token_status"
        case appVersion = "app_version"
        case deviceName = "device_name"
        case locale, capabilities
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case tokenRefreshedAt = "token_refreshed_at"
        case lastPushAt = "last_push_at"
        case lastAckAt = "last_ack_at"
    }
}

public struct DeviceList: Codable, Sendable, Equatable {
    public var devices: [DeviceView]
    public init(devices: [DeviceView]) { self.devices = devices }
}

/// `POST /v1/push/{push_id}/ack` answer: when the server first heard of the receipt.
public struct PushAck: Codable, Sendable, Equatable {

    public init(pushID: String, ackedAt: Date) {
        self.pushID = pushID
        self.ackedAt = ackedAt
    }
    public var pushID: String
    public var ackedAt: Date
    enum CodingKeys: String, CodingKey {
        case pushID = "push_id"
        case ackedAt = "acked_at"
    }
}

/// `POST /v1/push/{push_id}/ack` without a bearer: the per-push capability the payload
/// carried (`ack_token`), for a Notification Service Extension or an Android receiver
/// woken long after its access token expired (decision 0016).
public struct PushAckRequest: Codable, Sendable, Equatable {
    /// 32 random bytes, base64url without padding: always 43 characters.
    public var ackToken: String
    public init(ackToken: String) { self.ackToken = ackToken }
    enum CodingKeys: String, CodingKey { case ackToken = "ack_token" }

    /// Length of every `ack_token` (32 bytes in base64url without padding).
    public static let tokenLength = 43
}

/// One device in `GET /v1/admin/push_health`.
public struct PushHealthDevice: Codable, Sendable, Equatable {
    public var deviceID: String
    public var user: UserSummary
    public var platform: String
    public var deviceName: String?
    public var manufacturer: String?
    public var osVersion: String?
    public var appVersion: String?
    /// `healthy` (a recent push was acknowledged), `failing` or `unverified` (no receipt yet).
    public var status: String
    /// Provider refusals since the last success, plus pushes accepted but never acknowledged.
    public var consecutiveFailures: Int
    public var unackedPushes: Int
    public var lastProviderError: String?
    public var lastProviderErrorAt: Date?
    public var lastPushAt: Date?
    public var lastAckAt: Date?
    public var tokenAgeDays: Int
    public var pushTokenStatus: String
    public var voipTokenStatus: String?
    /// `notifications_disabled`, `full_screen_intent_revoked`, `battery_optimization`,
    /// `token_stale`, `token_unregistered`, `voip_token_missing`.
    public var riskFlags: [String]

    public init(deviceID: String, user: UserSummary, platform: String, deviceName: String?, manufacturer: String?,
                osVersion: String?, appVersion: String?, status: String, consecutiveFailures: Int, unackedPushes: Int,
                lastProviderError: String?, lastProviderErrorAt: Date?, lastPushAt: Date?, lastAckAt: Date?,
                tokenAgeDays: Int, pushTokenStatus: String, voipTokenStatus: String?, riskFlags: [String]) {
        self.deviceID = deviceID
        self.user = user
        self.platform = platform
        self.deviceName = deviceName
        self.manufacturer = manufacturer
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.status = status
        self.consecutiveFailures = consecutiveFailures
        self.unackedPushes = unackedPushes
        self.lastProviderError = lastProviderError
        self.lastProviderErrorAt = lastProviderErrorAt
        self.lastPushAt = lastPushAt
        self.lastAckAt = lastAckAt
        self.tokenAgeDays = tokenAgeDays
        self.pushTokenStatus = pushTokenStatus
        self.voipTokenStatus = voipTokenStatus
        self.riskFlags = riskFlags
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case user, platform
        case deviceName = "device_name"
        case manufacturer
        case osVersion = "os_version"
        case appVersion = "app_version"
        case status
        case consecutiveFailures = "consecutive_failures"
        case unackedPushes = "unacked_pushes"
        case lastProviderError = "last_provider_error"
        case lastProviderErrorAt = "last_provider_error_at"
        case lastPushAt = "last_push_at"
        case lastAckAt = "last_ack_at"
        case tokenAgeDays = "token_age_days"
        case pushTokenStatus = "push_token_status"
        case voipTokenStatus = "voip_token_status"
        case riskFlags = "risk_flags"
    }
}

/// `GET /v1/admin/push_health`.
public struct PushHealthReport: Codable, Sendable, Equatable {
    /// How many of `devices` are in each status.
    public struct Summary: Codable, Sendable, Equatable {
        public var healthy: Int
        public var failing: Int
        public var unverified: Int
    }

    public var generatedAt: Date
    public var summary: Summary
    /// Failing devices first, then unverified, then healthy.
    public var devices: [PushHealthDevice]

    /// The summary is counted from `devices`, so the two cannot disagree.
    public init(generatedAt: Date, devices: [PushHealthDevice]) {
        self.generatedAt = generatedAt
        self.devices = devices
        summary = Summary(healthy: devices.count { $0.status == "healthy" }, failing: devices.count { $0.status == "failing" },
                          unverified: devices.count { $0.status == "unverified" })
    }

    enum CodingKeys: String, CodingKey {
        case generatedAt = "generated_at"
        case summary, devices
    }
}
