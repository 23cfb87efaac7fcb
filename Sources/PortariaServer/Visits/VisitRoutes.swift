import Foundation
import PortariaCore

/// The visits capability's routes: the gate page (public), the visitor's own visit
/// (visitor token), visits for residents and operators, and unit settings.
struct VisitRoutes {
    let service: VisitService
    let settings: UnitSettingsService
    let authenticator: Authenticator
    /// Visitor tokens → the visit they open.
    let visitors: VisitorAuthenticator
    let configuration: VisitsConfiguration

    func register(on router: Router) {
        let gateLimit = configuration.gateLimit
        let unitRingLimit = configuration.unitRingLimit
        let gateRingLimit = configuration.gateRingLimit

        // MARK: Gate (public)
        // Limits are fixed windows in the database, shared by instances, per (gate, source
        // address) for real gates and per source address for unknown tokens; rings also
        // per unit and per gate across every address.
        router.add(APIRoutes.gate) { request in
            let token = try request.parameter("gate_token")
            return .json(try await service.gateInfo(token: token, address: request.limitAddress, viewLimit: Swift.max(60, gateLimit * 6)))
        }
        router.add(APIRoutes.createVisit) { request in
            let token = try request.parameter("gate_token")
            let body = try VisitService.validate(try request.decode(CreateVisitRequest.self))
            // Counted inside the creation transaction: one commit per visit, not two.
            let rateLimit = VisitService.GateRateLimit(address: request.limitAddress, max: gateLimit,
                                                       perUnit: unitRingLimit, perGate: gateRingLimit)
            return .json(try await service.createVisit(gateToken: token, request: body, rateLimit: rateLimit), status: 201)
        }

        // MARK: Visitor (visitor token)
        router.add(APIRoutes.visitorVisit) { request in .json(try await service.visitorVisit(try await visitors.access(request))) }
        router.add(APIRoutes.visitorCancel) { request in .json(try await service.visitorCancel(try await visitors.access(request))) }
        for (kind, route) in [(MediaKind.photo, APIRoutes.visitorPhoto), (.voiceMessage, APIRoutes.visitorVoiceMessage)] {
            router.add(route) { request in
                .json(try await service.visitorUpload(try await visitors.access(request), kind: kind, body: request.body,
                                                      address: request.limitAddress))
            }
        }

        // MARK: Residents and operators
        router.add(APIRoutes.visits) { request in
            let caller = try await authenticator.caller(request, requiring: Permission.visitsView)
            var filter: VisitService.ListFilter?
            if let status = request.query["status"] {
                guard let parsed = VisitService.ListFilter(rawValue: status) else {
                    throw HTTPError.invalidRequest("status must be pending or history", field: "status")
                }
                filter = parsed
            }
            var limit = 20
            if let text = request.query["limit"] {
                guard let value = Int(text), (1...100).contains(value) else {
                    throw HTTPError.invalidRequest("limit must be an integer from 1 to 100", field: "limit")
                }
                limit = value
            }
            let cursor = request.query["cursor"].flatMap { $0.isEmpty ? nil : $0 }
            // Written by hand, not JSONEncoder: the same bytes (decision 0051).
            let page = try await service.list(caller: caller, filter: filter, cursor: cursor, limit: limit)
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: page.jsonBytes)
        }
        router.add(APIRoutes.visit) { request in
            let caller = try await authenticator.caller(request, requiring: Permission.visitsView)
            let visit = try await service.visit(id: try request.parameter("id", as: VisitID.self, notFound: "visit not found"), caller: caller)
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: visit.jsonBytes)
        }
        for (kind, route) in [(MediaKind.photo, APIRoutes.visitPhoto), (.voiceMessage, APIRoutes.visitVoiceMessage)] {
            router.add(route) { request in
                let caller = try await authenticator.caller(request, requiring: Permission.visitsView)
                let file = try await service.mediaFile(visitID: try request.parameter("id", as: VisitID.self, notFound: "visit not found"), kind: kind, caller: caller)
                return HTTPResponse(status: 200, headers: [("Content-Type", file.contentType), ("Cache-Control", "private, no-store"),
                                                           ("X-Content-Type-Options", "nosniff")], body: file.bytes)
            }
        }
        router.add(APIRoutes.resolveVisit) { request in
            let caller = try await authenticator.caller(request, requiring: Permission.visitsResolve)
            let key = try IdempotencyStore.validKey(request.header("idempotency-key"))
            let body = try request.decode(ResolveVisitRequest.self)
            try require(body.via != .auto, field: "via", "via auto is reserved for the server")
            let visitID = try request.parameter("id", as: VisitID.self, notFound: "visit not found")
            return Self.response(try await service.perform(.resolve, visitID: visitID, caller: caller, key: key, resolve: body, call: nil))
        }
        for (action, route) in [(VisitService.CallAction.answer, APIRoutes.answerCall), (.decline, APIRoutes.declineCall)] {
            router.add(route) { request in
                let caller = try await authenticator.caller(request, requiring: Permission.visitsResolve)
                let key = try IdempotencyStore.validKey(request.header("idempotency-key"))
                let body = request.body.isEmpty ? CallActionRequest() : try request.decode(CallActionRequest.self)
                if let device = body.deviceID {
                    try require(!device.isEmpty && device.utf8.count <= 128, field: "device_id", "device_id must be 1 to 128 characters")
                }
                let visitID = try request.parameter("id", as: VisitID.self, notFound: "visit not found")
                return Self.response(try await service.perform(action, visitID: visitID, caller: caller, key: key, resolve: nil, call: body))
            }
        }

        // MARK: Unit settings
        router.add(APIRoutes.unitSettings) { request in
            let caller = try await authenticator.caller(request)
            let unitID = try request.parameter("id", as: UnitID.self, notFound: "unit not found")
            return .json(try await settings.settings(unitID: unitID, caller: caller))
        }
        router.add(APIRoutes.updateUnitSettings) { request in
            let caller = try await authenticator.caller(request)
            let unitID = try request.parameter("id", as: UnitID.self, notFound: "unit not found")
            try await settings.authorizeChange(unitID: unitID, caller: caller)
            return .json(try await settings.update(unitID: unitID, caller: caller, settings: try Self.unitSettings(request)))
        }
    }

    /// A settings body, strictly: a JSON object of known fields only (an unknown one is a
    /// 400 naming it), then the typed decode.
    static func unitSettings(_ request: HTTPRequest) throws -> UnitSettings {
        guard case .object(let object) = try request.decode(JSONValue.self) else {
            throw HTTPError.invalidRequest("the request body must be a JSON object")
        }
        if let unknown = object.keys.sorted().first(where: { !UnitSettingsService.fields.contains($0) }) {
            throw HTTPError.invalidRequest("\(unknown) is not a unit setting", field: unknown)
        }
        return try request.decode(UnitSettings.self)
    }

    /// An action's answer as first given (or replayed, marked `Idempotent-Replayed`).
    static func response(_ outcome: IdempotencyStore.Outcome) -> HTTPResponse {
        var headers = [("Content-Type", "application/json")]
        if outcome.replayed { headers.append(("Idempotent-Replayed", "true")) }
        return HTTPResponse(status: outcome.status, headers: headers, body: outcome.body)
    }
}
