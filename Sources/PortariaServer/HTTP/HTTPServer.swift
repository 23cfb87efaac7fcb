import CMicroHTTPD
import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#endif

/// Limits and sizing of the HTTP listener.
public struct HTTPServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    public var port: UInt16 = 8080
    /// One epoll thread per core is what libmicrohttpd's thread pool is built for.
    public var threadPoolSize: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
    public var connectionLimit: Int = 20_000
    public var perIPConnectionLimit: Int = 0
    /// Idle connections (including slowloris trickles) are closed after this many seconds.
    public var connectionTimeoutSeconds: Int = 30
    /// Per-connection memory for the request line and headers; bigger headers get 431.
    public var headerMemoryLimit: Int = 16 * 1024
    public var maxBodySize: Int = 1 << 20
    /// Larger limits for particular routes (uploads), by method and path; nil keeps
    /// `maxBodySize`. Decided from the request line, before any body byte is read.
    public var bodyLimitOverride: @Sendable (_ method: String, _ path: String) -> Int? = { _, _ in nil }
    public var listenBacklog: Int = 4096
    /// Peers whose `X-Forwarded-For` names the client (`--trusted-proxies`).
    public var trustedProxies: TrustedProxies = .none
    public init() {}
}

/// The HTTP/1.1 listener: GNU libmicrohttpd's epoll thread pool parses HTTP; each
/// complete request is handed to an async Swift handler while its connection is
/// suspended, so no libmicrohttpd thread ever waits for a handler or for storage.
public final class HTTPServer: @unchecked Sendable {
    public let configuration: HTTPServerConfiguration
    let router: Router
    let log: Log
    /// Requests accepted and not yet answered (graceful shutdown waits for them).
    let inFlight = Locked(0)
    /// Connections suspended while their handler runs, and whether the daemon is stopping.
    /// libmicrohttpd aborts the process if it is stopped with a connection suspended, and
    /// a resume after the stop would touch freed memory: both are decided under this lock.
    let handlers = Locked(HandlerState())
    struct HandlerState {
        var suspended: [ObjectIdentifier: (context: RequestContext, connection: ConnectionHandle)] = [:]
        var daemonStopped = false
        var running: Int { suspended.count }
    }
    private var daemon: OpaquePointer?
    private let state = Locked<State>(.idle)
    public private(set) var port: UInt16 = 0

    private enum State { case idle, running, draining, stopped }

    public init(router: Router, configuration: HTTPServerConfiguration = .init(), log: Log = .shared) {
        self.router = router
        self.configuration = configuration
        self.log = log
    }

    deinit {
        if let daemon { MHD_stop_daemon(daemon) }
    }

    /// Binds and starts serving; throws a readable error when the address is unusable.
    public func start() throws {
        let address = try SocketAddress(host: configuration.host, port: configuration.port)
        var flags = UInt32(MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_ALLOW_UPGRADE.rawValue | MHD_USE_TURBO.rawValue)
        if address.isIPv6 { flags |= UInt32(MHD_USE_IPv6.rawValue) }
        let started: OpaquePointer? = address.withSockaddr { sockaddr in
            var config = portaria_mhd_config()
            config.flags = flags
            config.bind_address = sockaddr
            config.thread_pool_size = UInt32(configuration.threadPoolSize)
            config.connection_limit = UInt32(configuration.connectionLimit)
            config.per_ip_connection_limit = UInt32(configuration.perIPConnectionLimit)
            config.connection_timeout_seconds = UInt32(configuration.connectionTimeoutSeconds)
            config.connection_memory_limit = configuration.headerMemoryLimit
            config.listen_backlog = UInt32(configuration.listenBacklog)
            config.access_handler = portariaAccessHandler
            config.access_handler_cls = Unmanaged.passUnretained(self).toOpaque()
            config.completed_handler = portariaRequestCompleted
            config.completed_handler_cls = Unmanaged.passUnretained(self).toOpaque()
            config.log_sink = portariaLibraryLog
            return withUnsafePointer(to: &config) { portaria_mhd_start($0) }
        }
        guard let started else {
            throw ServerStartError("cannot listen on \(configuration.host):\(configuration.port) (address in use or not available)")
        }
        daemon = started
        port = portaria_mhd_bound_port(started)
        state.withLock { $0 = .running }
    }

    /// Stops accepting, lets in-flight requests finish (up to `gracePeriod`; handlers that
    /// are still running up to `handlerGrace` more), then closes every socket.
    public func shutdown(gracePeriod: Duration = .seconds(10), handlerGrace: Duration = .seconds(30)) async {
        let proceed = state.withLock { state -> Bool in
            guard state == .running else { return false }
            state = .draining
            return true
        }
        guard proceed, let daemon else { return }
        _ = MHD_quiesce_daemon(daemon)
        let deadline = ContinuousClock.now + gracePeriod
        while inFlight.current > 0 && ContinuousClock.now < deadline {
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
        MHD_stop_daemon(daemon)
        self.daemon = nil
        state.withLock { $0 = .stopped }
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

    /// A handler's answer is ready: hand it over and resume the connection — unless
    /// shutdown already answered it (checked and done under one lock).
    func handlerFinished(_ context: RequestContext, response: HTTPResponse, route: String) {
        handlers.withLock { state in
            guard let entry = state.suspended.removeValue(forKey: ObjectIdentifier(context)) else { return }
            context.route = route
            context.response = response
            MHD_resume_connection(entry.connection.pointer)
        }
    }

    public var openConnections: Int {
        guard let daemon else { return 0 }
        return Int(portaria_mhd_current_connections(daemon))
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
            } catch let error as HTTPError {
                return (error.response, route)
            } catch {
                log.error("handler failed", ["route": .string(route), "request_id": .string(request.requestID),
                                             "error": .string(String(describing: type(of: error)))])
                return (HTTPError(status: 500, code: .internalError, message: "internal error").response, route)
            }
        }
    }
}

/// A start failure worth one readable line on the terminal.
public struct ServerStartError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// An IPv4 or IPv6 listen address.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let isIPv6: Bool

    init(host: String, port: UInt16) throws {
        var storage = sockaddr_storage()
        let bindHost = host == "localhost" ? "127.0.0.1" : host
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        if inet_pton(AF_INET, bindHost, &ipv4) == 1 {
            withUnsafeMutableBytes(of: &storage) { raw in
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                address.pointee.sin_family = sa_family_t(AF_INET)
                address.pointee.sin_port = port.bigEndian
                address.pointee.sin_addr = ipv4
            }
            isIPv6 = false
        } else if inet_pton(AF_INET6, bindHost, &ipv6) == 1 {
            withUnsafeMutableBytes(of: &storage) { raw in
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                address.pointee.sin6_family = sa_family_t(AF_INET6)
                address.pointee.sin6_port = port.bigEndian
                address.pointee.sin6_addr = ipv6
            }
            isIPv6 = true
        } else {
            throw ServerStartError("--host must be an IPv4 or IPv6 address, got \(host)")
        }
        self.storage = storage
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
