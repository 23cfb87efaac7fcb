import Foundation

/// What a browser push service's answer means for the push (RFC 8030). Pure, so
/// fuzz/targets/PushResponseTarget.swift compiles it.
enum WebPushResponse {
    /// RFC 8030 §5/§7 answers: 201 created; 404/410 the subscription is gone; 413 too big;
    /// 429 and 5xx later; 400/401/403 our request or VAPID is wrong.
    static func interpret(status: Int, headers: [String: String], body: [UInt8]) -> PushResult {
        let detail = body.isEmpty ? nil : String(decoding: body.prefix(PushResult.providerTextLimit), as: UTF8.self)
        let result: PushResult
        switch status {
        case 200...202:
            result = PushResult(outcome: .accepted, httpStatus: status, providerID: headers["location"])
        case 404, 410:
            result = PushResult(outcome: .tokenInvalid, httpStatus: status, reason: status == 410 ? "Gone" : "NotFound", detail: detail)
        case 413:
            result = PushResult(outcome: .failed, httpStatus: status, reason: "PAYLOAD_TOO_LARGE", detail: detail)
        case 429, 500...599:
            result = PushResult(outcome: .retry, httpStatus: status, reason: "HTTP \(status)",
                                retryAfter: headers["retry-after"].flatMap { RetryAfter.parse($0) }, detail: detail)
        default:
            result = PushResult(outcome: .failed, httpStatus: status, reason: "HTTP \(status)", detail: detail)
        }
        return result.clippingProviderText()
    }
}
