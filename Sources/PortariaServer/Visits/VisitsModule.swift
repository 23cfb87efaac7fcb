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
        let uploads = [(APIRoutes.visitorPhoto, MediaSniffer.maxPhotoBytes),
                       (APIRoutes.visitorVoiceMessage, MediaSniffer.maxVoiceUploadBytes)]
        return uploads.first { route, _ in method == route.method.rawValue && path == route.template }?.1
    }

    /// The visits routes (`VisitRoutes`).
    func register(on router: Router) {
        VisitRoutes(service: service, settings: settings, authenticator: authenticator, visitors: visitors,
                    configuration: configuration).register(on: router)
    }
}
