import Foundation
import Observation
import PortariaCore

// A screen's view model: plain observable state (`@Observable`, from the Swift standard
// library's Observation module — no UIKit, no SwiftUI; SwiftUI observes it directly, a
// UIKit shell uses `withObservationTracking`) and intents that call the core. It runs on
// the main actor because that is where the screen reads it; the work it starts runs in
// the core's actors.

@MainActor @Observable
public final class CallViewModel {
    public private(set) var state: CallScreenState
    @ObservationIgnored let visitID: String
    @ObservationIgnored let dispatch: @MainActor (CallEvent) -> Void
    @ObservationIgnored let setMuted: @MainActor (Bool) -> Void
    @ObservationIgnored let makeKey: @Sendable () -> String

    /// - Parameters:
    ///   - dispatch: hands an event to the owner of the `IncomingCallCoordinator`, which
    ///     performs the effects and calls `update` with the new record.
    ///   - setMuted: the media layer's microphone switch.
    public init(record: CallRecord, dispatch: @escaping @MainActor (CallEvent) -> Void,
                setMuted: @escaping @MainActor (Bool) -> Void,
                makeKey: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() }) {
        state = CallScreenState(record)
        visitID = record.visitID
        self.dispatch = dispatch
        self.setMuted = setMuted
        self.makeKey = makeKey
    }

    /// The coordinator's record changed (visit details arrived, the phase moved).
    public func update(_ record: CallRecord) {
        state = CallScreenState(record, isMuted: state.isMuted, message: state.message)
    }

    /// The microphone changed outside this screen (CallKit's own mute button): the button
    /// follows without switching the microphone again.
    public func muteChanged(_ muted: Bool) {
        state.isMuted = muted
    }

    /// A `.show` effect: the sentence over the call screen ("João já atendeu às 14:32").
    public func show(_ message: String) {
        state.message = message
    }

    public func perform(_ intent: CallIntent) {
        if case .setMuted(let muted) = intent {
            state.isMuted = muted
            setMuted(muted)
            return
        }
        guard state.actions.contains(where: { $0.intent == intent }),
              let event = intent.event(visitID: visitID, key: makeKey()) else { return }
        dispatch(event)
    }
}
