/// How long a connection may take to send what the server is waiting for (decision 0061).
/// libmicrohttpd only has an idle timeout, which every byte restarts: a head or body
/// trickled one byte at a time would keep its connection for ever.
struct DeadlinePolicy: Sendable {
    /// A request head must be complete this long after the connection could send it
    /// (accepted, or its previous answer sent).
    var head: Duration = .seconds(10)
    /// A body gets this long from the end of its head…
    var bodyGrace: Duration = .seconds(10)
    /// …plus one second per this many bytes received (a minimum average rate).
    var bodyBytesPerSecond: Int = 1024
}

/// Every open connection of the HTTP server and the moment it must have sent its head or
/// body by. A pure value: the server keeps it in a lock, libmicrohttpd's threads report
/// what happens on a connection, and a sweep closes the ones past their deadline.
struct RequestDeadlines: Sendable {
    typealias Instant = ContinuousClock.Instant

    enum Phase: Sendable, Equatable {
        /// Waiting for a request head.
        case head(since: Instant)
        /// Receiving a body whose head ended at `since`; `received` bytes so far.
        case body(since: Instant, received: Int)
        /// Nothing owed by the client: a handler runs, an answer is being sent, or the
        /// socket was upgraded (then it never comes back).
        case busy
        /// Shut down by the sweep; libmicrohttpd has not closed it yet.
        case closing
    }

    struct Connection: Sendable {
        let descriptor: Int32
        var phase: Phase
        var upgraded = false
    }

    /// Why a connection was closed (for the log).
    enum Overdue: Sendable, Equatable { case head, body }

    var policy: DeadlinePolicy
    private(set) var connections: [UInt: Connection] = [:]
    private var nextID: UInt = 1

    init(policy: DeadlinePolicy) {
        self.policy = policy
    }

    /// A connection was accepted: its head is due from now. Returns its id (never 0).
    mutating func opened(descriptor: Int32, at now: Instant) -> UInt {
        let id = nextID
        nextID &+= 1
        if nextID == 0 { nextID = 1 }
        connections[id] = Connection(descriptor: descriptor, phase: .head(since: now))
        return id
    }

    /// libmicrohttpd is about to close the socket: forget it (the sweep must never touch
    /// the number again, another socket may get it).
    mutating func closed(_ id: UInt) {
        connections.removeValue(forKey: id)
    }

    /// The head is in; a body follows or not.
    mutating func headReceived(_ id: UInt, expectsBody: Bool, at now: Instant) {
        update(id) { $0.phase = expectsBody ? .body(since: now, received: 0) : .busy }
    }

    /// `count` body bytes arrived. False when the body is already past its deadline (the
    /// caller drops the connection at once rather than waiting for the sweep).
    mutating func bodyReceived(_ id: UInt, count: Int, at now: Instant) -> Bool {
        guard var connection = connections[id], case .body(let since, let received) = connection.phase else { return true }
        let (total, overflow) = received.addingReportingOverflow(count)
        connection.phase = .body(since: since, received: overflow ? Int.max : total)
        connections[id] = connection
        return now <= bodyDeadline(since: since, received: overflow ? Int.max : total)
    }

    /// The request is complete (or answered early): nothing is owed until the answer is sent.
    mutating func requestComplete(_ id: UInt) {
        update(id) { if $0.phase != .closing { $0.phase = .busy } }
    }

    /// The answer was sent: a kept-alive connection owes its next head from now.
    mutating func answered(_ id: UInt, at now: Instant) {
        update(id) { if !$0.upgraded && $0.phase == .busy { $0.phase = .head(since: now) } }
    }

    /// The socket was handed to a WebSocket: no deadline applies to it any more.
    mutating func upgraded(_ id: UInt) {
        update(id) {
            $0.upgraded = true
            $0.phase = .busy
        }
    }

    /// The connections past their deadline, marked closing (each is returned once).
    mutating func takeOverdue(at now: Instant) -> [(descriptor: Int32, reason: Overdue)] {
        var overdue: [(UInt, Int32, Overdue)] = []
        for (id, connection) in connections {
            switch connection.phase {
            case .head(let since) where now - since > policy.head:
                overdue.append((id, connection.descriptor, .head))
            case .body(let since, let received) where now > bodyDeadline(since: since, received: received):
                overdue.append((id, connection.descriptor, .body))
            default:
                break
            }
        }
        for (id, _, _) in overdue { connections[id]?.phase = .closing }
        return overdue.map { ($0.1, $0.2) }
    }

    /// The head's end + the grace + one second per `bodyBytesPerSecond` received.
    func bodyDeadline(since: Instant, received: Int) -> Instant {
        let rate = max(1, policy.bodyBytesPerSecond)
        // Whole seconds earned, capped far beyond any real body (no Duration overflow).
        let earned = min(received / rate, 1 << 30)
        return since + policy.bodyGrace + .seconds(earned)
    }

    private mutating func update(_ id: UInt, _ change: (inout Connection) -> Void) {
        guard var connection = connections[id] else { return }
        change(&connection)
        connections[id] = connection
    }
}
