#if canImport(Glibc)
import Foundation
import PortariaCore
import Glibc
import CWslay

/// Something the event loop drives: a socket in the middle of a client handshake, or an
/// open WebSocket. Only ever called on the loop's thread.
protocol EventLoopHandler: AnyObject {
    /// The socket is readable, writable, hung up or in error (`epoll` event bits).
    func handle(events: UInt32)
    /// Called at the first tick at or after a time the handler asked for with
    /// ``EventLoop/wake(_:descriptor:at:)`` (keep-alive, handshake and close timeouts), and
    /// possibly at other ticks: the handler checks its own clock.
    func tick(now: UInt64)
}

/// One thread running `epoll` for many sockets: every upgraded server socket and every
/// client connection of a process share it, so ten thousand idle WebSockets cost ten
/// thousand small objects, not ten thousand threads.
///
/// Other threads hand work to the loop with ``execute(_:)``: the closure is put on a
/// locked queue and the loop is woken through an `eventfd`. Everything that touches a
/// socket or a wslay context runs on the loop thread.
public final class EventLoop: @unchecked Sendable {
    // Thread confinement: `handlers`, `timers` and `stopped` are only touched on the loop
    // thread; `pending` is guarded by its lock; the descriptors and `threadID` are set in
    // `init` and never change. That is why the class can be shared across threads.

    /// The process-wide loop used by the server and the client unless told otherwise.
    public static let shared = EventLoop(name: "portaria-websocket")

    /// How often due handlers get `tick(now:)`: the resolution of every WebSocket timeout.
    public let tickInterval: Duration

    private let epollDescriptor: Int32
    private let wakeDescriptor: Int32
    private let pending = Locked<PendingWork>(PendingWork())
    private var handlers: [Int32: any EventLoopHandler] = [:]
    /// Only handlers that asked for a time are ticked, never all of them.
    private var timers: TimerWheel
    private var stopped = false
    private let threadID: pthread_t

    private struct PendingWork {
        var jobs: [@Sendable () -> Void] = []
        /// True once the loop has been woken for the current batch: saves an `eventfd`
        /// write per job when many arrive together (a broadcast from many requests).
        var wakeSent = false
        var stopRequested = false
    }

    /// Starts the loop thread. Loops live as long as the process unless ``stop()`` is called.
    public init(name: String = "portaria-websocket", tickInterval: Duration = .milliseconds(250)) {
        self.tickInterval = tickInterval
        timers = TimerWheel(slotNanoseconds: max(1, tickInterval.nanoseconds), now: MonotonicClock.now())
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epollDescriptor >= 0, "epoll_create1 failed: errno \(errno)")
        wakeDescriptor = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        precondition(wakeDescriptor >= 0, "eventfd failed: errno \(errno)")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeDescriptor
        precondition(epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, wakeDescriptor, &event) == 0)

        // The thread reports its id before `init` returns so that `isInLoop` can be a plain
        // comparison against an immutable value.
        let started = DispatchSemaphore(value: 0)
        let identity = Locked<pthread_t?>(nil)
        let box = LoopBox()
        let thread = Thread {
            identity.withLock { $0 = pthread_self() }
            started.signal()
            box.wait().run()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
        started.wait()
        threadID = identity.current!
        box.set(self)
    }

    /// True when called on the loop's own thread.
    public var isInLoop: Bool { pthread_equal(pthread_self(), threadID) != 0 }

    /// Runs `work` on the loop thread, soon. Safe from any thread, including the loop's.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let wake = pending.withLock { state -> Bool in
            state.jobs.append(work)
            if state.wakeSent { return false }
            state.wakeSent = true
            return true
        }
        if wake { signalWake() }
    }

    /// Runs `work` on the loop thread and returns its result.
    public func submit<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            execute { continuation.resume(returning: work()) }
        }
    }

    /// Stops the loop thread after the work already queued (tests create private loops).
    /// Sockets still registered are left as they are.
    public func stop() {
        pending.withLock { $0.stopRequested = true }
        signalWake()
    }

    private func signalWake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wakeDescriptor, $0.baseAddress, 8) }
    }

    // MARK: Loop-thread API

    /// Starts watching `descriptor`; `events` are epoll bits (`EPOLLIN`, `EPOLLOUT`).
    func register(_ descriptor: Int32, handler: any EventLoopHandler, events: UInt32) -> Bool {
        assert(isInLoop)
        var event = epoll_event()
        event.events = events
        event.data.fd = descriptor
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) == 0 else { return false }
        handlers[descriptor] = handler
        return true
    }

    /// Swaps the handler of a registered descriptor (a client handshake becoming a WebSocket).
    func replaceHandler(_ descriptor: Int32, with handler: any EventLoopHandler) {
        assert(isInLoop)
        handlers[descriptor] = handler
    }

    func modify(_ descriptor: Int32, events: UInt32) {
        assert(isInLoop)
        var event = epoll_event()
        event.events = events
        event.data.fd = descriptor
        _ = epoll_ctl(epollDescriptor, EPOLL_CTL_MOD, descriptor, &event)
    }

    /// Stops watching `descriptor`. Must happen before the descriptor is closed (by us or
    /// by libmicrohttpd), since the number may be reused by the next accepted socket.
    func unregister(_ descriptor: Int32) {
        assert(isInLoop)
        _ = epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, descriptor, nil)
        handlers[descriptor] = nil
    }

    /// Asks for `handler.tick(now:)` at the first tick at or after `due` (monotonic
    /// nanoseconds), while `handler` still holds `descriptor`.
    func wake(_ handler: any EventLoopHandler, descriptor: Int32, at due: UInt64) {
        assert(isInLoop)
        timers.schedule(.init(descriptor: descriptor, handler: ObjectIdentifier(handler)), at: due)
    }

    /// Number of descriptors watched (diagnostics, tests).
    var registeredCount: Int { handlers.count }

    /// Wake-ups waiting, stale ones included (diagnostics, tests).
    var scheduledCount: Int { timers.count }

    // MARK: The loop

    private func run() {
        let capacity = 512
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        while !stopped {
            let now = MonotonicClock.now()
            let nextTick = timers.nextTick
            let timeout = nextTick > now ? Int32(min((nextTick - now) / 1_000_000 + 1, 60_000)) : 0
            let count = epoll_wait(epollDescriptor, events, Int32(capacity), timeout)
            if count < 0 && errno != EINTR { fatalError("epoll_wait failed: errno \(errno)") }
            for index in 0..<max(0, Int(count)) {
                let event = events[index]
                let descriptor = event.data.fd
                if descriptor == wakeDescriptor {
                    var counter: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &counter) { read(wakeDescriptor, $0.baseAddress, 8) }
                    continue
                }
                // Looked up per event: an earlier handler in this batch may have closed it.
                handlers[descriptor]?.handle(events: event.events)
            }
            runPendingJobs()
            let after = MonotonicClock.now()
            for entry in timers.expire(now: after) {
                // A handler that left (or a new one on the same number) is not ticked.
                guard let handler = handlers[entry.descriptor], ObjectIdentifier(handler) == entry.handler else { continue }
                handler.tick(now: after)
            }
        }
        close(wakeDescriptor)
        close(epollDescriptor)
    }

    private func runPendingJobs() {
        let (jobs, stop) = pending.withLock { state -> ([@Sendable () -> Void], Bool) in
            let jobs = state.jobs
            state.jobs = []
            state.wakeSent = false
            return (jobs, state.stopRequested)
        }
        for job in jobs { job() }
        if stop { stopped = true }
    }
}

/// Hands the finished `EventLoop` to its thread, which starts before `init` completes.
private final class LoopBox: @unchecked Sendable {
    // Written once by `init` and read once by the loop thread, ordered by the semaphore.
    private var loop: EventLoop?
    private let ready = DispatchSemaphore(value: 0)
    func set(_ loop: EventLoop) { self.loop = loop; ready.signal() }
    func wait() -> EventLoop { ready.wait(); return loop! }
}

/// `CLOCK_MONOTONIC` in nanoseconds: the same clock in every process of the machine, so a
/// benchmark can put a send time in a message and the receiver can subtract.
public enum MonotonicClock {
    public static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

extension Duration {
    /// Whole nanoseconds (negative durations count as zero).
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
#endif
