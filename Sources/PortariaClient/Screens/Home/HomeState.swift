import Foundation
import PortariaCore

// Screen state as plain values (no UIKit/SwiftUI): a shell wraps them in its observable
// type and renders. Each state changes only through `apply`, so it is tested like the
// state machines.

/// One visit as a list row.
public struct VisitRow: Sendable, Equatable, Identifiable {
    public var id: String
    /// "Pedro", "Loggi — João".
    public var title: String
    /// "A-101 · Entrega · 14:32".
    public var subtitle: String
    public var status: VisitStatus
    /// "Tocando", "Sem resposta", "Autorizada por Maria às 14:35", …
    public var statusText: String
    public var geofenceBadge: String
    public var hasVoiceMessage: Bool
    /// What VoiceOver/TalkBack reads for the whole row.
    public var accessibilityLabel: String

    init(_ visit: Visit, timeZone: TimeZone) {
        id = visit.id
        kind = visit.kind
        title = [visit.carrier, visit.visitorName].compactMap { $0 }.joined(separator: " — ")
        let kind = ClientText.kindWord(visit.kind)
        subtitle = "\(visit.unit.label) · \(kind) · \(ResolutionText.clock(visit.createdAt, timeZone: timeZone))"
        status = visit.status
        statusText = ClientText.visitStatus(visit.status, resolution: visit.resolution, at: visit.updatedAt, timeZone: timeZone)
        geofenceBadge = visit.geofenceBadge
        hasVoiceMessage = visit.voiceMessage != nil
        accessibilityLabel = ClientText.visitRowAccessibility(title: title, subtitle: subtitle, status: statusText, voice: hasVoiceMessage)
    }

    /// A decision button of the row (or of its notification), with what a screen reader says.
    public struct RowAction: Sendable, Equatable {
        public var action: ResolutionAction
        public var title: String
        public var accessibilityLabel: String
    }

    /// The decisions still possible: a delivery's three, a visit's two; none once closed.
    public var actions: [RowAction] {
        guard !status.isTerminal else { return [] }
        let decisions: [ResolutionAction] = kind == .delivery ? [.authorize, .leaveAtConcierge, .deny] : [.authorize, .deny]
        return decisions.map { RowAction(action: $0, title: ClientText.actionTitle($0),
                                         accessibilityLabel: ClientText.decisionAccessibility($0, subject: title)) }
    }

    public var kind: VisitKind

    mutating func update(status: VisitStatus, resolution: VisitResolution?, at: Date, timeZone: TimeZone) {
        self.status = status
        statusText = ClientText.visitStatus(status, resolution: resolution, at: at, timeZone: timeZone)
        accessibilityLabel = ClientText.visitRowAccessibility(title: title, subtitle: subtitle, status: statusText, voice: hasVoiceMessage)
    }
}

/// Home: visits ringing now, pendências (unanswered, with their voice messages) on top,
/// history below, decisions still queued, and the connection state — all visible.
public struct HomeState: Sendable, Equatable {
    public private(set) var connection: ConnectionState = .offline
    public var connectionText: String { ClientText.connection(connection) }
    public private(set) var ringing: [VisitRow] = []
    public private(set) var pending: [VisitRow] = []
    public private(set) var history: [VisitRow] = []
    /// Decisions tapped but not confirmed yet, with the sentence to show.
    public private(set) var queued: [String] = []
    public let timeZone: TimeZone

    public init(timeZone: TimeZone = ResolveQueue.defaultTimeZone) {
        self.timeZone = timeZone
    }

    /// - Parameter now: when the update arrived (events carry no time of their own except
    ///   resolutions); injected so the state is a pure function of its inputs.
    public mutating func apply(_ update: RealtimeClient.Update, now: Date) {
        switch update {
        case .state(let state):
            connection = state
        case .snapshot(let pendingVisits, let recent):
            // REST is the truth: the lists are rebuilt, not merged.
            pending = pendingVisits.map { VisitRow($0, timeZone: timeZone) }
            ringing = recent.filter { !$0.status.isTerminal && $0.status != .unanswered }.map { VisitRow($0, timeZone: timeZone) }
            history = recent.filter(\.status.isTerminal).map { VisitRow($0, timeZone: timeZone) }
        case .event(let type, _, let data):
            apply(type, data, now: now)
        case .call:
            break
        }
    }

    /// What the resolve queue still holds (`ResolveQueue.pending()` mapped by the shell).
    public mutating func setQueued(_ items: [QueuedResolution]) {
        queued = items.map { ClientText.queued($0.action, because: $0.lastProblem ?? .unreachable) }
    }

    private mutating func apply(_ type: VisitEventType, _ data: VisitEventData, now: Date) {
        let at = data.at ?? now
        let timeZone = timeZone
        switch type {
        case .created:
            guard row(data.visitID) == nil else { return }
            let visit = Visit(id: data.visitID, companyID: "", unit: UnitSummary(id: data.unitID ?? "", label: data.unitLabel ?? ""),
                              kind: data.kind ?? .visit, visitorName: data.visitorName ?? "", carrier: data.carrier,
                              status: .ringing, geofence: data.geofence ?? .unknown, photo: nil, voiceMessage: nil, attempts: [],
                              answeredBy: nil, resolution: nil, ringDeadline: data.ringDeadline, expiresAt: at, createdAt: at, updatedAt: at)
            ringing.insert(VisitRow(visit, timeZone: timeZone), at: 0)
        case .answered:
            mutate(data.visitID) { $0.update(status: .answered, resolution: nil, at: at, timeZone: timeZone) }
        case .unanswered:
            if var row = take(data.visitID) {
                row.update(status: .unanswered, resolution: nil, at: at, timeZone: timeZone)
                pending.insert(row, at: 0)
            }
        case .resolved, .cancelled, .expired:
            let status: VisitStatus = type == .resolved ? .resolved : type == .cancelled ? .cancelled : .expired
            if var row = take(data.visitID) {
                row.update(status: status, resolution: data.resolution, at: data.at ?? at, timeZone: timeZone)
                history.insert(row, at: 0)
            }
        case .voiceMessageAdded:
            mutate(data.visitID) {
                $0.hasVoiceMessage = true
                $0.accessibilityLabel = ClientText.visitRowAccessibility(title: $0.title, subtitle: $0.subtitle, status: $0.statusText, voice: true)
            }
        case .ringing, .declined, .ringCancelled, .photoAdded:
            break
        }
    }

    private func row(_ id: String) -> VisitRow? {
        (ringing + pending + history).first { $0.id == id }
    }

    private mutating func take(_ id: String) -> VisitRow? {
        if let index = ringing.firstIndex(where: { $0.id == id }) { return ringing.remove(at: index) }
        if let index = pending.firstIndex(where: { $0.id == id }) { return pending.remove(at: index) }
        return nil
    }

    private mutating func mutate(_ id: String, _ change: (inout VisitRow) -> Void) {
        if let index = ringing.firstIndex(where: { $0.id == id }) { change(&ringing[index]) }
        if let index = pending.firstIndex(where: { $0.id == id }) { change(&pending[index]) }
    }
}
