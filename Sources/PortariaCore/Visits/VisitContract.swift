import Foundation

/// A visitor or a courier.
public enum VisitKind: String, Sendable, Codable, CaseIterable {
    case visit
    case delivery
}

/// A unit's delivery rule.
public enum DeliveryRule: String, Sendable, Codable, CaseIterable {
    /// Ring and ask, like a visit.
    case ask
    /// Ring and ask; if nobody answers within the window, leave it at the concierge.
    case askThenConcierge = "ask_then_concierge"
    /// Never ring: leave it at the concierge at once and inform the residents.
    case leaveAtConcierge = "leave_at_concierge"
}

/// How a unit's residents are rung.
public enum RingMode: String, Sendable, Codable, CaseIterable {
    /// One resident at a time in ring order, each for the step timeout.
    case sequential
    /// Everyone at once.
    case simultaneous
}

/// What happened in a visit's timeline (`visit_attempts`).
public enum AttemptKind: String, Sendable, Codable, CaseIterable {
    case ring
    case pushSent = "push_sent"
    case pushReceipt = "push_receipt"
    case answer
    case decline
    case timeout
    case resolution
    case cancel
    case expire
    /// The video call between the gate page and the answering device.
    case callStarted = "call_started"
    case callConnected = "call_connected"
    case callEnded = "call_ended"
}

/// One entry of the attempts timeline.
public struct VisitAttempt: Sendable, Equatable, Codable {
    public var id: String
    public var kind: AttemptKind
    /// The resident rung, answering or deciding; nil for visitor and server entries.
    public var user: PersonRef?
    public var deviceID: String?
    /// `push`, `realtime`, `app`, `notification`, `call`, `operator`, `auto`, `visitor`, `scheduler`.
    public var channel: String?
    /// The ring step (0-based) for ring and timeout entries.
    public var step: Int?
    public var detail: String?
    public var at: Date

    enum CodingKeys: String, CodingKey {
        case id, kind, user, channel, step, detail, at
        case deviceID = "device_id"
    }

    public init(id: String, kind: AttemptKind, user: PersonRef?, deviceID: String?, channel: String?,
                step: Int?, detail: String?, at: Date) {
        self.id = id
        self.kind = kind
        self.user = user
        self.deviceID = deviceID
        self.channel = channel
        self.step = step
        self.detail = detail
        self.at = at
    }
}

/// A recorded file attached to a visit, served only to the unit's residents and the
/// company's operators.
public struct VisitMediaInfo: Sendable, Equatable, Codable {
    public var url: String
    public var contentType: String
    public var byteSize: Int
    /// Voice messages only.
    public var durationMs: Int?
    public var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case url
        case contentType = "content_type"
        case byteSize = "byte_size"
        case durationMs = "duration_ms"
        case createdAt = "created_at"
    }

    public init(url: String, contentType: String, byteSize: Int, durationMs: Int?, createdAt: Date) {
        self.url = url
        self.contentType = contentType
        self.byteSize = byteSize
        self.durationMs = durationMs
        self.createdAt = createdAt
    }
}

/// A visit as residents and operators see it (`GET /v1/visits/{id}`).
public struct Visit: Sendable, Equatable, Codable {
    public var id: String
    public var companyID: String
    public var unit: UnitSummary
    public var kind: VisitKind
    public var visitorName: String
    public var carrier: String?
    public var status: VisitStatus
    public var geofence: GeofenceResult
    /// The pt-BR badge for `geofence`, ready to show.
    public var geofenceBadge: String
    public var photo: VisitMediaInfo?
    public var voiceMessage: VisitMediaInfo?
    public var attempts: [VisitAttempt]
    public var answeredBy: PersonRef?
    public var resolution: VisitResolution?
    /// When ringing stops (ring window end); nil once it no longer rings.
    public var ringDeadline: Date?
    /// When an unresolved visit expires (24 h after it began).
    public var expiresAt: Date
    public var createdAt: Date
    public var updatedAt: Date

    enum CodingKeys: String, CodingKey {
        case id, unit, kind, carrier, status, geofence, photo, attempts, resolution
        case companyID = "company_id"
        case visitorName = "visitor_name"
        case geofenceBadge = "geofence_badge"
        case voiceMessage = "voice_message"
        case answeredBy = "answered_by"
        case ringDeadline = "ring_deadline"
        case expiresAt = "expires_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    public init(id: String, companyID: String, unit: UnitSummary, kind: VisitKind, visitorName: String,
                carrier: String?, status: VisitStatus, geofence: GeofenceResult, photo: VisitMediaInfo?,
                voiceMessage: VisitMediaInfo?, attempts: [VisitAttempt], answeredBy: PersonRef?,
                resolution: VisitResolution?, ringDeadline: Date?, expiresAt: Date, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.companyID = companyID
        self.unit = unit
        self.kind = kind
        self.visitorName = visitorName
        self.carrier = carrier
        self.status = status
        self.geofence = geofence
        self.geofenceBadge = geofence.badge
        self.photo = photo
        self.voiceMessage = voiceMessage
        self.attempts = attempts
        self.answeredBy = answeredBy
        self.resolution = resolution
        self.ringDeadline = ringDeadline
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A resolution as the visitor sees it: what was decided and when, never by whom.
public struct PublicResolution: Sendable, Equatable, Codable {
    public var action: ResolutionAction
    public var at: Date
}

/// A visit as the gate page sees it (visitor token): no resident names, no timeline.
public struct PublicVisit: Sendable, Equatable, Codable {
    public var id: String
    public var unit: UnitSummary
    public var kind: VisitKind
    public var visitorName: String
    public var carrier: String?
    public var status: VisitStatus
    public var geofence: GeofenceResult
    public var hasPhoto: Bool
    public var hasVoiceMessage: Bool
    public var resolution: PublicResolution?
    public var expiresAt: Date
    public var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case id, unit, kind, carrier, status, geofence, resolution
        case visitorName = "visitor_name"
        case hasPhoto = "has_photo"
        case hasVoiceMessage = "has_voice_message"
        case expiresAt = "expires_at"
        case createdAt = "created_at"
    }

    public init(_ visit: Visit) {
        id = visit.id
        unit = visit.unit
        kind = visit.kind
        visitorName = visit.visitorName
        carrier = visit.carrier
        status = visit.status
        geofence = visit.geofence
        hasPhoto = visit.photo != nil
        hasVoiceMessage = visit.voiceMessage != nil
        resolution = visit.resolution.map { PublicResolution(action: $0.action, at: $0.at) }
        expiresAt = visit.expiresAt
        createdAt = visit.createdAt
    }
}

/// `GET /v1/gates/{gate_token}`: what the gate page needs to offer the units — never
/// who lives there.
public struct GateInfo: Sendable, Equatable, Codable {
    public struct Company: Sendable, Equatable, Codable {
        public var name: String
        public init(name: String) { self.name = name }
    }
    public var company: Company
    public var units: [UnitSummary]
    public init(company: Company, units: [UnitSummary]) {
        self.company = company
        self.units = units
    }
}

/// `POST /v1/gates/{gate_token}/visits`.
public struct CreateVisitRequest: Sendable, Equatable, Codable {
    public var unitID: String
    public var kind: VisitKind
    public var visitorName: String
    public var carrier: String?
    public var location: VisitorLocation?

    enum CodingKeys: String, CodingKey {
        case kind, carrier, location
        case unitID = "unit_id"
        case visitorName = "visitor_name"
    }
}

/// 201 answer of `POST /v1/gates/{gate_token}/visits`.
public struct CreateVisitResponse: Sendable, Equatable, Codable {
    public var visit: PublicVisit
    /// Opaque; `Authorization: Bearer <visitor_token>` on `/v1/visitor/visit…`. Only
    /// its hash is stored; it works for this one visit only.
    public var visitorToken: String

    enum CodingKeys: String, CodingKey {
        case visit
        case visitorToken = "visitor_token"
    }

    public init(visit: PublicVisit, visitorToken: String) {
        self.visit = visit
        self.visitorToken = visitorToken
    }
}

/// `POST /v1/visits/{id}/resolve`.
public struct ResolveVisitRequest: Sendable, Equatable, Codable {
    public var action: ResolutionAction
    /// Where the decision was taken; `app` when absent. `auto` is the server's own.
    public var via: ResolutionChannel?

    public init(action: ResolutionAction, via: ResolutionChannel? = nil) {
        self.action = action
        self.via = via
    }
}

/// `POST /v1/visits/{id}/answer` and `/decline` (the body is optional).
public struct CallActionRequest: Sendable, Equatable, Codable {
    public var deviceID: String?
    enum CodingKeys: String, CodingKey { case deviceID = "device_id" }
    public init(deviceID: String? = nil) { self.deviceID = deviceID }
}

/// `GET /v1/visits` answer.
public struct VisitPage: Sendable, Equatable, Codable {
    public var visits: [Visit]
    /// Pass as `cursor` for the next page; nil on the last page.
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case visits
        case nextCursor = "next_cursor"
    }

    public init(visits: [Visit], nextCursor: String?) {
        self.visits = visits
        self.nextCursor = nextCursor
    }
}

/// `GET/PUT /v1/units/{id}/settings`.
public struct UnitSettings: Sendable, Equatable, Codable {
    public var deliveryRule: DeliveryRule
    /// Resident user ids in ring order.
    public var ringOrder: [String]
    public var ringMode: RingMode
    public var ringStepSeconds: Int
    public var ringWindowSeconds: Int

    enum CodingKeys: String, CodingKey {
        case deliveryRule = "delivery_rule"
        case ringOrder = "ring_order"
        case ringMode = "ring_mode"
        case ringStepSeconds = "ring_step_seconds"
        case ringWindowSeconds = "ring_window_seconds"
    }

    public static let defaultStepSeconds = 20
    public static let defaultWindowSeconds = 60
    public static let stepRange = 5...120
    public static let windowRange = 10...600

    public init(deliveryRule: DeliveryRule, ringOrder: [String], ringMode: RingMode,
                ringStepSeconds: Int = defaultStepSeconds, ringWindowSeconds: Int = defaultWindowSeconds) {
        self.deliveryRule = deliveryRule
        self.ringOrder = ringOrder
        self.ringMode = ringMode
        self.ringStepSeconds = ringStepSeconds
        self.ringWindowSeconds = ringWindowSeconds
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        deliveryRule = try container.decode(DeliveryRule.self, forKey: .deliveryRule)
        ringOrder = try container.decode([String].self, forKey: .ringOrder)
        ringMode = try container.decode(RingMode.self, forKey: .ringMode)
        ringStepSeconds = try container.decodeIfPresent(Int.self, forKey: .ringStepSeconds) ?? Self.defaultStepSeconds
        ringWindowSeconds = try container.decodeIfPresent(Int.self, forKey: .ringWindowSeconds) ?? Self.defaultWindowSeconds
    }
}

/// The settings answer: the settings plus the unit's residents, for the settings screen.
public struct UnitSettingsResponse: Sendable, Equatable, Codable {
    public var unitID: String
    public var settings: UnitSettings
    public var residents: [PersonRef]

    enum CodingKeys: String, CodingKey {
        case settings, residents
        case unitID = "unit_id"
    }

    public init(unitID: String, settings: UnitSettings, residents: [PersonRef]) {
        self.unitID = unitID
        self.settings = settings
        self.residents = residents
    }
}

/// pt-BR strings about resolutions, shared by server (the 409 message) and app.
public enum ResolutionText {
    /// "Maria já autorizou às 14:32" — what the resident who lost the race sees, with
    /// the time in the company's time zone.
    public static func alreadyResolved(_ resolution: VisitResolution, timeZone: TimeZone) -> String {
        sentence(resolution, timeZone: timeZone, already: "já ")
    }

    /// "Maria autorizou às 14:32" — a decision as news, in the company's time zone: the
    /// line that replaces a delivery notification once someone else (or the unit's
    /// delivery rule) decided it, and a resolved visit's status. Unlike `alreadyResolved`
    /// it is not a refusal, so there is no "já".
    public static func notice(_ resolution: VisitResolution, timeZone: TimeZone) -> String {
        sentence(resolution, timeZone: timeZone, already: "")
    }

    private static func sentence(_ resolution: VisitResolution, timeZone: TimeZone, already: String) -> String {
        let time = clock(resolution.at, timeZone: timeZone)
        if resolution.via == .auto {
            return "Deixado na portaria automaticamente às \(time)"
        }
        let who = firstName(resolution.by.name)
        switch resolution.action {
        case .authorize: return "\(who) \(already)autorizou às \(time)"
        case .deny: return "\(who) \(already)negou às \(time)"
        case .leaveAtConcierge: return "\(who) pediu para deixar na portaria às \(time)"
        }
    }

    /// "Maria já atendeu às 14:32" — the visit was picked up by someone else.
    public static func alreadyAnswered(by person: PersonRef, at: Date, timeZone: TimeZone) -> String {
        "\(firstName(person.name)) já atendeu às \(clock(at, timeZone: timeZone))"
    }

    /// `HH:mm` in `timeZone` (24-hour, as Brazil writes it).
    public static func clock(_ date: Date, timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }

    /// "Maria Souza" → "Maria": how residents of one household refer to each other.
    public static func firstName(_ name: String) -> String {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        return trimmed.split(separator: " ").first.map(String.init) ?? trimmed
    }
}
