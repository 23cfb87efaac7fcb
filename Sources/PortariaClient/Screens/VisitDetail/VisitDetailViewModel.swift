import Foundation
import Observation
import PortariaCore

// A screen's view model: plain observable state (`@Observable`, from the Swift standard
// library's Observation module — no UIKit, no SwiftUI; SwiftUI observes it directly, a
// UIKit shell uses `withObservationTracking`) and intents that call the core. It runs on
// the main actor because that is where the screen reads it; the work it starts runs in
// the core's actors.

@MainActor @Observable
public final class VisitDetailViewModel {
    public private(set) var state: VisitDetailState?
    public private(set) var isLoading = false
    public private(set) var error: String?
    public private(set) var lastOutcome: String?
    @ObservationIgnored let visitID: String
    @ObservationIgnored let api: ResidentAPI
    @ObservationIgnored let queue: ResolveQueue
    @ObservationIgnored let baseURL: URL
    @ObservationIgnored let timeZone: TimeZone

    public init(visitID: String, api: ResidentAPI, queue: ResolveQueue, baseURL: URL, timeZone: TimeZone) {
        self.visitID = visitID
        self.api = api
        self.queue = queue
        self.baseURL = baseURL
        self.timeZone = timeZone
    }

    public func load() async {
        isLoading = true
        defer { isLoading = false }
        do {
            let visit = try await api.visit(visitID)
            state = VisitDetailState(visit, baseURL: baseURL, timeZone: timeZone)
            error = nil
        } catch {
            self.error = ClientText.loadError
        }
    }

    /// A decision from the detail screen: through the queue, then the visit is read again.
    public func resolve(_ action: ResolutionAction, companyID: String?, until deadline: Date? = nil) async {
        do {
            let report = try await queue.resolve(visitID: visitID, action: action, companyID: companyID,
                                                 until: deadline ?? Date().addingTimeInterval(30))
            lastOutcome = report.sentence
        } catch {
            lastOutcome = ClientText.queued(action, because: .needsLogin)
        }
        await load()
    }
}
