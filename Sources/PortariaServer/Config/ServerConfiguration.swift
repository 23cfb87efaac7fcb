import Foundation

/// Everything `portaria serve` is told on the command line or in the environment.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port: UInt16 = 8080
    public var databaseURL = "sqlite://./portaria.db"
    public var dataDirectory = "./portaria-data"
    public var seedDemo = false
    public var apnsKeyFile: String?
    public var apnsKeyID: String?
    public var apnsTeamID: String?
    public var apnsTopic: String?
    public var apnsEndpoint = "https://api.push.apple.com"
    public var fcmServiceAccount: String?
    public var fcmEndpoint = "https://fcm.googleapis.com"
    public var caFile: String?
    /// VAPID `sub` (RFC 8292): a mailto: or https: contact for the push services.
    public var vapidSubject = "mailto:admin@portaria.invalid"
    public var vapidSubjectGiven = false
    /// PEM P-256 key; without it the key is made at first start and kept in the database.
    public var vapidKeyFile: String?
    /// Push services a browser subscription may point at.
    public var webPushHosts = WebPushHosts.browsers
    public var smsWebhook: String?
    public var turnURL: String?
    public var turnSecret: String?
    /// Lets calls connect directly (`--calls-allow-direct`): the visitor's page then sees
    /// the answering resident's addresses. Off: calls are relay-only (decision 0066).
    public var callsAllowDirect = false
    /// The key that wraps the secrets kept in the database (`--secrets-key-file`).
    public var secretsKeyFile: String?
    /// Things worth a warning at startup (a secret given on the command line, …).
    public var warnings: [String] = []
    /// Proxies whose `X-Forwarded-For` is believed (addresses or IPv4 CIDR blocks).
    public var trustedProxies: [String] = []
    /// Browser origins allowed to open `/v1/realtime` besides the server's own.
    public var allowedOrigins: Set<String> = []
    public var gateLimit = 10
    /// Rings per unit and per gate per minute across every address (`VisitsConfiguration`).
    public var unitRingLimit = 6
    public var gateRingLimit = 60
    public var loginLimit = 10
    public var maxBodySize = 1 << 20
    /// Sockets one client address may hold, HTTP connections and WebSockets alike (0: no
    /// limit). Behind `--trusted-proxies` every connection comes from the proxy, so the
    /// limit is off there.
    public var maxConnectionsPerIP = 1024
    /// Sockets held at once, HTTP connections and WebSockets alike; 0: the open-file limit
    /// less what the rest of the process needs (``ResourceLimits/connectionBudget()``).
    ///
    /// An upgraded WebSocket owns its socket once libmicrohttpd hands its connection back
    /// (decision 0125), so the server counts every socket itself (`SocketCensus`). At this
    /// limit a new connection is closed unanswered at accept (libmicrohttpd's accept
    /// policy), as libmicrohttpd does past its own count: the sockets held stay within it,
    /// give or take one per libmicrohttpd thread accepting at the same instant, and the
    /// descriptors kept back for the database stay free. Per address, a WebSocket
    /// handshake past `maxConnectionsPerIP` is answered 429 and libmicrohttpd bounds the
    /// address's HTTP connections by the same number: at most twice it in sockets.
    public var maxConnections = 0
    /// Request bodies held in memory across all connections at once; beyond it, 503.
    public var maxBufferedBodyBytes = 128 << 20
    /// Seconds a request head may take from the moment the connection could send it
    /// (accepted, or its previous answer sent); then the connection is closed (decision 0061).
    public var headTimeoutSeconds = 10
    /// Seconds a request body gets after its head, plus one per `bodyMinRate` bytes received.
    public var bodyTimeoutSeconds = 10
    /// Bytes per second a body must average past its first `bodyTimeoutSeconds`.
    public var bodyMinRate = 1024
    /// Days photos, voice messages and visitor locations are kept (LGPD).
    public var retentionDays = 90
    /// MiB of photos and voice messages one company's visitors may store per 24 h.
    public var mediaQuotaMB = 512
    /// SMS-code limits per phone (`AuthService.OTPLimits`); the CLI knobs are for tests.
    public var otpLimits = AuthService.OTPLimits()
    /// The country code of a national phone number typed without `+` (55: Brazil).
    public var defaultCountryCode = 55
    /// Adds the routes `make bench` drives (JSON echo, WebSocket broadcast). Off in production.
    public var benchRoutes = false
    /// Realtime sockets one user may hold (`RealtimeLimits.connectionsPerUser`). Raised only by
    /// `make bench`, whose one operator opens thousands of sockets; nil keeps the default.
    public var realtimeConnectionsPerUser: Int?
    /// Bearer checks kept in memory (decision 0043); 0 reads the session and membership
    /// on every request (the A/B's baseline).
    public var sessionCacheEntries = 20_000
    /// Where `docs/openapi.yaml` is read from for `GET /v1/openapi.yaml`.
    public var openAPIPath: String?
    /// How long a push worker holds a claimed job before another instance may take it.
    public var pushLease: TimeInterval = 60
    /// The push worker's fallback poll; nil keeps the default (250 ms on SQLite, 2 s where
    /// NOTIFY wakes the workers). Tests lengthen it to prove the wake-up does the work.
    public var pushPollInterval: Duration?
    /// Whether this instance delivers pushes (tests turn it off so another instance must).
    public var runsPushWorker = true
    /// Where the static pages (`Web/`) are read from.
    public var webDirectory: String?
    /// The Prometheus listener (`GET /metrics`), never the public port; nil: none.
    public var metricsListen: (host: String, port: UInt16)?
    /// Days the audit trail is kept, apart from the visits' media (`retentionDays`).
    public var auditRetentionDays = 730
    /// The level of the one log line per request: `info` by default, `debug` with `--demo`
    /// (hidden at the default PORTARIA_LOG_LEVEL=info, so the demo's banner stays readable).
    public var requestLogLevel: Log.Level = .info

    public init() {}

    public static let databaseOptions: [OptionSpec] = [
        OptionSpec("database", help: "sqlite:///abs/path.db (default sqlite://./portaria.db) or postgres://…"),
    ]

    public static let serveOptions: [OptionSpec] = databaseOptions + [
        OptionSpec("host", help: "listen address (default 127.0.0.1)"),
        OptionSpec("port", help: "listen port (default 8080)"),
        OptionSpec("demo", takesValue: false, help: "seed the demo data when the database is empty"),
        OptionSpec("data-dir", help: "photos and voice messages (default ./portaria-data)"),
        OptionSpec("apns-key-file", help: "APNs token-auth key (.p8)"),
        OptionSpec("apns-key-id", help: "APNs key id"),
        OptionSpec("apns-team-id", help: "Apple team id"),
        OptionSpec("apns-topic", help: "app bundle id"),
        OptionSpec("apns-endpoint", help: "default https://api.push.apple.com"),
        OptionSpec("fcm-service-account", help: "FCM v1 service-account JSON"),
        OptionSpec("fcm-endpoint", help: "default https://fcm.googleapis.com"),
        OptionSpec("ca-file", help: "extra CA bundle for outbound TLS"),
        OptionSpec("vapid-subject", help: "Web Push contact (mailto:you@example.com or https://…) sent to the browsers' push services"),
        OptionSpec("vapid-key-file", help: "Web Push VAPID key (PEM, EC P-256); default: made at first start and kept in the database"),
        OptionSpec("web-push-hosts", help: "comma-separated push service hosts (*.suffix allowed) browser subscriptions may use (default: the browsers' own)"),
        OptionSpec("sms-webhook", help: "SMS gateway URL (without it OTP codes are logged: dev only)"),
        OptionSpec("default-country-code", help: "country code for national phone numbers typed without + (default 55)"),
        OptionSpec("turn-url", help: "TURN relay for video calls: turn:host[:port] or turns:host[:port]"),
        OptionSpec("turn-secret", help: "coturn use-auth-secret shared secret (prefer --turn-secret-file or the environment: ps shows arguments)"),
        OptionSpec("turn-secret-file", help: "file holding the coturn shared secret (first line)"),
        OptionSpec("calls-allow-direct", takesValue: false, help: "let video calls connect directly (demo/LAN): the anonymous visitor's page then sees the answering resident's LAN, public and IPv6 addresses; default: relay-only through --turn-url, no video without it"),
        OptionSpec("secrets-key-file", help: "32-byte key (raw, hex or base64) that wraps every secret the database keeps (default: DATA-DIR/secrets.key, made at first start)"),
        OptionSpec("trusted-proxies", help: "comma-separated proxy addresses/CIDRs whose X-Forwarded-For names the client"),
        OptionSpec("allowed-origins", help: "comma-separated browser origins allowed on /v1/realtime besides this server's own"),
        OptionSpec("gate-limit", help: "visits per source IP per minute at one gate (default 10)"),
        OptionSpec("unit-ring-limit", help: "rings of one unit per minute from all addresses together (default 6)"),
        OptionSpec("gate-ring-limit", help: "rings at one gate per minute from all addresses together (default 60)"),
        OptionSpec("login-limit", help: "failed logins per account per 15 min before 429 (default 10)"),
        OptionSpec("max-body-size", help: "largest request body in bytes (default 1048576)"),
        OptionSpec("max-connections", help: "HTTP and WebSocket connections held at once; 0 = the open-file limit less 1,024 (default 0)"),
        OptionSpec("max-connections-per-ip", help: "connections one client address may hold; 0 = no limit (default 1024; off behind --trusted-proxies)"),
        OptionSpec("max-buffered-body-mb", help: "request bodies held in memory at once across connections, MiB (default 128); one address holds at most what is left free"),
        OptionSpec("head-timeout-seconds", help: "a request head must arrive within this many seconds of the connection being ready for it (default 10)"),
        OptionSpec("body-timeout-seconds", help: "a request body gets this many seconds after its head, plus 1 s per --body-min-rate bytes (default 10)"),
        OptionSpec("body-min-rate", help: "bytes per second a request body must average past --body-timeout-seconds (default 1024)"),
        OptionSpec("retention-days", help: "days photos, voice messages and visitor locations are kept (default 90)"),
        OptionSpec("metrics-listen", help: "HOST:PORT of a separate listener for Prometheus (GET /metrics); off by default, never the public port"),
        OptionSpec("audit-retention-days", help: "days the audit trail is kept (default 730)"),
        OptionSpec("media-quota-mb", help: "MiB of photos and voice messages one company's visitors may store per 24 h (default 512)"),
        OptionSpec("request-log", help: "level of the per-request log lines: debug|info|warning (default info; debug with --demo, shown with PORTARIA_LOG_LEVEL=debug)"),
        OptionSpec("openapi-file", help: "path of docs/openapi.yaml to serve", hidden: true),
        OptionSpec("web-dir", help: "folder of the static pages (Web/)", hidden: true),
        OptionSpec("push-lease-seconds", help: "push job lease (default 60; tests shorten it)", hidden: true),
        OptionSpec("push-poll-seconds", help: "push worker fallback poll (default 0.25 s on SQLite, 2 s on PostgreSQL; tests lengthen it)", hidden: true),
        OptionSpec("no-push-worker", takesValue: false, help: "deliver no pushes from this instance (tests: another instance must)", hidden: true),
        OptionSpec("otp-resend-gap-seconds", help: "wait before a phone's second SMS code of the day, doubling after (default 30; 0 for tests)", hidden: true),
        OptionSpec("otp-failures-per-day", help: "wrong SMS codes per phone from one address per 24 h before that address gets 429 (default 10)", hidden: true),
        OptionSpec("enable-bench-routes", takesValue: false, help: "routes for make bench", hidden: true),
        OptionSpec("realtime-connections-per-user", help: "realtime sockets per user (default 10; make bench raises it)", hidden: true),
        OptionSpec("session-cache-entries", help: "bearer checks kept in memory (default 20000; 0 reads every time, for A/B runs)", hidden: true),
    ]

    /// Builds and validates the configuration; throws `UsageError` naming the bad option.
    public static func from(_ options: ParsedOptions) throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        if let host = options.value("host") {
            guard !host.isEmpty else { throw UsageError("--host must not be empty") }
            configuration.host = host
        }
        configuration.port = UInt16(try options.integer("port", default: 8080, range: 0...65535))
        if let database = options.value("database") {
            guard database.hasPrefix("sqlite://") || database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") else {
                throw UsageError("--database must be sqlite:///path.db or postgres://…, got '\(database.prefix(60))'")
            }
            configuration.databaseURL = database
        }
        configuration.dataDirectory = options.value("data-dir") ?? configuration.dataDirectory
        configuration.seedDemo = options.flag("demo")
        configuration.apnsKeyFile = options.value("apns-key-file")
        configuration.apnsKeyID = options.value("apns-key-id")
        configuration.apnsTeamID = options.value("apns-team-id")
        configuration.apnsTopic = options.value("apns-topic")
        configuration.apnsEndpoint = options.value("apns-endpoint") ?? configuration.apnsEndpoint
        configuration.fcmServiceAccount = options.value("fcm-service-account")
        configuration.fcmEndpoint = options.value("fcm-endpoint") ?? configuration.fcmEndpoint
        configuration.caFile = options.value("ca-file")
        if let subject = options.value("vapid-subject") {
            guard (subject.hasPrefix("mailto:") && subject.count > 7) || subject.hasPrefix("https://"),
                  subject.utf8.count <= 256, !subject.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7f }) else {
                throw UsageError("--vapid-subject must be mailto:address or an https:// URL")
            }
            configuration.vapidSubject = subject
            configuration.vapidSubjectGiven = true
        }
        configuration.vapidKeyFile = options.value("vapid-key-file")
        if let hosts = options.value("web-push-hosts") { configuration.webPushHosts = try WebPushHosts.parse(hosts) }
        configuration.smsWebhook = options.value("sms-webhook")
        configuration.turnURL = options.value("turn-url")
        configuration.turnSecret = options.value("turn-secret")
        if let file = options.value("turn-secret-file") {
            guard options.value("turn-secret") == nil else { throw UsageError("give --turn-secret-file or --turn-secret, not both") }
            configuration.turnSecret = try SecretFile.read(file, option: "--turn-secret-file")
        } else if options.fromCommandLine.contains("turn-secret") {
            configuration.warnings.append("--turn-secret on the command line is visible to every user of this machine (ps); use --turn-secret-file or PORTARIA_TURN_SECRET")
        }
        configuration.secretsKeyFile = options.value("secrets-key-file")
        configuration.callsAllowDirect = options.flag("calls-allow-direct")
        configuration.trustedProxies = (options.value("trusted-proxies") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        do { _ = try TrustedProxies(configuration.trustedProxies) } catch let error as ServerStartError {
            throw UsageError(error.description)
        }
        configuration.allowedOrigins = Set((options.value("allowed-origins") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        configuration.gateLimit = try options.integer("gate-limit", default: 10, range: 1...1_000_000)
        configuration.unitRingLimit = try options.integer("unit-ring-limit", default: 6, range: 1...1_000_000)
        configuration.gateRingLimit = try options.integer("gate-ring-limit", default: 60, range: 1...1_000_000)
        configuration.loginLimit = try options.integer("login-limit", default: 10, range: 1...1_000_000)
        configuration.maxBodySize = try options.integer("max-body-size", default: 1 << 20, range: 1024...(64 << 20))
        configuration.maxConnectionsPerIP = try options.integer("max-connections-per-ip", default: 1024, range: 0...1_000_000)
        configuration.maxConnections = try options.integer("max-connections", default: 0, range: 0...10_000_000)
        configuration.maxBufferedBodyBytes = try options.integer("max-buffered-body-mb", default: 128, range: 8...65_536) << 20
        configuration.headTimeoutSeconds = try options.integer("head-timeout-seconds", default: 10, range: 1...600)
        configuration.bodyTimeoutSeconds = try options.integer("body-timeout-seconds", default: 10, range: 1...600)
        configuration.bodyMinRate = try options.integer("body-min-rate", default: 1024, range: 1...(1 << 30))
        configuration.retentionDays = try options.integer("retention-days", default: 90, range: 1...3650)
        configuration.mediaQuotaMB = try options.integer("media-quota-mb", default: 512, range: 1...1_048_576)
        configuration.auditRetentionDays = try options.integer("audit-retention-days", default: 730, range: 1...36500)
        if let listen = options.value("metrics-listen") {
            let address = try MetricsListenAddress.parse(listen)
            if address.overlaps(host: configuration.host, port: configuration.port) {
                throw UsageError("--metrics-listen \(listen) is the public listener (--host \(configuration.host) --port \(configuration.port)); give the metrics their own port")
            }
            configuration.metricsListen = (address.host, address.port)
        }
        configuration.otpLimits.firstResendGap = TimeInterval(try options.integer("otp-resend-gap-seconds", default: 30, range: 0...3600))
        configuration.otpLimits.failuresPerPhonePerDay = try options.integer("otp-failures-per-day", default: 10, range: 1...1000)
        configuration.defaultCountryCode = try options.integer("default-country-code", default: 55, range: 1...999)
        if let level = options.value("request-log") {
            guard let parsed = Log.Level(rawValue: level), parsed != .error else {
                throw UsageError("--request-log must be debug, info or warning, got '\(level.prefix(20))'")
            }
            configuration.requestLogLevel = parsed
        } else if configuration.seedDemo {
            configuration.requestLogLevel = .debug
        }
        configuration.openAPIPath = options.value("openapi-file")
        configuration.webDirectory = options.value("web-dir")
        configuration.pushLease = TimeInterval(try options.integer("push-lease-seconds", default: 60, range: 2...3600))
        if options.value("push-poll-seconds") != nil {
            configuration.pushPollInterval = .seconds(try options.integer("push-poll-seconds", default: 2, range: 1...3600))
        }
        configuration.runsPushWorker = !options.flag("no-push-worker")
        configuration.benchRoutes = options.flag("enable-bench-routes")
        configuration.sessionCacheEntries = try options.integer("session-cache-entries", default: 20_000, range: 0...10_000_000)
        if options.value("realtime-connections-per-user") != nil {
            configuration.realtimeConnectionsPerUser = try options.integer("realtime-connections-per-user", default: 10, range: 1...1_000_000)
        }
        let apns = [configuration.apnsKeyFile, configuration.apnsKeyID, configuration.apnsTeamID, configuration.apnsTopic]
        if apns.contains(where: { $0 != nil }) && apns.contains(where: { $0 == nil }) {
            throw UsageError("APNs needs all of --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic")
        }
        if (configuration.turnURL == nil) != (configuration.turnSecret == nil) {
            throw UsageError("--turn-url and --turn-secret go together")
        }
        if let url = configuration.turnURL, let secret = configuration.turnSecret {
            _ = try TURNSettings.parse(url: url, secret: secret)
        }
        return configuration
    }
}
