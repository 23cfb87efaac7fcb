import Foundation

/// The lifecycle of a visit, as stored and shown.
public enum VisitStatus: String, Sendable, Codable, CaseIterable {
    /// Residents are being rung.
    case ringing
    /// A resident picked up; the visit waits for their decision.
    case answered
    /// Nobody answered within the ring window: a pendência.
    case unanswered
    /// Authorized, denied or left at the concierge (terminal).
    case resolved
    /// The visitor gave up (terminal).
    case cancelled
    /// Unresolved 24 h after it began (terminal).
    case expired

    public var isTerminal: Bool {
        switch self {
        case .ringing, .answered, .unanswered: return false
        case .resolved, .cancelled, .expired: return true
        }
    }
}

/// What the resident (or the delivery rule) decided.
public enum ResolutionAction: String, Sendable, Codable, CaseIterable {
    case authorize
    case deny
    case leaveAtConcierge = "leave_at_concierge"
}

/// How a resolution reached the server.
public enum ResolutionChannel: String, Sendable, Codable, CaseIterable {
    /// From inside the app (visit screen, call screen).
    case app
    /// From a notification action without opening the app.
    case notification
    /// From the call screen while in a call.
    case call
    /// By the concierge console.
    case `operator`
    /// By the server itself (the unit's delivery rule).
    case auto
}

/// Who did something to a visit.
public struct PersonRef: Sendable, Equatable, Hashable, Codable {
    public var id: String
    public var name: String
    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }

    /// The actor of automatic resolutions (delivery rules). Not a user.
    public static let automatic = PersonRef(id: "auto", name: "Portaria automática")
}

/// A visit's resolution: `{action, by: {id, name}, at, via}`.
public struct VisitResolution: Sendable, Equatable, Codable {
    public var action: ResolutionAction
    public var by: PersonRef
    public var at: Date
    public var via: ResolutionChannel

    public init(action: ResolutionAction, by: PersonRef, at: Date, via: ResolutionChannel) {
        self.action = action
        self.by = by
        self.at = at
        self.via = via
    }
}

/// Why residents' phones stop ringing for a visit.
public enum RingCancelReason: String, Sendable, Codable, CaseIterable {
    /// Another resident picked up.
    case answeredElsewhere = "answered_elsewhere"
    /// Someone resolved it (one-tap action) while it rang.
    case resolved
    /// Sequential ringing moved on to the next resident.
    case nextStep = "next_step"
    /// The ring window ended without an answer.
    case timeout
    /// The visitor cancelled.
    case cancelled
    /// 24 h passed.
    case expired
}

/// Inputs of the visit state machine.
public enum VisitEvent: Sendable, Equatable {
    /// The scheduler rings the next residents.
    case ringStep(userIDs: [String])
    /// A resident picked up the call.
    case answer(by: PersonRef, at: Date)
    /// A resident rejected the call (hang up without deciding).
    case decline(by: PersonRef, at: Date)
    /// The ring window ended without an answer.
    case windowClosed(at: Date)
    /// A resident, an operator or the delivery rule decided.
    case resolve(VisitResolution)
    /// The visitor gave up at the gate.
    case cancel(at: Date)
    /// 24 h passed without a resolution.
    case expire(at: Date)

    /// A short name for errors and logs.
    public var name: String {
        switch self {
        case .ringStep: return "ring_step"
        case .answer: return "answer"
        case .decline: return "decline"
        case .windowClosed: return "window_closed"
        case .resolve: return "resolve"
        case .cancel: return "cancel"
        case .expire: return "expire"
        }
    }
}

/// Outputs of the state machine: what the owner must do (write, publish, stop ringing).
public enum VisitAction: Sendable, Equatable {
    case ring(userIDs: [String])
    case stopRinging(reason: RingCancelReason)
    case recordAnswer(PersonRef)
    case recordDecline(PersonRef)
    /// The current ring step is over for this resident; move on now.
    case advanceRing
    /// The visit became a pendência.
    case becamePending
    case resolved(VisitResolution)
    case cancelled
    case expired
}

/// An event the current state does not accept.
public enum VisitTransitionError: Error, Sendable, Equatable {
    /// Someone already decided: the loser is told who and when.
    case alreadyResolved(VisitResolution)
    /// Another resident already picked up.
    case alreadyAnswered(by: PersonRef)
    /// The event makes no sense in this state (e.g. ringing a cancelled visit).
    case illegal(from: VisitStatus, event: String)
}

/// A visit's state with the data each state carries.
public enum VisitState: Sendable, Equatable {
    case ringing
    case answered(by: PersonRef, at: Date)
    case unanswered(at: Date)
    case resolved(VisitResolution)
    case cancelled(at: Date)
    case expired(at: Date)

    public var status: VisitStatus {
        switch self {
        case .ringing: return .ringing
        case .answered: return .answered
        case .unanswered: return .unanswered
        case .resolved: return .resolved
        case .cancelled: return .cancelled
        case .expired: return .expired
        }
    }
}

/// The visit state machine: a pure value, events in, new state and actions out. The
/// `VisitService` actor owns the I/O (one transaction per accepted event).
///
///     ringing → answered → resolved
///     ringing → unanswered → resolved
///     ringing | answered | unanswered → cancelled (visitor) | expired (24 h)
///     ringing → resolved (one-tap delivery action while it rings)
public struct VisitMachine: Sendable, Equatable {
    public private(set) var state: VisitState
    /// `ask_then_concierge` deliveries: when nobody answers, the server leaves the
    /// parcel at the concierge instead of leaving a pendência.
    public let leaveAtConciergeWhenUnanswered: Bool

    public init(state: VisitState = .ringing, leaveAtConciergeWhenUnanswered: Bool = false) {
        self.state = state
        self.leaveAtConciergeWhenUnanswered = leaveAtConciergeWhenUnanswered
    }

    /// Applies `event`; on error the state is unchanged.
    public mutating func handle(_ event: VisitEvent) throws(VisitTransitionError) -> [VisitAction] {
        switch (state, event) {
        // Ringing
        case (.ringing, .ringStep(let users)):
            return [.ring(userIDs: users)]
        case (.ringing, .answer(let by, let at)):
            state = .answered(by: by, at: at)
            return [.stopRinging(reason: .answeredElsewhere), .recordAnswer(by)]
        case (.ringing, .decline(let by, _)):
            return [.recordDecline(by), .advanceRing]
        case (.ringing, .windowClosed(let at)):
            if leaveAtConciergeWhenUnanswered {
                let resolution = VisitResolution(action: .leaveAtConcierge, by: .automatic, at: at, via: .auto)
                state = .resolved(resolution)
                return [.stopRinging(reason: .timeout), .resolved(resolution)]
            }
            state = .unanswered(at: at)
            return [.stopRinging(reason: .timeout), .becamePending]
        case (.ringing, .resolve(let resolution)):
            state = .resolved(resolution)
            return [.stopRinging(reason: .resolved), .resolved(resolution)]
        case (.ringing, .cancel(let at)):
            state = .cancelled(at: at)
            return [.stopRinging(reason: .cancelled), .cancelled]
        case (.ringing, .expire(let at)):
            state = .expired(at: at)
            return [.stopRinging(reason: .expired), .expired]

        // Answered: the call is up; only a decision, the visitor or the clock end it.
        case (.answered(let by, _), .answer), (.answered(let by, _), .decline):
            throw .alreadyAnswered(by: by)
        case (.answered, .ringStep), (.answered, .windowClosed):
            throw .illegal(from: .answered, event: event.name)

        // Unanswered: a pendência, resolved later from the list.
        case (.unanswered, .ringStep), (.unanswered, .answer), (.unanswered, .decline), (.unanswered, .windowClosed):
            throw .illegal(from: .unanswered, event: event.name)

        // Answered or unanswered, nothing rings any more: the end needs no stopRinging.
        case (.answered, .resolve(let resolution)), (.unanswered, .resolve(let resolution)):
            state = .resolved(resolution)
            return [.resolved(resolution)]
        case (.answered, .cancel(let at)), (.unanswered, .cancel(let at)):
            state = .cancelled(at: at)
            return [.cancelled]
        case (.answered, .expire(let at)), (.unanswered, .expire(let at)):
            state = .expired(at: at)
            return [.expired]

        // Terminal states.
        case (.resolved(let resolution), .resolve), (.resolved(let resolution), .answer),
             (.resolved(let resolution), .decline):
            throw .alreadyResolved(resolution)
        case (.resolved, .ringStep), (.resolved, .windowClosed), (.resolved, .cancel), (.resolved, .expire):
            throw .illegal(from: .resolved, event: event.name)
        case (.cancelled, _):
            throw .illegal(from: .cancelled, event: event.name)
        case (.expired, _):
            throw .illegal(from: .expired, event: event.name)
        }
    }
}
