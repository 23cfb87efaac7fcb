import CLibPQ
import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#endif

/// Listens on PostgreSQL channels with its own connection and thread, and hands every
/// notification's channel and payload to `onNotify`. NOTIFY is transactional, so a payload arrives
/// only after the transaction that sent it committed. Reconnects after a failure and
/// then reports `nil` once, so the listener can re-read what it may have missed.
public final class PostgresListener: @unchecked Sendable {
    // Thread confinement: `connection` is used only by the listener thread; `running` is
    // guarded by its lock.
    private let conninfo: String
    private let channels: [String]
    private let onNotify: @Sendable (Notification) -> Void
    private let running = Locked(true)
    private let log: Log
    /// Told `true` each time `LISTEN` runs on a new connection and `false` as soon as the
    /// connection is lost: what must not miss a notification (`SessionCache`) stays off
    /// in between. Set before `start()`.
    public var onConnectionChange: (@Sendable (Bool) -> Void)?

    /// Whether `LISTEN` runs on a live connection now (`/readyz`).
    public var isConnected: Bool { barriers.withLock { $0.connected && !$0.stopped } }

    /// `barrier()` callers: those waiting for the next round trip, and whether the
    /// connection is up (no barrier can succeed without it).
    private struct Barriers {
        var waiting: [CheckedContinuation<Bool, Never>] = []
        var connected = false
        var stopped = false
    }
    private let barriers = Locked(Barriers())
    /// Wakes the listener thread's `poll` when a barrier is asked for: a non-blocking
    /// pipe, written by `barrier()`, read (drained) by the thread.
    private let wakeDescriptor: Int32
    private let wakeWriter: Int32

    public convenience init(url: String, channel: String, log: Log = .shared, onNotify: @escaping @Sendable (String?) -> Void) {
        self.init(url: url, channels: [channel], log: log) { notification in
            switch notification {
            case .payload(_, let payload): onNotify(payload)
            case .reconnected: onNotify(nil)
            }
        }
    }

    /// What arrives on a listener with several channels.
    public enum Notification: Sendable, Equatable {
        case payload(channel: String, String)
        /// After a lost connection: notifications may have been missed on every channel.
        case reconnected
    }

    public init(url: String, channels: [String], applicationName: String = "portaria-listener", log: Log = .shared,
                onNotification: @escaping @Sendable (Notification) -> Void) {
        precondition(!channels.isEmpty && channels.allSatisfy { channel in
            channel.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
        }, "channels must be identifiers")
        // TCP keepalives: a listener behind a NAT or a failover must notice a dead
        // connection (and reconnect + re-read) instead of waiting for NOTIFYs forever.
        var listenURL = PostgresDatabase.withDefaults(url)
        if !listenURL.contains("keepalives_idle=") {
            listenURL += "&keepalives=1&keepalives_idle=30&keepalives_interval=10&keepalives_count=3"
        }
        // Named, so an operator (and the tests) can tell it in pg_stat_activity.
        if !listenURL.contains("application_name=") { listenURL += "&application_name=" + applicationName }
        conninfo = listenURL
        self.channels = channels
        self.onNotify = onNotification
        self.log = log
        var pair: [Int32] = [-1, -1]
        precondition(pipe(&pair) == 0, "pipe failed: errno \(errno)")
        for descriptor in pair {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        wakeDescriptor = pair[0]
        wakeWriter = pair[1]
    }

    deinit {
        close(wakeDescriptor)
        close(wakeWriter)
    }

    /// Returns once every notification of a transaction that committed before this call
    /// has been handed to `onNotify` — true — or false when the connection is down (or
    /// goes down first). How: one round trip (`SELECT 1`) on the listening connection,
    /// started after the call. The committing backend signalled this connection's backend
    /// at its commit, and a backend sends the notifications it was signalled about before
    /// it reports ready for the next query; so they arrive before the round trip's end.
    /// Callers that arrive while a round trip is in flight share the next one: under load
    /// one round trip serves a whole batch (`SessionCache`, decision 0043).
    public func barrier() async -> Bool {
        await withCheckedContinuation { continuation in
            let wake = barriers.withLock { state -> Bool? in
                guard state.connected, !state.stopped else { return nil }
                state.waiting.append(continuation)
                return state.waiting.count == 1
            }
            switch wake {
            case nil: continuation.resume(returning: false)
            case true?:
                var one: UInt8 = 1
                _ = write(wakeWriter, &one, 1)
            case false?: break
            }
        }
    }

    /// Ends the barriers in `batch` (and, when the connection went, every waiting one).
    private func finishBarriers(_ batch: [CheckedContinuation<Bool, Never>], succeeded: Bool) {
        for continuation in batch { continuation.resume(returning: succeeded) }
    }

    private func setConnected(_ connected: Bool) {
        let dropped = barriers.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.connected = connected
            guard !connected else { return [] }
            defer { state.waiting = [] }
            return state.waiting
        }
        finishBarriers(dropped, succeeded: false)
        onConnectionChange?(connected)
    }

    public func start() {
        // The Thread is not stored: its block holds `self`, and a stored Thread made a cycle
        // that outlived the thread after `stop()` (LeakSanitizer: the listener, its thread
        // and its closures, once per server on PostgreSQL). Foundation keeps a running
        // Thread alive by itself.
        let thread = Thread { [self] in run() }
        thread.name = "portaria.pg-listen"
        thread.start()
    }

    public func stop() {
        running.withLock { $0 = false }
        let dropped = barriers.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.stopped = true
            defer { state.waiting = [] }
            return state.waiting
        }
        finishBarriers(dropped, succeeded: false)
    }

    private func run() {
        var reconnecting = false
        while running.current {
            do {
                let connection = try PostgresConnection(conninfo: conninfo)
                for channel in channels { try connection.simple("LISTEN \(channel)") }
                setConnected(true)
                if reconnecting { onNotify(.reconnected) }
                reconnecting = false
                try listen(on: connection)
            } catch {
                setConnected(false)
                if running.current {
                    log.warning("postgres listener: reconnecting", ["error": .string(String(describing: error))])
                    reconnecting = true
                    Thread.sleep(forTimeInterval: 1)
                }
            }
        }
    }

    /// Waits on the connection's socket and the barrier wake-up (1 s at a time, to notice
    /// `stop`), drains every pending notification, and runs barrier round trips.
    private func listen(on connection: PostgresConnection) throws {
        let socket = PQsocket(connection.handle)
        guard socket >= 0 else { throw StorageError.unavailable("postgres listener: no socket") }
        // The barriers whose `SELECT 1` is in flight; resumed (false) if the connection goes.
        var inFlight: [CheckedContinuation<Bool, Never>] = []
        defer { finishBarriers(inFlight, succeeded: false) }
        while running.current {
            var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&descriptors, 2, 1000)
            if ready < 0 && errno != EINTR { throw StorageError.unavailable("postgres listener: poll failed") }
            guard ready > 0 else { continue }
            if descriptors[1].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(wakeDescriptor, &drain, drain.count) > 0 {}
            }
            if descriptors[0].revents != 0 {
                guard PQconsumeInput(connection.handle) == 1 else {
                    throw StorageError.unavailable("postgres listener: \(String(cString: PQerrorMessage(connection.handle)))")
                }
                deliverNotifications(connection)
                if !inFlight.isEmpty {
                    // The round trip ends with the results, then nil after ReadyForQuery;
                    // whatever notifications came before it were delivered just above.
                    var finished = false
                    while PQisBusy(connection.handle) == 0 {
                        guard let result = PQgetResult(connection.handle) else {
                            finished = true
                            break
                        }
                        PQclear(result)
                    }
                    if finished {
                        deliverNotifications(connection)
                        let batch = inFlight
                        inFlight = []
                        finishBarriers(batch, succeeded: true)
                    }
                }
            }
            if inFlight.isEmpty {
                inFlight = barriers.withLock { state in
                    defer { state.waiting = [] }
                    return state.waiting
                }
                if !inFlight.isEmpty, PQsendQuery(connection.handle, "SELECT 1") != 1 {
                    throw StorageError.unavailable("postgres listener: \(String(cString: PQerrorMessage(connection.handle)))")
                }
            }
        }
    }

    private func deliverNotifications(_ connection: PostgresConnection) {
        while let notification = PQnotifies(connection.handle) {
            let channel = String(cString: notification.pointee.relname)
            let payload = String(cString: notification.pointee.extra)
            PQfreemem(notification)
            onNotify(.payload(channel: channel, payload))
        }
    }
}
