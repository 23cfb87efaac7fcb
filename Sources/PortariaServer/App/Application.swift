import Foundation
import PortariaCore
import PortariaWebSocket

/// One `portaria serve` process: the database, the HTTP/WebSocket listener and the
/// routes of every capability, assembled in one place.
public final class Application: Sendable {
    public let configuration: ServerConfiguration
    public let database: any SQLDatabase
    public let server: HTTPServer
    /// Every open WebSocket; closed with 1001 before the HTTP server stops.
    public let webSockets: WebSocketHub
    public let visits: VisitsModule
    /// Visit events to WebSocket subscribers.
    public let realtime: RealtimeFeed
    /// Cross-instance pokes (PostgreSQL only; SQLite is single-instance).
    let listener: PostgresListener?
    /// TURN/STUN lists with short-lived credentials; the realtime layer hands one to
    /// a visitor page through `iceServers.iceServers(forSubject:)`.
    public let iceServers: ICEServerProvider
    /// Delivers the push outbox; call `pushWorker.wake()` after committing an enqueue.
    public let pushWorker: PushWorker
    /// The VAPID public key browsers subscribe with (uncompressed P-256 point).
    public let vapidPublicKey: [UInt8]
    private let pushShutdown: @Sendable () -> Void
    private let pushWake: Task<Void, Never>
    /// Held for the life of the server on SQLite: one server per database file.
    private let databaseLock: DatabaseFileLock?
    /// Returns freed heap pages to the kernel every minute (see `MemoryPolicy`).
    private let memoryTrimmer = MemoryTrimmer()
    let log: Log

    /// Opens and migrates the database, then registers every route. Does not listen yet.
    public init(configuration: ServerConfiguration, log: Log = .shared) async throws {
        // Before the first argon2 hash (demo seeding): see MemoryPolicy for why.
        MemoryPolicy.apply()
        var configuration = configuration
        if let extra = configuration.caFile { configuration.caFile = try CABundle.combined(with: extra) }
        self.configuration = configuration
        self.log = log
        // The port before the database: a second server started by mistake must fail
        // before it creates, migrates or seeds anything.
        let router = Router()
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxBodySize = configuration.maxBodySize
        http.trustedProxies = try TrustedProxies(configuration.trustedProxies)
        http.perIPConnectionLimit = configuration.trustedProxies.isEmpty ? configuration.maxConnectionsPerIP : 0
        http.maxBufferedBodyBytes = configuration.maxBufferedBodyBytes
        http.bodyLimitOverride = { method, path in VisitsModule.bodyLimit(method: method, path: path) }
        server = HTTPServer(router: router, configuration: http, log: log)
        try server.bind()
        if configuration.databaseURL.hasPrefix("sqlite://") {
            databaseLock = try DatabaseFileLock(path: String(configuration.databaseURL.dropFirst("sqlite://".count)))
        } else {
            databaseLock = nil
        }
        try PrivateDirectory.prepare(configuration.dataDirectory)
        database = try await DatabaseFactory.open(url: configuration.databaseURL)
        let applied = try await Migrator().migrate(database)
        if !applied.isEmpty { log.info("migrations applied", ["versions": .array(applied.map { .number(Double($0)) })]) }

        if configuration.seedDemo { try await DemoData.seedIfEmpty(database, log: log) }
        for warning in configuration.warnings { log.warning(warning) }
        let secrets = try await ServiceSecrets.open(database, keyFile: configuration.secretsKeyFile, log: log)
        let outbound = OutboundHTTPClient(caFile: configuration.caFile)
        let sms: any SmsSender
        if let webhook = configuration.smsWebhook {
            sms = WebhookSmsSender(url: webhook, client: outbound)
        } else {
            sms = LogSmsSender(log: log)
            log.warning("no --sms-webhook: OTP codes are written to this log (development only)")
        }
        var auth = AuthService(database: database, secrets: secrets, sms: sms,
                               loginLimitPerAccount: configuration.loginLimit, log: log)
        auth.otpLimits = configuration.otpLimits
        let authenticator = Authenticator(database: database, jwt: secrets.jwt)

        let vapid = try await VAPIDKeys.load(database, keyFile: configuration.vapidKeyFile,
                                             secretsKeyFile: configuration.secretsKeyFile, subject: configuration.vapidSubject)
        let webPush = try WebPushProvider(vapid: vapid, hosts: configuration.webPushHosts, caFile: configuration.caFile, log: log)
        log.info("Web Push enabled", ["hosts": .string(configuration.webPushHosts.patterns.joined(separator: ",")),
                                      "subject": .string(configuration.vapidSubject)])
        if !configuration.vapidSubjectGiven {
            log.warning("no --vapid-subject: push services get a placeholder contact (Apple's refuses it); set --vapid-subject mailto:you@example.com")
        }
        vapidPublicKey = vapid.publicKey
        let push = try Self.pushProviders(configuration, web: webPush, log: log)
        pushShutdown = push.shutdown
        var workerConfiguration = PushWorker.Configuration()
        workerConfiguration.lease = configuration.pushLease
        if database.dialect.isSharedByInstances { workerConfiguration.pollInterval = PushWorker.Configuration.notifiedPollInterval }
        if let poll = configuration.pushPollInterval { workerConfiguration.pollInterval = poll }
        pushWorker = PushWorker(database: database, providers: push.providers, configuration: workerConfiguration,
                                sink: VisitTimelinePushSink(), log: log)

        var socketConfiguration = WebSocketConfiguration.server
        socketConfiguration.maxMessageSize = RealtimeLimits().maxClientMessageBytes
        webSockets = WebSocketHub(configuration: socketConfiguration, log: log)
        iceServers = try ICEServerProvider(configuration: configuration)
        if iceServers.turn == nil {
            log.info("no --turn-url: /v1/calls/ice_servers answers an empty list (calls use host candidates only)")
        }

        DeviceRoutes(store: DeviceStore(database: database), authenticator: authenticator,
                     webPushHosts: configuration.webPushHosts).register(on: router)
        WebPushRoutes(vapid: vapid).register(on: router)
        PushRoutes(receipts: PushReceipts(database: database), authenticator: authenticator).register(on: router)
        SystemRoutes(database: database, openAPIPath: configuration.openAPIPath ?? SystemRoutes.defaultOpenAPIPath())
            .register(on: router)
        StaticFiles(root: configuration.webDirectory ?? StaticFiles.defaultRoot()).registerAll(on: router)
        if configuration.benchRoutes { BenchRoutes(webSockets: webSockets).register(on: router) }
        var visitsConfiguration = VisitsConfiguration()
        visitsConfiguration.gateLimit = configuration.gateLimit
        visitsConfiguration.dataDirectory = configuration.dataDirectory
        visitsConfiguration.retentionDays = configuration.retentionDays
        visitsConfiguration.mediaBytesPerCompanyPerDay = configuration.mediaQuotaMB * 1024 * 1024
        visits = VisitsModule(database: database, authenticator: authenticator, configuration: visitsConfiguration, log: log)
        visits.register(on: router)

        var realtimeLimits = RealtimeLimits()
        if let perUser = configuration.realtimeConnectionsPerUser { realtimeLimits.connectionsPerUser = perUser }
        realtimeLimits.residentRelayOnly = iceServers.turn != nil
        if iceServers.turn == nil {
            log.warning("no TURN: video calls use direct candidates, so a visitor's page sees the answering resident's IP addresses (set --turn-url in production)")
        }
        realtime = RealtimeFeed(database: database, hub: webSockets, limits: realtimeLimits, log: log)
        // With PostgreSQL every commit, this instance's too, arrives through NOTIFY;
        // following the bus as well would read the log twice per commit.
        if !database.dialect.isSharedByInstances { realtime.follow(visits.bus) }
        // Ring and cancel jobs were written with the events; deliver them now rather than
        // at the worker's next poll.
        let worker = pushWorker
        let wakeups = visits.bus.subscribe()
        pushWake = Task {
            for await event in wakeups where event.type == "visit.ringing" || event.type == "visit.ring_cancelled" {
                worker.wake()
            }
        }
        let feed = realtime
        auth.sessionEnded = { sessionID in feed.endSession(sessionID) }
        if database.dialect.isSharedByInstances {
            // One connection for every channel: events poke the feed, call messages go to the
            // feed's calls (decision 0040), push enqueues anywhere wake this worker.
            let channels: [NotificationChannel] = [.events, .calls, .push]
            listener = PostgresListener(url: configuration.databaseURL, channels: channels.map(\.rawValue), log: log) { notification in
                switch notification {
                case .payload(NotificationChannel.events.rawValue, let companyID): feed.poke(companyID: companyID)
                case .payload(NotificationChannel.calls.rawValue, let message): feed.relayed(message)
                case .payload(NotificationChannel.push.rawValue, _): worker.wake()
                case .payload: break
                case .reconnected:
                    feed.pokeAll()
                    worker.wake()
                }
            }
        } else {
            listener = nil
        }
        AuthRoutes(auth: auth, authenticator: authenticator).register(on: router)
        let visitService = visits.service
        let visitors = visits.visitors
        CallRoutes(iceServers: iceServers, authenticator: authenticator,
                   visitorVisit: { request in try visitService.visitorLiveCall(try await visitors.access(request)) }).register(on: router)
        RealtimeRoutes(feed: realtime, hub: webSockets, tickets: RealtimeTickets(database: database),
                       authenticator: authenticator, visits: visits.service, visitors: visits.visitors,
                       allowedOrigins: configuration.allowedOrigins).register(on: router)

    }

    /// APNs and FCM from the configuration, Web Push when given; the log-only sender for
    /// whatever has no credentials.
    public static func pushProviders(_ configuration: ServerConfiguration, web: WebPushProvider? = nil, log: Log)
        throws -> (providers: PushProviders, shutdown: @Sendable () -> Void) {
        var shutdowns: [@Sendable () -> Void] = []
        if let web { shutdowns.append { web.shutdown() } }
        let apns: any PushProvider
        if let keyFile = configuration.apnsKeyFile, let keyID = configuration.apnsKeyID,
           let teamID = configuration.apnsTeamID, let topic = configuration.apnsTopic {
            let provider = try APNsProvider(configuration: APNsConfiguration(keyFile: keyFile, keyID: keyID, teamID: teamID,
                                                                             bundleID: topic, endpoint: configuration.apnsEndpoint,
                                                                             caFile: configuration.caFile), log: log)
            shutdowns.append { provider.shutdown() }
            apns = provider
            log.info("APNs push enabled", ["endpoint": .string(configuration.apnsEndpoint), "topic": .string(topic)])
        } else {
            apns = LogPushProvider(platform: "ios", log: log)
            log.warning("no APNs credentials (--apns-key-file …): iOS pushes are only LOGGED, not sent")
        }
        let fcm: any PushProvider
        if let account = configuration.fcmServiceAccount {
            let provider = try FCMProvider(serviceAccountFile: account, endpoint: configuration.fcmEndpoint,
                                           caFile: configuration.caFile, log: log)
            shutdowns.append { provider.shutdown() }
            fcm = provider
            log.info("FCM push enabled", ["endpoint": .string(configuration.fcmEndpoint), "project": .string(provider.account.projectID)])
        } else {
            fcm = LogPushProvider(platform: "android", log: log)
            log.warning("no FCM service account (--fcm-service-account): Android pushes are only LOGGED, not sent")
        }
        let stop = shutdowns
        return (PushProviders(apns: apns, fcm: fcm, web: web ?? LogPushProvider(platform: "web", log: log)), { stop.forEach { $0() } })
    }

    public func start() async throws {
        try await visits.start()
        listener?.start()
        try server.start()
        if configuration.runsPushWorker { pushWorker.start() }
        memoryTrimmer.start()
        log.info("listening", ["host": .string(configuration.host), "port": .number(Double(server.port)),
                               "database": .string(configuration.databaseURL.hasPrefix("sqlite") ? "sqlite" : "postgres")])
    }

    public func shutdown() async {
        // libmicrohttpd must get every upgraded socket back before it stops.
        realtime.stop()
        listener?.stop()
        await webSockets.shutdown()
        await server.shutdown()
        await visits.stop()
        pushWake.cancel()
        await pushWorker.stop()
        memoryTrimmer.stop()
        pushShutdown()
        await database.close()
        databaseLock?.unlock()
        log.info("stopped")
    }
}
