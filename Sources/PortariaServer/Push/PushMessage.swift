import Foundation
import PortariaCore

/// Why a push is sent. Each kind renders differently per platform (docs/contract.md §3 "Push").
public enum PushKind: String, Sendable, Codable, CaseIterable {
    /// "Ring now": VoIP push on iOS, HIGH data message on Android.
    case visitRing = "visit_ring"
    /// The ring stopped (answered elsewhere, resolved, expired).
    case ringCancelled = "ring_cancelled"
    /// A courier at the gate: an actionable notification.
    case delivery
    /// Someone else decided a delivery: on iOS a passive alert that replaces the stale
    /// actionable one (same collapse id), so nobody taps a decided delivery.
    case deliveryResolved = "delivery_resolved"
    /// The unit's delivery rule decided (`leave_at_concierge`, `ask_then_concierge`):
    /// an informational alert, since nobody was asked.
    case automaticResolution = "automatic_resolution"
    /// `portaria admin push-test`.
    case test
}

/// What the event wants the phone to know, independent of the provider. Stored with the
/// job and rendered into the apps' payload types (`PushPayload`) at send time, so a job
/// queued before a deploy still renders with the code that sends it.
public struct PushMessage: Codable, Sendable, Equatable {
    public var visitID: String?
    public var callerName: String?
    public var unitLabel: String?
    public var visitKind: VisitKind?
    public var carrier: String?
    public var geofence: GeofenceResult?
    /// For `ring_cancelled`.
    public var reason: RingCancelReason?
    /// Free text for `test` pushes.
    public var text: String?
    /// For `delivery_resolved` / `automatic_resolution`: who decided what, when.
    public var resolution: VisitResolution?
    /// The company's IANA time zone, so a sentence says 14:32 where the building is.
    public var timeZone: String?

    public init(visitID: String? = nil, callerName: String? = nil, unitLabel: String? = nil, visitKind: VisitKind? = nil,
                carrier: String? = nil, geofence: GeofenceResult? = nil, reason: RingCancelReason? = nil, text: String? = nil,
                resolution: VisitResolution? = nil, timeZone: String? = nil) {
        self.visitID = visitID
        self.callerName = callerName
        self.unitLabel = unitLabel
        self.visitKind = visitKind
        self.carrier = carrier
        self.geofence = geofence
        self.reason = reason
        self.text = text
        self.resolution = resolution
        self.timeZone = timeZone
    }

    /// The resolution sentence of a `delivery_resolved` / `automatic_resolution` push.
    var resolutionNotice: String? {
        guard let resolution else { return nil }
        let zone = timeZone.flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: "America/Sao_Paulo") ?? .current
        return ResolutionText.notice(resolution, timeZone: zone)
    }

    enum CodingKeys: String, CodingKey {
        case visitID = "visit_id"
        case callerName = "caller_name"
        case unitLabel = "unit_label"
        case visitKind = "kind"
        case carrier, geofence, reason, text, resolution
        case timeZone = "time_zone"
    }
}

/// One push ready for a provider: the job's push id, the token to use and the message.
public struct OutgoingPush: Sendable, Equatable {
    public enum TokenKind: String, Sendable { case push, voip }

    public var pushID: String
    public var kind: PushKind
    public var platform: String
    public var tokenKind: TokenKind
    public var token: String
    public var message: PushMessage
    /// After this instant the push is worthless (a ring nobody can answer any more).
    public var deadline: Date
    public var attempt: Int
    /// The per-push capability every payload carries (`ack_token`): minted for this attempt
    /// when the job was claimed; only its SHA-256 is stored (decision 0016). Every
    /// renderer (APNs, FCM, Web Push) must put it beside `push_id`.
    public var ackToken: String?

    public init(pushID: String, kind: PushKind, platform: String, tokenKind: TokenKind, token: String,
                message: PushMessage, deadline: Date, attempt: Int = 1, ackToken: String? = nil) {
        self.ackToken = ackToken
        self.pushID = pushID
        self.kind = kind
        self.platform = platform
        self.tokenKind = tokenKind
        self.token = token
        self.message = message
        self.deadline = deadline
        self.attempt = attempt
    }
}

extension OutgoingPush {
    /// The payload the apps decode for this push, with the values `shape` carries: an APNs
    /// delivery alert shows its text and carries neither deadline nor geofence, and the
    /// APNs test push says its text in `aps`; a data message carries everything, since
    /// the app builds the notification itself.
    public func payload(_ shape: PushPayloadShape) -> PushPayload {
        let m = message
        let visitID = m.visitID ?? ""
        switch kind {
        case .visitRing:
            return .ring(RingPush(pushID: pushID, visitID: visitID, callerName: Self.name(m.callerName ?? "Visitante"),
                                  unitLabel: m.unitLabel ?? "", kind: m.visitKind ?? .visit, geofence: m.geofence ?? .unknown,
                                  expiresAt: deadline, carrier: m.carrier, ackToken: ackToken))
        case .ringCancelled:
            return .ringCancelled(RingCancelledPush(pushID: pushID, visitID: visitID, reason: m.reason ?? .resolved, ackToken: ackToken))
        case .delivery:
            let data = shape == .data
            return .delivery(DeliveryPush(pushID: pushID, visitID: visitID, callerName: Self.name(m.callerName ?? (data ? "Visitante" : "")),
                                          unitLabel: m.unitLabel ?? "", carrier: m.carrier, expiresAt: data ? deadline : nil,
                                          geofence: data ? m.geofence ?? .unknown : nil, ackToken: ackToken))
        case .deliveryResolved, .automaticResolution:
            let resolution = m.resolution
            return .deliveryResolved(DeliveryResolvedPush(
                pushID: pushID, visitID: visitID, unitLabel: m.unitLabel ?? "", action: resolution?.action,
                resolvedByName: resolution.flatMap { $0.via == .auto ? nil : Self.name($0.by.name) },
                resolvedAt: resolution?.at, via: resolution?.via, text: m.resolutionNotice ?? "Entrega resolvida", ackToken: ackToken))
        case .test:
            return .test(pushID: pushID, text: shape == .data ? m.text ?? Self.testText : nil, ackToken: ackToken)
        }
    }

    /// What a test push says when `portaria admin push-test` gave no text.
    static let testText = "Se você vê isto, as notificações chegam."

    /// A person's name as a payload carries it: at most 200 characters.
    static func name(_ text: String) -> String { String(text.prefix(200)) }
}

/// A push service (APNs, FCM, or the log). Implementations never throw: every failure is
/// a `PushResult` the outbox knows how to handle.
public protocol PushProvider: Sendable {
    /// `apns`, `fcm` or `log`, recorded with every attempt.
    var name: String { get }
    func send(_ push: OutgoingPush) async -> PushResult
    /// Puts `push` on its way on the calling thread, without suspending or blocking, and
    /// returns what waits for its outcome: the thread that committed a gate POST starts
    /// its rings with this (decision 0131). Providers that need to suspend before the
    /// request can leave (an OAuth token to fetch) start it when the outcome is awaited.
    func start(_ push: OutgoingPush) -> StartedPush
}

extension PushProvider {
    public func start(_ push: OutgoingPush) -> StartedPush { StartedPush { await self.send(push) } }
}

/// A push `PushProvider.start` put on its way; `result()` waits for its outcome.
public struct StartedPush: Sendable {
    private let outcome: @Sendable () async -> PushResult

    public init(_ outcome: @escaping @Sendable () async -> PushResult) { self.outcome = outcome }

    /// The outcome, once the provider answered (or gave up); await it once.
    public func result() async -> PushResult { await outcome() }
}

/// Picks the provider for a device's platform.
public struct PushProviders: Sendable {
    public var apns: any PushProvider
    public var fcm: any PushProvider
    public var web: any PushProvider

    public func provider(for platform: String) -> any PushProvider {
        switch platform {
        case "ios": return apns
        case "android": return fcm
        default: return web
        }
    }
}

/// Used when no credentials are configured (the demo): writes what it would have sent to
/// the log and reports it accepted. It says so at startup and on every push.
public struct LogPushProvider: PushProvider {
    public let name = "log"
    public let platform: String
    var log: Log = .shared

    public func send(_ push: OutgoingPush) async -> PushResult {
        log.warning("push NOT sent: log-only push sender (no \(platform == "ios" ? "APNs" : platform == "android" ? "FCM" : "web push") credentials configured)",
                    ["push_id": .string(push.pushID), "kind": .string(push.kind.rawValue), "platform": .string(push.platform),
                     "token_kind": .string(push.tokenKind.rawValue), "token_suffix": .string(String(push.token.suffix(6))),
                     "visit_id": push.message.visitID.map(JSONValue.string) ?? .null])
        return PushResult(outcome: .accepted, reason: "logged only", providerID: push.pushID, detail: "log-only sender")
    }
}
