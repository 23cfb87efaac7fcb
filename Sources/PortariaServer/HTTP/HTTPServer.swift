import CMicroHTTPD
import Foundation
import PortariaCore
import PortariaWebSocket
#if canImport(Glibc)
import Glibc
#endif

/// Limits and sizing of the HTTP listener.
public struct HTTPServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    public var port: UInt16 = 8080
    /// One epoll thread per core is what libmicrohttpd's thread pool is built for.
    public var threadPoolSize: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
    /// Sockets held at once and per client address (0: no per-address limit), HTTP
    /// connections and upgraded WebSockets alike: libmicrohttpd applies them to its own
    /// connections at accept, `SocketCensus` to a WebSocket handshake.
    public var connectionLimit: Int = 20_000
    public var perIPConnectionLimit: Int = 0
    /// Idle connections (including slowloris trickles) are closed after this many seconds.
    public var connectionTimeoutSeconds: Int = 30
    /// Per-connection memory for the request line and headers; bigger headers get 431.
    public var headerMemoryLimit: Int = 16 * 1024
    public var maxBodySize: Int = 1 << 20
    /// Body bytes held in memory across every connection at once. Bodies are buffered
    /// whole (handlers get them in one piece); without a global bound, many connections
    /// each sending just under `maxBodySize` add up to whatever they like. Shared between
    /// client addresses as `BodyBudget` says (decision 0060).
    public var maxBufferedBodyBytes: Int = 128 << 20
    /// Absolute deadlines for a request head and a minimum rate for a body (decision 0061).
    public var headTimeout: Duration = .seconds(10)
    public var bodyGrace: Duration = .seconds(10)
    public var bodyBytesPerSecond: Int = 1024
    /// Larger limits for particular routes (uploads), by method and path; nil keeps
    /// `maxBodySize`. Decided from the request line, before any body byte is read.
    public var bodyLimitOverride: @Sendable (_ method: String, _ path: String) -> Int? = { _, _ in nil }
    public var listenBacklog: Int = 4096
    /// Peers whose `X-Forwarded-For` names the client (`--trusted-proxies`).
    public var trustedProxies: TrustedProxies = .none
    /// Where answered requests are counted (`--metrics-listen`); nil counts nothing (the
    /// metrics listener itself, tests).
    public var metrics: ServerMetrics?
    /// The level of the one log line per request (`--request-log`).
    public var requestLogLevel: Log.Level = .info
    public init() {}
}

/// The HTTP/1.1 listener: GNU libmicrohttpd's epoll thread pool parses HTTP; each
/// complete request is handed to an async Swift handler while its connection is
/// suspended, so no libmicrohttpd thread ever waits for a handler or for storage.
public final class HTTPServer: Sendable {
    public let configuration: HTTPServerConfiguration
    let router: Router
    let log: Log
    /// Requests accepted and not yet answered (graceful shutdown waits for them).
    let inFlight = Locked(0)
    /// Sockets handed over by an HTTP upgrade and not given back yet, and whether the
    /// daemon has stopped. libmicrohttpd closes an upgraded socket and frees its handle in
    /// `MHD_stop_daemon`; a WebSocket still using the number after that would read, write
    /// and finally "close" whatever reused it (a database connection). So the stop waits
    /// for every upgraded socket to come back, and a hand-back after the stop is a no-op.
    let upgrades = Locked(UpgradeLedger())
    /// Body bytes currently buffered, per client address (see `maxBufferedBodyBytes`).
    let bodyBudget: Locked<BodyBudget>
    /// Open connections and when their head or body is due; `sweeper` closes late ones.
    let deadlines: Locked<RequestDeadlines>
    /// Every socket held, libmicrohttpd's and upgraded ones, in total and per address: what
    /// an upgrade is checked against (`upgradeRefusal`).
    let sockets: Locked<SocketCensus>
    /// Takes a descriptor of its own for an upgraded socket (`fcntl(F_DUPFD_CLOEXEC)`); -1
    /// when there is no spare one. A parameter so that tests can run out of descriptors.
    let duplicateDescriptor: @Sendable (Int32) -> Int32
    let sweeper = Locked<Task<Void, Never>?>(nil)
    /// Connections suspended while their handler runs, and whether the daemon is stopping.
    /// libmicrohttpd aborts the process if it is stopped with a connection suspended, and
    /// a resume after the stop would touch freed memory: both are decided under this lock.
    let handlers = Locked(HandlerState())
    struct HandlerState {
        var suspended: [ObjectIdentifier: (context: RequestContext, connection: ConnectionHandle)] = [:]
        var daemonStopped = false
        /// Resumes running now, outside the lock.
        var resuming = 0
        var running: Int { suspended.count }
    }
    /// The running daemon, set by `start()` and taken by `shutdown()`.
    private let daemon = Locked<Daemon?>(nil)
    private let state = Locked<State>(.idle)
    /// The listening socket between `bind()` and `start()` (ours to close until libmicrohttpd
    /// takes it; -1 when there is none).
    private let boundListener = Locked<Int32>(-1)
    private let servedPort = Locked<UInt16>(0)
    /// The port the server listens on once started (the kernel's choice for `--port 0`).
    public var port: UInt16 { servedPort.current }

    private enum State { case idle, running, draining, stopped }

    /// libmicrohttpd's daemon and its reference to this server, from `start()` until
    /// `shutdown()` has stopped it: libmicrohttpd's threads call back into `self` until then.
    /// Without the reference, the last release of a running server could land on one of
    /// those threads (a finished request releasing its `RequestContext` after its owner
    /// dropped the server), and `deinit` would call `MHD_stop_daemon` there: a thread cannot
    /// join itself, and libmicrohttpd aborts the process ("Failed to join a thread"). So a
    /// started server lives until `shutdown()`, and `deinit` never meets a running daemon.
    private struct Daemon: @unchecked Sendable {
        // Unchecked: the pointer is only passed to MHD_quiesce_daemon/MHD_stop_daemon by
        // the one `shutdown()` that took it out of the lock.
        let pointer: OpaquePointer
        let retainedServer: Unmanaged<HTTPServer>
    }

    struct UpgradeLedger {
        var open = 0
        var daemonStopped = false
        /// Hand-backs running now, outside the lock (see `releaseUpgrade`).
        var releasing = 0
    }

    public convenience init(router: Router, configuration: HTTPServerConfiguration = .init(), log: Log = .shared) {
        self.init(router: router, configuration: configuration, log: log,
                  duplicatingWith: { fcntl($0, F_DUPFD_CLOEXEC, 0) })
    }

    init(router: Router, configuration: HTTPServerConfiguration, log: Log,
         duplicatingWith duplicate: @escaping @Sendable (Int32) -> Int32) {
        self.router = router
        duplicateDescriptor = duplicate
        sockets = Locked(SocketCensus(limits: .init(total: configuration.connectionLimit,
                                                    perAddress: configuration.perIPConnectionLimit)))
        self.configuration = configuration
        self.log = log
        bodyBudget = Locked(BodyBudget(capacity: configuration.maxBufferedBodyBytes))
        deadlines = Locked(RequestDeadlines(policy: DeadlinePolicy(
            head: configuration.headTimeout, bodyGrace: configuration.bodyGrace,
            bodyBytesPerSecond: configuration.bodyBytesPerSecond)))
    }

    deinit {
        // No daemon can be running here (it holds `Daemon.retainedServer`); only a socket that
        // `bind()` made and `start()` never took is left.
        let listener = boundListener.current
        if listener >= 0 { OwnedDescriptor(listener).close() }
    }

    /// Binds and starts serving; throws a readable error when the address is unusable.
    ///
    /// The listening socket is made here, not by libmicrohttpd, for two reasons: the bind
    /// error is ours to report ("port 8080 is already in use"), and the socket gets
    /// `SO_REUSEADDR` only. libmicrohttpd's address-reuse option also sets `SO_REUSEPORT`,
    /// which let a second `portaria serve` bind the same port and the kernel spread
    /// connections between two servers with different databases.
    public func start() throws {
        try bind()
        let address = try SocketAddress(host: configuration.host, port: configuration.port)
        let taken = boundListener.withLock { bound -> Int32 in
            defer { bound = -1 }
            return bound
        }
        guard taken >= 0 else { throw ServerStartError("the HTTP server was already started") }
        let listener = OwnedDescriptor(taken)
        var flags = UInt32(MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_ALLOW_UPGRADE.rawValue | MHD_USE_TURBO.rawValue | MHD_USE_ITC.rawValue)
        if address.isIPv6 { flags |= UInt32(MHD_USE_IPv6.rawValue) }
        var config = portaria_mhd_config()
        config.flags = flags
        config.listen_socket = listener.rawValue
        config.thread_pool_size = UInt32(configuration.threadPoolSize)
        config.connection_limit = UInt32(configuration.connectionLimit)
        config.per_ip_connection_limit = UInt32(configuration.perIPConnectionLimit)
        config.connection_timeout_seconds = UInt32(configuration.connectionTimeoutSeconds)
        config.connection_memory_limit = configuration.headerMemoryLimit
        let retained = Unmanaged.passRetained(self)
        config.access_handler = portariaAccessHandler
        config.access_handler_cls = retained.toOpaque()
        config.completed_handler = portariaRequestCompleted
        config.completed_handler_cls = retained.toOpaque()
        config.connection_handler = portariaConnectionNotified
        config.connection_handler_cls = retained.toOpaque()
        config.accept_policy = portariaAcceptPolicy
        config.accept_policy_cls = retained.toOpaque()
        config.log_sink = portariaLibraryLog
        guard let started = withUnsafePointer(to: &config, { portaria_mhd_start($0) }) else {
            retained.release()
            // `listener` closes itself: libmicrohttpd did not take it.
            throw ServerStartError("cannot start the HTTP server on \(configuration.host):\(configuration.port)")
        }
        // libmicrohttpd owns the listening socket from here (it closes it in
        // MHD_stop_daemon, unless MHD_quiesce_daemon gave it back: see `shutdown`).
        let listeningPort = Self.boundPort(of: listener.rawValue)
        _ = listener.release()
        daemon.withLock { $0 = Daemon(pointer: started, retainedServer: retained) }
        servedPort.withLock { $0 = listeningPort }
        state.withLock { $0 = .running }
        startSweeper()
    }

    /// Binds and listens without serving yet (connections wait in the backlog), so a busy
    /// port is found before anything else starts. `start()` calls it when needed.
    public func bind() throws {
        guard boundListener.current < 0, state.current == .idle else { return }
        let address = try SocketAddress(host: configuration.host, port: configuration.port)
        let listener = try Self.listen(on: address, host: configuration.host, port: configuration.port,
                                       backlog: configuration.listenBacklog)
        let number = listener.release()
        boundListener.withLock { $0 = number }
    }

    /// socket + SO_REUSEADDR + bind + listen, with the reason in words when it fails.
    private static func listen(on address: SocketAddress, host: String, port: UInt16, backlog: Int) throws -> OwnedDescriptor {
        // Non-blocking: every thread of libmicrohttpd's pool watches this socket and all
        // are woken for one connection; with a blocking socket the threads that lose the
        // race would sit in accept() and stop serving their own connections.
        guard let listener = OwnedDescriptor.socket(family: address.isIPv6 ? AF_INET6 : AF_INET,
                                                    type: Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)) else {
            throw ServerStartError("cannot create a socket: \(String(cString: strerror(errno)))")
        }
        // SO_REUSEADDR lets a restarted server bind while the old one's connections sit in
        // TIME_WAIT; on Linux it never lets two sockets listen on one port.
        var one: Int32 = 1
        _ = setsockopt(listener.rawValue, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if address.isIPv6 {
            _ = setsockopt(listener.rawValue, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = address.withSockaddr { Glibc.bind(listener.rawValue, $0, address.length) }
        if bound != 0 {
            let number = errno
            switch number {
            case EADDRINUSE:
                throw ServerStartError("port \(port) is already in use on \(host) (is another portaria running?)")
            case EACCES:
                throw ServerStartError("not allowed to listen on port \(port) (ports below 1024 need privileges)")
            case EADDRNOTAVAIL:
                throw ServerStartError("address \(host) is not an address of this machine")
            default:
                throw ServerStartError("cannot listen on \(host):\(port): \(String(cString: strerror(number)))")
            }
        }
        guard Glibc.listen(listener.rawValue, Int32(clamping: backlog)) == 0 else {
            throw ServerStartError("cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
        }
        return listener
    }

    /// The port the kernel chose (for `--port 0`).
    private static func boundPort(of descriptor: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) == 0 }
        }
        guard ok else { return 0 }
        let family = Int32(storage.ss_family)
        return withUnsafeBytes(of: &storage) { raw in
            switch family {
            case AF_INET: return UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
            case AF_INET6: return UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
            default: return 0
            }
        }
    }

    /// Stops accepting, lets in-flight requests finish (up to `gracePeriod`; handlers that
    /// are still running up to `handlerGrace` more), then closes every socket.
    public func shutdown(gracePeriod: Duration = .seconds(10), handlerGrace: Duration = .seconds(30)) async {
        let proceed = state.withLock { state -> Bool in
            guard state == .running else { return false }
            state = .draining
            return true
        }
        guard proceed, let running = daemon.withLock({ $0 }) else { return }
        // With MHD_USE_ITC this hands the listening socket back: ours to close, after the stop.
        let quiesced = MHD_quiesce_daemon(running.pointer)
        let deadline = ContinuousClock.now + gracePeriod
        while (inFlight.current > 0 || upgrades.current.open > 0) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let abandoned = inFlight.current
        if abandoned > 0 { log.warning("shutdown: requests still running after grace period", ["count": .number(Double(abandoned))]) }
        // Requests still *receiving* are simply closed, but a handler that is running will
        // resume its connection when it finishes: wait for those (each is bounded by its
        // own timeouts), up to `handlerGrace` more. Past that, the flag set with the stop
        // keeps a late handler from resuming a connection the daemon has freed.
        let handlerDeadline = ContinuousClock.now + handlerGrace
        var waited = false
        while handlers.current.running > 0 && ContinuousClock.now < handlerDeadline {
            if !waited { log.warning("shutdown: waiting for running handlers", ["count": .number(Double(handlers.current.running))]) }
            waited = true
            try? await Task.sleep(for: .milliseconds(10))
        }
        // Whatever still runs is answered 503 now and its connection resumed, so none is
        // left suspended; the late handler then finds its entry gone and does nothing.
        let forced = handlers.withLock { state -> Int in
            state.daemonStopped = true
            for (context, connection) in state.suspended.values {
                context.response = HTTPError(status: 503, code: .serviceUnavailable, message: "the server is shutting down").response
                MHD_resume_connection(connection.pointer)
            }
            defer { state.suspended.removeAll() }
            return state.suspended.count
        }
        if forced > 0 { log.warning("shutdown: handlers still running were answered 503", ["count": .number(Double(forced))]) }
        // Let the answers just handed over (awaited or forced) reach their clients.
        let drain = ContinuousClock.now + .seconds(1)
        while (waited || forced > 0) && inFlight.current > 0 && ContinuousClock.now < drain {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let unreleased = upgrades.withLock { ledger -> Int in
            ledger.daemonStopped = true
            return ledger.open
        }
        if unreleased > 0 { log.warning("shutdown: upgraded sockets not handed back", ["count": .number(Double(unreleased))]) }
        stopSweeper()
        // Hand-backs and resumes that started before the flags were set finish first.
        while upgrades.current.releasing > 0 || handlers.current.resuming > 0 {
            try? await Task.sleep(for: .milliseconds(1))
        }
        MHD_stop_daemon(running.pointer)
        if quiesced >= 0 { OwnedDescriptor(quiesced).close() }
        daemon.withLock { $0 = nil }
        state.withLock { $0 = .stopped }
        // No libmicrohttpd thread calls back any more; the caller still holds `self`.
        running.retainedServer.release()
    }

    /// Records a connection about to be suspended for its handler; false when the daemon
    /// is stopping (the caller answers at once instead of suspending).
    func suspending(_ context: RequestContext, _ connection: ConnectionHandle) -> Bool {
        handlers.withLock { state in
            guard !state.daemonStopped else { return false }
            state.suspended[ObjectIdentifier(context)] = (context, connection)
            return true
        }
    }

    /// The answer refusing connection `id` its WebSocket, or nil when the sockets held stay
    /// within the limits once it is one. libmicrohttpd bounds only its own connections; an
    /// upgraded socket is the server's (decision 0125), so the census, which counts both,
    /// decides here. Beyond `connectionLimit` the server is full: 503. Beyond
    /// `perIPConnectionLimit` this client holds its share and everyone else is still served:
    /// 429, the answer a client backs off on without taking the server for down. Either
    /// closes the connection, so a refused client does not keep the slot it asked with.
    func upgradeRefusal(_ id: UInt) -> HTTPResponse? {
        guard let refusal = sockets.withLock({ $0.refusal(forUpgradeOf: id) }) else { return nil }
        let retryAfter = 5
        var error: HTTPError
        switch refusal {
        case .total:
            error = .tryAgain(status: 503, code: .serviceUnavailable,
                              message: "the server holds as many connections as it may; try again shortly", retryAfter: retryAfter)
        case .address:
            error = .rateLimited("this address holds as many connections as one address may", retryAfter: retryAfter)
        }
        error.headers.append(("Connection", "close"))
        return error.response
    }

    /// An upgraded socket was handed to a WebSocket (libmicrohttpd thread).
    func upgradeOpened() {
        upgrades.withLock { $0.open += 1 }
    }

    /// Gives an upgraded socket back to libmicrohttpd, which closes it — unless the daemon
    /// already stopped (then it closed the socket and freed `handle` itself).
    ///
    /// libmicrohttpd is never called with our lock held: it takes its own locks inside, and
    /// one of its threads may be waiting for ours (an upgrade arriving calls
    /// `upgradeOpened`), which deadlocked the event loop and that thread. The stop instead
    /// waits for hand-backs already running (`releasing`).
    func releaseUpgrade(_ release: () -> Void) {
        let proceed = upgrades.withLock { ledger -> Bool in
            ledger.open -= 1
            guard !ledger.daemonStopped else { return false }
            ledger.releasing += 1
            return true
        }
        guard proceed else { return }
        release()
        upgrades.withLock { $0.releasing -= 1 }
    }

    /// A handler's answer is ready: hand it over and resume the connection — unless
    /// shutdown already answered it (checked and done under one lock).
    /// `MHD_resume_connection` runs outside the lock (libmicrohttpd takes its own inside);
    /// the stop waits for resumes already under way (`resuming`).
    func handlerFinished(_ context: RequestContext, response: HTTPResponse, route: String) {
        let entry = handlers.withLock { state -> (context: RequestContext, connection: ConnectionHandle)? in
            guard let entry = state.suspended.removeValue(forKey: ObjectIdentifier(context)) else { return nil }
            state.resuming += 1
            return entry
        }
        guard let entry else { return }
        context.route = route
        context.response = response
        MHD_resume_connection(entry.connection.pointer)
        handlers.withLock { $0.resuming -= 1 }
    }

    // MARK: Dispatch of one request

    /// Runs the router for a complete request, always producing an answer.
    func respond(to request: HTTPRequest) async -> (HTTPResponse, route: String) {
        var request = request
        switch router.match(method: request.method, path: request.path) {
        case .notFound:
            return (HTTPError.notFound("no route for \(request.method) \(request.path)").response, "-")
        case .methodNotAllowed(let allowed):
            var error = HTTPError(status: 405, code: .methodNotAllowed,
                                  message: "\(request.method) is not allowed here; allowed: \(allowed.joined(separator: ", "))")
            error.headers = [("Allow", allowed.joined(separator: ", "))]
            return (error.response, "-")
        case .found(let route, let parameters, let handler):
            request.pathParameters = parameters
            request.route = route
            do {
                return (try await handler(request), route)
            } catch let error as any RenderableError {
                return (error.response, route)
            } catch let error as StorageError {
                // A fault of the database or the disk is a "try again", never a 500: the
                // stores' fault watches log when it starts and ends (StorageFaultWatch).
                if let answer = StorageFaultAnswer.answer(for: error) { return (answer.response, route) }
                log.error("handler failed", ["route": .string(route), "request_id": .string(request.requestID),
                                             "error": .string("StorageError")])
                return (HTTPError(status: 500, code: .internalError, message: "internal error").response, route)
            } catch {
                log.error("handler failed", ["route": .string(route), "request_id": .string(request.requestID),
                                             "error": .string(String(describing: type(of: error)))])
                return (HTTPError(status: 500, code: .internalError, message: "internal error").response, route)
            }
        }
    }
}

/// An IPv4 or IPv6 listen address.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let isIPv6: Bool

    init(host: String, port: UInt16) throws {
        let bindHost = host == "localhost" ? "127.0.0.1" : host
        guard let numeric = NumericSocketAddress(host: bindHost, port: port) else {
            throw ServerStartError("--host must be an IPv4 or IPv6 address, got \(host)")
        }
        storage = numeric.storage
        isIPv6 = numeric.isIPv6
    }

    /// The size of the sockaddr this address is (for `bind`).
    var length: socklen_t {
        socklen_t(isIPv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        var copy = storage
        return withUnsafePointer(to: &copy) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
    }

    /// The textual address of a peer.
    static func describe(_ address: UnsafePointer<sockaddr>?) -> String {
        guard let address else { return "" }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            var inet = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            inet_ntop(AF_INET, &inet, &buffer, socklen_t(buffer.count))
        case AF_INET6:
            var inet6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            inet_ntop(AF_INET6, &inet6, &buffer, socklen_t(buffer.count))
        default: return ""
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
