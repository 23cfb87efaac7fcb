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
    /// Starts and stops every part of the process in one order (decision 0029).
    private let lifecycle: Lifecycle
    /// The Prometheus listener (`--metrics-listen`), nil when off.
    let metricsServer: MetricsServer?
    let log: Log

    /// Builds the process in dependency order, each part given what it needs when it is
    /// constructed (nothing is patched in afterwards): the port, the database, the secrets
    /// and authenticator every capability shares, push delivery, the WebSocket hub, the
    /// visits capability, the realtime feed that follows it, authentication (which closes
    /// the feed's sockets of an ended session), the cross-instance listener; then the
    /// routes, and the lifecycle that starts and stops it all (decision 0029). Does not
    /// listen yet.
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
        server = try Self.boundServer(router: router, configuration, log: log)
        let scraped = Locked<(any SQLDatabase)?>(nil)
        let metricsServer = try configuration.metricsListen.map { address in
            try MetricsServer(host: address.host, port: address.port, database: { scraped.current }, log: log)
        }
        self.metricsServer = metricsServer
        let storage = try await OpenedDatabase(configuration, log: log)
        database = storage.database
        scraped.withLock { $0 = storage.database }
        for warning in configuration.warnings { log.warning(warning) }
        let secrets = try await ServiceSecrets.open(database, keyFile: configuration.secretsKeyFile,
                                                   dataDirectory: configuration.dataDirectory, log: log)
        let sms = Self.smsSender(configuration, log: log)
        let sessionCache = try Authenticator.sessionCache(for: database, entries: configuration.sessionCacheEntries)
        let authenticator = Authenticator(database: database, jwt: secrets.jwt, sessionCache: sessionCache)
        let push = try await PushDelivery(configuration, database: database, secretsKey: secrets.key,
                                          instance: storage.instance, log: log)
        vapidPublicKey = push.vapid.publicKey
        pushWorker = push.worker
        webSockets = Self.webSocketHub(log: log)
        iceServers = try Self.iceServers(configuration, log: log)
        visits = VisitsModule(database: database, authenticator: authenticator,
                              configuration: Self.visitsConfiguration(configuration), log: log)
        // The push jobs a visit event calls for are written in the event's own transaction.
        visits.bus.listen(VisitPushes(handOff: push.handOff))
        let feed = try Self.realtimeFeed(configuration, database: database, hub: webSockets, relayOnly: !iceServers.allowsDirect,
                                     visits: visits.bus, log: log)
        realtime = feed
        let auth = AuthService(database: database, secrets: secrets, sms: sms, loginLimitPerAccount: configuration.loginLimit,
                               otpLimits: configuration.otpLimits, defaultCountryCode: configuration.defaultCountryCode, log: log,
                               sessionEnded: { sessionID in
                                   authenticator.sessionEnded(sessionID)
                                   feed.endSession(sessionID)
                               })
        listener = Self.postgresListener(configuration, database: database, feed: feed, pushWorker: push.worker,
                                         sessionCache: sessionCache, instance: storage.instance, log: log)
        // Ring and cancel jobs were written with the events; deliver them now rather than
        // at the worker's next poll.
        let pushWake = BusRelay(bus: visits.bus) { [worker = push.worker] event in
            switch event.visitEventType {
            case .ringing?, .ringCancelled?: worker.wake()
            default: break
            }
        }
        lifecycle = Lifecycle(Self.components(storage: storage, push: push, runsPushWorker: configuration.runsPushWorker,
                                              pushWake: pushWake, auth: auth, visits: visits, server: server,
                                              webSockets: webSockets, listener: listener, feed: feed)
                                 + Self.metricsComponents(metricsServer, log: log), log: log)
        registerRoutes(on: router, auth: auth, authenticator: authenticator, vapid: push.vapid)
    }

    /// The HTTP server on its port (bound, not yet serving), routing through `router`.
    static func boundServer(router: Router, _ configuration: ServerConfiguration, log: Log) throws -> HTTPServer {
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxBodySize = configuration.maxBodySize
        http.trustedProxies = try TrustedProxies(configuration.trustedProxies)
        http.perIPConnectionLimit = configuration.trustedProxies.isEmpty ? configuration.maxConnectionsPerIP : 0
        #if canImport(Glibc)
        http.connectionLimit = configuration.maxConnections > 0 ? configuration.maxConnections : ResourceLimits.connectionBudget()
        #else
        if configuration.maxConnections > 0 { http.connectionLimit = configuration.maxConnections }
        #endif
        http.maxBufferedBodyBytes = configuration.maxBufferedBodyBytes
        http.requestLogLevel = configuration.requestLogLevel
        http.headTimeout = .seconds(configuration.headTimeoutSeconds)
        http.bodyGrace = .seconds(configuration.bodyTimeoutSeconds)
        http.bodyBytesPerSecond = configuration.bodyMinRate
        http.bodyLimitOverride = { method, path in VisitsModule.bodyLimit(method: method, path: path) }
        http.metrics = configuration.metricsListen == nil ? nil : .shared
        let server = HTTPServer(router: router, configuration: http, log: log)
        try server.bind()
        return server
    }

    /// The database opened, migrated and (with `--seed-demo`) seeded; on SQLite with the
    /// file lock that makes it one server per database file, held until the stop.
    struct OpenedDatabase: Sendable {
        let database: any SQLDatabase
        let lock: DatabaseFileLock?
        /// PostgreSQL: the name every connection of this process carries, unless the URL
        /// sets its own `application_name` (decision 0058).
        let instance: InstanceName?

        init(_ configuration: ServerConfiguration, log: Log) async throws {
            if configuration.databaseURL.hasPrefix("sqlite://") {
                lock = try DatabaseFileLock(path: String(configuration.databaseURL.dropFirst("sqlite://".count)))
            } else {
                lock = nil
            }
            try PrivateDirectory.prepare(configuration.dataDirectory)
            let name = InstanceName()
            let namedURL = name.naming(configuration.databaseURL)
            instance = namedURL == nil ? nil : name
            database = try await DatabaseFactory.open(url: namedURL ?? configuration.databaseURL)
            let applied = try await Migrator().migrate(database)
            if !applied.isEmpty { log.info("migrations applied", ["versions": .array(applied.map { .number(Double($0)) })]) }
            if configuration.seedDemo { try await DemoData.seedIfEmpty(database, log: log) }
        }

        func close() async {
            await database.close()
            lock?.unlock()
        }
    }

    static func smsSender(_ configuration: ServerConfiguration, log: Log) -> any SmsSender {
        if let webhook = configuration.smsWebhook {
            return WebhookSmsSender(url: webhook, client: OutboundHTTPClient(caFile: configuration.caFile))
        }
        log.warning("no --sms-webhook: OTP codes are written to this log (development only)")
        return LogSmsSender(log: log)
    }

    /// Push delivery: the VAPID keys browsers subscribe with, the APNs/FCM/Web Push
    /// providers and the worker that drains the outbox through them.
    struct PushDelivery: Sendable {
        let vapid: VAPIDKeys
        let providers: PushProviders
        let shutdownProviders: @Sendable () -> Void
        let worker: PushWorker
        /// The worker as the gate POST's transaction sees it (decision 0058).
        let handOff = PushHandOff()

        init(_ configuration: ServerConfiguration, database: any SQLDatabase, secretsKey: SecretsKey?, instance: InstanceName?,
             log: Log) async throws {
            vapid = try await VAPIDKeys.load(database, keyFile: configuration.vapidKeyFile,
                                             secretsKey: secretsKey, subject: configuration.vapidSubject)
            let webPush = try WebPushProvider(vapid: vapid, hosts: configuration.webPushHosts, caFile: configuration.caFile, log: log)
            log.info("Web Push enabled", ["hosts": .string(configuration.webPushHosts.patterns.joined(separator: ",")),
                                          "subject": .string(configuration.vapidSubject)])
            if !configuration.vapidSubjectGiven {
                log.warning("no --vapid-subject: push services get a placeholder contact (Apple's refuses it); set --vapid-subject mailto:you@example.com")
            }
            (providers, shutdownProviders) = try Application.pushProviders(configuration, web: webPush, log: log)
            var workerConfiguration = PushWorker.Configuration()
            workerConfiguration.lease = configuration.pushLease
            if database.dialect.isSharedByInstances { workerConfiguration.pollInterval = PushWorker.Configuration.notifiedPollInterval }
            if let poll = configuration.pushPollInterval { workerConfiguration.pollInterval = poll }
            // Leases under the connections' name, so other instances can tell when this one is gone.
            worker = PushWorker(database: database, providers: providers, configuration: workerConfiguration,
                                instanceID: instance?.rawValue ?? UUID().uuidString.lowercased(),
                                sink: VisitTimelinePushSink(), log: log)
        }
    }

    static func webSocketHub(log: Log) -> WebSocketHub {
        var socketConfiguration = WebSocketConfiguration.server
        socketConfiguration.maxMessageSize = RealtimeLimits().maxClientMessageBytes
        return WebSocketHub(configuration: socketConfiguration, log: log)
    }

    /// The ICE servers calls get, and the one line that says what calls do (decision 0066).
    static func iceServers(_ configuration: ServerConfiguration, log: Log) throws -> ICEServerProvider {
        let iceServers = try ICEServerProvider(configuration: configuration)
        if configuration.callsAllowDirect {
            log.warning("--calls-allow-direct: video calls may connect directly, so an anonymous visitor's page sees the answering resident's LAN, public and IPv6 addresses (demo or LAN use only)")
        } else if iceServers.turn == nil {
            log.warning("no --turn-url: video calls are unavailable (calls are relay-only, so no visitor learns a resident's address); rings and decisions work without video")
        }
        return iceServers
    }

    static func visitsConfiguration(_ configuration: ServerConfiguration) -> VisitsConfiguration {
        var visits = VisitsConfiguration()
        visits.gateLimit = configuration.gateLimit
        visits.unitRingLimit = configuration.unitRingLimit
        visits.gateRingLimit = configuration.gateRingLimit
        visits.dataDirectory = configuration.dataDirectory
        visits.retentionDays = configuration.retentionDays
        visits.auditRetentionDays = configuration.auditRetentionDays
        visits.mediaBytesPerCompanyPerDay = configuration.mediaQuotaMB * 1024 * 1024
        return visits
    }

    /// The realtime feed of `visits`' events. `relayOnly`: direct calls are not allowed,
    /// so residents' non-relay candidates are withheld from visitors (decision 0066).
    static func realtimeFeed(_ configuration: ServerConfiguration, database: any SQLDatabase, hub: WebSocketHub,
                             relayOnly: Bool, visits: EventBus, log: Log) throws -> RealtimeFeed {
        var limits = RealtimeLimits()
        if let perUser = configuration.realtimeConnectionsPerUser { limits.connectionsPerUser = perUser }
        // SQLite: the feed watches for auth changes itself (PostgreSQL: `authChanged`).
        let watcher = try (database as? SQLiteDatabase).map { try SQLiteAuthWatcher(path: $0.path) }
        let calls = RealtimeCalls(database: database, residentRelayOnly: relayOnly, log: log)
        let feed = RealtimeFeed(database: database, hub: hub, limits: limits, log: log, authChanges: watcher, companion: calls)
        // With PostgreSQL every commit, this instance's too, arrives through NOTIFY;
        // following the bus as well would read the log twice per commit.
        if !database.dialect.isSharedByInstances { feed.follow(visits) }
        return feed
    }

    /// On PostgreSQL, one connection for every channel: events poke the feed, call messages
    /// go to the feed's calls (decision 0056), push enqueues anywhere wake this worker,
    /// auth changes reach the session cache, which waits on the listener's barrier and is
    /// off while its connection is down (decision 0043). Nil on SQLite (one instance).
    static func postgresListener(_ configuration: ServerConfiguration, database: any SQLDatabase, feed: RealtimeFeed,
                                 pushWorker worker: PushWorker, sessionCache: SessionCache, instance: InstanceName?,
                                 log: Log) -> PostgresListener? {
        guard database.dialect.isSharedByInstances else { return nil }
        let channels: [NotificationChannel] = [.events, .calls, .push, .auth]
        let listener = PostgresListener(url: configuration.databaseURL, channels: channels.map(\.rawValue),
                                        applicationName: instance?.listenerName ?? "portaria-listener", log: log) { notification in
            switch notification {
            case .payload(NotificationChannel.auth.rawValue, let change):
                sessionCache.apply(notification: change)
                feed.authChanged()
            case .payload(NotificationChannel.events.rawValue, let companyID): feed.poke(companyID: companyID)
            case .payload(NotificationChannel.calls.rawValue, let message): feed.relayed(message)
            case .payload(NotificationChannel.push.rawValue, _): worker.wake()
            case .payload: break
            case .reconnected:
                feed.pokeAll()
                worker.wake()
            }
        }
        listener.onConnectionChange = { connected in sessionCache.setArmed(connected) }
        sessionCache.waitForNotifications { await listener.barrier() }
        return listener
    }

    /// Started in this order, stopped in the reverse: the realtime feed first (no more
    /// frames), then the listener that pokes it, the WebSockets (libmicrohttpd must get
    /// every upgraded socket back before it stops), the HTTP server's drain of in-flight
    /// requests, the loops and deliveries that write, and the database last.
    static func components(storage: OpenedDatabase, push: PushDelivery, runsPushWorker: Bool, pushWake: BusRelay,
                           auth: AuthService, visits: VisitsModule, server: HTTPServer, webSockets: WebSocketHub,
                           listener: PostgresListener?, feed: RealtimeFeed) -> [LifecycleComponent] {
        let memoryTrimmer = MemoryTrimmer()
        let worker = push.worker
        let pushHandOff = push.handOff
        return [
            LifecycleComponent("database", stop: { await storage.close() }),
            LifecycleComponent("push providers", stop: push.shutdownProviders),
            LifecycleComponent("memory trimmer", start: { memoryTrimmer.start() }, stop: { await memoryTrimmer.stop() }),
            LifecycleComponent("push worker", start: {
                guard runsPushWorker else { return }
                worker.start()
                pushHandOff.attach(worker)
            }, stop: {
                pushHandOff.detach()
                await worker.stop()
            }),
            LifecycleComponent("push wake-ups", start: { pushWake.start() }, stop: { await pushWake.stop() }),
            // SMS codes still being sent after their answer: they write the database.
            LifecycleComponent("sms deliveries", stop: { await auth.deliveries.drain() }),
            LifecycleComponent("visits", start: { try await visits.start() }, stop: { await visits.stop() }),
            LifecycleComponent("http server", start: { try server.start() }, stop: { await server.shutdown() }),
            LifecycleComponent("websockets", stop: { await webSockets.shutdown() }),
            LifecycleComponent("postgres listener", start: { listener?.start() }, stop: { listener?.stop() }),
            LifecycleComponent("realtime feed", start: { feed.start() }, stop: { await feed.stop() }),
        ]
    }

    /// The metrics listener starts last (everything it reads exists) and stops first.
    static func metricsComponents(_ metrics: MetricsServer?, log: Log) -> [LifecycleComponent] {
        guard let metrics else { return [] }
        return [LifecycleComponent("metrics listener", start: {
            try metrics.server.start()
            log.info("metrics listening", ["host": .string(metrics.server.configuration.host),
                                           "port": .number(Double(metrics.server.port))])
        }, stop: { await metrics.server.shutdown(gracePeriod: .seconds(2), handlerGrace: .seconds(2)) })]
    }

    /// Every capability's routes, once every part exists.
    private func registerRoutes(on router: Router, auth: AuthService, authenticator: Authenticator, vapid: VAPIDKeys) {
        DeviceRoutes(store: DeviceStore(database: database), authenticator: authenticator,
                     webPushHosts: configuration.webPushHosts).register(on: router)
        WebPushRoutes(vapid: vapid).register(on: router)
        PushRoutes(receipts: PushReceipts(database: database), authenticator: authenticator).register(on: router)
        AuditRoutes(database: database, authenticator: authenticator).register(on: router)
        var listenerConnected: (@Sendable () -> Bool)?
        if let listener { listenerConnected = { listener.isConnected } }
        SystemRoutes(database: database, openAPIPath: configuration.openAPIPath ?? SystemRoutes.defaultOpenAPIPath(),
                     listenerConnected: listenerConnected)
            .register(on: router)
        StaticFiles(root: configuration.webDirectory ?? StaticFiles.defaultRoot()).registerAll(on: router)
        if configuration.benchRoutes { BenchRoutes(webSockets: webSockets).register(on: router) }
        visits.register(on: router)
        AuthRoutes(auth: auth, authenticator: authenticator).register(on: router)
        let (visitService, visitors) = (visits.service, visits.visitors)
        CallRoutes(iceServers: iceServers, authenticator: authenticator,
                   visitorVisit: { request in try await visitService.visitorLiveCall(try await visitors.access(request)) }).register(on: router)
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

    /// Starts every component in order (decision 0029); the server listens from here.
    public func start() async throws {
        try await lifecycle.start()
        log.info("listening", ["host": .string(configuration.host), "port": .number(Double(server.port)),
                               "database": .string(configuration.databaseURL.hasPrefix("sqlite") ? "sqlite" : "postgres")])
    }

    /// Stops every component in the reverse order, each awaited; safe to call twice.
    public func shutdown() async {
        await lifecycle.shutdown()
        log.info("stopped")
    }
}

/// Calls `handle` for every event of a bus, from `start()` until `stop()` (which waits
/// for the event in hand).
final class BusRelay: Sendable {
    private let bus: EventBus
    private let handle: @Sendable (EventRecord) -> Void
    private let loop = BackgroundTask()

    init(bus: EventBus, handle: @escaping @Sendable (EventRecord) -> Void) {
        self.bus = bus
        self.handle = handle
    }

    func start() {
        // Subscribed before the task runs: no event published after `start()` is missed.
        let (events, handle) = (bus.subscribe(), handle)
        loop.start {
            for await event in events { handle(event) }
        }
    }

    func stop() async { await loop.stop() }
}
