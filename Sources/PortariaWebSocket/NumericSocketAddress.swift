#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A numeric IPv4 or IPv6 address with a port, as the `sockaddr_storage` that `bind` and
/// `connect` take: the one place that turns `inet_pton` results into a socket address,
/// for the server's listen address and the client's target alike.
public struct NumericSocketAddress {
    public let storage: sockaddr_storage
    public let isIPv6: Bool

    /// Nil when `host` is not a numeric address (a name to resolve, or garbage).
    public init?(host: String, port: UInt16) {
        var storage = sockaddr_storage()
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            Self.copy(&v4, into: &storage)
            isIPv6 = false
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            Self.copy(&v6, into: &storage)
            isIPv6 = true
        } else {
            return nil
        }
        self.storage = storage
    }

    private static func copy<Address>(_ address: inout Address, into storage: inout sockaddr_storage) {
        withUnsafeMutableBytes(of: &storage) { target in
            withUnsafeBytes(of: &address) { target.copyMemory(from: $0) }
        }
    }
}
