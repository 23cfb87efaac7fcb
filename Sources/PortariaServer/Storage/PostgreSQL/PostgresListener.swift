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

    public init(url: String, channels: [String], log: Log = .shared, onNotification: @escaping @Sendable (Notification) -> Void) {
        precondition(!channels.isEmpty && channels.allSatisfy { channel in
            channel.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
        }, "channels must be identifiers")
        // TCP keepalives: a listener behind a NAT or a failover must notice a dead
        // connection (and reconnect + re-read) instead of waiting for NOTIFYs forever.
        var listenURL = PostgresDatabase.withDefaults(url)
        if !listenURL.contains("keepalives_idle=") {
            listenURL += "&keepalives=1&keepalives_idle=30&keepalives_interval=10&keepalives_count=3"
        }
        conninfo = listenURL
        self.channels = channels
        self.onNotify = onNotification
        self.log = log
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

    public func stop() { running.withLock { $0 = false } }

    private func run() {
        var reconnecting = false
        while running.current {
            do {
                let connection = try PostgresConnection(conninfo: conninfo)
                for channel in channels { try connection.simple("LISTEN \(channel)") }
                if reconnecting { onNotify(.reconnected) }
                reconnecting = false
                try listen(on: connection)
            } catch {
                if running.current {
                    log.warning("postgres listener: reconnecting", ["error": .string(String(describing: error))])
                    reconnecting = true
                    Thread.sleep(forTimeInterval: 1)
                }
            }
        }
    }

    /// Waits on the connection's socket (1 s at a time, to notice `stop`), then drains
    /// every pending notification.
    private func listen(on connection: PostgresConnection) throws {
        let socket = PQsocket(connection.handle)
        guard socket >= 0 else { throw StorageError.unavailable("postgres listener: no socket") }
        while running.current {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 1000)
            if ready < 0 && errno != EINTR { throw StorageError.unavailable("postgres listener: poll failed") }
            guard ready > 0 else { continue }
            guard PQconsumeInput(connection.handle) == 1 else {
                throw StorageError.unavailable("postgres listener: \(String(cString: PQerrorMessage(connection.handle)))")
            }
            while let notification = PQnotifies(connection.handle) {
                let channel = String(cString: notification.pointee.relname)
                let payload = String(cString: notification.pointee.extra)
                PQfreemem(notification)
                onNotify(.payload(channel: channel, payload))
            }
        }
    }
}
