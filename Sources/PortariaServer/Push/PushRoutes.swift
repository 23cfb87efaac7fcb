import Foundation
import PortariaCore

/// `POST /v1/push/{push_id}/ack` and `GET /v1/admin/push_health`.
struct PushRoutes {
    let receipts: PushReceipts
    let authenticator: Authenticator

    func register(on router: Router) {
        router.add(APIRoutes.pushAck) { request in
            let pushID = try request.parameter("push_id").lowercased()
            // Without a bearer, the payload's per-push capability (decision 0016). With no
            // Authorization and no body either, the 401 says a credential is missing.
            if request.header("authorization") == nil && !request.body.isEmpty {
                guard request.body.count <= PushReceipts.maxCapabilityBodyBytes else {
                    throw HTTPError(status: 413, code: .payloadTooLarge,
                                    message: "the request body exceeds \(PushReceipts.maxCapabilityBodyBytes) bytes")
                }
                let body = try request.decode(PushAckRequest.self)
                guard PushReceipts.isWellFormedAckToken(body.ackToken) else {
                    throw HTTPError.invalidRequest("ack_token must be 43 characters of base64url (32 bytes)", field: "ack_token")
                }
                switch try await receipts.acknowledge(pushID: pushID, ackToken: body.ackToken, address: request.limitAddress) {
                case .success(let ack): return .json(ack)
                case .failure(.notFound): throw HTTPError.notFound("push not found")
                case .failure(.rateLimited(let retryAfter)):
                    // The one 429 shape (docs/openapi.yaml RateLimited): retry_after in the body too.
                    throw HTTPError.rateLimited("too many refused acknowledgements from this address; try again later",
                                               retryAfter: retryAfter)
                }
            }
            // The receipt is about the user, not a company: no X-Company-Id needed (the app
            // acknowledges from a notification handler that may not know the context).
            let (user, _) = try await authenticator.authenticate(request)
            guard PushID(rawValue: pushID) != nil, let ack = try await receipts.acknowledge(pushID: pushID, userID: user.id) else {
                throw HTTPError.notFound("push not found")
            }
            return .json(ack)
        }
        router.add(APIRoutes.pushHealth) { request in
            let caller = try await authenticator.caller(request, requiring: Permission.adminPushHealth)
            return .json(try await receipts.health(companyID: caller.companyID))
        }
    }
}
