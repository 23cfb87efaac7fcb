import Foundation
import PortariaCore

/// Calls across instances (PostgreSQL; decision 0056): a call's state lives on the
/// instance that claimed it; the others forward their participants' frames and presence
/// to it over `portaria_calls` and deliver what it sends them.
extension CallFeedState {
    /// On PostgreSQL a call's state lives on one instance: the first that holds one of its
    /// participants and claims it in `calls`. Returns whether this instance owns it; if
    /// another does, the participants connected here are announced to it.
    func claimCall(visitID: String, companyID: String, resident: CallPeer) async throws -> Bool {
        let local = [CallPeer.visitor(visitID: visitID), resident].filter { isLocal($0, companyID: companyID) }
        // Any instance following the company may claim, participants here or not: when none
        // holds one at this moment (the gate page reconnecting while the resident answers
        // from a VoIP push, before the app has a socket) the call must still exist, as on
        // SQLite; the first insert wins and participants reach the owner through presence.
        guard let call = try await callStore.claim(visitID: visitID, companyID: companyID, resident: resident,
                                                   instance: instanceID, at: Date()) else { return false }
        if call.owner == instanceID {
            ownedCalls[visitID] = OwnedCall(companyID: companyID)
            // A participant whose socket opened elsewhere before this claim was committed
            // found no call then: its instance hears of it now.
            try await send(.init(kind: .claimed, visitID: visitID, companyID: companyID, from: instanceID, peer: resident))
            return true
        }
        remoteCalls[visitID] = call
        for peer in local where call.isParticipant(peer) {
            try await send(.init(kind: .presence, visitID: visitID, companyID: companyID, from: instanceID,
                                 to: call.owner, peer: peer, present: true))
        }
        return false
    }

    /// Tells the owners of calls `peer` takes part in that its first socket here opened
    /// (looking the calls up: the call may have started before the socket came) or that
    /// its last one closed.
    func announce(_ peer: CallPeer, companyID: String, present: Bool) async throws {
        var known = remoteCalls.values.filter { $0.companyID == companyID && $0.isParticipant(peer) }
        if present {
            for call in try await callStore.calls(of: peer, companyID: companyID, notOwnedBy: instanceID)
            where ownedCalls[call.visitID] == nil && remoteCalls[call.visitID] == nil {
                remoteCalls[call.visitID] = call
                known.append(call)
            }
        }
        for call in known {
            try await send(.init(kind: .presence, visitID: call.visitID, companyID: companyID, from: instanceID,
                                 to: call.owner, peer: peer, present: present))
        }
    }

    func isLocal(_ peer: CallPeer, companyID: String) -> Bool {
        socketsOfPeer[peer]?.values.contains(companyID) == true
    }

    /// Whether another instance holds a socket of `peer` in a call owned here.
    func isRemotelyPresent(_ peer: CallPeer) -> Bool {
        ownedCalls.values.contains { $0.remote[peer]?.isEmpty == false }
    }

    /// A frame the registry here addressed to `peer`, for the instances that hold it.
    func relayFrame(_ frame: CallFrame, data: JSONValue, to peer: CallPeer) async throws {
        let ownedCalls = ownedCalls
        guard let visitID = CallRelayRoute.visitID(for: frame, owned: Array(ownedCalls.keys),
                                                    peerIsElsewhere: { ownedCalls[$0]?.remote[peer]?.isEmpty == false }),
              let owned = ownedCalls[visitID] else { return }
        try await send(.init(kind: .frame, visitID: visitID, companyID: owned.companyID, from: instanceID,
                             peer: peer, type: frame.type, data: data.jsonText))
    }

    /// A validated frame from a socket here for a call this instance does not hold: to its
    /// owner if the sender takes part in it, else the same `CALL_NOT_FOUND` as for no call.
    func forward(_ signal: CallSignal, type: String, data: [UInt8], from peer: CallPeer, companyID: String) async throws {
        var call = remoteCalls[signal.visitID]
        if call == nil, let stored = try await callStore.call(visitID: signal.visitID),
           stored.owner != instanceID, stored.companyID == companyID, stored.isParticipant(peer) {
            // The call began before this instance heard of it: say who is here first.
            remoteCalls[signal.visitID] = stored
            call = stored
            try await send(.init(kind: .presence, visitID: stored.visitID, companyID: companyID, from: instanceID,
                                 to: stored.owner, peer: peer, present: true))
        }
        guard let call, call.companyID == companyID, call.isParticipant(peer) else {
            try await perform([.send(.error(CallSession.notFound(signal.type, signal.visitID)), to: peer)])
            return
        }
        try await send(.init(kind: .signal, visitID: call.visitID, companyID: companyID, from: instanceID,
                             to: call.owner, peer: peer, type: type, data: String(decoding: data, as: UTF8.self)))
    }

    func send(_ message: CallRelayMessage) async throws {
        try await callStore.send(message, at: Date())
    }

    /// A notification on `portaria_calls`. What is not for this instance is dropped before
    /// any database read.
    func relayed(_ payload: String) async throws {
        guard let routing = CallRelayMessage.parse(payload), routing.from != instanceID else { return }
        switch routing.kind {
        case .signal, .presence:
            guard routing.to == instanceID, let owned = ownedCalls[routing.visitID], owned.companyID == routing.companyID,
                  let session = await calls.session(of: routing.visitID), session.isParticipant(routing.peer) else { return }
            if routing.kind == .presence {
                try await presence(of: routing.peer, on: routing.from, visitID: routing.visitID, present: routing.present ?? false)
                return
            }
            guard let message = try await whole(routing), let type = message.type, let data = message.data else { return }
            try await perform(await calls.receive(type: type, data: Array(data.utf8), from: routing.peer))
        case .closed:
            // The log, not the message, says whether the visit closed.
            guard routing.to == instanceID, ownedCalls[routing.visitID]?.companyID == routing.companyID,
                  try await feed.visitIsClosed(routing.visitID) else { return }
            try await perform(await calls.close(visitID: routing.visitID))
        case .claimed:
            guard case .resident = routing.peer, ownedCalls[routing.visitID] == nil else { return }
            let call = CallRelayStore.Call(visitID: routing.visitID, companyID: routing.companyID, owner: routing.from, resident: routing.peer)
            for peer in [CallPeer.visitor(visitID: routing.visitID), routing.peer] where isLocal(peer, companyID: routing.companyID) {
                remoteCalls[routing.visitID] = call
                try await send(.init(kind: .presence, visitID: routing.visitID, companyID: routing.companyID, from: instanceID,
                                     to: routing.from, peer: peer, present: true))
            }
        case .frame:
            guard isLocal(routing.peer, companyID: routing.companyID) else { return }
            guard let message = try await whole(routing), let type = message.type, let text = message.data,
                  let data = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(text.utf8)) else { return }
            for member in sockets(of: routing.peer) where member.subscriber.companyID == routing.companyID {
                member.connection.send(text: JSONValue.object([
                    "type": .string(type), "seq": .number(Double(member.lastDelivered)), "data": data,
                ]).jsonText)
            }
            if type == CallMessageType.ended.rawValue { remoteCalls.removeValue(forKey: routing.visitID) }
        }
    }

    /// The message itself: inline, or fetched from `call_relay` when it was too large.
    func whole(_ routing: CallRelayMessage) async throws -> CallRelayMessage? {
        guard let ref = routing.ref else { return routing }
        guard let message = try await callStore.body(ref),
              message.kind == routing.kind, message.visitID == routing.visitID, message.companyID == routing.companyID,
              message.from == routing.from, message.peer == routing.peer else { return nil }
        return message
    }

    /// A participant's sockets came or went on another instance: the registry hears of it
    /// when the participant is connected nowhere else (or no longer anywhere).
    func presence(of peer: CallPeer, on instance: String, visitID: String, present: Bool) async throws {
        let wasPresent = isConnectedHere(peer) || isRemotelyPresent(peer)
        if present {
            ownedCalls[visitID]?.remote[peer, default: []].insert(instance)
        } else {
            ownedCalls[visitID]?.remote[peer]?.remove(instance)
        }
        let isPresent = isConnectedHere(peer) || isRemotelyPresent(peer)
        if isPresent && !wasPresent {
            // A participant back (or connected elsewhere) gets what was queued for it.
            try await perform(await calls.participantJoined(peer))
        } else if wasPresent && !isPresent {
            try await perform(await calls.participantLeft(peer))
        }
    }
}
