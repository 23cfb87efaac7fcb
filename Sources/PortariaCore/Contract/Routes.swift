import Foundation

/// The API's routes, once, for the server and every client (DESIGN.md §3–§4): the server
/// registers its handlers from these values (`router.add(APIRoutes.login) { … }`), the
/// client builds every request from them, and a test holds this list, the server's router
/// and `docs/openapi.yaml` to the same routes.
///
/// A route with path parameters has a typed function beside it that fills them in,
/// percent-encoded (`APIRoutes.visit(id:)` → `/v1/visits/a%2Fb`); a route without
/// parameters is its own endpoint (`APIRoutes.login.endpoint`).
///
/// Not here, because they are not the API: `/healthz` and `/readyz` (for load
/// balancers), `/metrics` (its own listener), the static pages (`/app`, `/gate/…`,
/// `/admin`), and the `/v1/bench/…` routes that exist only with `--enable-bench-routes`.
/// Those stay plain strings where they are registered.
public enum APIRoutes {
    // MARK: Authentication
    public static let login = APIRoute<LoginRequest, LoginResponse>(.post, "/v1/auth/login")
    /// 202 `{"status": "accepted", "expires_in"}`.
    public static let otpSend = APIRoute<OTPSendRequest, JSONValue>(.post, "/v1/auth/otp/send")
    public static let otpVerify = APIRoute<OTPVerifyRequest, OTPVerifyResponse>(.post, "/v1/auth/otp/verify")
    public static let generateAccessToken = APIRoute<GenerateAccessTokenRequest, LoginResponse>(.post, "/v1/auth/generate_access_token")
    public static let refresh = APIRoute<RefreshRequest, LoginResponse>(.post, "/v1/auth/refresh")
    /// 204; the body is optional (a bearer alone ends that session).
    public static let logout = APIRoute<LogoutRequest, NoBody>(.post, "/v1/auth/logout")
    public static let me = APIRoute<NoBody, MeResponse>(.get, "/v1/me")

    // MARK: Gate (public) and visitor (visitor token)
    public static let gate = APIRoute<NoBody, GateInfo>(.get, "/v1/gates/{gate_token}")
    public static let createVisit = APIRoute<CreateVisitRequest, CreateVisitResponse>(.post, "/v1/gates/{gate_token}/visits")
    public static let visitorVisit = APIRoute<NoBody, PublicVisit>(.get, "/v1/visitor/visit")
    public static let visitorCancel = APIRoute<NoBody, PublicVisit>(.post, "/v1/visitor/visit/cancel")
    /// The body is the JPEG or PNG itself.
    public static let visitorPhoto = APIRoute<Data, PublicVisit>(.post, "/v1/visitor/visit/photo")
    /// The body is the recording itself (AAC/M4A, Ogg/Opus, WebM or WAV).
    public static let visitorVoiceMessage = APIRoute<Data, PublicVisit>(.post, "/v1/visitor/visit/voice_message")

    // MARK: Visits (residents and operators)
    /// Query: `status` (`pending`, `history`), `limit`, `cursor`.
    public static let visits = APIRoute<NoBody, VisitPage>(.get, "/v1/visits")
    public static let visit = APIRoute<NoBody, Visit>(.get, "/v1/visits/{id}")
    public static let visitPhoto = APIRoute<NoBody, Data>(.get, "/v1/visits/{id}/photo")
    public static let visitVoiceMessage = APIRoute<NoBody, Data>(.get, "/v1/visits/{id}/voice_message")
    /// Needs `Idempotency-Key`.
    public static let resolveVisit = APIRoute<ResolveVisitRequest, Visit>(.post, "/v1/visits/{id}/resolve")
    /// Needs `Idempotency-Key`; the body is optional.
    public static let answerCall = APIRoute<CallActionRequest, Visit>(.post, "/v1/visits/{id}/answer")
    /// Needs `Idempotency-Key`; the body is optional.
    public static let declineCall = APIRoute<CallActionRequest, Visit>(.post, "/v1/visits/{id}/decline")

    // MARK: Unit settings
    public static let unitSettings = APIRoute<NoBody, UnitSettingsResponse>(.get, "/v1/units/{id}/settings")
    public static let updateUnitSettings = APIRoute<UnitSettings, UnitSettingsResponse>(.put, "/v1/units/{id}/settings")

    // MARK: Realtime and calls
    /// 201 `{"ticket", "expires_in"}`: one use, for `?ticket=` on `realtime`.
    public static let realtimeTicket = APIRoute<NoBody, JSONValue>(.post, "/v1/realtime/tickets")
    /// The event stream. Query: `ticket`, `since`, `device_id`.
    public static let realtime = APIRoute<NoBody, WebSocketUpgrade>(.get, "/v1/realtime")
    public static let iceServers = APIRoute<NoBody, ICEServersResponse>(.get, "/v1/calls/ice_servers")

    // MARK: Devices and push
    /// 201 when new, 200 when the installation was known.
    public static let registerDevice = APIRoute<DeviceRegistration, DeviceView>(.post, "/v1/devices")
    public static let devices = APIRoute<NoBody, DeviceList>(.get, "/v1/devices")
    /// 204.
    public static let deleteDevice = APIRoute<NoBody, NoBody>(.delete, "/v1/devices/{id}")
    /// `{"public_key"}`.
    public static let vapidPublicKey = APIRoute<NoBody, JSONValue>(.get, "/v1/push/web/vapid_public_key")
    /// With a bearer, no body; without one, the payload's `ack_token`.
    public static let pushAck = APIRoute<PushAckRequest, PushAck>(.post, "/v1/push/{push_id}/ack")

    // MARK: Administration and the contract
    public static let pushHealth = APIRoute<NoBody, PushHealthReport>(.get, "/v1/admin/push_health")
    /// `{"entries", "next_cursor"}`. Query: `since`, `until`, `cursor`, `limit`.
    public static let audit = APIRoute<NoBody, JSONValue>(.get, "/v1/admin/audit")
    /// This document's YAML (`docs/openapi.yaml`).
    public static let openAPIDocument = APIRoute<NoBody, Data>(.get, "/v1/openapi.yaml")

    /// Every route above, in the order listed.
    public static let all: [RouteEntry] = [
        login.entry, otpSend.entry, otpVerify.entry, generateAccessToken.entry, refresh.entry, logout.entry, me.entry,
        gate.entry, createVisit.entry, visitorVisit.entry, visitorCancel.entry, visitorPhoto.entry, visitorVoiceMessage.entry,
        visits.entry, visit.entry, visitPhoto.entry, visitVoiceMessage.entry, resolveVisit.entry, answerCall.entry, declineCall.entry,
        unitSettings.entry, updateUnitSettings.entry,
        realtimeTicket.entry, realtime.entry, iceServers.entry,
        registerDevice.entry, devices.entry, deleteDevice.entry, vapidPublicKey.entry, pushAck.entry,
        pushHealth.entry, audit.entry, openAPIDocument.entry,
    ]
}

// MARK: - Filled in

extension APIRoutes {
    public static func gate(token: String) -> APIEndpoint<NoBody, GateInfo> { gate.filling(["gate_token": token]) }
    public static func createVisit(gateToken: String) -> APIEndpoint<CreateVisitRequest, CreateVisitResponse> {
        createVisit.filling(["gate_token": gateToken])
    }
    public static func visit(id: String) -> APIEndpoint<NoBody, Visit> { visit.filling(["id": id]) }
    public static func visitPhoto(id: String) -> APIEndpoint<NoBody, Data> { visitPhoto.filling(["id": id]) }
    public static func visitVoiceMessage(id: String) -> APIEndpoint<NoBody, Data> { visitVoiceMessage.filling(["id": id]) }
    public static func resolveVisit(id: String) -> APIEndpoint<ResolveVisitRequest, Visit> { resolveVisit.filling(["id": id]) }
    public static func answerCall(id: String) -> APIEndpoint<CallActionRequest, Visit> { answerCall.filling(["id": id]) }
    public static func declineCall(id: String) -> APIEndpoint<CallActionRequest, Visit> { declineCall.filling(["id": id]) }
    public static func unitSettings(unitID: String) -> APIEndpoint<NoBody, UnitSettingsResponse> { unitSettings.filling(["id": unitID]) }
    public static func updateUnitSettings(unitID: String) -> APIEndpoint<UnitSettings, UnitSettingsResponse> {
        updateUnitSettings.filling(["id": unitID])
    }
    public static func deleteDevice(id: String) -> APIEndpoint<NoBody, NoBody> { deleteDevice.filling(["id": id]) }
    public static func pushAck(pushID: String) -> APIEndpoint<PushAckRequest, PushAck> { pushAck.filling(["push_id": pushID]) }
}
