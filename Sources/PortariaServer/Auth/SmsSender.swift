import Foundation
import PortariaCore

/// Sends a text message. The OTP flow only needs this one operation.
public protocol SmsSender: Sendable {
    func send(to phone: String, message: String) async throws
}

/// Development only: writes the message to the log instead of sending it, loudly marked.
public struct LogSmsSender: SmsSender {
    let log: Log
    public init(log: Log = .shared) { self.log = log }
    public func send(to phone: String, message: String) async throws {
        log.warning("DEV ONLY: SMS not sent (no --sms-webhook); message logged", [
            "to": .string(phone), "sms": .string(message),
        ])
    }
}

/// Posts `{"to": "+55…", "message": "…"}` as JSON to the SMS gateway's webhook.
public struct WebhookSmsSender: SmsSender {
    let url: String
    let client: OutboundHTTPClient

    struct Payload: Encodable { var to: String; var message: String }

    public func send(to phone: String, message: String) async throws {
        let body = try JSONCoding.encoder().encode(Payload(to: phone, message: message))
        let response = try await client.send(OutboundRequest(method: "POST", url: url,
                                                             headers: [("Content-Type", "application/json")],
                                                             body: Array(body), timeout: 10))
        guard (200..<300).contains(response.status) else {
            throw OutboundHTTPError.status(response.status)
        }
    }
}
