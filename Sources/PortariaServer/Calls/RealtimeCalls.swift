import Foundation
import PortariaCore
import PortariaWebSocket

/// Video calls over the realtime feed (decision 0009): the feed's companion that relays
/// signalling between the gate page and the device that answered. It rides the feed's
/// task (`CallFeedState`), so call frames and visit events reach a socket in order.
struct RealtimeCalls: RealtimeCompanion {
    /// The calls in progress on this instance.
    let calls: LiveCallRegistry
    /// Names this process in the calls it owns across instances (decision 0056).
    let instanceID: String
    let database: any SQLDatabase
    let log: Log

    /// Longest a stop waits for the calls' last frames, timeline rows and ownership
    /// releases: a database that does not answer must not hold the stop.
    static let endCallsTimeout: Duration = .seconds(3)

    /// `residentRelayOnly`: forward only TURN relay candidates from residents to visitors
    /// (`CandidatePrivacy`); off only with `--calls-allow-direct` (decision 0066).
    init(database: any SQLDatabase, residentRelayOnly: Bool = true, log: Log = .shared,
         instanceID: String = UUID().uuidString.lowercased()) {
        self.calls = LiveCallRegistry(clock: ContinuousClock(), residentRelayOnly: residentRelayOnly)
        self.instanceID = instanceID
        self.database = database
        self.log = log
    }

    /// The call timers (negotiation, reconnection grace, maximum length).
    func start(enqueue: @escaping @Sendable (any Sendable) -> Void) -> [Task<Void, Never>] {
        let calls = calls
        return [Task {
            await calls.run(every: .milliseconds(500)) { directives in
                if !directives.isEmpty { enqueue(CallCommand.perform(directives)) }
            }
        }]
    }

    /// Ends this instance's calls as the feed's last work (decision 0056): both sides get
    /// `call.ended` (`server_shutdown`) now rather than after their own timeouts — a
    /// participant on another instance through the relay, while the database and the
    /// listener still run (the feed stops first) — the timeline says why, and the `calls`
    /// rows go. The directives run on the feed's task, in order after what is queued.
    func stop(enqueue: @escaping @Sendable (any Sendable) -> Void) async {
        let directives = await calls.closeAll()
        guard !directives.isEmpty else { return }
        let (performed, finish) = AsyncStream<Never>.makeStream()
        enqueue(CallCommand.end(directives, done: { finish.finish() }))
        let timeout = Task {
            try? await Task.sleep(for: Self.endCallsTimeout)
            finish.finish()
        }
        for await _ in performed {}
        timeout.cancel()
    }

    func makeState(feed: FeedState) -> any RealtimeCompanionState {
        CallFeedState(feed: feed, calls: calls, instanceID: instanceID, log: log)
    }
}

/// What the calls put on the feed's queue.
enum CallCommand: Sendable {
    /// Directives of the call timers.
    case perform([CallDirective])
    /// A `portaria_calls` notification from another instance (decision 0056).
    case relayed(String)
    /// The calls' last directives before a stop; `done` runs once they are performed.
    case end([CallDirective], done: @Sendable () -> Void)
}

extension RealtimeFeed {
    /// A call message from another instance (the `portaria_calls` channel).
    public func relayed(_ payload: String) { enqueue(CallCommand.relayed(payload)) }
}

extension Subscriber {
    /// Who this socket is in a video call.
    public var callPeer: CallPeer? {
        switch role {
        case .visitor(let visitID): return .visitor(visitID: visitID)
        case .resident, .companyWide: return userID.map { .resident(userID: $0, deviceID: deviceID ?? "default") }
        }
    }
}

extension FeedState.Member {
    var peer: CallPeer? { subscriber.callPeer }
}

/// Which call a frame for a participant travels under to the instances holding that
/// participant's other sockets (decision 0056): the frame's own call — a resident may take
/// part in two calls owned here (two visits at once), and a frame of one must not travel
/// under the other's id. An error frame that names no visit goes with the first owned call
/// (by visit id) in which the participant is connected elsewhere.
enum CallRelayRoute {
    static func visitID(for frame: CallFrame, owned: [String], peerIsElsewhere: (String) -> Bool) -> String? {
        if let visitID = frame.visitID {
            return owned.contains(visitID) && peerIsElsewhere(visitID) ? visitID : nil
        }
        return owned.sorted().first(where: peerIsElsewhere)
    }
}
