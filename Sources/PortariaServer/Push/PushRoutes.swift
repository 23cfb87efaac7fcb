import Foundation
import PortariaCore

/// `POST /v1/push/{push_id}/ack` and `GET /v1/admin/push_health`.
struct PushRoutes {
    let receipts: PushReceipts
    let authenticator: Authenticator

    func register(on router: Router) {
        let receipts = receipts
        let authenticator = authenticator
        router.post("/v1/push/{push_id}/ack") { request in
            // The receipt is about the user, not a company: no X-Company-Id needed (the app
            // acknowledges from a notification handler that may not know the context).
            let (user, _) = try await authenticator.authenticate(request)
            guard let pushID = PushID(rawValue: try request.parameter("push_id").lowercased()),
                  let ack = try await receipts.acknowledge(pushID: pushID.rawValue, userID: user.id) else {
                throw HTTPError.notFound("push not found")
            }
            return .json(ack)
        }
        router.get("/v1/admin/push_health") { request in
            let caller = try await authenticator.caller(request, requiring: Permission.adminPushHealth)
            return .json(try await receipts.health(companyID: caller.companyID))
        }
    }
}
