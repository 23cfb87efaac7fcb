import Foundation
import PortariaCore

/// Strict checks on `POST /v1/devices`: unknown fields, wrong types and malformed tokens
/// are refused with a 400 naming the field, before anything is written.
enum DeviceValidation {
    /// The registration, checked; a web device's `push_token` is set to its subscription's
    /// canonical form (what the outbox sends to and the unique index compares).
    static func decode(_ request: HTTPRequest, webPushHosts: WebPushHosts = .browsers) throws -> DeviceRegistration {
        let raw = try request.decode(JSONValue.self)
        guard case .object(let object) = raw else { throw HTTPError.invalidRequest("the request body must be a JSON object") }
        for key in object.keys.sorted() where !DeviceRegistration.fieldNames.contains(key) {
            throw HTTPError.invalidRequest("\(key) is not a field of a device registration", field: key)
        }
        if case .object(let capabilities)? = object["capabilities"] {
            for key in capabilities.keys.sorted() where !DeviceCapabilities.fieldNames.contains(key) {
                throw HTTPError.invalidRequest("capabilities.\(key) is not a known capability", field: "capabilities.\(key)")
            }
        }
        if let webPush = object["web_push"] {
            guard case .object(let fields) = webPush else { throw HTTPError.invalidRequest("web_push must be an object", field: "web_push") }
            for key in fields.keys.sorted() where !WebPushSubscription.fieldNames.contains(key) {
                throw HTTPError.invalidRequest("web_push.\(key) is not a field of a push subscription", field: "web_push.\(key)")
            }
            guard case .string? = fields["endpoint"] else {
                throw HTTPError.invalidRequest("web_push.endpoint must be a string", field: "web_push.endpoint")
            }
            guard case .object(let keys)? = fields["keys"] else { throw HTTPError.invalidRequest("web_push.keys must be an object", field: "web_push.keys") }
            for key in keys.keys.sorted() where !WebPushSubscription.keyFieldNames.contains(key) {
                throw HTTPError.invalidRequest("web_push.keys.\(key) is not a subscription key", field: "web_push.keys.\(key)")
            }
            for key in ["p256dh", "auth"] {
                guard case .string? = keys[key] else {
                    throw HTTPError.invalidRequest("web_push.keys.\(key) must be a string", field: "web_push.keys.\(key)")
                }
            }
        }
        var registration = try request.decode(DeviceRegistration.self)
        try validate(registration, webPushHosts: webPushHosts)
        if let subscription = registration.webPush {
            registration.pushToken = WebPushSubscriptionRules.storedToken(subscription)
        }
        return registration
    }

    static func validate(_ r: DeviceRegistration, webPushHosts: WebPushHosts = .browsers) throws {
        let idCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")
        try require(!r.installationID.isEmpty && r.installationID.utf8.count <= 128
                    && r.installationID.unicodeScalars.allSatisfy(idCharacters.contains),
                    field: "installation_id", "installation_id must be 1–128 characters of letters, digits, '-', '_', '.', ':'")
        try require(["ios", "android", "web"].contains(r.platform), field: "platform", "platform must be ios, android or web")
        switch r.platform {
        case "ios":
            // APNs device tokens are hex (32 bytes today; Apple warns they may grow).
            try require(isHexToken(r.pushToken), field: "push_token", "push_token must be an APNs device token (hex, 64–200 characters)")
            if let voip = r.voipToken {
                try require(isHexToken(voip), field: "voip_token", "voip_token must be a PushKit token (hex, 64–200 characters)")
                try require(voip.lowercased() != r.pushToken.lowercased(), field: "voip_token", "voip_token must differ from push_token")
            }
        case "android":
            try require(isOpaqueToken(r.pushToken), field: "push_token", "push_token must be an FCM registration token (1–4096 printable characters)")
            try require(r.voipToken == nil, field: "voip_token", "voip_token exists only on iOS")
        default:
            // A browser registers its PushSubscription; there is no token of its own.
            try require(r.pushToken.isEmpty, field: "push_token", "a web device sends web_push, not push_token")
            try require(r.voipToken == nil, field: "voip_token", "voip_token exists only on iOS")
            guard let subscription = r.webPush else {
                throw HTTPError.invalidRequest("a web device needs web_push {endpoint, keys {p256dh, auth}}", field: "web_push")
            }
            if case .failure(let invalid) = WebPushSubscriptionRules.check(subscription, hosts: webPushHosts) {
                throw HTTPError.invalidRequest(invalid.message, field: invalid.field)
            }
        }
        if r.platform != "web" {
            try require(r.webPush == nil, field: "web_push", "web_push exists only on the web")
        }
        try text(r.appVersion, "app_version", max: 64)
        try text(r.deviceName, "device_name", max: 128)
        if let locale = r.locale {
            let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
            try require(!locale.isEmpty && locale.utf8.count <= 35 && locale.unicodeScalars.allSatisfy(allowed.contains),
                        field: "locale", "locale must be a language tag such as pt-BR")
        }
        try text(r.capabilities?.manufacturer, "capabilities.manufacturer", max: 64)
        try text(r.capabilities?.osVersion, "capabilities.os_version", max: 64)
    }

    static func isHexToken(_ token: String) -> Bool {
        (64...200).contains(token.utf8.count) && token.utf8.count % 2 == 0 && token.allSatisfy(\.isASCIIHexDigit)
    }

    static func isOpaqueToken(_ token: String) -> Bool {
        (1...4096).contains(token.utf8.count) && token.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7f }
    }

    private static func text(_ value: String?, _ field: String, max: Int) throws {
        guard let value else { return }
        try require(!value.isEmpty && value.count <= max && !value.unicodeScalars.contains { $0.properties.generalCategory == .control },
                    field: field, "\(field) must be 1–\(max) characters without control characters")
    }
}
