import Foundation
import PortariaCore

// fuzz/push-response: what APNs, FCM (sends and its OAuth token endpoint) and browser push
// services answer. The input is an answer as the HTTP/2 client's callbacks deliver it,
// gathered by HTTP2ResponseParts, then read by the provider's interpreter:
//
//   byte 0      bits 0-1 the reader: 0 APNs, 1 FCM send, 2 Web Push, 3 FCM OAuth grant;
//               bits 2-7 + 1: the size of the DATA chunks the body arrives in
//   byte 1      the body limit: 16 × (byte + 1) bytes (production: 1 MiB)
//   then        the :status value, a line; header lines `name:value` (the name runs to
//               the first colon after its first byte, so `:path:x` is a pseudo-header);
//               an empty line; the body.
//
// Checked: the body never passes its limit and a body over it is never kept whole; the
// status is three digits or none; the outcome follows the status the way each provider's
// table says (a success only from the provider's 2xx, a dead token only from the statuses
// that mean one); Retry-After is a finite delay in 0…RetryAfter.limit and only on a retry;
// the provider's text a result carries is bounded; an OAuth grant is a bearer token with a
// lifetime in 0…FCMResponse.lifetimeLimit.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPushResponse(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard bytes.count >= 2 else { return 0 }
    let reader = bytes[0] & 3
    let chunkSize = Int(bytes[0] >> 2) + 1
    let bodyLimit = 16 * (Int(bytes[1]) + 1)
    let rest = bytes[2...]

    // Split head and body at the first empty line.
    var lines: [ArraySlice<UInt8>] = []
    var body: ArraySlice<UInt8> = []
    var start = rest.startIndex
    var index = rest.startIndex
    while index < rest.endIndex {
        if rest[index] == UInt8(ascii: "\n") {
            if index == start { body = rest[(index + 1)...]; start = rest.endIndex; break }
            lines.append(rest[start..<index])
            start = index + 1
        }
        index += 1
    }
    if start < rest.endIndex { lines.append(rest[start...]) }

    var parts = HTTP2ResponseParts(bodyLimit: bodyLimit, headerLimit: 512)
    if let statusLine = lines.first {
        Array(statusLine).withUnsafeBufferPointer { value in
            Array(":status".utf8).withUnsafeBufferPointer { parts.header(name: $0, value: value) }
        }
        let digits = Array(statusLine)
        if parts.status != 0 {
            invariant((100...999).contains(parts.status), "status \(parts.status)")
            invariant(digits.count == 3 && Int(String(decoding: digits, as: UTF8.self)) == parts.status,
                      "status \(parts.status) from \(digits)")
        } else {
            invariant(digits.count != 3 || Int(String(decoding: digits, as: UTF8.self)).map { $0 < 100 } ?? true,
                      "three digits \(digits) refused")
        }
    }
    for line in lines.dropFirst() {
        let colon = line.dropFirst().firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let name = Array(line[line.startIndex..<colon])
        let value = colon < line.endIndex ? Array(line[(colon + 1)...]) : []
        name.withUnsafeBufferPointer { name in value.withUnsafeBufferPointer { parts.header(name: name, value: $0) } }
        invariant(parts.headerBytes <= parts.headerLimit, "\(parts.headerBytes) header bytes kept")
    }

    // The body in DATA chunks; the first refusal ends the stream, as in HTTP2Connection.
    var offered = 0
    var refused = false
    var chunkStart = body.startIndex
    while chunkStart < body.endIndex {
        let chunk = Array(body[chunkStart..<min(chunkStart + chunkSize, body.endIndex)])
        let before = parts.body.count
        let kept = chunk.withUnsafeBufferPointer { parts.append($0) }
        offered += chunk.count
        if kept {
            invariant(parts.body.count == before + chunk.count, "a kept chunk lost bytes")
        } else {
            invariant(parts.body.count == before, "a refused chunk was partly kept")
            invariant(offered > bodyLimit, "refused at \(offered) bytes, the limit is \(bodyLimit)")
            refused = true
            break
        }
        invariant(parts.body.count <= bodyLimit, "body of \(parts.body.count) bytes, the limit is \(bodyLimit)")
        chunkStart += chunk.count
    }
    invariant(parts.body.elementsEqual(body.prefix(parts.body.count)), "the body kept is not what arrived")
    if refused { return 0 }  // the stream is reset; no answer reaches a provider
    invariant(parts.body.count == body.count, "a body within the limit was cut")

    // Retry-After alone, from the header and from the raw body text.
    for text in [parts.headers["retry-after"], String(decoding: body.prefix(64), as: UTF8.self)].compactMap({ $0 }) {
        if let delay = RetryAfter.parse(text) {
            invariant(delay.isFinite && delay >= 0 && delay <= RetryAfter.limit, "Retry-After \(text) → \(delay)")
        }
    }

    let status = parts.status
    let response = parts.response
    if reader == 3 {
        switch FCMResponse.grant(status: status, body: response.body) {
        case .success(let grant):
            invariant(status == 200, "a grant from status \(status)")
            invariant(FCMResponse.isBearerToken(grant.token) && grant.token.utf8.count <= FCMResponse.accessTokenLimit,
                      "not a bearer token: \(grant.token)")
            invariant(grant.lifetime.isFinite && grant.lifetime >= 0 && grant.lifetime <= FCMResponse.lifetimeLimit,
                      "lifetime \(grant.lifetime)")
        case .failure(let error):
            invariant(error.description.utf8.count <= 400, "an OAuth error of \(error.description.utf8.count) bytes")
        }
        return 0
    }
    // HTTP2Connection hands over an answer only once it has a status.
    guard status != 0 else { return 0 }
    let result: PushResult
    switch reader {
    case 0: result = APNsResponse.interpret(status: status, headers: response.headers, body: response.body)
    case 1: result = FCMResponse.interpret(status: status, headers: response.headers, body: response.body)
    default: result = WebPushResponse.interpret(status: status, headers: response.headers, body: response.body)
    }
    _ = result.description
    invariant(result.httpStatus == status, "result for \(status) says \(String(describing: result.httpStatus))")
    for text in [result.reason, result.detail, result.providerID].compactMap({ $0 }) {
        invariant(text.utf8.count <= PushResult.providerTextLimit, "provider text of \(text.utf8.count) bytes")
    }
    if let delay = result.retryAfter {
        invariant(result.outcome == .retry, "Retry-After on a \(result.outcome) result")
        invariant(delay.isFinite && delay >= 0 && delay <= RetryAfter.limit, "retry after \(delay)")
    }
    if result.outcome == .accepted { invariant((200...299).contains(status), "accepted from \(status)") }
    switch reader {
    case 0:
        invariant((result.outcome == .accepted) == (status == 200), "APNs \(status) → \(result.outcome)")
        if result.outcome == .tokenInvalid { invariant(status == 400 || status == 410, "APNs token invalid from \(status)") }
        if status == 410 { invariant(result.outcome == .tokenInvalid, "APNs 410 → \(result.outcome)") }
        if status == 429 || (500...599).contains(status) { invariant(result.outcome == .retry, "APNs \(status) → \(result.outcome)") }
    case 1:
        invariant((result.outcome == .accepted) == (status == 200), "FCM \(status) → \(result.outcome)")
        if result.outcome == .tokenInvalid {
            invariant(result.reason.flatMap { FCMResponse.tokenInvalidStatus[$0] } == status,
                      "FCM token invalid from \(status) \(String(describing: result.reason))")
        }
        if result.reason == "QUOTA_EXCEEDED" { invariant((result.retryAfter ?? 0) >= FCMResponse.quotaBackoff, "quota backoff") }
        if status == 429 || (500...599).contains(status) { invariant(result.outcome == .retry, "FCM \(status) → \(result.outcome)") }
        _ = FCMResponse.unauthenticated(status: status, body: response.body)
    default:
        invariant((result.outcome == .accepted) == (200...202).contains(status), "Web Push \(status) → \(result.outcome)")
        invariant((result.outcome == .tokenInvalid) == (status == 404 || status == 410), "Web Push \(status) → \(result.outcome)")
        invariant((result.outcome == .retry) == (status == 429 || (500...599).contains(status)), "Web Push \(status) → \(result.outcome)")
    }
    return 0
}
