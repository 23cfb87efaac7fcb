#if canImport(Glibc)
import Glibc

/// A file descriptor with exactly one owner, closed exactly once.
///
/// Descriptor numbers are reused at once: the lowest free number goes to the next
/// `socket`, `open` or `accept` of *any* thread. A second `close` of a number therefore
/// closes whatever took it in between — a SQLite database file or a PostgreSQL
/// connection in another part of the process: a socket closed on a failed `connect` and
/// again in its `deinit` breaks unrelated database work with "Bad file descriptor" and
/// "disk I/O error".
///
/// Being `~Copyable`, the value cannot be duplicated; `close()` and `release()` consume
/// it, and whatever is left when the owner goes away is closed by `deinit`. So "who
/// closes this number" always has one answer, checked by the compiler.
public struct OwnedDescriptor: ~Copyable {
    /// The number, for system calls. Do not close it yourself.
    public let rawValue: Int32

    /// Takes ownership of `rawValue` (which must be open and owned by nobody else).
    public init(_ rawValue: Int32) {
        precondition(rawValue >= 0, "OwnedDescriptor needs an open descriptor, got \(rawValue)")
        self.rawValue = rawValue
    }

    /// Hands the number to a new owner that will close it (libmicrohttpd, an event loop
    /// handler); this value no longer closes it.
    public consuming func release() -> Int32 {
        let number = rawValue
        discard self
        return number
    }

    /// Closes now.
    public consuming func close() {
        let number = rawValue
        discard self
        _ = Glibc.close(number)
    }

    deinit {
        _ = Glibc.close(rawValue)
    }
}

extension OwnedDescriptor {
    /// A new TCP or UDP socket, or nil with `errno` set.
    public static func socket(family: Int32, type: Int32, protocol: Int32 = 0) -> OwnedDescriptor? {
        let number = Glibc.socket(family, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
        guard number >= 0 else { return nil }
        return OwnedDescriptor(number)
    }
}
#endif
