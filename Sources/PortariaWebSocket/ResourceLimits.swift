#if canImport(Glibc)
import Glibc

/// Process limits that matter when one process holds thousands of sockets.
public enum ResourceLimits {
    /// Raises the soft open-file limit to the hard limit (every WebSocket is a descriptor;
    /// the usual soft default of 1024 would cap a server or a benchmark far too early).
    /// Returns the soft limit now in force.
    @discardableResult
    public static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return Int(raised.rlim_cur) }
        }
        return Int(limit.rlim_cur)
    }

    /// Descriptors kept back from client connections: the database, outbound push
    /// connections, media files, the metrics listener.
    public static let reservedDescriptors = 1024

    /// How many connections a server may accept: the soft open-file limit less
    /// ``reservedDescriptors`` (at least 1,024). With systemd, `LimitNOFILE=` sets it
    /// (docs/ops.md).
    public static func connectionBudget() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        // Unlimited (RLIM_INFINITY) reads as the largest value: capped like any other.
        return max(1024, Int(min(limit.rlim_cur, rlim_t(Int32.max))) - reservedDescriptors)
    }
}
#endif
