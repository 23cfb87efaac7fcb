import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#endif

/// How the server asks glibc's allocator to give memory back, so that a long run's RSS
/// follows what is live rather than the worst moment so far (docs/reliability.md, Soak).
///
/// Without it, `malloc_stats()` on a server under `wrk -c100` shows 1.8–2.8 MB in use
/// against 42 → 49 MB held, and RSS 77 → 84 MB in 40 s. Two causes:
///  - argon2id works in a 19 MiB block. glibc serves blocks that large with `mmap`, and when
///    one is freed it *raises* its mmap threshold to that size (and its trim threshold to
///    twice it): every later password check then takes its 19 MiB from an arena, and the
///    arena keeps it when freed — about 20 MB of RSS per arena that ever hashed a password;
///  - each thread that allocates gets an arena (up to 8 per core); libdispatch starts and
///    retires threads as load changes, so arenas keep appearing, each holding the free
///    fragments of its peak (memory allocated on one thread and freed on another).
///
/// So: fixed thresholds (which also turns off the dynamic raise), fewer arenas, and a
/// `malloc_trim(0)` every minute to hand free pages inside the arenas back to the kernel.
/// Looked up with `dlsym`: glibc does not export these to Swift, and another libc (musl)
/// simply has none of them, which leaves its own policy in place.
enum MemoryPolicy {
    /// glibc's `mallopt` parameters (`<malloc.h>`, stable ABI values).
    private static let trimThresholdParameter: Int32 = -1  // M_TRIM_THRESHOLD
    private static let mmapThresholdParameter: Int32 = -3  // M_MMAP_THRESHOLD
    private static let arenaMaxParameter: Int32 = -8       // M_ARENA_MAX

    /// Blocks from this size up are mapped and unmapped on their own (argon2's 19 MiB, a
    /// 16 MiB WebSocket message): never kept by an arena after `free`.
    static let mmapThreshold: Int32 = 1 << 20
    /// Free memory at the top of an arena beyond this is returned at once.
    static let trimThreshold: Int32 = 1 << 20
    /// Arenas for the whole process: fewer than glibc's 8 per core, enough that the two
    /// libmicrohttpd threads and the cooperative pool rarely wait on each other's lock.
    static let arenaCount: Int32 = Int32(max(2, ProcessInfo.processInfo.activeProcessorCount * 2))

    private typealias MalloptFunction = @convention(c) (Int32, Int32) -> Int32
    private typealias MallocTrimFunction = @convention(c) (Int) -> Int32

    private static let mallopt: MalloptFunction? = symbol("mallopt")
    private static let mallocTrim: MallocTrimFunction? = symbol("malloc_trim")

    private static func symbol<T>(_ name: String) -> T? {
        #if canImport(Glibc)
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: T.self)
        #else
        return nil
        #endif
    }

    private static let applied = Locked(false)

    /// Sets the thresholds and the arena limit once per process, before the first
    /// password hash; later calls do nothing. Returns whether the allocator took them.
    @discardableResult
    static func apply() -> Bool {
        applied.withLock { done -> Bool in
            guard !done, let mallopt else { return done }
            done = mallopt(mmapThresholdParameter, mmapThreshold) == 1
                && mallopt(trimThresholdParameter, trimThreshold) == 1
                && mallopt(arenaMaxParameter, arenaCount) == 1
            return done
        }
    }

    /// Returns the free pages of every arena to the kernel; true if any were released.
    @discardableResult
    static func trim() -> Bool {
        guard let mallocTrim else { return false }
        return mallocTrim(0) == 1
    }
}

/// Calls ``MemoryPolicy/trim()`` every `interval` until stopped. The walk over the arenas'
/// free lists costs well under a millisecond at this server's heap size.
final class MemoryTrimmer: Sendable {
    private let loop = BackgroundTask()
    let interval: Duration

    init(interval: Duration = .seconds(60)) { self.interval = interval }

    func start() {
        let interval = interval
        loop.start(priority: .background) {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { break }
                MemoryPolicy.trim()
            }
        }
    }

    func stop() async { await loop.stop() }
}
