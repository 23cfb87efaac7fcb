import CMicroHTTPD
import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#endif

// The body budget per address (decision 0060) and the head/body deadlines (decision 0061):
// what libmicrohttpd's threads report, and the sweep that closes late connections.

extension HTTPServer {
    /// Claims `count` more buffered body bytes for the client `address` (its `AddressKey`
    /// bucket); false when `BodyBudget`'s rule refuses them.
    func reserveBodyBytes(_ count: Int, for address: String) -> Bool {
        bodyBudget.withLock { $0.claim(count, for: address) }
    }

    func releaseBodyBytes(_ count: Int, for address: String) {
        guard count > 0 else { return }
        bodyBudget.withLock { $0.release(count, for: address) }
    }

    // MARK: Connections and their deadlines (libmicrohttpd threads)

    /// A connection was accepted on `descriptor` from `address`; returns the id its socket
    /// context keeps.
    func connectionOpened(descriptor: Int32, address: String) -> UInt {
        let id = deadlines.withLock { $0.opened(descriptor: descriptor, at: .now) }
        sockets.withLock { $0.opened(id, address: address) }
        return id
    }

    /// libmicrohttpd is about to close the connection's socket.
    func connectionClosed(_ id: UInt) {
        deadlines.withLock { $0.closed(id) }
        sockets.withLock { $0.closed(id) }
    }

    // MARK: The sweep

    /// Every half second, shuts down the sockets whose head or body is past its deadline.
    ///
    /// Why `shutdown(2)` from here is safe with libmicrohttpd's thread pool: the sweep
    /// touches a socket only while holding `deadlines`, and only if its connection is still
    /// listed; libmicrohttpd reports a connection closed (`connectionClosed`, which waits
    /// for that lock) *before* it closes the socket. So the number the sweep shuts down is
    /// always still that connection's, never one reused by another socket. `shutdown`
    /// closes nothing and frees nothing: it ends the stream both ways, the connection's
    /// own thread sees end of input and closes it the ordinary way, and libmicrohttpd's
    /// state is never touched from this thread.
    func startSweeper() {
        let interval: Duration = .milliseconds(500)
        let task = Task.detached { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self else { return }
                self.sweepLateConnections()
            }
        }
        sweeper.withLock { $0 = task }
    }

    func stopSweeper() {
        sweeper.withLock { task in
            task?.cancel()
            task = nil
        }
    }

    /// One sweep (also called by tests).
    func sweepLateConnections() {
        let late = deadlines.withLock { state -> [RequestDeadlines.Overdue] in
            let overdue = state.takeOverdue(at: .now)
            for connection in overdue { _ = Glibc.shutdown(connection.descriptor, Int32(SHUT_RDWR)) }
            return overdue.map(\.reason)
        }
        guard !late.isEmpty else { return }
        let heads = late.filter { $0 == .head }.count
        log.info("closed connections past their deadline", ["head": .number(Double(heads)),
                                                             "body": .number(Double(late.count - heads))])
    }
}

/// libmicrohttpd's connection notification: accepted (remember the socket and its head
/// deadline) or about to be closed (forget it before the number can be reused).
func portariaConnectionNotified(
    cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
    socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection, let socketContext else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    if portaria_mhd_notify_is_start(code) {
        let descriptor = portaria_mhd_connection_fd(connection)
        guard descriptor >= 0 else { return }
        // The peer as libmicrohttpd saw it, as its per-address limit counts: no address is
        // worth spelling when that limit is off (behind trusted proxies every peer is one).
        let address = server.configuration.perIPConnectionLimit > 0
            ? SocketAddress.describe(portaria_mhd_client_address(connection)) : ""
        let id = server.connectionOpened(descriptor: descriptor, address: address)
        socketContext.pointee = UnsafeMutableRawPointer(bitPattern: id)
    } else if let raw = socketContext.pointee {
        server.connectionClosed(UInt(bitPattern: raw))
        socketContext.pointee = nil
    }
}

/// libmicrohttpd asks before it makes a connection of an accepted socket: past the total
/// limit, counting WebSockets, it closes the socket unanswered — what it does past its own
/// `connection_limit`. Checked without holding a place, so libmicrohttpd threads accepting
/// at the same moment may each pass: the limit holds to within one socket per thread.
func portariaAcceptPolicy(cls: UnsafeMutableRawPointer?, address: UnsafePointer<sockaddr>?, length: socklen_t) -> MHD_Result {
    guard let cls else { return portaria_mhd_yes }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.sockets.withLock { $0.admitsConnection } ? portaria_mhd_yes : portaria_mhd_no
}

/// The deadline id of the connection a request arrived on (0: not tracked).
func connectionID(_ connection: OpaquePointer) -> UInt {
    portaria_mhd_socket_context(connection).map { UInt(bitPattern: $0) } ?? 0
}
