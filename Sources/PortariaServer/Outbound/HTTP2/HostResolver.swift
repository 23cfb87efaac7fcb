import CNghttp2
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One address a host name resolved to, ready for `connect`.
public struct ResolvedAddress: @unchecked Sendable, CustomStringConvertible {
    // Unchecked: `sockaddr_storage` is plain bytes, copied with the struct.
    let storage: sockaddr_storage
    let length: socklen_t
    /// `host:port` in numeric form (`[::1]:443` for IPv6), for logs and errors.
    public let description: String

    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
        var copy = storage
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let status = withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        let text = { (buffer: [CChar]) in String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        let name = text(host)
        let printed = Int32(storage.ss_family) == AF_INET6 ? "[\(name)]" : name
        description = status == 0 ? "\(printed):\(text(service))" : "(unprintable address)"
    }

    var isIPv6: Bool { Int32(storage.ss_family) == AF_INET6 }

    /// A numeric IPv4 or IPv6 address with its port (tests name their servers this way).
    public init?(numeric host: String, port: Int) {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        hints.ai_socktype = portaria_h2_socket_type()
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        self.init(first.pointee)
    }

    init(_ info: addrinfo) {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: info.ai_addr, count: Int(info.ai_addrlen)))
        }
        self.init(storage: storage, length: info.ai_addrlen)
    }
}

/// Turns an origin's host name into the addresses to try, in the order to try them. The
/// HTTP/2 client calls it on a thread of its own, never on its I/O thread: a lookup can
/// take seconds (a slow or unreachable DNS server), and the I/O thread carries every
/// other connection of its provider meanwhile.
public protocol HostResolver: Sendable {
    func addresses(host: String, port: Int) throws -> [ResolvedAddress]
}

/// The system's resolver (`getaddrinfo`: /etc/hosts, then DNS), every address it gives,
/// in its order (RFC 6724's preference).
public struct SystemHostResolver: HostResolver {
    public init() {}

    public func addresses(host: String, port: Int) throws -> [ResolvedAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = portaria_h2_socket_type()
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            throw OutboundHTTPError.transport("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var addresses: [ResolvedAddress] = []
        var seen: Set<String> = []
        var next = list
        while let info = next {
            let address = ResolvedAddress(info.pointee)
            if seen.insert(address.description).inserted { addresses.append(address) }
            next = info.pointee.ai_next
        }
        return addresses
    }
}
