import Foundation
import Observation
import PortariaCore

// A screen's view model: plain observable state (`@Observable`, from the Swift standard
// library's Observation module — no UIKit, no SwiftUI; SwiftUI observes it directly, a
// UIKit shell uses `withObservationTracking`) and intents that call the core. It runs on
// the main actor because that is where the screen reads it; the work it starts runs in
// the core's actors.

@MainActor @Observable
public final class HomeViewModel {
    public private(set) var state: HomeState
    /// The sentence of the last decision (a toast): success, someone else first, queued.
    public private(set) var lastOutcome: String?
    @ObservationIgnored let queue: ResolveQueue
    @ObservationIgnored let companyID: @Sendable () async -> String?
    @ObservationIgnored let now: @Sendable () -> Date

    public init(queue: ResolveQueue, timeZone: TimeZone, companyID: @escaping @Sendable () async -> String?,
                now: @escaping @Sendable () -> Date = { Date() }) {
        state = HomeState(timeZone: timeZone)
        self.queue = queue
        self.companyID = companyID
        self.now = now
    }

    /// Feed every `RealtimeClient` update here.
    public func apply(_ update: RealtimeClient.Update) { state.apply(update, now: now()) }

    /// A decision button on a row: written to the durable queue at once, then sent; the
    /// sentence is what the user reads (never a status code), and a decision that could
    /// not be sent stays listed as queued.
    public func resolve(visitID: String, action: ResolutionAction, until deadline: Date? = nil) async {
        do {
            let report = try await queue.resolve(visitID: visitID, action: action, companyID: await companyID(),
                                                 until: deadline ?? now().addingTimeInterval(30))
            lastOutcome = report.sentence
        } catch {
            lastOutcome = ClientText.queued(action, because: .needsLogin)
        }
        await refreshQueued()
    }

    /// What the queue still holds (call on launch and foreground, after `sync`).
    public func refreshQueued() async {
        state.setQueued((try? await queue.pending()) ?? [])
    }
}
