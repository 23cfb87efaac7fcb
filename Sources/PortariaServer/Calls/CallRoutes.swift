import Foundation
import PortariaCore

/// `GET /v1/calls/ice_servers`. Signaling itself travels over `/v1/realtime`
/// (`CallRegistry`); the visitor page gets its list through the visitor-token path,
/// which calls `ICEServerProvider.iceServers(forSubject:)` directly.
struct CallRoutes {
    let iceServers: ICEServerProvider
    let authenticator: Authenticator
    /// Resolves a visitor token to its visit while a call is live for it (else 409
    /// `CALL_NOT_ACTIVE`: ringing, ended, or its visit closed), so the gate page can fetch
    /// relay credentials for that call only.
    let visitorVisit: @Sendable (HTTPRequest) async throws -> String

    func register(on router: Router) {
        router.add(APIRoutes.iceServers) { request in
            // The gate page: a visitor token (no dots) gets credentials for its own visit.
            if Authenticator.bearerIsVisitorToken(request) {
                let visitID = try await visitorVisit(request)
                return .json(iceServers.iceServers(forSubject: "visitor-\(visitID)", visitor: true), headers: [("Cache-Control", "no-store")])
            }
            // Any member of the selected company: residents answer calls, operators
            // take them at the console. A relay costs bandwidth, hence no anonymous use.
            let caller = try await authenticator.caller(request)
            // A credential must not be cached by a proxy or replayed from a browser cache.
            return .json(iceServers.iceServers(forSubject: caller.user.id),
                         headers: [("Cache-Control", "no-store")])
        }
    }
}
