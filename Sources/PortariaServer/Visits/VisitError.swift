import Foundation
import PortariaCore

/// Every way a visit capability refuses, as domain cases. The service throws these; the
/// router renders them (`RenderableError`), and this conformance is the one place that
/// spells each case's status, code, message and details (docs/openapi.yaml catalogue).
enum VisitError: RenderableError {
    case gateNotFound
    case visitNotFound
    case mediaNotFound(MediaKind)
    /// The unit is not one of this gate's company.
    case unknownUnit
    case invalidCursor
    /// Too many requests from one address (gate views, visits, unknown tokens) or one
    /// visitor token (tickets).
    case rateLimited(retryAfter: Int)
    /// The unit or the gate took all the rings its cap allows this minute, from every
    /// address together. The message is the visitor's own sentence (pt-BR): the gate page
    /// shows it as it comes.
    case targetBusy(RingTarget, retryAfter: Int)
    /// An address or a visit uploaded its share of the building's media quota (`MediaShares`).
    case mediaShareSpent(MediaShareScope, retryAfter: Int)
    /// A visitor token used all its uploads.
    case uploadsSpent(limit: Int, retryAfter: Int)
    /// Cancelled or expired: nothing more happens to the visit.
    case closed(VisitStatus)
    /// Answered or resolved: its photo and voice message are evidence now.
    case mediaFrozen(VisitStatus)
    /// Somebody else decided first (the resident who lost the race sees who and when).
    case alreadyResolved(VisitResolution, timeZone: TimeZone)
    case alreadyAnswered(by: PersonRef, at: Date, timeZone: TimeZone)
    /// The action makes no sense in this state (`VISIT_CLOSED` when the visit is over,
    /// `VISIT_NOT_RINGING` otherwise).
    case notAllowed(event: String, status: VisitStatus)
    /// Relay credentials for a visitor whose visit has no live call.
    case callNotActive(VisitStatus)
    case mediaQuotaExceeded(quotaBytes: Int)
    case mediaTooLarge(MediaKind)
    case mediaTooLong(MediaKind, milliseconds: Int)
    case mediaUnrecognized(MediaKind)
    case mediaMalformed(MediaKind, reason: String)

    /// The race a resident lost, or the state that refuses the action.
    init(_ error: VisitTransitionError, row: VisitRow) {
        switch error {
        case .alreadyResolved(let resolution): self = .alreadyResolved(resolution, timeZone: row.zone)
        case .alreadyAnswered(let by): self = .alreadyAnswered(by: by, at: row.answeredAt ?? row.updatedAt, timeZone: row.zone)
        case .illegal(let from, let event): self = .notAllowed(event: event, status: from)
        }
    }

    var status: Int {
        switch self {
        case .gateNotFound, .visitNotFound, .mediaNotFound: return 404
        case .unknownUnit, .invalidCursor, .mediaTooLong, .mediaMalformed: return 400
        case .rateLimited, .uploadsSpent, .targetBusy, .mediaShareSpent: return 429
        case .closed, .mediaFrozen, .alreadyResolved, .alreadyAnswered, .notAllowed, .callNotActive: return 409
        case .mediaQuotaExceeded: return 507
        case .mediaTooLarge: return 413
        case .mediaUnrecognized: return 415
        }
    }

    var code: ErrorCode {
        switch self {
        case .gateNotFound, .visitNotFound, .mediaNotFound: return .notFound
        case .unknownUnit, .invalidCursor, .mediaTooLong, .mediaMalformed: return .invalidRequest
        case .rateLimited, .uploadsSpent, .targetBusy, .mediaShareSpent: return .rateLimited
        case .closed: return .visitClosed
        case .mediaFrozen: return .visitMediaFrozen
        case .alreadyResolved: return .visitAlreadyResolved
        case .alreadyAnswered: return .visitAlreadyAnswered
        case .notAllowed(_, let status): return status.isTerminal ? .visitClosed : .visitNotRinging
        case .callNotActive: return .callNotActive
        case .mediaQuotaExceeded: return .mediaQuotaExceeded
        case .mediaTooLarge: return .payloadTooLarge
        case .mediaUnrecognized: return .unsupportedMediaType
        }
    }

    var message: String {
        switch self {
        case .gateNotFound: return "gate not found"
        case .visitNotFound: return "visit not found"
        case .mediaNotFound(let kind): return "\(kind.rawValue) not found"
        case .unknownUnit: return "unit_id is not a unit of this gate"
        case .invalidCursor: return "cursor is not a cursor this server issued"
        case .rateLimited: return "too many requests from this address; try again later"
        case .targetBusy(.unit, _): return "Esta unidade recebeu muitas chamadas agora. Aguarde um minuto e chame de novo."
        case .targetBusy(.gate, _):
            return "Esta portaria está recebendo muitas chamadas agora. Aguarde um minuto e chame de novo."
        case .mediaShareSpent(.address, _):
            return "visitors from this address used their share of this building's photos and voice messages for today"
        case .mediaShareSpent(.visit, _): return "this visit used its share of this building's photos and voice messages"
        case .uploadsSpent(let limit, _): return "this visit has used its \(limit) uploads"
        case .closed(let status): return "the visit is already \(status.rawValue)"
        case .mediaFrozen(let status) where status == .ringing || status == .unanswered:
            return "a resident was already shown this visit's media: a stored photo or voice message can no longer change"
        case .mediaFrozen(let status):
            return "the visit is \(status.rawValue): its photo and voice message can no longer change"
        case .alreadyResolved(let resolution, let zone): return ResolutionText.alreadyResolved(resolution, timeZone: zone)
        case .alreadyAnswered(let by, let at, let zone): return ResolutionText.alreadyAnswered(by: by, at: at, timeZone: zone)
        case .notAllowed(let event, let status): return "cannot \(event) a visit that is \(status.rawValue)"
        case .callNotActive: return "relay credentials are issued only while a call is live for this visit"
        case .mediaQuotaExceeded(let quota):
            return "this building's visitors stored their \(quota / (1024 * 1024)) MiB of photos and voice messages for today"
        case .mediaTooLarge(.photo): return "photo exceeds \(MediaSniffer.maxPhotoBytes) bytes"
        case .mediaTooLarge(.voiceMessage):
            return "voice_message exceeds \(MediaSniffer.maxVoiceBytes) bytes (WebM, Ogg, M4A) or \(MediaSniffer.maxWAVBytes) bytes (WAV)"
        case .mediaTooLong(_, let ms): return "voice_message lasts \(ms / 1000) s; the limit is 60 s"
        case .mediaUnrecognized(let kind):
            return kind == .photo ? "photo must be a JPEG or PNG image" : "voice_message must be WebM/Opus, Ogg/Opus, M4A/AAC or WAV (16-bit PCM)"
        case .mediaMalformed(let kind, let why): return "\(kind.rawValue) is malformed: \(why)"
        }
    }

    var details: [String: JSONValue] {
        switch self {
        case .gateNotFound, .visitNotFound, .mediaNotFound: return [:]
        case .unknownUnit: return ["field": "unit_id"]
        case .invalidCursor: return ["field": "cursor"]
        case .rateLimited(let seconds), .uploadsSpent(_, let seconds):
            return ["retry_after": .number(Double(HTTPError.retryAfterSeconds(seconds)))]
        case .targetBusy(let target, let seconds):
            return ["retry_after": .number(Double(HTTPError.retryAfterSeconds(seconds))), "limit": .string(target.rawValue)]
        case .mediaShareSpent(let scope, let seconds):
            return ["retry_after": .number(Double(HTTPError.retryAfterSeconds(seconds))), "limit": .string(scope.rawValue)]
        case .closed(let status), .mediaFrozen(let status), .notAllowed(_, let status), .callNotActive(let status):
            return ["status": .string(status.rawValue)]
        case .alreadyResolved(let resolution, _):
            return ["resolved_by": VisitEngine.person(resolution.by), "resolved_at": .string(Timestamp.format(resolution.at)),
                    "action": .string(resolution.action.rawValue), "via": .string(resolution.via.rawValue)]
        case .alreadyAnswered(let by, let at, _):
            return ["answered_by": VisitEngine.person(by), "answered_at": .string(Timestamp.format(at))]
        case .mediaQuotaExceeded(let quota): return ["quota_bytes": .number(Double(quota))]
        case .mediaTooLarge(let kind), .mediaTooLong(let kind, _), .mediaUnrecognized(let kind), .mediaMalformed(let kind, _):
            return ["field": .string(kind.rawValue)]
        }
    }

    var headers: [(String, String)] {
        switch self {
        case .rateLimited(let seconds), .uploadsSpent(_, let seconds), .targetBusy(_, let seconds), .mediaShareSpent(_, let seconds):
            return [("Retry-After", String(HTTPError.retryAfterSeconds(seconds)))]
        default: return []
        }
    }
}

/// Which cap across addresses refused a ring.
enum RingTarget: String, Sendable {
    case unit, gate
}

/// Which share of the media quota refused an upload.
enum MediaShareScope: String, Sendable {
    case address, visit
}

/// What a visitor token opens, resolved at the route edge (`VisitorAuthenticator`).
struct VisitorAccess: Sendable {
    var visitID: VisitID
    var companyID: String
    var status: VisitStatus
    var answeredAt: Date?
}
