import Foundation
import PortariaCore

/// One `portaria serve` process: the database, the HTTP/WebSocket listener and the
/// routes of every capability, assembled in one place.
public final class Application: Sendable {
    public let configuration: ServerConfiguration
    public let database: any SQLDatabase
    public let server: HTTPServer
    /// Every open WebSocket; closed with 1001 before the HTTP server stops.
    public let webSockets: WebSocketHub
    /// TURN/STUN lists with short-lived credentials; the realtime layer hands one to
    /// a visitor page through `iceServers.iceServers(forSubject:)`.
    public let iceServers: ICEServerProvider
    let log: Log

    /// Opens and migrates the database, then registers every route. Does not listen yet.
    public init(configuration: ServerConfiguration, log: Log = .shared) async throws {
        self.configuration = configuration
        self.log = log
        database = try await DatabaseFactory.open(url: configuration.databaseURL)
        let applied = try await Migrator().migrate(database)
        if !applied.isEmpty { log.info("migrations applied", ["versions": .array(applied.map { .number(Double($0)) })]) }

        if configuration.seedDemo { try await DemoData.seedIfEmpty(database, log: log) }
        let secrets = try await ServiceSecrets.loadOrCreate(database)
        let outbound = OutboundHTTPClient(caFile: configuration.caFile)
        let sms: any SmsSender
        if let webhook = configuration.smsWebhook {
            sms = WebhookSmsSender(url: webhook, client: outbound)
        } else {
            sms = LogSmsSender(log: log)
            log.warning("no --sms-webhook: OTP codes are written to this log (development only)")
        }
        let auth = AuthService(database: database, secrets: secrets, sms: sms,
                               loginLimitPerAccount: configuration.loginLimit, log: log)
        let authenticator = Authenticator(database: database, jwt: secrets.jwt)

        webSockets = WebSocketHub(log: log)
        let router = Router()
        AuthRoutes(auth: auth, authenticator: authenticator).register(on: router)
        iceServers = try ICEServerProvider(configuration: configuration)
        if iceServers.turn == nil {
            log.info("no --turn-url: /v1/calls/ice_servers answers an empty list (calls use host candidates only)")
        }
        CallRoutes(iceServers: iceServers, authenticator: authenticator).register(on: router)
        SystemRoutes(database: database, openAPIPath: configuration.openAPIPath ?? SystemRoutes.defaultOpenAPIPath())
            .register(on: router)
        if configuration.benchRoutes { BenchRoutes(webSockets: webSockets).register(on: router) }

        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxBodySize = configuration.maxBodySize
        server = HTTPServer(router: router, configuration: http, log: log)
    }

    public func start() throws {
        try server.start()
        log.info("listening", ["host": .string(configuration.host), "port": .number(Double(server.port)),
                               "database": .string(configuration.databaseURL.hasPrefix("sqlite") ? "sqlite" : "postgres")])
    }

    public func shutdown() async {
        // libmicrohttpd must get every upgraded socket back before it stops.
        await webSockets.shutdown()
        await server.shutdown()
        await database.close()
        log.info("stopped")
    }
}
