import Foundation
import PortariaCore

/// The visits capability assembled: service, scheduler, retention and routes.
public final class VisitsModule: Sendable {
    public let service: VisitService
    public let scheduler: RingScheduler
    public let retention: RetentionJob
    public let bus: EventBus
    let settings: UnitSettingsService
    let authenticator: Authenticator
    /// Visitor tokens → the visit they open, for the visitor routes (here, calls, realtime).
    let visitors: VisitorAuthenticator
    let rateLimiter: RateLimiter
    let configuration: VisitsConfiguration

    public init(database: any SQLDatabase, authenticator: Authenticator, configuration: VisitsConfiguration,
                clock: any TimeSource = SystemTimeSource(), bus: EventBus = EventBus(), log: Log = .shared,
                beforeIdempotentWork: (@Sendable () async -> Void)? = nil) {
        let scheduler = RingScheduler(database: database, clock: clock, bus: bus, log: log)
        self.service = VisitService(database: database, clock: clock, bus: bus, configuration: configuration, log: log,
                                    wakeScheduler: { Task { await scheduler.wake() } },
                                    beforeIdempotentWork: beforeIdempotentWork)
        self.scheduler = scheduler
        self.retention = RetentionJob(database: database, clock: clock, dataDirectory: configuration.dataDirectory,
                                      days: configuration.retentionDays, auditDays: configuration.auditRetentionDays, log: log)
        self.bus = bus
        self.settings = UnitSettingsService(database: database)
        self.authenticator = authenticator
        self.visitors = VisitorAuthenticator(database: database, clock: clock, visitLifetime: configuration.visitLifetime)
        self.rateLimiter = RateLimiter(database: database)
        self.configuration = configuration
    }

    /// Starts the background work: the ring scheduler and the retention sweep.
    public func start() async throws {
        let released = try await service.idempotency.releaseOrphansAfterRestart()
        if released > 0 { service.log.info("released in-flight idempotency keys of the previous process", ["count": .number(Double(released))]) }
        await scheduler.start()
        await retention.start()
    }

    public func stop() async {
        await scheduler.stop()
        await retention.stop()
    }

    /// Request bodies the upload routes accept (the server default stays smaller).
    public static func bodyLimit(method: String, path: String) -> Int? {
        guard method == "POST" else { return nil }
        if path == "/v1/visitor/visit/photo" { return MediaSniffer.maxPhotoBytes }
        if path == "/v1/visitor/visit/voice_message" { return MediaSniffer.maxVoiceUploadBytes }
        return nil
    }

    func register(on router: Router) {
        let service = service
        let settings = settings
        let authenticator = authenticator
        let visitors = visitors
        let gateLimit = configuration.gateLimit
        let unitRingLimit = configuration.unitRingLimit
        let gateRingLimit = configuration.gateRingLimit

        // MARK: Gate (public)
        // Limits are fixed windows in the database, shared by instances, per (gate, source
        // address) for real gates and per source address for unknown tokens; rings also
        // per unit and per gate across every address.
        router.get("/v1/gates/{gate_token}") { request in
            let token = try request.parameter("gate_token")
            return .json(try await service.gateInfo(token: token, address: request.limitAddress, viewLimit: Swift.max(60, gateLimit * 6)))
        }
        router.post("/v1/gates/{gate_token}/visits") { request in
            let token = try request.parameter("gate_token")
            let body = try VisitService.validate(try request.decode(CreateVisitRequest.self))
            // Counted inside the creation transaction: one commit per visit, not two.
            let rateLimit = VisitService.GateRateLimit(address: request.limitAddress, max: gateLimit,
                                                       perUnit: unitRingLimit, perGate: gateRingLimit)
            return .json(try await service.createVisit(gateToken: token, request: body, rateLimit: rateLimit), status: 201)
        }

        // MARK: Visitor (visitor token)
        router.get("/v1/visitor/visit") { request in .json(try await service.visitorVisit(try await visitors.access(request))) }
        router.post("/v1/visitor/visit/cancel") { request in .json(try await service.visitorCancel(try await visitors.access(request))) }
        for kind in [MediaKind.photo, .voiceMessage] {
            router.post("/v1/visitor/visit/\(kind.rawValue)") { request in
                .json(try await service.visitorUpload(try await visitors.access(request), kind: kind, body: request.body,
                                                      address: request.limitAddress))
            }
        }

        // MARK: Residents and operators
        router.get("/v1/visits") { request in
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
        router.get("/v1/visits/{id}") { request in
            let caller = try await authenticator.caller(request, requiring: Permission.visitsView)
            let visit = try await service.visit(id: try request.parameter("id", as: VisitID.self, notFound: "visit not found"), caller: caller)
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: visit.jsonBytes)
        }
        for kind in [MediaKind.photo, .voiceMessage] {
            router.get("/v1/visits/{id}/\(kind.rawValue)") { request in
                let caller = try await authenticator.caller(request, requiring: Permission.visitsView)
                let file = try await service.mediaFile(visitID: try request.parameter("id", as: VisitID.self, notFound: "visit not found"), kind: kind, caller: caller)
                return HTTPResponse(status: 200, headers: [("Content-Type", file.contentType), ("Cache-Control", "private, no-store"),
                                                           ("X-Content-Type-Options", "nosniff")], body: file.bytes)
            }
        }
        router.post("/v1/visits/{id}/resolve") { request in
            let caller = try await authenticator.caller(request, requiring: Permission.visitsResolve)
            let key = try IdempotencyStore.validKey(request.header("idempotency-key"))
            let body = try request.decode(ResolveVisitRequest.self)
            try require(body.via != .auto, field: "via", "via auto is reserved for the server")
            let visitID = try request.parameter("id", as: VisitID.self, notFound: "visit not found")
            return Self.response(try await service.perform(.resolve(body), visitID: visitID, caller: caller, key: key))
        }
        for action in [VisitService.CallAction.answer, .decline] {
            router.post("/v1/visits/{id}/\(action.rawValue)") { request in
                let caller = try await authenticator.caller(request, requiring: Permission.visitsResolve)
                let key = try IdempotencyStore.validKey(request.header("idempotency-key"))
                let body = request.body.isEmpty ? CallActionRequest() : try request.decode(CallActionRequest.self)
                if let device = body.deviceID {
                    try require(!device.isEmpty && device.utf8.count <= 128, field: "device_id", "device_id must be 1 to 128 characters")
                }
                let visitID = try request.parameter("id", as: VisitID.self, notFound: "visit not found")
                return Self.response(try await service.perform(.call(action, body), visitID: visitID, caller: caller, key: key))
            }
        }

        // MARK: Unit settings
        router.get("/v1/units/{id}/settings") { request in
            let caller = try await authenticator.caller(request)
            let unitID = try request.parameter("id", as: UnitID.self, notFound: "unit not found")
            return .json(try await settings.settings(unitID: unitID, caller: caller))
        }
        router.put("/v1/units/{id}/settings") { request in
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
