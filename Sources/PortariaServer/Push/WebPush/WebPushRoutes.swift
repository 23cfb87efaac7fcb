import Foundation
import PortariaCore

/// `GET /v1/push/web/vapid_public_key`: the key a browser passes to
/// `pushManager.subscribe({applicationServerKey})`. Public: it identifies this server to
/// the push services, and a page needs it before anyone logs in to ask for permission.
struct WebPushRoutes {
    let vapid: VAPIDKeys

    func register(on router: Router) {
        let key = vapid.publicKeyBase64URL
        router.add(APIRoutes.vapidPublicKey) { _ in
            .json(JSONValue.object(["public_key": .string(key)]))
        }
    }
}
