import Foundation
import PortariaCore
import PortariaWebSocket

#if canImport(Glibc)

/// Every open server WebSocket of the process: routes upgrade through the hub, which
/// can broadcast to a topic in one hop to the event loop and closes everything with
/// 1001 when the server stops.
public final class WebSocketHub: @unchecked Sendable {
    // Thread confinement: `members`, `topics` and `acceptsNew` are only touched on
    // `loop`'s thread (every method hops there); the rest is immutable. Connections live
    // on the same loop, so the hub and its sockets never need a lock between them.

    public let loop: EventLoop
    public let configuration: WebSocketConfiguration
    let log: Log
    private var members: [ObjectIdentifier: Member] = [:]
    private var topics: [String: [ObjectIdentifier: WebSocketConnection]] = [:]
    private var acceptsNew = true

    private struct Member {
        let connection: WebSocketConnection
        let topics: Set<String>
    }

    public init(loop: EventLoop = .shared, configuration: WebSocketConfiguration = .server, log: Log = .shared) {
        self.loop = loop
        self.configuration = configuration
        self.log = log
    }

    /// Answers a WebSocket opening handshake: 101 with `Sec-WebSocket-Accept`, after which
    /// the socket joins the hub under `topics`. Throws 400/426 for a bad handshake.
    /// - Parameters:
    ///   - handlers: the route's message handlers (called on the loop thread).
    ///   - configuration: limits of this route's sockets when they differ from the hub's
    ///     (the bench echo route takes the 16 MiB messages of a conformance suite).
    public func upgrade(_ request: HTTPRequest, topics: Set<String> = [],
                        handlers: WebSocketConnection.Handlers = .init(),
                        configuration: WebSocketConfiguration? = nil) throws -> HTTPResponse {
        let accept = try WebSocketRequest.acceptValue(for: request)
        var response = HTTPResponse(status: 101, headers: [("Upgrade", "websocket"),
                                                           ("Sec-WebSocket-Accept", accept)])
        response.upgrade = HubUpgrade(hub: self, topics: topics, handlers: handlers,
                                      configuration: configuration ?? self.configuration)
        return response
    }

    /// Sends `text` to every socket of `topic`; returns how many were sent to. Sockets too
    /// slow to keep up are dropped (1008) rather than buffered without bound.
    @discardableResult
    public func broadcast(text: String, topic: String) async -> Int {
        // Framed once: every idle socket writes the same bytes (servers do not mask).
        let frame = ServerFrame(text: Array(text.utf8))
        return await loop.submit { [self] in
            // A snapshot: a dropped slow consumer leaves `topics` while we iterate.
            let recipients = Array(topics[topic]?.values ?? [:].values)
            for connection in recipients { connection.sendOnLoop(frame: frame) }
            return recipients.count
        }
    }

    /// Sends `text` to the given sockets of this hub (those not open any more are skipped).
    @discardableResult
    public func broadcast(text: String, to connections: [WebSocketConnection]) async -> Int {
        let frame = ServerFrame(text: Array(text.utf8))
        return await loop.submit { [self] in
            var sent = 0
            for connection in connections where members[ObjectIdentifier(connection)] != nil && connection.isOpenOnLoop {
                connection.sendOnLoop(frame: frame)
                sent += 1
            }
            return sent
        }
    }

    /// Open sockets, all topics together.
    public func count() async -> Int { await loop.submit { [self] in members.count } }

    /// Open sockets of one topic.
    public func count(topic: String) async -> Int { await loop.submit { [self] in topics[topic]?.count ?? 0 } }

    /// Refuses new sockets, closes the open ones with 1001 and waits for their close
    /// handshakes (at most `timeout`, then drops the rest). Call before the HTTP server
    /// stops: libmicrohttpd must get every upgraded socket back first.
    public func shutdown(timeout: Duration = .seconds(2)) async {
        let open = await loop.submit { [self] in
            acceptsNew = false
            for member in Array(members.values) {
                member.connection.closeOnLoop(code: .goingAway, reason: "server shutting down")
            }
            return members.count
        }
        let deadline = ContinuousClock.now + timeout
        var remaining = open
        while remaining > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
            remaining = await count()
        }
        if remaining > 0 {
            log.warning("websocket shutdown: peers did not finish the close handshake", ["count": .number(Double(remaining))])
            await loop.submit { [self] in
                for member in Array(members.values) { member.connection.abortOnLoop(code: .goingAway, reason: "server shutting down") }
            }
        }
    }

    // MARK: Loop thread

    fileprivate func adopt(socket: Int32, bufferedInput: [UInt8], release: @escaping @Sendable () -> Void,
                           topics: Set<String>, handlers: WebSocketConnection.Handlers,
                           configuration: WebSocketConfiguration) {
        var wrapped = handlers
        wrapped.onClose = { [self] connection, code, reason in
            leave(connection)
            logClose(connection, code, reason)
            handlers.onClose(connection, code, reason)
        }
        let connection = WebSocketConnection.server(socket: socket, bufferedInput: bufferedInput,
                                                    configuration: configuration, loop: loop,
                                                    handlers: wrapped, release: release)
        guard acceptsNew else {
            connection.abortOnLoop(code: .goingAway, reason: "server shutting down")
            return
        }
        let id = ObjectIdentifier(connection)
        members[id] = Member(connection: connection, topics: topics)
        for topic in topics { self.topics[topic, default: [:]][id] = connection }
        connection.startOnLoop()
    }

    /// Ordinary ends are not worth a line at ten thousand sockets; failures are.
    private func logClose(_ connection: WebSocketConnection, _ code: WebSocketCloseCode, _ reason: String) {
        let fields: [String: JSONValue] = ["socket": .number(Double(connection.id)),
                                           "code": .number(Double(code.rawValue)), "reason": .string(reason)]
        switch code {
        case .normal, .goingAway, .noStatus: log.debug("websocket closed", fields)
        case .abnormal: log.debug("websocket dropped", fields)
        case .policyViolation, .tryAgainLater: log.warning("websocket peer too slow, dropped", fields)
        default: log.info("websocket failed", fields)
        }
    }

    private func leave(_ connection: WebSocketConnection) {
        let id = ObjectIdentifier(connection)
        guard let member = members.removeValue(forKey: id) else { return }
        for topic in member.topics {
            topics[topic]?[id] = nil
            if topics[topic]?.isEmpty == true { topics[topic] = nil }
        }
    }
}

/// Hands an upgraded libmicrohttpd socket to the hub's event loop.
private struct HubUpgrade: WebSocketUpgrade {
    let hub: WebSocketHub
    let topics: Set<String>
    let handlers: WebSocketConnection.Handlers
    let configuration: WebSocketConfiguration

    func upgraded(socket: Int32, bufferedInput: [UInt8], close: @escaping @Sendable () -> Void) {
        // Called on a libmicrohttpd thread: everything else happens on the loop. `close`
        // ends the socket: the HTTP server closes the descriptor it handed over.
        let hub = hub, topics = topics, handlers = handlers, configuration = configuration
        hub.loop.execute {
            hub.adopt(socket: socket, bufferedInput: bufferedInput, release: close,
                      topics: topics, handlers: handlers, configuration: configuration)
        }
    }
}
#else

/// Development builds on macOS: the WebSocket event loop is epoll-only, so WebSocket
/// routes answer 501 there and everything else of the server works.
public final class WebSocketHub: Sendable {
    public init(log: Log = .shared) {}

    public func upgrade(_ request: HTTPRequest, topics: Set<String> = []) throws -> HTTPResponse {
        throw HTTPError(status: 501, code: .notImplemented,
                        message: "WebSockets need the Linux event loop")
    }

    @discardableResult
    public func broadcast(text: String, topic: String) async -> Int { 0 }
    public func count() async -> Int { 0 }
    public func count(topic: String) async -> Int { 0 }
    public func shutdown(timeout: Duration = .seconds(2)) async {}
}
#endif
