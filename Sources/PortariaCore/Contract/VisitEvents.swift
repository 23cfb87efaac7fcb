import Foundation

/// The `type` of a visit event: in the event log, on `/v1/realtime`, and in what the
/// push layer reacts to. One spelling for server and apps.
///
/// A client meeting a type this version does not know ignores it (`init?(rawValue:)`
/// is nil), as the realtime contract asks.
public enum VisitEventType: String, Sendable, Codable, CaseIterable {
    /// The gate page created a visit (a delivery left at the concierge by its rule is
    /// created and resolved in the same commit).
    case created = "visit.created"
    /// A ring step started: `data.user_ids` are being rung.
    case ringing = "visit.ringing"
    /// A resident picked up (`data.by`, `data.device_id`): the others stop ringing.
    case answered = "visit.answered"
    /// A resident rejected the call (`data.by`).
    case declined = "visit.declined"
    /// Some phones stop ringing (`data.reason`, `data.user_ids`, `data.answered_by`).
    case ringCancelled = "visit.ring_cancelled"
    /// Nobody answered within the window: the visit became a pendência.
    case unanswered = "visit.unanswered"
    /// Someone (or the delivery rule) decided (`data.action`, `by`, `at`, `via`).
    case resolved = "visit.resolved"
    /// The visitor gave up at the gate.
    case cancelled = "visit.cancelled"
    /// 24 h passed without a resolution.
    case expired = "visit.expired"
    /// The visitor attached a photo.
    case photoAdded = "visit.photo_added"
    /// The visitor left a voice message.
    case voiceMessageAdded = "visit.voice_message_added"

    /// Whether the visit can no longer be decided after this event.
    public var closesVisit: Bool {
        switch self {
        case .resolved, .cancelled, .expired: return true
        case .created, .ringing, .answered, .declined, .ringCancelled, .unanswered, .photoAdded, .voiceMessageAdded: return false
        }
    }
}

/// The `data` of a visit event as apps read it. Every event names its visit, unit,
/// kind and the status after the change; the rest depends on the type. Unknown members
/// are ignored, missing optional ones are nil: older apps keep working when the server
/// adds detail.
public struct VisitEventData: Sendable, Equatable, Codable {
    public var visitID: String
    public var unitID: String?
    public var unitLabel: String?
    public var kind: VisitKind?
    /// The visit's status after this event.
    public var status: VisitStatus?
    /// `visit.ringing` and `visit.ring_cancelled`: whose phones this is about.
    public var userIDs: [String]?
    /// `visit.ring_cancelled`.
    public var reason: RingCancelReason?
    /// `visit.ring_cancelled` with reason `answered_elsewhere`.
    public var answeredBy: PersonRef?
    /// `visit.answered`, `visit.declined`, `visit.resolved`: who.
    public var by: PersonRef?
    /// `visit.answered`: the device that picked up (the call goes to that one device).
    public var deviceID: String?
    /// `visit.resolved`.
    public var action: ResolutionAction?
    public var at: Date?
    public var via: ResolutionChannel?
    /// `visit.ringing`: the ring step (0-based).
    public var step: Int?
    /// `visit.created` and `visit.ringing`: who is at the gate, and where.
    public var visitorName: String?
    public var carrier: String?
    public var geofence: GeofenceResult?
    /// `visit.ringing`: when this step stops ringing, and when the whole ring window ends.
    public var stepExpiresAt: Date?
    public var ringDeadline: Date?
    /// `visit.resolved` by the unit's delivery rule (`via: auto`): the residents to inform,
    /// since nobody was asked.
    public var notifyUserIDs: [String]?

    public init(visitID: String, unitID: String? = nil, unitLabel: String? = nil, kind: VisitKind? = nil,
                status: VisitStatus? = nil, userIDs: [String]? = nil, reason: RingCancelReason? = nil,
                answeredBy: PersonRef? = nil, by: PersonRef? = nil, deviceID: String? = nil,
                action: ResolutionAction? = nil, at: Date? = nil, via: ResolutionChannel? = nil, step: Int? = nil,
                visitorName: String? = nil, carrier: String? = nil, geofence: GeofenceResult? = nil,
                stepExpiresAt: Date? = nil, ringDeadline: Date? = nil, notifyUserIDs: [String]? = nil) {
        self.visitID = visitID
        self.unitID = unitID
        self.unitLabel = unitLabel
        self.kind = kind
        self.status = status
        self.userIDs = userIDs
        self.reason = reason
        self.answeredBy = answeredBy
        self.by = by
        self.deviceID = deviceID
        self.action = action
        self.at = at
        self.via = via
        self.step = step
        self.visitorName = visitorName
        self.carrier = carrier
        self.geofence = geofence
        self.stepExpiresAt = stepExpiresAt
        self.ringDeadline = ringDeadline
        self.notifyUserIDs = notifyUserIDs
    }

    enum CodingKeys: String, CodingKey {
        case visitID = "visit_id", unitID = "unit_id", unitLabel = "unit_label", kind, status
        case userIDs = "user_ids", reason, answeredBy = "answered_by", by, deviceID = "device_id"
        case action, at, via, step, visitorName = "visitor_name", carrier, geofence
        case stepExpiresAt = "step_expires_at", ringDeadline = "ring_deadline", notifyUserIDs = "notify_user_ids"
    }

    // Lenient on the optional members: a value this version cannot read (a new reason,
    // a new status) becomes nil instead of losing the whole event.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        visitID = try container.decode(String.self, forKey: .visitID)
        unitID = container.lenient(.unitID)
        unitLabel = container.lenient(.unitLabel)
        kind = container.lenient(.kind)
        status = container.lenient(.status)
        userIDs = container.lenient(.userIDs)
        reason = container.lenient(.reason)
        answeredBy = container.lenient(.answeredBy)
        by = container.lenient(.by)
        deviceID = container.lenient(.deviceID)
        action = container.lenient(.action)
        at = container.lenient(.at)
        via = container.lenient(.via)
        step = container.lenient(.step)
        visitorName = container.lenient(.visitorName)
        carrier = container.lenient(.carrier)
        geofence = container.lenient(.geofence)
        stepExpiresAt = container.lenient(.stepExpiresAt)
        ringDeadline = container.lenient(.ringDeadline)
        notifyUserIDs = container.lenient(.notifyUserIDs)
    }

    /// The resolution a `visit.resolved` event carries.
    public var resolution: VisitResolution? {
        guard let action, let by, let at, let via else { return nil }
        return VisitResolution(action: action, by: by, at: at, via: via)
    }
}

extension KeyedDecodingContainer {
    /// The member at `key`, or nil when it is absent, null or a value this version cannot read.
    func lenient<Value: Decodable>(_ key: Key) -> Value? {
        try? decodeIfPresent(Value.self, forKey: key)
    }
}
