import CNghttp2
import COpenSSL
import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#endif

/// HTTP/2 client for APNs, FCM and Web Push on libnghttp2 over OpenSSL (decision 0113).
///
/// One dedicated thread does all the I/O (`poll`); callers hand it requests through a
/// locked queue and wake it through a pipe, so a request is framed and written as soon as
/// it is handed over. Each origin gets one connection: up to the smaller of the peer's
/// SETTINGS_MAX_CONCURRENT_STREAMS and `maxConcurrentStreams` requests ride it at once,
/// the rest wait here in order — load never opens a second connection.
///
/// A request whose HEADERS never left, or that the peer refused (REFUSED_STREAM, which is
/// how nghttp2 closes the streams above a GOAWAY's last stream id), goes again on a new
/// connection; one the peer may have seen is never sent twice: when its connection dies
/// it fails as a transport error, and the provider's outbox decides. An idle connection
/// is checked with PING; a PING without answer closes it.
///
/// A new connection's host name is looked up on another thread (`HostResolver`), so a
/// slow DNS answer holds up only the requests for that origin; the connect tries each
/// address the name has, IPv6 and IPv4 taking turns, moving on when one refuses or does
/// not answer within `connectTimeout`. A connect still unanswered after `attemptDelay`
/// races the next address beside it, and the first to connect is kept (Happy Eyeballs,
/// RFC 8305): a dead address, or an IPv6 path that drops packets, costs a ring a quarter
/// of a second, not the connect timeout.
public final class HTTP2Client: @unchecked Sendable {
    // Touched only by the loop thread: `connections`, `racing`, `draining`, `waiting`,
    // `readBuffer`, `resolving`, `failedAddresses`. Locked: `incoming`, `stopped`, `resolved`.
    private let context: TLSContext
    private let wakePipe: WakePipe
    private let maxConcurrentStreams: Int
    private let pingInterval: Duration
    private let pingTimeout: Duration
    private let connectTimeout: Duration
    let attemptDelay: Duration
    private let resolver: any HostResolver
    /// Origins whose name is being looked up (loop thread), and the answers the lookups
    /// left for the loop (locked).
    private var resolving: Set<Origin> = []
    private let resolved = Locked<[(Origin, Result<[ResolvedAddress], any Error>)]>([])
    /// When each address last failed to connect: a new connection tries the others first,
    /// so a dead address costs one connect timeout, not one per connection.
    var failedAddresses: [String: ContinuousClock.Instant] = [:]
    private let incoming = Locked<[HTTP2Exchange]>([])
    private let stopped = Locked(false)
    private var loopThread = pthread_t()
    private let threadName: String
    private let log: Log
    /// The connection each origin's new streams go on.
    var connections: [Origin: HTTP2Connection] = [:]
    /// Earlier connects to other addresses of an origin whose `connections` entry is a
    /// later one, still racing it: the first of them all to connect is kept.
    var racing: [HTTP2Connection] = []
    /// Connections after GOAWAY, finishing the streams they still carry.
    private var draining: [HTTP2Connection] = []
    /// Requests waiting for a stream, per origin, oldest first.
    private var waiting: [Origin: Deque] = [:]
    private var nextExpiryScan = ContinuousClock.now
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
    /// Connections started so far, one per address tried (tests and benchmarks: proves
    /// reuse).
    public let connectionsOpened = Locked(0)
    /// The most streams one connection has had open at once (tests: the limit held).
    public let peakStreams = Locked(0)
    private var peakSeen = 0

    /// A request goes on at most this many connections (GOAWAY or a refusal each time).
    static let maxAttempts = 3

    /// - Parameters:
    ///   - caFile: a CA bundle to trust instead of the system's (tests use a local CA).
    ///   - maxConcurrentStreams: requests in flight on one connection; more wait in this
    ///     client's queue. The peer's SETTINGS_MAX_CONCURRENT_STREAMS lowers it further.
    ///   - pingInterval: an idle connection is checked with PING this often.
    ///   - pingTimeout: a PING unanswered this long means the peer is gone: the connection
    ///     closes and the next request opens a new one.
    ///   - connectTimeout: how long one address may take to accept the TCP connection
    ///     (and then to finish the TLS handshake) before it is given up.
    ///   - attemptDelay: how long a connect may go unanswered before the name's next
    ///     address is tried beside it (RFC 8305 recommends 250 ms).
    ///   - resolver: turns host names into addresses (tests map names to local servers).
    public init(caFile: String? = nil, maxConcurrentStreams: Int = 100, pingInterval: Duration = .seconds(60),
                pingTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(5),
                attemptDelay: Duration = .milliseconds(250), resolver: any HostResolver = SystemHostResolver(), label: String = "http2", log: Log = .shared) throws {
        context = try TLSContext(caFile: caFile)
        wakePipe = try WakePipe()
        self.maxConcurrentStreams = max(1, maxConcurrentStreams)
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.connectTimeout = connectTimeout
        self.attemptDelay = attemptDelay
        self.resolver = resolver
        self.log = log
        threadName = String("portaria.\(label)".utf8.prefix(15)) ?? "portaria.http2"
        // A joinable pthread, not a Foundation `Thread`: `shutdown()` must wait for the
        // thread's exit, so OpenSSL's thread-exit destructor (its per-thread DRBGs) has
        // run before `exit()` (decision 0053).
        let opaque = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&loopThread, nil, { opaque in
            let client = Unmanaged<HTTP2Client>.fromOpaque(opaque!).takeRetainedValue()
            Thread.current.name = client.threadName
            client.run()
            return nil
        }, opaque)
        guard status == 0 else {
            Unmanaged<HTTP2Client>.fromOpaque(opaque).release()
            throw OutboundHTTPError.transport("cannot start the HTTP/2 loop thread: \(String(cString: strerror(status)))")
        }
    }

    deinit { readBuffer.deallocate() }

    /// Sends one request (an `https://` URL) over its origin's connection.
    public func send(_ request: OutboundRequest) async throws -> OutboundResponse {
        try await withUnsafeThrowingContinuation { continuation in
            hand(request) { continuation.resume(with: $0) }
        }
    }

    /// Hands one request to the I/O thread without suspending or blocking (a lock and,
    /// for the first of a batch, one byte into the wake pipe) and returns what waits for
    /// its answer: the thread that committed a gate POST starts its ring with this.
    public func start(_ request: OutboundRequest) -> PendingResponse {
        let pending = PendingResponse()
        hand(request, completion: pending.fulfil)
        return pending
    }

    /// `completion` runs once: on the I/O thread with the answer, or here when the
    /// request is refused at once.
    private func hand(_ request: OutboundRequest, completion: @escaping (Result<OutboundResponse, any Error>) -> Void) {
        guard let (origin, path) = Origin.split(request.url) else {
            return completion(.failure(OutboundHTTPError.transport("not an https URL: \(request.url)")))
        }
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(max(1, Int(request.timeout * 1000))))
        let exchange = HTTP2Exchange(request: request, origin: origin, path: path, deadline: deadline, completion: completion)
        let wake = incoming.withLock { pending -> Bool? in
            guard !stopped.current else { return nil }
            pending.append(exchange)
            // One wake-up per batch: the loop takes the whole queue at once.
            return pending.count == 1
        }
        switch wake {
        case nil: exchange.finish(.failure(OutboundHTTPError.transport("HTTP/2 client is shut down")))
        case true?: wakePipe.wake()
        case false?: break
        }
    }

    /// Fails what is in flight, stops the loop thread and waits until it has exited.
    public func shutdown() {
        let already = stopped.withLock { value -> Bool in
            defer { value = true }
            return value
        }
        guard !already else { return }
        wakePipe.wake()
        let status = pthread_join(loopThread, nil)
        precondition(status == 0, "pthread_join of the HTTP/2 loop thread: \(status)")
    }

    // MARK: the loop thread

    private func run() {
        var descriptors: [pollfd] = []
        var polled: [HTTP2Connection] = []
        // The pipe is read only after poll said it is readable: no empty read per turn.
        var woken = true
        while true {
            if woken { wakePipe.drain() }
            let (taken, stop) = incoming.withLock { pending -> ([HTTP2Exchange], Bool) in
                defer { pending.removeAll(keepingCapacity: true) }
                return (pending, stopped.current)
            }
            if stop {
                stopAll(taken)
                return
            }
            for exchange in taken { waiting[exchange.origin, default: Deque()].append(exchange) }
            for (origin, answer) in resolved.withLock({ answers in defer { answers.removeAll() }; return answers }) {
                resolving.remove(origin)
                open(origin, answer)
            }
            let now = ContinuousClock.now
            expire(now)
            admit()
            keepAlive(now)
            for connection in Array(connections.values) + draining where connection.state == .open {
                if !connection.flush() { lost(connection) }
            }
            descriptors.removeAll(keepingCapacity: true)
            polled.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0))
            for connection in Array(connections.values) + racing + draining {
                var events = Int16(POLLIN)
                switch connection.state {
                case .connecting: events = Int16(POLLOUT)
                case .handshaking: events = connection.handshakeWantsWrite ? Int16(POLLOUT) : Int16(POLLIN)
                case .open: if connection.wantsWrite { events |= Int16(POLLOUT) }
                case .closed: continue
                }
                descriptors.append(pollfd(fd: connection.socket.descriptor, events: events, revents: 0))
                polled.append(connection)
            }
            // Deadlines are looked at every 100 ms while anything waits or flies; PINGs
            // at least every second.
            let busy = !waiting.isEmpty || connections.values.contains { !$0.streams.isEmpty || $0.state != .open }
                || !racing.isEmpty || !draining.isEmpty
            _ = poll(&descriptors, nfds_t(descriptors.count), busy ? 100 : 1000)
            woken = descriptors[0].revents != 0
            for (index, connection) in polled.enumerated() {
                let revents = descriptors[index + 1].revents
                guard revents != 0 else { continue }
                progress(connection, readable: revents & Int16(POLLIN | POLLHUP | POLLERR) != 0)
            }
        }
    }

    /// Moves one connection on after its socket became ready.
    private func progress(_ connection: HTTP2Connection, readable: Bool) {
        switch connection.state {
        case .connecting:
            let error = connection.socket.connectError()
            guard error == 0 else {
                return connectFailed(connection, "connect to \(connection.origin.authority) at \(connection.address): \(String(cString: strerror(error)))")
            }
            guard won(connection) else { return }
            connection.state = .handshaking
            connection.stepStartedAt = .now
            handshake(connection)
        case .handshaking:
            handshake(connection)
        case .open:
            if readable && !connection.receive(readBuffer) { return lost(connection) }
            if !connection.flush() { return lost(connection) }
            requeue(connection)
            if connection.draining && connection.finished { retire(connection) }
        case .closed:
            break
        }
    }

    private func handshake(_ connection: HTTP2Connection) {
        do {
            switch try connection.tls.handshake() {
            case .wantRead: connection.handshakeWantsWrite = false
            case .wantWrite: connection.handshakeWantsWrite = true
            case .done:
                try connection.start()
                // The handshake's last read may have taken the peer's SETTINGS into
                // OpenSSL's buffer: the socket will not poll readable for them.
                if !connection.receive(readBuffer) || !connection.flush() { return lost(connection) }
                admit()
                if !connection.flush() { lost(connection) }
            }
        } catch {
            unreachable(connection, "\(error)")
        }
    }

    /// Starts waiting requests on their origin's connection, opening it when there is none.
    private func admit() {
        for origin in Array(waiting.keys) {
            guard var queue = waiting[origin] else { continue }
            guard let connection = connections[origin] else {
                lookUp(origin)
                continue
            }
            guard connection.canStartStreams else { continue }
            let limit = connection.streamLimit(maxConcurrentStreams)
            while connection.streams.count < limit, let exchange = queue.popFirst() {
                do {
                    try connection.submit(exchange)
                } catch {
                    exchange.finish(.failure(error))
                }
            }
            waiting[origin] = queue.isEmpty ? nil : queue
            if connection.streams.count > peakSeen {
                peakSeen = connection.streams.count
                peakStreams.withLock { $0 = peakSeen }
            }
        }
    }

    /// Looks `origin`'s host up on another thread, once at a time; the answer comes back
    /// through `resolved` and a wake-up.
    private func lookUp(_ origin: Origin) {
        guard resolving.insert(origin).inserted else { return }
        let resolver = resolver
        let resolved = resolved
        let wakePipe = wakePipe
        // A thread of its own: `getaddrinfo` may block for tens of seconds, and a lookup
        // happens once per connection, so there are never many at once (one per origin).
        Thread {
            let answer = Result { try resolver.addresses(host: origin.host, port: origin.port) }
            resolved.withLock { $0.append((origin, answer)) }
            wakePipe.wake()
        }.start()
    }

    /// Opens `origin`'s connection on the first of `addresses` that takes a connect, or
    /// fails what waits for it when none does (or the lookup failed).
    /// - Parameter walking: the next addresses after one that failed; they are tried even
    ///   when nothing waits any more, so the connection is up for the next request.
    func open(_ origin: Origin, _ answer: Result<[ResolvedAddress], any Error>,
                      after previous: String? = nil, walking: Bool = false) {
        guard walking || waiting[origin] != nil, connections[origin] == nil else { return }
        var lastError: any Error = OutboundHTTPError.transport(previous ?? "\(origin.host) has no address")
        switch answer {
        case .failure(let error):
            lastError = error
        case .success(let addresses):
            var untried = walking ? addresses[...] : inTryingOrder(addresses)[...]
            while let address = untried.popFirst() {
                do {
                    let opened = try HTTP2Connection(origin: origin, address: address, untried: untried, context: context)
                    connectionsOpened.withLock { $0 += 1 }
                    connections[origin] = opened
                    return
                } catch {
                    lastError = error
                }
            }
        }
        // An earlier connect still racing carries on alone.
        if resumeRacing(origin) { return }
        waiting[origin]?.failAll(lastError)
        waiting[origin] = nil
    }

    /// The connect to one address failed or timed out: the next address, if the name has
    /// one, else an earlier connect still racing, else everything waiting for the origin
    /// fails. A connect that was only racing a later one just ends.
    private func connectFailed(_ connection: HTTP2Connection, _ reason: String) {
        let now = ContinuousClock.now
        if failedAddresses.count >= 1024 { failedAddresses = failedAddresses.filter { $0.value.duration(to: now) < .seconds(600) } }
        failedAddresses[connection.address.description] = now
        if let index = racing.firstIndex(where: { $0 === connection }) {
            racing.remove(at: index)
            return retire(connection)
        }
        // A connect that raced the next address has had every later one tried after it.
        let nothingLeft = connection.untried.isEmpty || connection.racedNext
        if nothingLeft, connections[connection.origin] === connection, racing.contains(where: { $0.origin == connection.origin }) {
            connections[connection.origin] = nil
            retire(connection)
            _ = resumeRacing(connection.origin)
            return
        }
        guard !nothingLeft, connections[connection.origin] === connection else {
            return unreachable(connection, reason)
        }
        log.warning("push service address unreachable, trying the next", [
            "origin": .string(connection.origin.authority), "address": .string(connection.address.description),
            "error": .string(reason)])
        retire(connection)
        open(connection.origin, .success(Array(connection.untried)), after: reason, walking: true)
    }

    /// Requests a connection handed back (refused, or never sent) wait again, first in
    /// line; GOAWAY moves the connection aside so the next admission opens a new one.
    private func requeue(_ connection: HTTP2Connection) {
        if connection.draining, connections[connection.origin] === connection {
            connections[connection.origin] = nil
            draining.append(connection)
        }
        guard !connection.retryable.isEmpty else { return }
        var queue = waiting[connection.origin] ?? Deque()
        for exchange in connection.retryable.reversed() {
            if exchange.attempts >= Self.maxAttempts {
                exchange.finish(.failure(OutboundHTTPError.transport("refused by \(connection.origin.authority) \(exchange.attempts) times")))
            } else {
                queue.prepend(exchange)
            }
        }
        connection.retryable.removeAll()
        if !queue.isEmpty { waiting[connection.origin] = queue }
    }

    /// The connection died (peer gone, reset, protocol error): streams the peer may have
    /// seen fail, the others wait for the next connection.
    private func lost(_ connection: HTTP2Connection) {
        let reason = connection.failure ?? "connection lost"
        for exchange in connection.streams.values {
            if exchange.headersSent {
                exchange.finish(.failure(OutboundHTTPError.transport("\(connection.origin.authority): \(reason)")))
            } else {
                connection.retryable.append(exchange)
            }
        }
        connection.streams.removeAll()
        connection.draining = true
        requeue(connection)
        retire(connection)
    }

    /// Connecting or the TLS handshake failed: everything waiting for that origin fails
    /// (a new attempt starts with the next request, not in a loop).
    private func unreachable(_ connection: HTTP2Connection, _ reason: String) {
        let error = OutboundHTTPError.transport(reason)
        for exchange in connection.streams.values { exchange.finish(.failure(error)) }
        connection.streams.removeAll()
        if connections[connection.origin] === connection {
            connections[connection.origin] = nil
            waiting[connection.origin]?.failAll(error)
            waiting[connection.origin] = nil
        }
        retire(connection)
    }

    private func retire(_ connection: HTTP2Connection) {
        connection.close()
        if connections[connection.origin] === connection { connections[connection.origin] = nil }
        draining.removeAll { $0 === connection }
    }

    /// Fails requests whose timeout passed (waiting: never sent; in flight: RST_STREAM).
    private func expire(_ now: ContinuousClock.Instant) {
        guard now >= nextExpiryScan else { return }
        nextExpiryScan = now.advanced(by: .milliseconds(100))
        for origin in Array(waiting.keys) {
            waiting[origin]?.removeAll { exchange in
                guard exchange.deadline <= now else { return false }
                exchange.finish(.failure(OutboundHTTPError.transport("timed out waiting for a stream")))
                return true
            }
            if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
        }
        // A connect, and then a TLS handshake, each get `connectTimeout`: a peer that takes
        // the TCP connection but never finishes TLS (a balancer without a backend) would
        // otherwise hold the origin's one connection slot for ever.
        for connection in Array(connections.values) + racing where connection.state == .connecting || connection.state == .handshaking {
            let step = connection.state == .connecting ? "connect" : "TLS handshake"
            if connection.stepStartedAt.duration(to: now) >= connectTimeout {
                connectFailed(connection, "\(step) with \(connection.origin.authority) at \(connection.address): no answer in \(connectTimeout)")
            }
        }
        raceSlowConnects(now)
        for connection in Array(connections.values) + draining {
            var timedOut = false
            for (streamID, exchange) in connection.streams where exchange.deadline <= now {
                connection.cancel(streamID)
                exchange.finish(.failure(OutboundHTTPError.transport("timed out after \(exchange.request.timeout) s")))
                timedOut = true
            }
            // A peer that stopped answering is found within `pingTimeout`, not only once
            // the connection has been idle for `pingInterval`.
            if timedOut, connection.state == .open, connection.pingSentAt == nil { connection.ping() }
        }
    }

    /// PING on a connection idle for `pingInterval`; one without an answer in
    /// `pingTimeout` means the peer is gone.
    private func keepAlive(_ now: ContinuousClock.Instant) {
        for connection in Array(connections.values) + draining where connection.state == .open {
            if let sent = connection.pingSentAt {
                if sent.duration(to: now) > pingTimeout {
                    connection.failure = "no answer to PING"
                    lost(connection)
                }
            } else if connection.streams.isEmpty, connection.lastActivity.duration(to: now) >= pingInterval {
                connection.ping()
                connection.lastActivity = now
            }
        }
    }

    private func stopAll(_ taken: [HTTP2Exchange]) {
        let error = OutboundHTTPError.transport("HTTP/2 client is shut down")
        for exchange in taken { exchange.finish(.failure(error)) }
        for var queue in waiting.values { queue.failAll(error) }
        waiting.removeAll()
        for connection in Array(connections.values) + racing + draining {
            for exchange in connection.streams.values { exchange.finish(.failure(error)) }
            connection.streams.removeAll()
            connection.close()
        }
        connections.removeAll()
        racing.removeAll()
        draining.removeAll()
    }
}
