/// Every socket the HTTP server holds, in total and per client address: libmicrohttpd's
/// connections, and the upgraded sockets a WebSocket owns once libmicrohttpd has handed its
/// connection back (decision 0125). libmicrohttpd's `connection_limit` and
/// `per_ip_connection_limit` see only its own connections, so they alone would let one
/// address hold any number of WebSockets; an upgrade is admitted only while these counts,
/// which see both kinds, are within the same limits. A pure value: the server keeps it in
/// a lock and libmicrohttpd's threads and the WebSockets report to it.
///
/// A socket is counted once from its accept to its close, whoever holds it: an upgraded
/// socket moves from libmicrohttpd to its WebSocket (`handedOver`) without being counted
/// again, and libmicrohttpd closing its own descriptor afterwards uncounts nothing.
struct SocketCensus: Sendable {
    /// The limits an upgrade is checked against (0: none).
    struct Limits: Sendable, Equatable {
        var total: Int
        var perAddress: Int
    }

    /// Which limit an upgrade would exceed.
    enum Refusal: Sendable, Equatable {
        case total
        case address
    }

    private struct Connection: Sendable {
        let address: String
        var handedOver = false
    }

    let limits: Limits
    /// Sockets held now: libmicrohttpd's connections and upgraded sockets.
    private(set) var total = 0
    /// The same, per client address (only addresses holding a socket are listed).
    private(set) var byAddress: [String: Int] = [:]
    /// libmicrohttpd's connections by their id in `RequestDeadlines`.
    private var connections: [UInt: Connection] = [:]

    init(limits: Limits) {
        self.limits = limits
    }

    /// libmicrohttpd accepted connection `id` from `address`.
    mutating func opened(_ id: UInt, address: String) {
        guard connections[id] == nil else { return }
        connections[id] = Connection(address: address)
        count(1, address)
    }

    /// libmicrohttpd is about to close connection `id`: its socket goes, unless it was
    /// handed to a WebSocket (then the WebSocket's close uncounts it).
    mutating func closed(_ id: UInt) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        if !connection.handedOver { count(-1, connection.address) }
    }

    /// Why connection `id` may not become a WebSocket, or nil when it may. Its own socket
    /// is counted already and an upgrade keeps it counted, so the counts may reach the
    /// limits, not pass them.
    func refusal(forUpgradeOf id: UInt) -> Refusal? {
        if limits.total > 0 && total > limits.total { return .total }
        if limits.perAddress > 0, let connection = connections[id],
           byAddress[connection.address, default: 0] > limits.perAddress {
            return .address
        }
        return nil
    }

    /// Whether one more connection may be accepted: the sockets held, WebSockets included,
    /// are below the total limit. libmicrohttpd's own `connection_limit` counts only its
    /// connections, so without this an instance could hold the limit in WebSockets and the
    /// limit again in HTTP connections, into the descriptors kept for the database.
    var admitsConnection: Bool { limits.total == 0 || total < limits.total }

    /// The socket of connection `id` now belongs to a WebSocket: it stays counted until
    /// `released(address:)`. Returns the address to release it with; nil when the
    /// connection is not tracked (or was handed over already), and then nothing is owed.
    mutating func handedOver(_ id: UInt) -> String? {
        guard var connection = connections[id], !connection.handedOver else { return nil }
        connection.handedOver = true
        connections[id] = connection
        return connection.address
    }

    /// A WebSocket closed the descriptor of a socket handed over from `address`.
    mutating func released(address: String) {
        count(-1, address)
    }

    /// The sockets `address` holds now.
    func holding(_ address: String) -> Int { byAddress[address, default: 0] }

    private mutating func count(_ change: Int, _ address: String) {
        total = max(0, total + change)
        let held = byAddress[address, default: 0] + change
        byAddress[address] = held > 0 ? held : nil
    }
}
