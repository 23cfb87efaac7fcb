import Foundation
import PortariaCore

/// The visit detail screen: who, the photo taken at the gate, where the visitor was
/// (distance and direction from the gate), the voice message, the decision, and every
/// step of the timeline — rings, pushes and their receipts, answers, the decision.
public struct VisitDetailState: Sendable, Equatable {
    public struct TimelineEntry: Sendable, Equatable, Identifiable {
        public var id: String
        public var kind: AttemptKind
        /// "14:32 · Tocou para Maria (etapa 1)".
        public var text: String
    }

    public var visitID: String
    public var title: String
    /// "A-101 · Entrega · 14:31".
    public var subtitle: String
    public var statusText: String
    /// Absolute URL of the gate photo (the server's path resolved against its base URL);
    /// nil when none was taken (or retention removed it).
    public var photoURL: URL?
    public var photoAccessibilityLabel: String
    /// "A 340m da portaria, a nordeste", "Na entrada (a 10m da portaria)".
    public var locationText: String
    public var locationAccessibilityLabel: String
    public var distanceM: Int?
    /// Degrees clockwise from north, for a compass arrow; nil when unknown.
    public var bearingDeg: Int?
    public var badgeText: String
    public var voiceMessageURL: URL?
    public var voiceMessageDurationText: String?
    public var timeline: [TimelineEntry]
    /// The decisions still possible (none once closed).
    public var actions: [VisitRow.RowAction]

    public init(_ visit: Visit, baseURL: URL, timeZone: TimeZone) {
        let row = VisitRow(visit, timeZone: timeZone)
        visitID = visit.id
        title = row.title
        subtitle = row.subtitle
        statusText = row.statusText
        actions = row.actions
        photoURL = visit.photo.flatMap { Self.resolve($0.url, against: baseURL) }
        photoAccessibilityLabel = photoURL == nil ? ClientText.noPhoto : "\(ClientText.photoAccessibility): \(row.title)"
        locationText = ClientText.location(visit.geofence)
        locationAccessibilityLabel = ClientText.badgeAccessibility(locationText)
        distanceM = visit.geofence.distanceM
        bearingDeg = visit.geofence.status == .unknown ? nil : visit.geofence.bearingDeg
        badgeText = visit.geofenceBadge
        voiceMessageURL = visit.voiceMessage.flatMap { Self.resolve($0.url, against: baseURL) }
        voiceMessageDurationText = visit.voiceMessage?.durationMs.map { milliseconds in
            let seconds = max(1, Int((Double(milliseconds) / 1000).rounded()))
            return seconds < 60 ? "\(seconds)s" : "\(seconds / 60)min \(seconds % 60)s"
        }
        timeline = visit.attempts.sorted { ($0.at, $0.id) < ($1.at, $1.id) }
            .map { TimelineEntry(id: $0.id, kind: $0.kind, text: ClientText.attempt($0, timeZone: timeZone, resolution: visit.resolution)) }
    }

    /// The server gives media as paths under its own origin (`/v1/visits/…/photo`); an
    /// absolute `https` URL is kept only on the server's own host, so a visit record can
    /// never make the app fetch from somewhere else.
    static func resolve(_ text: String, against baseURL: URL) -> URL? {
        if text.hasPrefix("/") { return URL(string: text, relativeTo: baseURL)?.absoluteURL }
        guard let url = URL(string: text), url.host == baseURL.host, url.scheme == baseURL.scheme else { return nil }
        return url
    }
}
