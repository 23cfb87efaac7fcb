import Foundation
import PortariaCore
import PortariaWebSocket

/// The feed's state, touched only by the feed's worker task.
final class FeedState {
    struct Member {
        let connection: WebSocketConnection
        let subscriber: Subscriber
        /// The last seq this socket received (replay or live).
        var lastDelivered: Int64
    }

    struct Company {
        /// The last seq delivered live to this company's sockets.
        var lastSeq: Int64
        var members: [ObjectIdentifier: Member] = [:]
    }

    let database: any SQLDatabase
    let hub: WebSocketHub
    let limits: RealtimeLimits
    let log: Log
    let authChanges: SQLiteAuthWatcher?
    /// Set once, right after init, on the feed's task.
    var companion: (any RealtimeCompanionState)!
    var companies: [String: Company] = [:]
    /// Socket → company, to find a leaving socket.
    var companyOf: [ObjectIdentifier: String] = [:]
    /// Open sockets per user (or per visitor token), for the per-user limit without
    /// scanning every socket on each join.
    var socketsPerKey: [String: Int] = [:]

    static func limitKey(_ subscriber: Subscriber) -> String {
        if case .visitor(let visitID) = subscriber.role { return "visit:" + visitID }
        return "user:" + (subscriber.userID ?? "")
    }

    init(database: any SQLDatabase, hub: WebSocketHub, limits: RealtimeLimits, log: Log, authChanges: SQLiteAuthWatcher?) {
        self.authChanges = authChanges
        self.database = database
        self.hub = hub
        self.limits = limits
        self.log = log
    }

    /// Every joined socket.
    var members: [Member] { companies.values.flatMap(\.members.values) }

    /// The joined sockets of one company.
    func members(of companyID: String) -> [Member] { companies[companyID].map { Array($0.members.values) } ?? [] }

    func handle(_ command: RealtimeFeed.Command) async {
        do {
            switch command {
            case .join(let connection, let subscriber, let since):
                do { try await join(connection, subscriber, since: since) } catch {
                    // Never leave an upgraded socket that will receive nothing: the client
                    // reconnects with `since` and loses nothing.
                    connection.close(code: .tryAgainLater, reason: "try again")
                    throw error
                }
            case .leave(let connection): await leave(connection)
            case .poke(let companyID): try await deliver(companyID: companyID)
            case .pokeAll: for companyID in companies.keys { try await deliver(companyID: companyID) }
            case .checkSessions: try await checkSessions()
            case .endSession(let sessionID): await close(sessions: [sessionID])
            case .received(let connection, let text, let budget):
                defer { budget.done() }
                await received(connection, text)
            case .companion(let message): try await companion.handle(message)
            }
        } catch {
            // A database hiccup must not stop the feed; the next poke reads forward again.
            log.error("realtime feed", ["error": .string(String(describing: error))])
        }
    }

    // MARK: Joining and replay

    func join(_ connection: WebSocketConnection, _ subscriber: Subscriber, since: Int64?) async throws {
        let key = ObjectIdentifier(connection)
        let limitKey = Self.limitKey(subscriber)
        let limit = subscriber.userID == nil ? limits.connectionsPerVisit : limits.connectionsPerUser
        if socketsPerKey[limitKey, default: 0] >= limit {
            connection.close(code: .policyViolation, reason: "too many connections")
            return
        }
        let companyID = subscriber.companyID
        if companies[companyID] == nil {
            companies[companyID] = Company(lastSeq: try await latestSeq(companyID))
        }
        var member = Member(connection: connection, subscriber: subscriber, lastDelivered: companies[companyID]!.lastSeq)
        if let since, since > member.lastDelivered {
            // Another instance may already have delivered newer events than this one has
            // heard of: the log, not this instance's memory, says whether `since` exists.
            if since <= (try await latestSeq(companyID)) { member.lastDelivered = since }
        }
        if let since, since != member.lastDelivered {
            let window = limits.replayWindow
            // The events first, then the pruned-through mark: a sweep that commits between
            // the two reads (PostgreSQL reads per statement) then shows as pruned, and the
            // client resyncs instead of missing what was deleted.
            let (missed, prunedThrough) = since < member.lastDelivered ? try await database.read { db in
                (try EventLog.since(db, companyID: companyID, seq: since, limit: window + 1), try EventLog.prunedThrough(db))
            } : ([], 0)
            if since > member.lastDelivered || missed.count > window || since < prunedThrough {
                // Too far back, pruned (decision 0055), or a seq this log never issued: the
                // client reconciles over REST.
                connection.send(text: JSONValue.object(["type": .string("resync_required"),
                                                        "seq": .number(Double(member.lastDelivered))]).jsonText)
            } else {
                for event in missed where subscriber.sees(event) { connection.send(text: subscriber.frame(for: event)) }
                member.lastDelivered = max(member.lastDelivered, missed.last?.seq ?? since)
            }
        }
        companies[companyID]!.members[key] = member
        companyOf[key] = companyID
        ServerMetrics.shared.realtimeSockets.add(1)
        socketsPerKey[limitKey, default: 0] += 1
        // From here every commit reaches this socket. Saying so lets a client (and a test)
        // know when "live" starts instead of guessing with a sleep.
        connection.send(text: JSONValue.object(["type": .string("subscribed"),
                                                "seq": .number(Double(member.lastDelivered))]).jsonText)
        try await companion.joined(member)
        // A visit that closed between the ticket check and this join: the replay (if any)
        // is queued, then the visitor's socket closes as it would have at the event.
        if case .visitor(let visitID) = subscriber.role, try await visitIsClosed(visitID) {
            await closeVisitorSockets(visitID: visitID, companyID: companyID)
        }
    }

    func visitIsClosed(_ visitID: String) async throws -> Bool {
        let status = try await database.read { db in
            try db.queryOne("SELECT status FROM visits WHERE id = ?", .text(visitID))?.string("status")
        }
        return status.flatMap(VisitStatus.init(rawValue:))?.isTerminal ?? true
    }

    /// The newest seq the log holds for a company.
    func latestSeq(_ companyID: String) async throws -> Int64 {
        try await database.read { db in
            try db.queryOne("SELECT MAX(seq) AS seq FROM events WHERE company_id = ?", .text(companyID))?.int("seq") ?? 0
        }
    }

    func leave(_ connection: WebSocketConnection) async {
        let key = ObjectIdentifier(connection)
        guard let companyID = companyOf.removeValue(forKey: key) else { return }
        ServerMetrics.shared.realtimeSockets.add(-1)
        let removed = companies[companyID]?.members.removeValue(forKey: key)
        if let subscriber = removed?.subscriber {
            let limitKey = Self.limitKey(subscriber)
            socketsPerKey[limitKey, default: 1] -= 1
            if socketsPerKey[limitKey] == 0 { socketsPerKey.removeValue(forKey: limitKey) }
        }
        if companies[companyID]?.members.isEmpty == true { companies.removeValue(forKey: companyID) }
        if let removed { await companion.left(removed) }
    }

    // MARK: Live delivery

    func deliver(companyID: String) async throws {
        guard var company = companies[companyID] else { return }
        // A password set by `portaria admin` (another process) ends sessions without telling
        // this one: before anything reaches a socket, sessions are checked if auth changed.
        if let authChanges, !company.members.isEmpty, authChanges.check() != .unchanged {
            try await checkSessions()
            guard let current = companies[companyID] else { return }
            company = current
        }
        var after = company.lastSeq
        while true {
            let events = try await database.read { [after] db in try EventLog.since(db, companyID: companyID, seq: after, limit: 500) }
            guard !events.isEmpty else { return }
            for event in events { await companion.willDeliver(event) }
            guard var current = companies[companyID] else { return }
            for event in events {
                // Frames differ only for visitors; everyone else shares one text and one hop.
                var shared: [WebSocketConnection] = []
                var sharedFrame: String?
                for (key, member) in current.members where event.seq > member.lastDelivered && member.subscriber.sees(event) {
                    if case .visitor = member.subscriber.role {
                        member.connection.send(text: member.subscriber.frame(for: event))
                    } else {
                        if sharedFrame == nil { sharedFrame = member.subscriber.frame(for: event) }
                        shared.append(member.connection)
                    }
                    current.members[key]?.lastDelivered = event.seq
                }
                if let sharedFrame, !shared.isEmpty { await hub.broadcast(text: sharedFrame, to: shared) }
                current.lastSeq = event.seq
                after = event.seq
            }
            companies[companyID] = current
            for event in events {
                await companion.didDeliver(event)
                switch event.visitEventType {
                case .resolved?, .cancelled?, .expired?:
                    if let visitID = event.visitID { await closeVisitorSockets(visitID: visitID, companyID: event.companyID) }
                default:
                    break
                }
            }
            if events.count < 500 { return }
        }
    }

    /// A visitor token follows its visit only while it is open: once the closing frame
    /// is queued (delivery runs before this), the gate page's sockets close normally.
    func closeVisitorSockets(visitID: String, companyID: String) async {
        guard let members = companies[companyID]?.members.values else { return }
        for member in members where member.subscriber.role == .visitor(visitID: visitID) {
            member.connection.close(code: .normal, reason: "visit closed")
            await leave(member.connection)
        }
    }

    // MARK: Sessions

    /// Closes sockets whose session ended (logout, refresh-token reuse, disabled user).
    func checkSessions() async throws {
        await companion.checkingSessions()
        let sessions = Array(Set(members.compactMap(\.subscriber.sessionID)))
        guard !sessions.isEmpty else { return }
        let live = try await SessionStore(database: database).liveSessionIDs(among: sessions, at: Date())
        await close(sessions: Set(sessions).subtracting(live))
        checks += 1
        if checks % 6 == 0 { try await checkScopes() }
        // A missed NOTIFY (a silently dead connection) must not stall delivery for long.
        if database.dialect.isSharedByInstances {
            for companyID in companies.keys { try await deliver(companyID: companyID) }
        }
    }

    /// Session checks since start; every sixth also re-checks what sockets may see.
    var checks = 0

    /// A socket keeps the scope it had when it connected; a resident who moved out, or an
    /// operator whose rights were taken away, must stop receiving within a minute. Sockets
    /// whose scope changed are closed (1008): the client reconnects and gets the new one.
    func checkScopes() async throws {
        let accounts = AccountStore(database: database)
        var groups: [String: (userID: String, companyID: String)] = [:]
        for company in companies.values {
            for member in company.members.values {
                guard let userID = member.subscriber.userID else { continue }
                groups[userID + "|" + member.subscriber.companyID] = (userID, member.subscriber.companyID)
            }
        }
        var changed = Set<String>()
        for (key, group) in groups {
            let membership = try await accounts.membership(userID: group.userID, companyID: group.companyID)
            let current = membership.map { Subscriber(userID: group.userID, sessionID: nil, membership: $0) }
            let stale = companies[group.companyID]?.members.values.contains { member in
                member.subscriber.userID == group.userID
                    && (current == nil || member.subscriber.role != current!.role || member.subscriber.seesPushHealth != current!.seesPushHealth)
            } ?? false
            if stale { changed.insert(key) }
        }
        guard !changed.isEmpty else { return }
        for company in companies.values {
            for member in company.members.values {
                guard let userID = member.subscriber.userID, changed.contains(userID + "|" + member.subscriber.companyID) else { continue }
                member.connection.close(code: .policyViolation, reason: "permissions changed")
                await leave(member.connection)
            }
        }
    }

    func close(sessions ended: Set<String>) async {
        guard !ended.isEmpty else { return }
        for company in companies.values {
            for member in company.members.values where member.subscriber.sessionID.map(ended.contains) == true {
                member.connection.close(code: .policyViolation, reason: "session ended")
                await leave(member.connection)
            }
        }
    }

    // MARK: Messages from clients

    func received(_ connection: WebSocketConnection, _ text: String) async {
        switch RealtimeClientMessage.parse(text) {
        case .invalid:
            connection.send(text: RealtimeClientMessage.errorFrame("INVALID_MESSAGE", "frames are JSON objects with a string \"type\""))
        case .ping:
            connection.send(text: JSONValue.object(["type": .string("pong")]).jsonText)
        case .call(let type, let data):
            let key = ObjectIdentifier(connection)
            let member = companyOf[key].flatMap { companies[$0]?.members[key] }
            await companion.received(type: type, data: data, on: connection, member: member)
        case .unknown(let type):
            connection.send(text: RealtimeClientMessage.errorFrame("UNKNOWN_MESSAGE_TYPE", "unknown message type \(type.prefix(40))"))
        }
    }
}
