#if canImport(Glibc)
import Foundation
import Glibc
import CWslay

/// Why a client connection could not be opened.
public enum WebSocketClientError: Error, Sendable, CustomStringConvertible, Equatable {
    case invalidURL(String)
    case cannotResolve(String)
    case connectFailed(errno: Int32)
    /// The server answered something other than a valid 101 (status 0: not HTTP at all).
    case handshakeRejected(status: Int, body: String)
    case invalidAccept
    case timedOut
    case closed

    public var description: String {
        switch self {
        case .invalidURL(let url): return "invalid WebSocket URL \(url)"
        case .cannotResolve(let host): return "cannot resolve \(host)"
        case .connectFailed(let number): return "connect failed: \(String(cString: strerror(number)))"
        case .handshakeRejected(let status, let body): return "handshake rejected with \(status): \(body)"
        case .invalidAccept: return "the server's Sec-WebSocket-Accept does not match the key"
        case .timedOut: return "the WebSocket handshake timed out"
        case .closed: return "the connection closed during the handshake"
        }
    }
}

/// The Linux WebSocket client: a TCP socket, an HTTP/1.1 upgrade written and checked
/// here, then the same wslay framing as the server (client mode, masked frames) on a
/// shared ``EventLoop``. Thousands of connections share one loop thread.
public enum WebSocketClient {
    /// Connects and returns a connection whose incoming messages arrive on an `AsyncStream`.
    /// - Parameters:
    ///   - url: `ws://host:port/path?query` (`http://` is accepted as a synonym).
    ///   - headers: extra request headers, e.g. `Authorization`.
    public static func connect(url: String, headers: [(String, String)] = [],
                               configuration: WebSocketConfiguration = .client,
                               loop: EventLoop = .shared,
                               timeout: Duration = .seconds(10)) async throws -> WebSocketClientConnection {
        let (stream, continuation) = AsyncStream<WebSocketEvent>.makeStream()
        let handlers = WebSocketConnection.Handlers(
            onText: { _, text in continuation.yield(.text(text)) },
            onBinary: { _, bytes in continuation.yield(.binary(bytes)) },
            onClose: { _, code, reason in
                continuation.yield(.closed(code: code, reason: reason))
                continuation.finish()
            })
        let connection = try await connect(url: url, headers: headers, configuration: configuration,
                                           loop: loop, timeout: timeout, handlers: handlers)
        return WebSocketClientConnection(connection: connection, events: stream)
    }

    /// Connects with handlers called on the loop thread: the cheapest form, for programs
    /// that hold thousands of sockets (the benchmark).
    /// - Parameter sourceAddress: a numeric local address to connect from. One source
    ///   address reaches one server port through at most the kernel's ephemeral port range
    ///   (about 28,000 ports): a load generator beyond that spreads its sockets over
    ///   several loopback addresses (127.0.0.2, …; all of 127/8 is on `lo`).
    public static func connect(url: String, headers: [(String, String)] = [],
                               configuration: WebSocketConfiguration = .client,
                               loop: EventLoop = .shared, timeout: Duration = .seconds(10),
                               sourceAddress: String? = nil,
                               handlers: WebSocketConnection.Handlers) async throws -> WebSocketConnection {
        let target = try Target(url)
        let address = try target.resolve()
        let descriptor = socket(Int32(address.ss_family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw WebSocketClientError.connectFailed(errno: errno) }
        if let sourceAddress {
            guard let local = NumericSocketAddress(host: sourceAddress, port: 0),
                  local.storage.ss_family == address.ss_family else {
                Glibc.close(descriptor)
                throw WebSocketClientError.invalidURL("source address \(sourceAddress)")
            }
            // The port is picked at connect(2), for the whole four-tuple, not at bind(2).
            var one: Int32 = 1
            _ = setsockopt(descriptor, Int32(IPPROTO_IP), 24 /* IP_BIND_ADDRESS_NO_PORT */, &one, socklen_t(MemoryLayout<Int32>.size))
            var storage = local.storage
            let length = socklen_t(local.isIPv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, length) }
            }
            if bound != 0 {
                let number = errno
                Glibc.close(descriptor)
                throw WebSocketClientError.connectFailed(errno: number)
            }
        }
        // Messages are small and latency matters more than segment count.
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var storage = address
        let length = socklen_t(address.ss_family == sa_family_t(AF_INET6)
                               ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, length) }
        }
        if result != 0 && errno != EINPROGRESS {
            let number = errno
            Glibc.close(descriptor)
            throw WebSocketClientError.connectFailed(errno: number)
        }
        let key = WebSocketHandshake.makeKey()
        var request = "GET \(target.pathAndQuery) HTTP/1.1\r\nHost: \(target.hostHeader)\r\n"
        request += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        request += "Sec-WebSocket-Key: \(key)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        let requestBytes = Array(request.utf8)

        return try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                let handshake = ClientHandshake(
                    descriptor: descriptor, request: requestBytes,
                    expectedAccept: WebSocketHandshake.acceptValue(forKey: key),
                    deadline: MonotonicClock.now() + timeout.nanoseconds,
                    configuration: configuration, loop: loop, handlers: handlers,
                    continuation: continuation)
                handshake.start()
            }
        }
    }

    /// `ws://host:port/path?query`, split for the request line and `connect(2)`.
    struct Target {
        var host: String
        var port: UInt16
        var pathAndQuery: String
        var hostHeader: String

        init(_ url: String) throws {
            guard let components = URLComponents(string: url),
                  let scheme = components.scheme?.lowercased(), scheme == "ws" || scheme == "http",
                  let host = components.host, !host.isEmpty else {
                throw WebSocketClientError.invalidURL(url)
            }
            self.host = host
            port = UInt16(components.port ?? 80)
            let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            pathAndQuery = components.percentEncodedQuery.map { path + "?" + $0 } ?? path
            let bracketed = host.contains(":") ? "[\(host)]" : host
            hostHeader = components.port == nil ? bracketed : "\(bracketed):\(port)"
        }

        /// Numeric addresses are parsed directly; names go through `getaddrinfo` (blocking,
        /// once per connect — clients of this project talk to configured servers).
        func resolve() throws -> sockaddr_storage {
            if let numeric = NumericSocketAddress(host: host, port: port) { return numeric.storage }
            var storage = sockaddr_storage()
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
                throw WebSocketClientError.cannotResolve(host)
            }
            defer { freeaddrinfo(list) }
            withUnsafeMutableBytes(of: &storage) { target in
                target.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr,
                                                               count: Int(first.pointee.ai_addrlen)))
            }
            return storage
        }
    }
}

/// The client side of the opening handshake, on the loop thread: wait for `connect`,
/// write the request, read the response head, then hand the socket to a
/// ``WebSocketConnection`` together with any frame bytes that came with the head.
private final class ClientHandshake: EventLoopHandler {
    // Loop-thread only (created and driven there).
    let descriptor: Int32
    var request: ArraySlice<UInt8>
    let expectedAccept: String
    let deadline: UInt64
    let configuration: WebSocketConfiguration
    let loop: EventLoop
    let handlers: WebSocketConnection.Handlers
    var continuation: CheckedContinuation<WebSocketConnection, any Error>?
    var response: [UInt8] = []
    var connected = false

    init(descriptor: Int32, request: [UInt8], expectedAccept: String, deadline: UInt64,
         configuration: WebSocketConfiguration, loop: EventLoop, handlers: WebSocketConnection.Handlers,
         continuation: CheckedContinuation<WebSocketConnection, any Error>) {
        self.descriptor = descriptor
        self.request = request[...]
        self.expectedAccept = expectedAccept
        self.deadline = deadline
        self.configuration = configuration
        self.loop = loop
        self.handlers = handlers
        self.continuation = continuation
    }

    func start() {
        guard loop.register(descriptor, handler: self, events: EPOLLOUT.rawValue) else {
            fail(.connectFailed(errno: errno))
            return
        }
        loop.wake(self, descriptor: descriptor, at: deadline &+ 1)
    }

    func handle(events: UInt32) {
        if !connected {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0 { fail(.connectFailed(errno: error)); return }
            if events & EPOLLOUT.rawValue == 0 { return }
            connected = true
        }
        if !request.isEmpty {
            let sent = request.withUnsafeBufferPointer { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EAGAIN || errno == EINTR { return }
                fail(.connectFailed(errno: errno)); return
            }
            request = request.dropFirst(sent)
            if request.isEmpty { loop.modify(descriptor, events: EPOLLIN.rawValue) }
            return
        }
        guard events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let received = chunk.withUnsafeMutableBufferPointer { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if received < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            fail(.connectFailed(errno: errno)); return
        }
        if received == 0 { fail(parseFailure() ?? .closed); return }
        response.append(contentsOf: chunk[0..<received])
        guard let end = headEnd() else {
            if response.count > 16 * 1024 { fail(.handshakeRejected(status: 0, body: "response head too large")) }
            return
        }
        let head = String(decoding: response[0..<end], as: UTF8.self)
        let rest = Array(response[(end + 4)...])
        if let error = validate(head: head) {
            // The body of a refusal (the JSON error envelope) tells the caller why: wait
            // for all of it when its length is announced.
            if case .handshakeRejected(let status, _) = error, status != 101,
               let length = contentLength(head), response.count < end + 4 + length {
                return
            }
            fail(error)
            return
        }
        let connection = WebSocketConnection(
            descriptor: descriptor, role: .client, configuration: configuration, loop: loop,
            bufferedInput: rest, handlers: handlers, release: nil)
        let continuation = self.continuation
        self.continuation = nil
        connection.adopt(watching: EPOLLIN.rawValue)
        continuation?.resume(returning: connection)
    }

    func tick(now: UInt64) {
        if now > deadline { fail(.timedOut) }
    }

    private func headEnd() -> Int? {
        guard response.count >= 4 else { return nil }
        for index in 0...(response.count - 4) where response[index] == 13 && response[index + 1] == 10
            && response[index + 2] == 13 && response[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func contentLength(_ head: String) -> Int? {
        for line in head.components(separatedBy: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 && parts[0].lowercased() == "content-length" {
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }
        }
        return nil
    }

    /// The error for whatever was received, when it is not a valid 101.
    private func parseFailure() -> WebSocketClientError? {
        guard let end = headEnd() else {
            return response.isEmpty ? nil : .handshakeRejected(status: 0, body: String(decoding: response, as: UTF8.self))
        }
        let head = String(decoding: response[0..<end], as: UTF8.self)
        return validate(head: head)
    }

    /// RFC 6455 §4.1: status 101, `Upgrade: websocket`, `Connection: upgrade`, and the
    /// accept value derived from our key.
    private func validate(head: String) -> WebSocketClientError? {
        let lines = head.components(separatedBy: "\r\n")
        let statusParts = lines.first?.split(separator: " ", maxSplits: 2) ?? []
        let status = statusParts.count >= 2 ? Int(statusParts[1]) ?? 0 : 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard status == 101 else {
            var body = headEnd().map { Array(response[($0 + 4)...]) } ?? []
            if let length = fields["content-length"].flatMap(Int.init), body.count > length {
                body = Array(body[0..<length])
            }
            return .handshakeRejected(status: status, body: String(decoding: body, as: UTF8.self))
        }
        guard fields["upgrade"]?.lowercased() == "websocket",
              fields["connection"]?.lowercased().contains("upgrade") == true else {
            return .handshakeRejected(status: status, body: "missing Upgrade/Connection headers")
        }
        guard fields["sec-websocket-accept"] == expectedAccept else { return .invalidAccept }
        return nil
    }

    private func fail(_ error: WebSocketClientError) {
        guard let continuation else { return }
        self.continuation = nil
        loop.unregister(descriptor)
        Glibc.close(descriptor)
        continuation.resume(throwing: error)
    }
}

/// A client WebSocket whose incoming messages are an `AsyncStream`. Dropping the last
/// reference starts the close handshake (1001), so a forgotten socket does not stay on
/// the loop forever.
public final class WebSocketClientConnection: Sendable {
    /// The underlying connection (send, close, id).
    public let connection: WebSocketConnection
    /// Text and binary messages in order, then one `.closed`, then the end of the stream.
    /// The stream buffers what its reader has not taken yet: read it.
    public let events: AsyncStream<WebSocketEvent>

    init(connection: WebSocketConnection, events: AsyncStream<WebSocketEvent>) {
        self.connection = connection
        self.events = events
    }

    deinit { connection.close(code: .goingAway, reason: "") }

    public func send(text: String) { connection.send(text: text) }
    public func send(binary: [UInt8]) { connection.send(binary: binary) }
    public func close(code: WebSocketCloseCode = .normal, reason: String = "") {
        connection.close(code: code, reason: reason)
    }
}
#endif
