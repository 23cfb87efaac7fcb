import CNghttp2
import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#endif

/// Where a request goes: one HTTP/2 connection per origin.
struct Origin: Hashable, Sendable {
    let host: String
    let port: Int
    /// `:authority` (host, and the port when it is not 443).
    let authority: String

    /// Splits an `https://` URL into its origin and `:path` (with the query); nil for
    /// anything else. Hand-parsed: URLComponents was a visible cost per push.
    static func split(_ url: String) -> (Origin, String)? {
        guard url.hasPrefix("https://") else { return nil }
        let rest = url.dropFirst(8)
        let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = String(rest[..<slash])
        var path = String(rest[slash...])
        if path.isEmpty { path = "/" } else if path.first == "?" { path = "/" + path }
        var host = authority
        var port = 443
        if authority.hasPrefix("[") {
            // An IPv6 literal: [::1] or [::1]:8443.
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                guard let value = Int(after.dropFirst()), (1...65535).contains(value) else { return nil }
                port = value
            } else if !after.isEmpty { return nil }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let value = Int(authority[authority.index(after: colon)...]), (1...65535).contains(value) else { return nil }
            host = String(authority[..<colon])
            port = value
        }
        guard !host.isEmpty, !host.contains("@") else { return nil }
        return (Origin(host: host, port: port, authority: authority), path)
    }

    /// Whether `host` is an IP address literal (verified as an IP, and sent without SNI).
    var isIPLiteral: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// Owns a non-blocking TCP socket's descriptor.
final class TCPSocket {
    let descriptor: Int32

    /// Starts a non-blocking connect to `address` (resolved beforehand, off the I/O
    /// thread: `HostResolver`).
    init(address: ResolvedAddress) throws {
        var storage = address.storage
        let descriptor = socket(Int32(storage.ss_family), portaria_h2_socket_type() | portaria_h2_socket_flags(), 0)
        guard descriptor >= 0 else { throw OutboundHTTPError.transport("socket: \(String(cString: strerror(errno)))") }
        self.descriptor = descriptor
        var one: Int32 = 1
        // Pushes are small frames that must leave at once, not wait for Nagle.
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, address.length) }
        }
        guard status == 0 || errno == EINPROGRESS else {
            throw OutboundHTTPError.transport("connect to \(address): \(String(cString: strerror(errno)))")
        }
    }

    /// The outcome of the non-blocking connect, once the socket is writable.
    func connectError() -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }

    deinit { close(descriptor) }
}
