import Foundation
import PortariaCore

/// What the realtime layer must do after a call event.
public enum CallDirective: Sendable, Equatable {
    /// Send a frame `{"type": frame.type, "seq": …, "data": frame.encodedData()}` to
    /// every socket of that participant. Call frames are addressed to one peer; they
    /// are not part of the replayable visit event log (the session queues what an
    /// absent participant missed and delivers it on `participantJoined`).
    case send(CallFrame, to: CallPeer)
    /// Append to the visit's attempts timeline.
    case record(CallTimelineRecord)
}

/// A timeline entry with what only the registry knows: how long media could flow.
public struct CallTimelineRecord: Sendable, Equatable {
    public var entry: CallTimelineEntry
    /// For `.ended` of a call that connected: from the first answer to the end.
    public var connectedFor: Duration?
}

/// Why `CallRegistry.start` refused.
public enum CallRegistryError: Error, Sendable, Equatable {
    /// Another device already holds this visit's call.
    case callInProgress(resident: CallPeer)
}

/// The calls in progress on this instance, by visit id, with their timers on an
/// injected clock (`ContinuousClock` in production, a manual one in tests).
///
/// Every method returns the directives to perform instead of doing I/O itself, so the
/// actor never waits on a socket while holding the calls. Timers fire through
/// `expireDue()`, which `run(every:perform:)` calls periodically.
///
/// Sessions live in memory on the instance that owns the call: with several instances,
/// the realtime layer routes `call.*` frames for a visit to that instance and its frames
/// back over NOTIFY (`CallFeedState+Relay`, decision 0056).
public actor CallRegistry<C: Clock> where C.Duration == Duration {
    private struct Entry {
        var session: CallSession
        var deadlines: [CallTimer: C.Instant] = [:]
        var connectedAt: C.Instant?
    }

    public let clock: C
    public let limits: CallSession.Limits
    public let signalLimits: CallSignal.Limits
    private var entries: [String: Entry] = [:]

    /// Forward only TURN relay candidates from residents to visitors (`CandidatePrivacy`);
    /// on when TURN is configured.
    public let residentRelayOnly: Bool

    public init(clock: C, limits: CallSession.Limits = .init(), signalLimits: CallSignal.Limits = .init(),
                residentRelayOnly: Bool = false) {
        self.residentRelayOnly = residentRelayOnly
        self.clock = clock
        self.limits = limits
        self.signalLimits = signalLimits
    }

    /// Starts the call of `visitID` between its visitor page and the resident device
    /// that answered. Call it when the visit is answered (the other devices get
    /// `visit.ring_cancelled` with `answered_elsewhere`). Starting again for the same
    /// device is harmless (a retried answer); another device gets `.callInProgress`.
    public func start(visitID: String, resident: CallPeer, residentPresent: Bool = true) throws(CallRegistryError) -> [CallDirective] {
        if let existing = entries[visitID] {
            guard existing.session.resident == resident else {
                throw .callInProgress(resident: existing.session.resident)
            }
            return []
        }
        let (session, actions) = CallSession.start(visitID: visitID, resident: resident,
                                                   residentPresent: residentPresent, limits: limits)
        entries[visitID] = Entry(session: session)
        return perform(actions, visitID: visitID)
    }

    /// The one entry point for a `call.*` frame from a socket: parses and validates
    /// `data`, then routes it to the call of its `visit_id` if `peer` is part of it.
    /// Bad input and strangers get one `error` frame back; nothing reaches the other side.
    public func receive(type: String, data: [UInt8], from peer: CallPeer) -> [CallDirective] {
        do {
            return handle(try CallSignal.decode(type: type, data: data, limits: signalLimits), from: peer)
        } catch {
            return [.send(.error(error.error), to: peer)]
        }
    }

    /// A validated frame from `peer`.
    public func handle(_ signal: CallSignal, from peer: CallPeer) -> [CallDirective] {
        guard entries[signal.visitID] != nil else {
            return [.send(.error(CallSession.notFound(signal.type, signal.visitID)), to: peer)]
        }
        var signal = signal
        if residentRelayOnly, peer.role == .resident {
            // A host or server-reflexive candidate names the resident's network: dropped.
            guard let filtered = CandidatePrivacy.forVisitor(signal) else { return [] }
            signal = filtered
        }
        return apply(CallEvent(signal, from: peer), to: signal.visitID)
    }

    /// A socket of `peer` opened (or authenticated): delivers what it missed.
    public func participantJoined(_ peer: CallPeer) -> [CallDirective] {
        visits(of: peer).flatMap { apply(.participantJoined(peer), to: $0) }
    }

    /// The last socket of `peer` closed: its calls wait `reconnectGrace` for it.
    public func participantLeft(_ peer: CallPeer) -> [CallDirective] {
        visits(of: peer).flatMap { apply(.participantLeft(peer), to: $0) }
    }

    /// Ends the call of `visitID` from the server side (visit resolved or cancelled).
    public func close(visitID: String, reason: CallEndReason = .visitClosed) -> [CallDirective] {
        guard entries[visitID] != nil else { return [] }
        return apply(.close(reason), to: visitID)
    }

    /// Ends every call (shutdown), telling both sides.
    public func closeAll(reason: CallEndReason = .serverShutdown) -> [CallDirective] {
        entries.keys.sorted().flatMap { apply(.close(reason), to: $0) }
    }

    /// Fires every timer whose deadline has passed on the clock.
    public func expireDue() -> [CallDirective] {
        let now = clock.now
        var due: [(C.Instant, String, CallTimer)] = []
        for (visitID, entry) in entries {
            for (timer, deadline) in entry.deadlines where deadline <= now { due.append((deadline, visitID, timer)) }
        }
        // Earliest first, so two timers of one call fire in the order they expired.
        due.sort { $0.0 < $1.0 }
        var directives: [CallDirective] = []
        for (_, visitID, timer) in due where entries[visitID]?.deadlines[timer] != nil {
            entries[visitID]?.deadlines[timer] = nil
            directives += apply(.timeout(timer), to: visitID)
        }
        return directives
    }

    /// The earliest pending deadline, if any.
    public func nextDeadline() -> C.Instant? {
        entries.values.flatMap(\.deadlines.values).min()
    }

    /// Where the call of `visitID` is; nil when there is none (ended calls are dropped).
    public func state(of visitID: String) -> CallSession.State? { entries[visitID]?.session.state }

    /// The session itself, for inspection.
    public func session(of visitID: String) -> CallSession? { entries[visitID]?.session }

    public var activeCalls: Int { entries.count }

    /// Drives the timers until the task is cancelled: every `interval`, fires what is
    /// due and hands the directives to `perform`. A tick rather than a sleep until the
    /// next deadline keeps deadlines added meanwhile simple; half a second of slack on
    /// 30-second timeouts is irrelevant.
    public func run(every interval: Duration = .milliseconds(500),
                    perform: @Sendable ([CallDirective]) async -> Void) async {
        while !Task.isCancelled {
            do { try await clock.sleep(for: interval) } catch { return }
            let directives = expireDue()
            if !directives.isEmpty { await perform(directives) }
        }
    }

    // MARK: - Internals

    private func visits(of peer: CallPeer) -> [String] {
        entries.filter { $0.value.session.isParticipant(peer) }.keys.sorted()
    }

    private func apply(_ event: CallEvent, to visitID: String) -> [CallDirective] {
        guard var entry = entries[visitID] else { return [] }
        let actions = entry.session.handle(event)
        entries[visitID] = entry
        return perform(actions, visitID: visitID)
    }

    /// Turns session actions into timers kept here and directives for the caller.
    private func perform(_ actions: [CallAction], visitID: String) -> [CallDirective] {
        var directives: [CallDirective] = []
        for action in actions {
            switch action {
            case .send(let frame, let peer):
                directives.append(.send(frame, to: peer))
            case .startTimer(let timer, let duration):
                entries[visitID]?.deadlines[timer] = clock.now.advanced(by: duration)
            case .cancelTimer(let timer):
                entries[visitID]?.deadlines[timer] = nil
            case .record(let entry):
                var record = CallTimelineRecord(entry: entry)
                switch entry {
                case .connected:
                    entries[visitID]?.connectedAt = clock.now
                case .ended:
                    if let connectedAt = entries[visitID]?.connectedAt { record.connectedFor = connectedAt.duration(to: clock.now) }
                case .started:
                    break
                }
                directives.append(.record(record))
            case .finished:
                entries[visitID] = nil
            }
        }
        return directives
    }
}

/// The registry `portaria serve` runs.
public typealias LiveCallRegistry = CallRegistry<ContinuousClock>
