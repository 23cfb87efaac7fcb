import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PortariaWebSocket

// Test support shared by the server and end-to-end test targets: blocking work off the
// cooperative pool, polling with deadlines, raw HTTP over loopback, temporary directories.
// One copy of each, so a fix (like closing a socket exactly once) lands everywhere.

/// A parsed HTTP/1.1 response.
package struct RawResponse: Sendable {
    package var status: Int
    /// Header names lowercased.
    package var headers: [String: String]
    package var body: [UInt8]

    package init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package func header(_ name: String) -> String? { headers[name.lowercased()] }
    package var text: String { String(decoding: body, as: UTF8.self) }

    package func json() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw HarnessError("body is not a JSON object: \(text.prefix(200))")
        }
        return object
    }

}

/// A blocking TCP connection to the server on 127.0.0.1, for traffic a normal client
/// would never send. Used by one task at a time.
package final class RawConnection: @unchecked Sendable {
    /// The socket's single owner: `close()` drops it, and whatever is left closes when the
    /// connection goes away — also when `init` throws, so `init` never closes it itself
    /// (closing twice closes whatever another test opened in between).
    private var socket: OwnedDescriptor?
    private var descriptor: Int32 { socket?.rawValue ?? -1 }
    private var buffer: [UInt8] = []

    /// - Parameter source: a loopback address to connect from (`127.0.0.2`), so a test can
    ///   be two clients the server counts apart; nil lets the kernel choose (127.0.0.1).
    package init(port: UInt16, from source: String? = nil) throws {
        socket = OwnedDescriptor.socket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue))
        guard descriptor >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let descriptor = descriptor
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw HarnessError("bind to \(source): \(String(cString: strerror(errno)))") }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let descriptor = descriptor
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            throw HarnessError("connect to port \(port): \(String(cString: strerror(errno)))")
        }
    }

    package func close() {
        socket = nil
    }

    /// Closes with a reset (SO_LINGER 0), which the server notices even when it is not
    /// reading; a plain close after a half-close can go unnoticed until the idle timeout.
    package func abort() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    /// Shrinks the kernel's send buffer so that a send blocks until the server has read
    /// the bytes before it (a slow uplink): a server that stops reading makes it fail.
    /// A send that makes no progress for `timeout` fails instead of hanging the test.
    package func limitSendBuffer(to bytes: Int32, timeout: Duration = .seconds(10)) {
        var value = bytes
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &value, socklen_t(MemoryLayout<Int32>.size))
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Waits until the server's kernel has acknowledged every byte sent (the send queue is
    /// empty), so the server is reading them or has read them; false after `timeout`.
    package func waitUntilDelivered(timeout: Duration = .seconds(20)) -> Bool {
        #if os(Linux)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var pending: Int32 = 0
            if ioctl(descriptor, UInt(TIOCOUTQ), &pending) == 0 && pending == 0 { return true }
            usleep(5_000)
        }
        return false
        #else
        return true   // no send-queue query here: callers only lose the ordering
        #endif
    }

    /// Half-closes: the server sees end of input but can still answer.
    package func shutdownWrite() { _ = Glibc.shutdown(descriptor, Int32(SHUT_WR)) }

    /// Sends everything; throws when the peer has gone (EPIPE/ECONNRESET).
    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                throw HarnessError("send: \(String(cString: strerror(errno)))")
            }
            offset += sent
        }
    }

    package func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads more bytes into the buffer; false at end of stream or on reset.
    private func fill(until deadline: ContinuousClock.Instant) throws -> Bool {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw HarnessError("timed out waiting for the server") }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&poller, 1, max(1, milliseconds))
        if ready == 0 { throw HarnessError("timed out waiting for the server") }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return false } // closed or reset
        buffer += chunk[..<count]
        return true
    }

    /// How many received bytes wait unread in the kernel (a peek: nothing is consumed),
    /// plus any the connection already buffered.
    package func unreadByteCount() -> Int {
        var scratch = [UInt8](repeating: 0, count: 8 << 20)
        let count = scratch.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        return buffer.count + max(count, 0)
    }

    /// Everything the server sends until it ends the stream: the bytes (including any left
    /// over from an earlier read) and whether the end was a reset rather than a clean end
    /// of stream. Throws when `timeout` passes first.
    package func readUntilClosed(timeout: Duration) throws -> (bytes: [UInt8], reset: Bool) {
        let deadline = ContinuousClock.now + timeout
        var received = buffer
        buffer = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw HarnessError("timed out waiting for the server to close") }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
            if poll(&poller, 1, max(1, milliseconds)) == 0 { continue }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += chunk[..<count]
            } else if count == 0 {
                return (received, false)
            } else if errno != EINTR && errno != EAGAIN {
                return (received, errno == ECONNRESET)
            }
        }
    }

    /// True when the server closes (or resets) the connection before `timeout`.
    package func waitForClose(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        do {
            while try fill(until: deadline) { buffer.removeAll(keepingCapacity: true) }
            return true
        } catch {
            return false
        }
    }

    /// Sends `bytes` one at a time, `interval` apart (a slowloris client: each byte restarts
    /// an idle timer), and says whether the server ended the connection before they ran
    /// out — the send failing or an end of stream. Whatever the server answers meanwhile is
    /// read and dropped.
    package func trickleUntilClosed(_ bytes: [UInt8], interval: Duration) -> Bool {
        for byte in bytes {
            do { try send([byte]) } catch { return true }
            if waitForClose(timeout: interval) { return true }
        }
        return false
    }

    /// Reads one response, skipping interim 1xx answers unless told not to. Nil if the
    /// connection closed before any byte.
    package func readResponse(timeout: Duration = .seconds(5), isHead: Bool = false, skipInterim: Bool = true) throws -> RawResponse? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let separator: [UInt8] = Array("\r\n\r\n".utf8)
            var headEnd: Int?
            while headEnd == nil {
                headEnd = buffer.firstRange(of: separator)?.upperBound
                if headEnd == nil {
                    guard try fill(until: deadline) else {
                        if buffer.isEmpty { return nil }
                        throw HarnessError("connection closed inside a response head: \(String(decoding: buffer, as: UTF8.self).prefix(200))")
                    }
                }
            }
            let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
            buffer.removeFirst(headEnd!)
            var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
            let statusLine = lines.removeFirst()
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
                throw HarnessError("bad status line: \(statusLine)")
            }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers[name] = headers[name].map { $0 + ", " + value } ?? value
            }
            if (100..<200).contains(status) {
                if skipInterim { continue }
                return RawResponse(status: status, headers: headers, body: [])
            }
            var body: [UInt8] = []
            if isHead || status == 204 || status == 304 {
                // no body
            } else if let length = headers["content-length"].flatMap(Int.init) {
                while buffer.count < length {
                    guard try fill(until: deadline) else { throw HarnessError("connection closed inside a body") }
                }
                body = Array(buffer[..<length])
                buffer.removeFirst(length)
            } else if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
                body = try readChunked(until: deadline)
            } else {
                while try fill(until: deadline) {}
                body = buffer
                buffer = []
            }
            return RawResponse(status: status, headers: headers, body: body)
        }
    }

    private func readChunked(until deadline: ContinuousClock.Instant) throws -> [UInt8] {
        var body: [UInt8] = []
        let crlf: [UInt8] = [13, 10]
        while true {
            var lineEnd = buffer.firstRange(of: crlf)
            while lineEnd == nil {
                guard try fill(until: deadline) else { throw HarnessError("closed inside chunked body") }
                lineEnd = buffer.firstRange(of: crlf)
            }
            let sizeText = String(decoding: buffer[..<lineEnd!.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw HarnessError("bad chunk size \(sizeText)")
            }
            buffer.removeFirst(lineEnd!.upperBound)
            while buffer.count < size + 2 {
                guard try fill(until: deadline) else { throw HarnessError("closed inside chunk") }
            }
            body += buffer[..<size]
            buffer.removeFirst(size + 2)
            if size == 0 { return body }
        }
    }
}

extension RawConnection {
    /// Sends `request` on a fresh connection from `source` and reads the answer (a 101 is
    /// returned, not skipped), again on another connection until the status satisfies
    /// `accept` — also when the server closes a connection unanswered (at a connection
    /// limit). Throws when no answer is accepted within `timeout`.
    package static func firstAnswer(port: UInt16, from source: String, sending request: String,
                                    within timeout: Duration = .seconds(30),
                                    until accept: @escaping @Sendable (Int) -> Bool = { _ in true })
        async throws -> (connection: RawConnection, response: RawResponse) {
        var answer: (connection: RawConnection, response: RawResponse)?
        let answered = try await eventually(within: timeout, every: .milliseconds(20)) {
            let connection = try RawConnection(port: port, from: source)
            try? connection.send(request)
            let response = try? await offload { try connection.readResponse(timeout: .seconds(10), skipInterim: false) }
            guard let response, accept(response.status) else {
                connection.close()
                return false
            }
            answer = (connection, response)
            return true
        }
        guard answered, let answer else { throw HarnessError("no answer to a request from \(source) was accepted") }
        return answer
    }
}
