import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#endif

/// A fault-injecting HTTP/1.1 proxy on loopback, between a client and `portaria serve`:
/// the bad network a phone lives on, made deterministic. It reads each request (so it
/// can decide per request, keep-alive included), forwards it, and then — as its rule
/// says — passes the answer, delays it, drops the connection before forwarding, or
/// resets the client connection *after the server has answered* (the request took
/// effect; the client never hears of it). WebSocket upgrades are forwarded as raw bytes.
final class FaultyProxy: @unchecked Sendable {
    enum Fault: Sendable, Equatable {
        case pass
        /// Close the client connection without forwarding the request.
        case drop
        /// Forward, read the whole answer, then reset the client connection (RST).
        case resetAfterRequest
        /// Forward, then hold the answer this long before passing it.
        case delay(Duration)
    }

    /// One request as the proxy saw it.
    struct Seen: Sendable {
        var method: String
        var path: String
        var idempotencyKey: String?
        var fault: Fault
        /// The server's status (nil when not forwarded or no answer).
        var status: Int?
        var replayed: Bool
    }

    typealias Rule = @Sendable (_ method: String, _ path: String, _ index: Int) -> Fault

    let port: UInt16
    private let state: Locked<State>

    private struct State {
        var upstreamPort: UInt16
        var rule: Rule
        var seen: [Seen] = []
        var sockets: [ObjectIdentifier: ProxySocket] = [:]
        var listener: ProxySocket?
        var stopped = false
    }

    init(upstreamPort: UInt16, rule: @escaping Rule = { _, _, _ in .pass }) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        let listener = ProxySocket(descriptor)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else { throw HarnessError("bind/listen: \(String(cString: strerror(errno)))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        state = Locked(State(upstreamPort: upstreamPort, rule: rule, listener: listener))
        Thread.detachNewThread { [self] in acceptLoop(listener) }
    }

    var url: String { "http://127.0.0.1:\(port)" }
    var seen: [Seen] { state.withLock { $0.seen } }

    /// Requests whose path contains `fragment`.
    func seen(_ fragment: String) -> [Seen] { seen.filter { $0.path.contains(fragment) } }

    func setRule(_ rule: @escaping Rule) { state.withLock { $0.rule = rule } }
    func setUpstream(port: UInt16) { state.withLock { $0.upstreamPort = port } }

    /// Cuts every open connection (both sides), as a network change would.
    func dropAll() {
        for socket in state.withLock({ Array($0.sockets.values) }) { socket.shutdown() }
    }

    func stop() {
        let (listener, sockets) = state.withLock { state -> (ProxySocket?, [ProxySocket]) in
            state.stopped = true
            return (state.listener, Array(state.sockets.values))
        }
        listener?.shutdown()
        for socket in sockets { socket.shutdown() }
    }

    deinit { stop() }

    // MARK: Plumbing

    private func track(_ socket: ProxySocket) { state.withLock { $0.sockets[ObjectIdentifier(socket)] = socket } }
    private func untrack(_ socket: ProxySocket) { _ = state.withLock { $0.sockets.removeValue(forKey: ObjectIdentifier(socket)) } }

    private func acceptLoop(_ listener: ProxySocket) {
        while true {
            let accepted = listener.accept()
            guard accepted >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            let client = ProxySocket(accepted)
            if state.withLock({ $0.stopped }) {
                client.close(reset: false)
                break
            }
            track(client)
            Thread.detachNewThread { [self] in
                serve(client)
                untrack(client)
                client.close(reset: false)
            }
        }
        state.withLock { $0.listener = nil }
        listener.close(reset: false)
    }

    private func connectUpstream() -> ProxySocket? {
        let port = state.withLock { $0.upstreamPort }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        let upstream = ProxySocket(descriptor)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            upstream.close(reset: false)
            return nil
        }
        return upstream
    }

    private func serve(_ client: ProxySocket) {
        var upstream: ProxySocket?
        defer {
            if let upstream {
                untrack(upstream)
                upstream.close(reset: false)
            }
        }
        while let head = client.readHead() {
            let text = String(decoding: head, as: UTF8.self)
            let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
            let requestLine = lines.first?.split(separator: " ") ?? []
            guard requestLine.count >= 2 else { return }
            let method = String(requestLine[0])
            let path = String(requestLine[1])
            let headers = Self.headers(lines.dropFirst())
            let length = Int(headers["content-length"] ?? "0") ?? 0
            guard let body = client.read(exactly: length) else { return }
            let isUpgrade = headers["upgrade"]?.lowercased() == "websocket"

            let (fault, index) = state.withLock { state -> (Fault, Int) in
                let index = state.seen.count
                let fault = state.rule(method, path, index)
                state.seen.append(Seen(method: method, path: path, idempotencyKey: headers["idempotency-key"], fault: fault,
                                       status: nil, replayed: false))
                return (fault, index)
            }
            if fault == .drop { return }
            if upstream == nil {
                upstream = connectUpstream()
                if let upstream { track(upstream) }
            }
            guard let server = upstream, server.write(head + body) else { return }
            if isUpgrade {
                pump(client, server)
                return
            }
            guard let response = server.readResponse(method: method) else { return }
            state.withLock {
                $0.seen[index].status = response.status
                $0.seen[index].replayed = response.headers["idempotent-replayed"] == "true"
            }
            switch fault {
            case .resetAfterRequest:
                client.close(reset: true)
                return
            case .delay(let duration):
                Thread.sleep(forTimeInterval: Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
            case .pass, .drop:
                break
            }
            guard client.write(response.bytes) else { return }
            if response.status == 101 {
                pump(client, server)
                return
            }
            if response.headers["connection"]?.lowercased() == "close" || headers["connection"]?.lowercased() == "close" { return }
        }
    }

    /// Copies bytes both ways until either side ends (WebSocket after the upgrade).
    private func pump(_ client: ProxySocket, _ server: ProxySocket) {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while let bytes = server.readSome(), client.write(bytes) {}
            client.shutdown()
            server.shutdown()
            done.signal()
        }
        while let bytes = client.readSome(), server.write(bytes) {}
        client.shutdown()
        server.shutdown()
        done.wait()
    }

    static func headers<S: Sequence>(_ lines: S) -> [String: String] where S.Element == Substring {
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return headers
    }
}

/// One proxy socket with one owner thread that closes it; other threads may only
/// `shutdown` it (under the lock, never after the close), which wakes a blocked read.
final class ProxySocket: @unchecked Sendable {
    private let lock = NSLock()
    private var descriptor: Int32
    private var buffer: [UInt8] = []

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(reset: false) }

    private var number: Int32 {
        lock.lock()
        defer { lock.unlock() }
        return descriptor
    }

    func accept() -> Int32 {
        // accept4 is not in Glibc's Swift overlay; mark it close-on-exec at once so the
        // `portaria` children tests spawn do not inherit (and keep open) proxy sockets.
        let accepted = Glibc.accept(number, nil, nil)
        if accepted >= 0 { _ = fcntl(accepted, F_SETFD, FD_CLOEXEC) }
        return accepted
    }

    func shutdown() {
        lock.lock()
        defer { lock.unlock() }
        if descriptor >= 0 { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    /// `reset`: SO_LINGER 0, so the peer gets a RST instead of a FIN.
    func close(reset: Bool) {
        lock.lock()
        defer { lock.unlock() }
        guard descriptor >= 0 else { return }
        if reset {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        _ = Glibc.close(descriptor)
        descriptor = -1
    }

    func readSome() -> [UInt8]? {
        if !buffer.isEmpty {
            defer { buffer.removeAll() }
            return buffer
        }
        return receive()
    }

    /// Reads from the socket itself. `fill` must not go through `readSome`, which hands
    /// back what is already buffered: a request head split over two segments would then
    /// be "filled" with its own first half forever, and the connection would hang.
    private func receive() -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(number, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            return count > 0 ? Array(chunk[..<count]) : nil
        }
    }

    private func fill() -> Bool {
        guard let bytes = receive() else { return false }
        buffer += bytes
        return true
    }

    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(number, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }

    /// Bytes up to and including the blank line; nil at end of stream.
    func readHead() -> [UInt8]? {
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let range = buffer.firstRange(of: separator) {
                let head = Array(buffer[..<range.upperBound])
                buffer.removeSubrange(..<range.upperBound)
                return head
            }
            if buffer.count > 65_536 { return nil }
            guard fill() else { return nil }
        }
    }

    func read(exactly count: Int) -> [UInt8]? {
        while buffer.count < count {
            guard fill() else { return nil }
        }
        let bytes = Array(buffer[..<count])
        buffer.removeSubrange(..<count)
        return bytes
    }

    func readLine() -> [UInt8]? {
        let separator = Array("\r\n".utf8)
        while true {
            if let range = buffer.firstRange(of: separator) {
                let line = Array(buffer[..<range.upperBound])
                buffer.removeSubrange(..<range.upperBound)
                return line
            }
            guard fill() else { return nil }
        }
    }

    struct Response {
        var status: Int
        var headers: [String: String]
        var bytes: [UInt8]
    }

    /// One whole response, as raw bytes (Content-Length, chunked, or until the end).
    func readResponse(method: String) -> Response? {
        guard var bytes = readHead() else { return nil }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        let headers = FaultyProxy.headers(lines.dropFirst())
        if method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) {
            return Response(status: status, headers: headers, bytes: bytes)
        }
        if let length = headers["content-length"].flatMap(Int.init) {
            guard let body = read(exactly: length) else { return nil }
            return Response(status: status, headers: headers, bytes: bytes + body)
        }
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            while true {
                guard let sizeLine = readLine() else { return nil }
                bytes += sizeLine
                let sizeText = String(decoding: sizeLine, as: UTF8.self).split(separator: ";").first?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                guard let size = Int(sizeText, radix: 16) else { return nil }
                if size == 0 {
                    // Trailers, then the blank line.
                    while let line = readLine() {
                        bytes += line
                        if line.count == 2 { return Response(status: status, headers: headers, bytes: bytes) }
                    }
                    return nil
                }
                guard let chunk = read(exactly: size + 2) else { return nil }
                bytes += chunk
            }
        }
        while fill() {}
        bytes += buffer
        buffer.removeAll()
        return Response(status: status, headers: headers, bytes: bytes)
    }
}
