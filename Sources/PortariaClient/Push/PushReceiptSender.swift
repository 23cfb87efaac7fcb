import Foundation
import PortariaCore

/// Acknowledges pushes (`POST /v1/push/{push_id}/ack`) from the payload alone: no session,
/// no Keychain, no refresh. This is what an iOS Notification Service Extension or an
/// Android receiver runs when it is woken hours after the access token expired — the
/// payload's `ack_token` is the credential (decision 0016).
///
/// Transient failures (no answer, 408, 425, 429, 5xx, a proxy's page) are retried with
/// `RetryPolicy` backoff (honouring `Retry-After`) until `deadline`; an extension has ~30 s
/// of run time, so the shell passes what it has left. A 404 is final: the capability is
/// wrong, expired (7 days) or the push is unknown, and repeating it would only count
/// against the phone's address.
public struct PushReceiptSender: Sendable {
    /// How one acknowledgement ended.
    public enum Outcome: Sendable, Equatable {
        /// The server has the receipt (now or earlier: acknowledging is idempotent).
        case acknowledged(ackedAt: Date)
        /// The payload has no `ack_token` (an older server): only a bearer can acknowledge.
        case noCapability
        /// Refused for good (404, 400): wrong, expired or unknown.
        case refused(status: Int)
        /// Still failing when the deadline came; the receipt is simply missing (push health
        /// will show it) — nothing else depends on it.
        case gaveUp(attempts: Int)
    }

    public let baseURL: URL
    public let transport: any HTTPTransport
    public let clock: any ClientClock
    public let random: RandomSource
    public let policy: RetryPolicy

    /// An extension's budget is short: begin at ½ s, cap steps at 8 s.
    public static let extensionPolicy = RetryPolicy(initialDelay: 0.5, multiplier: 2, maximumDelay: 8, maximumRetryAfter: 20)

    public init(baseURL: URL, transport: any HTTPTransport = URLSessionTransport(timeout: 10),
                clock: any ClientClock = SystemClock(), random: RandomSource = .system,
                policy: RetryPolicy = PushReceiptSender.extensionPolicy) {
        self.baseURL = baseURL
        self.transport = transport
        self.clock = clock
        self.random = random
        self.policy = policy
    }

    /// Acknowledges a decoded push.
    public func acknowledge(_ payload: PushPayload, deadline: Date) async -> Outcome {
        guard let receipt = payload.receipt else { return .noCapability }
        return await acknowledge(receipt, deadline: deadline)
    }

    /// Acknowledges a push from its raw payload (the APNs `userInfo` or FCM `data` as JSON),
    /// even when the rest of it cannot be read: it arrived, and the receipt says so.
    public func acknowledge(json: Data, deadline: Date) async -> Outcome {
        guard let receipt = PushPayload.receipt(json: json) else { return .noCapability }
        return await acknowledge(receipt, deadline: deadline)
    }

    public func acknowledge(_ receipt: PushReceiptCapability, deadline: Date) async -> Outcome {
        // The id goes into the path: anything but a plain id is not one the server made.
        guard !receipt.pushID.isEmpty, receipt.pushID.utf8.count <= 64,
              receipt.pushID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            return .refused(status: 404)
        }
        guard let request = try? ClientHTTPRequest(APIRoutes.pushAck(pushID: receipt.pushID),
                                                   json: PushAckRequest(ackToken: receipt.ackToken)) else {
            return .refused(status: 404)
        }
        var failures = 0
        while true {
            var retryAfter: TimeInterval?
            do {
                let response = try await transport.send(request, to: baseURL)
                if response.isSuccess, let ack = try? JSONCoding.decoder().decode(PushAck.self, from: response.body) {
                    return .acknowledged(ackedAt: ack.ackedAt)
                }
                if Self.isFinal(response) { return .refused(status: response.status) }
                retryAfter = response.header("Retry-After").flatMap { RetryAfterHeader.seconds($0, now: clock.now()) }
            } catch {
                // No answer: the request may or may not have arrived; acknowledging twice is harmless.
            }
            failures += 1
            let wait = policy.delay(afterFailures: failures, retryAfter: retryAfter, random: random.next())
            guard clock.now().addingTimeInterval(wait) < deadline else { return .gaveUp(attempts: failures) }
            do { try await clock.sleep(for: wait) } catch { return .gaveUp(attempts: failures) }
        }
    }

    /// A refusal that repeating cannot change: the API's own 4xx (404 for a bad capability,
    /// 400/413 for a malformed one). 408, 425, 429 and answers without the API's envelope
    /// (a captive portal, a proxy) may pass.
    static func isFinal(_ response: ClientHTTPResponse) -> Bool {
        guard (400..<500).contains(response.status), ![408, 425, 429].contains(response.status) else { return false }
        return response.errorBody != nil
    }
}
