import Foundation
import PortariaCore

/// What the iOS Notification Service Extension does with an alert, decided here so it is
/// tested on Linux; the extension only performs it (fetch, attach, acknowledge).
///
/// The extension runs in its own process for ~30 s, possibly hours after the app last ran.
/// It must never refresh the session: a refresh rotates the refresh token, and the app doing
/// the same at the same moment would present a spent token — the server then revokes the
/// whole family (RFC 9700 reuse detection) and the resident is logged out. So the photo is
/// fetched only with an access token that is still valid, and the receipt goes through the
/// per-push capability (`ack_token`), which needs no session at all.
public struct NotificationServicePlan: Sendable, Equatable {
    /// `GET /v1/visits/{id}/photo`, when there is a photo worth trying.
    public var photoRequest: ClientHTTPRequest?
    /// The text that replaces the alert's body, when the extension knows better (nil: keep).
    public var body: String?

    /// Leave a margin: a token that expires while the request is in flight is a 401.
    public static let tokenMargin: TimeInterval = 30

    public init(payload: JSONValue, accessToken: String?, companyID: String?, now: Date) {
        photoRequest = nil
        body = nil
        guard let decoded = try? PushPayload.decode(payload) else { return }
        let visitID: String
        switch decoded {
        case .delivery(let push): visitID = push.visitID
        case .ring(let push): visitID = push.visitID
        case .deliveryResolved(let push):
            // The server rendered the sentence; keep it even if aps.alert was trimmed.
            if !push.text.isEmpty { body = push.text }
            return
        case .ringCancelled, .test, .unknown:
            return
        }
        guard let accessToken, Self.isUsable(accessToken, now: now) else { return }
        var headers = ["Authorization": "Bearer \(accessToken)", "Accept": "image/jpeg, image/png"]
        if let companyID { headers["X-Company-Id"] = companyID }
        photoRequest = try? ClientHTTPRequest(APIRoutes.visitPhoto(id: visitID), headers: headers)
    }

    /// Whether a JWT's `exp` is more than `tokenMargin` away. The signature is the server's
    /// business; this only avoids a request that is bound to be refused.
    public static func isUsable(_ jwt: String, now: Date) -> Bool {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].utf8.count <= 4096 else { return false }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
              case .object(let claims)? = try? JSONCoding.decoder().decode(JSONValue.self, from: data),
              case .number(let exp)? = claims["exp"], exp.isFinite else { return false }
        return Date(timeIntervalSince1970: exp) > now.addingTimeInterval(tokenMargin)
    }

    /// The file extension `UNNotificationAttachment` needs to recognise the image (it goes
    /// by the extension); nil for anything it cannot show.
    public static func attachmentExtension(contentType: String?, body: Data) -> String? {
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        switch type {
        case "image/jpeg"?: return "jpg"
        case "image/png"?: return "png"
        default:
            // Sniff when the header is missing or generic: the first bytes do not lie.
            if body.starts(with: [0xFF, 0xD8, 0xFF]) { return "jpg" }
            if body.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "png" }
            return nil
        }
    }

    /// Apple's limit for an image attachment is 10 MB; the server strips photos far below it.
    public static let attachmentLimit = 10 * 1024 * 1024
}
