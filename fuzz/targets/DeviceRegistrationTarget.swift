import Foundation
import PortariaCore

// fuzz/device-registration: a `POST /v1/devices` body as DeviceValidation.decode reads it
// (unknown fields, the JSON types, each platform's token rules, the browser's push
// subscription, the free-text fields). The input is the body.
// Properties: a refusal is a 400 naming a field or the body; what is accepted keeps each
// platform's rules (an APNs token is even-length hex of 64–200 characters, an FCM token
// printable ASCII of at most 4,096 bytes, a browser's push token is its subscription's
// stored form, a PushKit token only on iOS and never the alert token); the free text is
// bounded and has no control characters; what is accepted, sent again, is accepted as
// the same registration.

/// `WebPushHosts.parse` throws the server's UsageError (Config/Options.swift, not compiled here).
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let idCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:".unicodeScalars)

func hasNoControl(_ text: String?, max: Int) -> Bool {
    guard let text else { return true }
    return !text.isEmpty && text.count <= max && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
}

func registration(_ body: [UInt8]) -> DeviceRegistration? {
    let request = HTTPRequest(method: "POST", path: "/v1/devices", headers: ["content-type": "application/json"], body: body)
    do {
        return try DeviceValidation.decode(request)
    } catch let error as HTTPError {
        invariant(error.status == 400, "a registration refused with \(error.status): \(error)")
        _ = error.response
        return nil
    } catch {
        invariant(false, "a registration refused with a non-HTTP error: \(error)")
        return nil
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceRegistration(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let accepted = registration(fuzzInput(data, size)) else { return 0 }

    invariant((1...128).contains(accepted.installationID.utf8.count)
              && accepted.installationID.unicodeScalars.allSatisfy(idCharacters.contains),
              "installation id \(accepted.installationID.debugDescription)")
    switch accepted.platform {
    case "ios":
        let hex = { (token: String) in
            (64...200).contains(token.utf8.count) && token.utf8.count.isMultiple(of: 2)
                && token.utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
        }
        invariant(hex(accepted.pushToken), "APNs token \(accepted.pushToken.debugDescription)")
        if let voip = accepted.voipToken {
            invariant(hex(voip) && voip.lowercased() != accepted.pushToken.lowercased(), "PushKit token \(voip.debugDescription)")
        }
        invariant(accepted.webPush == nil, "an iPhone with a browser subscription")
    case "android":
        invariant((1...4096).contains(accepted.pushToken.utf8.count) && accepted.pushToken.utf8.allSatisfy { (0x21...0x7e).contains($0) },
                  "FCM token \(accepted.pushToken.prefix(100).debugDescription)")
        invariant(accepted.voipToken == nil && accepted.webPush == nil, "an Android device with another platform's token")
    case "web":
        guard let subscription = accepted.webPush else { invariant(false, "a browser without a subscription"); return 0 }
        invariant(accepted.pushToken == WebPushSubscriptionRules.storedToken(subscription), "a browser's token is not its subscription")
        invariant(accepted.voipToken == nil, "a browser with a PushKit token")
    default:
        invariant(false, "platform \(accepted.platform.debugDescription)")
    }
    invariant(hasNoControl(accepted.appVersion, max: 64) && hasNoControl(accepted.deviceName, max: 128)
              && hasNoControl(accepted.capabilities?.manufacturer, max: 64) && hasNoControl(accepted.capabilities?.osVersion, max: 64),
              "free text out of bounds")
    if let locale = accepted.locale {
        invariant((1...35).contains(locale.utf8.count) && locale.unicodeScalars.allSatisfy { idCharacters.contains($0) && $0 != "." && $0 != ":" },
                  "locale \(locale.debugDescription)")
    }

    // Sent again as the app would (a browser sends its subscription, not the stored token).
    var resent = accepted
    if resent.platform == "web" { resent.pushToken = "" }
    guard let encoded = try? JSONCoding.encoder().encode(resent) else { invariant(false, "cannot encode \(accepted)"); return 0 }
    invariant(registration(Array(encoded)) == accepted, "accepted once, then not the same: \(String(decoding: encoded, as: UTF8.self).prefix(300))")
    return 0
}
