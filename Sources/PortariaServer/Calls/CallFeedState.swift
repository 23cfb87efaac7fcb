import Foundation
import PortariaCore
import PortariaWebSocket

/// The calls' state on the realtime feed's task: opens a call when a device answers,
/// ends it when the visit closes, routes `call.*` frames to the registry and performs
/// its directives on the participants' sockets and the visit's timeline.
final class CallFeedState: RealtimeCompanionState {
    unowned let feed: FeedState
    let calls: LiveCallRegistry
    let log: Log

    // MARK: Calls across instances (PostgreSQL; decision 0056)

    /// Whether other instances may hold a call's other participant.
    let relaysCalls: Bool
    let instanceID: String
    let callStore: CallRelayStore
    /// Open sockets of each call participant (socket → its company): a relayed frame for
    /// nobody here costs a lookup, and finding a participant's sockets costs their number,
    /// not a walk over every socket of the instance (a socket leaving asks it).
    var socketsOfPeer: [CallPeer: [ObjectIdentifier: String]] = [:]
    /// Calls owned here: their company, and the other instances that hold a participant.
    struct OwnedCall {
        var companyID: String
        var remote: [CallPeer: Set<String>] = [:]
    }
    var ownedCalls: [String: OwnedCall] = [:]
    /// Calls another instance owns that a socket here takes part in, by visit.
    var remoteCalls: [String: CallRelayStore.Call] = [:]

    init(feed: FeedState, calls: LiveCallRegistry, instanceID: String, log: Log) {
        self.feed = feed
        self.calls = calls
        self.relaysCalls = feed.database.dialect.isSharedByInstances
        self.instanceID = instanceID
        self.callStore = CallRelayStore(database: feed.database)
        self.log = log
    }

    func handle(_ message: any Sendable) async throws {
        guard let command = message as? CallCommand else { return }
        switch command {
        case .perform(let directives): try await perform(directives)
        case .relayed(let payload): try await relayed(payload)
        case .end(let directives, let done):
            defer { done() }
            try await perform(directives)
        }
    }

    // MARK: Sockets

    func joined(_ member: FeedState.Member) async throws {
        guard let peer = member.peer else { return }
        socketsOfPeer[peer, default: [:]][ObjectIdentifier(member.connection)] = member.subscriber.companyID
        try await perform(await calls.participantJoined(peer))
        if relaysCalls, socketsOfPeer[peer]?.count == 1 { try await announce(peer, companyID: member.subscriber.companyID, present: true) }
    }

    func left(_ member: FeedState.Member) async {
        guard let peer = member.peer else { return }
        socketsOfPeer[peer]?.removeValue(forKey: ObjectIdentifier(member.connection))
        if socketsOfPeer[peer]?.isEmpty == true { socketsOfPeer.removeValue(forKey: peer) }
        // The call hears of a participant leaving only when its last socket closed.
        if !isConnectedHere(peer) {
            // Still connected to another instance: the call waits for nothing.
            if !isRemotelyPresent(peer) { try? await perform(await calls.participantLeft(peer)) }
            if relaysCalls { try? await announce(peer, companyID: member.subscriber.companyID, present: false) }
        }
    }

    /// Whether `peer` has a socket on this instance: a lookup, whatever the number of its
    /// sockets (an operator console may hold thousands under one participant).
    func isConnectedHere(_ peer: CallPeer) -> Bool { socketsOfPeer[peer] != nil }

    func sockets(of peer: CallPeer) -> [FeedState.Member] {
        guard let sockets = socketsOfPeer[peer] else { return [] }
        return sockets.compactMap { socket, companyID in feed.companies[companyID]?.members[socket] }
    }

    func checkingSessions() async {
        guard relaysCalls else { return }
        // Housekeeping must not cost the session check below its turn.
        do { try await callStore.sweep(now: Date()) } catch {
            log.error("call relay sweep failed", ["error": .string(String(describing: error))])
        }
    }

    // MARK: Following visits

    /// A call opens before anyone hears visit.answered: the gate page sends its offer the
    /// moment that frame arrives, and found no call (CALL_NOT_FOUND) when the call was
    /// opened after the delivery.
    func willDeliver(_ event: EventRecord) async {
        if event.visitEventType == .answered { await followCallLogged(event) }
    }

    /// Closing a call follows the delivery: the closing frame goes out first.
    func didDeliver(_ event: EventRecord) async {
        if event.visitEventType != .answered { await followCallLogged(event) }
    }

    /// One failed call update must not stop the others (nor the next batch).
    private func followCallLogged(_ event: EventRecord) async {
        do { try await followCall(event) } catch {
            log.error("call update failed", ["visit_id": event.visitID.map(JSONValue.string) ?? .null, "error": .string(String(describing: error))])
        }
    }

    /// Opens the call when a device answers and ends it when the visit closes (the feed
    /// then closes the gate page's sockets).
    func followCall(_ event: EventRecord) async throws {
        guard let visitID = event.visitID else { return }
        switch event.visitEventType {
        case .answered?:
            guard let userID = event.data["by"]?["id"]?.stringValue else { return }
            let peer = CallPeer.resident(userID: userID, deviceID: event.data["device_id"]?.stringValue ?? "default")
            if relaysCalls, try await !claimCall(visitID: visitID, companyID: event.companyID, resident: peer) { return }
            do {
                try await perform(try await calls.start(visitID: visitID, resident: peer, residentPresent: isConnectedHere(peer)))
            } catch {
                log.warning("call not started", ["visit_id": .string(visitID), "error": .string(String(describing: error))])
            }
        case .resolved?, .cancelled?, .expired?:
            if relaysCalls, let call = remoteCalls.removeValue(forKey: visitID) {
                try await send(.init(kind: .closed, visitID: visitID, companyID: call.companyID, from: instanceID,
                                     to: call.owner, peer: call.resident))
            }
            try await perform(await calls.close(visitID: visitID))
        default:
            break
        }
    }

    // MARK: Frames from clients

    func received(type: String, data: [UInt8], on connection: WebSocketConnection, member: FeedState.Member?) async {
        guard let member, let peer = member.peer else {
            connection.send(text: RealtimeClientMessage.errorFrame("CALL_NOT_FOUND", "this socket is not part of a call"))
            return
        }
        let signal: CallSignal
        do { signal = try CallSignal.decode(type: type, data: data, limits: calls.signalLimits) } catch {
            try? await perform([.send(.error(error.error), to: peer)])
            return
        }
        if relaysCalls, await calls.session(of: signal.visitID) == nil {
            try? await forward(signal, type: type, data: data, from: peer, companyID: member.subscriber.companyID)
            return
        }
        try? await perform(await calls.handle(signal, from: peer))
    }

    // MARK: Directives

    func perform(_ directives: [CallDirective]) async throws {
        for directive in directives {
            switch directive {
            case .send(let frame, let peer):
                let data = (try? JSONDecoder().decode(JSONValue.self, from: Data(frame.encodedData()))) ?? .object([:])
                for member in sockets(of: peer) {
                    member.connection.send(text: JSONValue.object([
                        "type": .string(frame.type), "seq": .number(Double(member.lastDelivered)), "data": data,
                    ]).jsonText)
                }
                // Like a socket write, a failed relay loses this frame only: the directives
                // after it (the timeline row) still run.
                if relaysCalls {
                    do { try await relayFrame(frame, data: data, to: peer) } catch {
                        log.error("call frame relay failed", ["type": .string(frame.type), "error": .string(String(describing: error))])
                    }
                }
            case .record(let record):
                // The frames matter more than the timeline row: a failed insert is logged,
                // the remaining directives still run.
                do { try await recordAttempt(record) } catch {
                    log.error("call timeline write failed", ["error": .string(String(describing: error))])
                }
                if relaysCalls, case .ended(let visitID, _, _, _) = record.entry, ownedCalls.removeValue(forKey: visitID) != nil {
                    do { try await callStore.ended(visitID: visitID, owner: instanceID) } catch {
                        log.error("call ownership release failed", ["visit_id": .string(visitID), "error": .string(String(describing: error))])
                    }
                }
            }
        }
    }

    /// Calls land in the visit's attempts timeline.
    func recordAttempt(_ record: CallTimelineRecord) async throws {
        let at = Date()
        switch record.entry {
        case .started(let visitID, let resident):
            guard case .resident(let userID, let deviceID) = resident, let visitID = VisitID(rawValue: visitID) else { return }
            try await feed.database.write { db in
                try VisitStore.insertAttempt(db, visitID: visitID, kind: .callStarted, user: PersonRef(id: userID, name: ""),
                                             deviceID: deviceID, channel: "call", at: at)
            }
        case .connected(let visitID):
            guard let visitID = VisitID(rawValue: visitID) else { return }
            try await feed.database.write { db in
                try VisitStore.insertAttempt(db, visitID: visitID, kind: .callConnected, channel: "call", at: at)
            }
        case .ended(let visitID, let reason, let endedBy, let wasConnected):
            // The reason as `call.ended` spells it (`server_shutdown`), never the Swift case name.
            var detail = reason.rawValue
            if let endedBy { detail += " by \(endedBy.rawValue)" }
            if wasConnected, let length = record.connectedFor { detail += " after \(length.components.seconds)s" }
            guard let visitID = VisitID(rawValue: visitID) else { return }
            let text = detail
            try await feed.database.write { db in
                try VisitStore.insertAttempt(db, visitID: visitID, kind: .callEnded, channel: "call", detail: text, at: at)
            }
        }
    }
}
