import Foundation

// What the apps decode from a push (docs/contract.md §3 "Push"). The server renders the same
// message two ways: APNs JSON (numbers as numbers, `geofence` nested) and FCM/Web Push
// data messages (every value a string, `geofence_status` and `geofence_distance_m`
// flattened, because FCM only carries string values). These types read both, so an
// iOS shell and an Android shell decode with one piece of code.

/// The `type` member of every push payload.
public enum PushPayloadType: String, Sendable, Codable, CaseIterable {
    /// "Ring now": iOS VoIP push, Android HIGH data message.
    case visitRing = "visit.ring"
    /// Stop ringing (answered elsewhere, resolved, timed out, expired).
    case ringCancelled = "visit.ring_cancelled"
    /// A courier at the gate: an actionable notification (authorize / leave at the
    /// concierge / deny).
    case delivery
    /// A delivery was decided without this phone: by another resident, or by the unit's
    /// delivery rule (`via: auto`). On iOS it replaces the delivery notification (same
    /// `apns-collapse-id`), without actions.
    case deliveryResolved = "delivery.resolved"
    /// `portaria admin push-test`.
    case test
}

/// The notification categories the server names (`aps.category`) and the apps register,
/// with their action identifiers. The resolve actions' identifiers are the
/// `ResolutionAction` raw values, so an action maps onto `POST /v1/visits/{id}/resolve`
/// without a table.
public enum NotificationCategoryID {
    /// A courier: Autorizar subida / Deixar na portaria / Recusar.
    public static let delivery = "DELIVERY"
    /// A visitor rung by an alert (an iPhone without a VoIP token): Atender / Negar.
    public static let visit = "VISIT"
}

/// Action identifiers of the categories above.
public enum NotificationActionID {
    public static let authorize = ResolutionAction.authorize.rawValue
    public static let leaveAtConcierge = ResolutionAction.leaveAtConcierge.rawValue
    public static let deny = ResolutionAction.deny.rawValue
    /// Opens the app on the visit (the call screen); not a resolution.
    public static let answer = "answer"
}

/// What every push about a visit carries: the push (what its receipt names), the visit,
/// and the per-push capability `POST /v1/push/{push_id}/ack` accepts instead of a bearer.
/// Made by the push types' initialisers; apps read it.
public struct PushReference: Sendable, Equatable {
    public var pushID: String
    public var visitID: String
    /// nil from a server older than decision 0016.
    public var ackToken: String?
}

/// A push about one visit; its reference's members read as its own (`push.visitID`).
public protocol VisitPush: Sendable, Equatable {
    var reference: PushReference { get }
}

extension VisitPush {
    public var pushID: String { reference.pushID }
    public var visitID: String { reference.visitID }
    public var ackToken: String? { reference.ackToken }
}

/// `visit.ring`: everything the call screen shows, so the app can report the call to
/// CallKit before any network call.
public struct RingPush: VisitPush {
    public var reference: PushReference
    /// The name the visitor typed ("Visitante" when none).
    public var callerName: String
    public var unitLabel: String
    public var kind: VisitKind
    public var geofence: GeofenceResult
    /// When this ring stops (the ring deadline); nil if the payload did not say.
    public var expiresAt: Date?
    public var carrier: String?

    public init(pushID: String, visitID: String, callerName: String, unitLabel: String, kind: VisitKind, geofence: GeofenceResult,
                expiresAt: Date? = nil, carrier: String? = nil, ackToken: String? = nil) {
        reference = PushReference(pushID: pushID, visitID: visitID, ackToken: ackToken)
        self.callerName = callerName
        self.unitLabel = unitLabel
        self.kind = kind
        self.geofence = geofence
        self.expiresAt = expiresAt
        self.carrier = carrier
    }
}

/// `delivery`: an actionable notification for a courier.
public struct DeliveryPush: VisitPush {
    public var reference: PushReference
    public var callerName: String
    public var unitLabel: String
    public var carrier: String?
    /// FCM and Web Push carry the ring deadline and geofence for deliveries too; APNs
    /// alerts do not.
    public var expiresAt: Date?
    public var geofence: GeofenceResult?

    public init(pushID: String, visitID: String, callerName: String, unitLabel: String, carrier: String? = nil,
                expiresAt: Date? = nil, geofence: GeofenceResult? = nil, ackToken: String? = nil) {
        reference = PushReference(pushID: pushID, visitID: visitID, ackToken: ackToken)
        self.callerName = callerName
        self.unitLabel = unitLabel
        self.carrier = carrier
        self.expiresAt = expiresAt
        self.geofence = geofence
    }
}

/// `delivery.resolved`: what replaces a delivery notification once it was decided
/// elsewhere ("Maria autorizou às 14:32", "Deixado na portaria automaticamente às 14:32").
public struct DeliveryResolvedPush: VisitPush {
    public var reference: PushReference
    public var unitLabel: String
    /// nil when the server sent an action this version does not know.
    public var action: ResolutionAction?
    /// The resolver's name; nil for automatic resolutions.
    public var resolvedByName: String?
    public var resolvedAt: Date?
    public var via: ResolutionChannel?
    /// The pt-BR sentence, already in the condominium's time zone.
    public var text: String

    public init(pushID: String, visitID: String, unitLabel: String, action: ResolutionAction? = nil, resolvedByName: String? = nil,
                resolvedAt: Date? = nil, via: ResolutionChannel? = nil, text: String, ackToken: String? = nil) {
        reference = PushReference(pushID: pushID, visitID: visitID, ackToken: ackToken)
        self.unitLabel = unitLabel
        self.action = action
        self.resolvedByName = resolvedByName
        self.resolvedAt = resolvedAt
        self.via = via
        self.text = text
    }

    /// The unit's delivery rule decided; nobody was asked.
    public var isAutomatic: Bool { via == .auto }
}

/// `visit.ring_cancelled`: this phone should stop ringing.
public struct RingCancelledPush: VisitPush {
    public var reference: PushReference
    /// nil when the server sent a reason this version does not know.
    public var reason: RingCancelReason?

    public init(pushID: String, visitID: String, reason: RingCancelReason? = nil, ackToken: String? = nil) {
        reference = PushReference(pushID: pushID, visitID: visitID, ackToken: ackToken)
        self.reason = reason
    }
}

/// Everything `POST /v1/push/{push_id}/ack` needs without a session: the push's id and
/// its per-push capability (`ack_token`, decision 0016).
public struct PushReceiptCapability: Sendable, Equatable, Codable {
    public var pushID: String
    public var ackToken: String
    public init(pushID: String, ackToken: String) {
        self.pushID = pushID
        self.ackToken = ackToken
    }
    enum CodingKeys: String, CodingKey {
        case pushID = "push_id"
        case ackToken = "ack_token"
    }
}

/// Why a push payload could not be read.
public enum PushPayloadError: Error, Sendable, Equatable {
    case notAnObject
    case missing(String)
}

/// Any push the server sends, decoded.
public enum PushPayload: Sendable, Equatable {
    case ring(RingPush)
    case ringCancelled(RingCancelledPush)
    case delivery(DeliveryPush)
    case deliveryResolved(DeliveryResolvedPush)
    case test(pushID: String, text: String?, ackToken: String? = nil)
    /// A type this version does not know; acknowledged (it arrived) and otherwise ignored.
    case unknown(type: String, pushID: String?, ackToken: String? = nil)

    /// The push id every payload carries (what `POST /v1/push/{push_id}/ack` takes).
    public var pushID: String? { receiptFields.pushID }

    /// The per-push capability that acknowledges this push without a session (decision
    /// 0016); nil from an older server, in which case only a bearer can acknowledge.
    public var ackToken: String? { receiptFields.ackToken }

    private var receiptFields: (pushID: String?, ackToken: String?) {
        switch self {
        case .ring(let push): return (push.pushID, push.ackToken)
        case .ringCancelled(let push): return (push.pushID, push.ackToken)
        case .delivery(let push): return (push.pushID, push.ackToken)
        case .deliveryResolved(let push): return (push.pushID, push.ackToken)
        case .test(let pushID, _, let token): return (pushID, token)
        case .unknown(_, let pushID, let token): return (pushID, token)
        }
    }

    /// What acknowledges this push without a session, when the payload carries it.
    public var receipt: PushReceiptCapability? {
        guard let pushID, let ackToken else { return nil }
        return PushReceiptCapability(pushID: pushID, ackToken: ackToken)
    }

    /// Reads only `push_id` and `ack_token` — for a receiver that must acknowledge a push
    /// even when the rest of the payload is unreadable (a newer server's type, a field
    /// this version cannot parse): it arrived, and the receipt says so.
    public static func receipt(json: Data) -> PushReceiptCapability? {
        guard case .object(let fields)? = try? JSONCoding.decoder().decode(JSONValue.self, from: json) else { return nil }
        let reader = FieldReader(fields: fields)
        guard let pushID = reader.string("push_id"), !pushID.isEmpty,
              let token = reader.string("ack_token"), !token.isEmpty else { return nil }
        return PushReceiptCapability(pushID: pushID, ackToken: token)
    }

    /// Reads a payload as delivered: the APNs dictionary (PushKit, UNNotification
    /// `userInfo`) or the FCM/Web Push `data` map, as JSON bytes.
    public static func decode(json: Data) throws -> PushPayload {
        guard let value = try? JSONCoding.decoder().decode(JSONValue.self, from: json) else { throw PushPayloadError.notAnObject }
        return try decode(value)
    }

    public static func decode(_ value: JSONValue) throws -> PushPayload {
        guard case .object(let fields) = value else { throw PushPayloadError.notAnObject }
        let reader = FieldReader(fields: fields)
        let type = try reader.required("type")
        switch PushPayloadType(rawValue: type) {
        case .visitRing:
            return .ring(RingPush(pushID: try reader.required("push_id"), visitID: try reader.required("visit_id"),
                                  callerName: reader.string("caller_name") ?? "Visitante",
                                  unitLabel: reader.string("unit_label") ?? "",
                                  kind: reader.string("kind").flatMap(VisitKind.init(rawValue:)) ?? .visit,
                                  geofence: reader.geofence() ?? .unknown,
                                  expiresAt: reader.string("expires_at").flatMap(Timestamp.parse),
                                  carrier: reader.string("carrier"), ackToken: reader.string("ack_token")))
        case .ringCancelled:
            return .ringCancelled(RingCancelledPush(pushID: try reader.required("push_id"), visitID: try reader.required("visit_id"),
                                                    reason: reader.string("reason").flatMap(RingCancelReason.init(rawValue:)),
                                                    ackToken: reader.string("ack_token")))
        case .delivery:
            return .delivery(DeliveryPush(pushID: try reader.required("push_id"), visitID: try reader.required("visit_id"),
                                          callerName: reader.string("caller_name") ?? "",
                                          unitLabel: reader.string("unit_label") ?? "",
                                          carrier: reader.string("carrier"),
                                          expiresAt: reader.string("expires_at").flatMap(Timestamp.parse),
                                          geofence: reader.geofence(), ackToken: reader.string("ack_token")))
        case .deliveryResolved:
            return .deliveryResolved(DeliveryResolvedPush(
                pushID: try reader.required("push_id"), visitID: try reader.required("visit_id"),
                unitLabel: reader.string("unit_label") ?? "",
                action: reader.string("action").flatMap(ResolutionAction.init(rawValue:)),
                resolvedByName: reader.string("resolved_by_name"),
                resolvedAt: reader.string("resolved_at").flatMap(Timestamp.parse),
                via: reader.string("via").flatMap(ResolutionChannel.init(rawValue:)),
                text: reader.string("text") ?? "", ackToken: reader.string("ack_token")))
        case .test:
            return .test(pushID: try reader.required("push_id"), text: reader.string("text"), ackToken: reader.string("ack_token"))
        case nil:
            return .unknown(type: type, pushID: reader.string("push_id"), ackToken: reader.string("ack_token"))
        }
    }

    /// Reads members that may be strings (FCM) or numbers (APNs).
    private struct FieldReader {
        var fields: [String: JSONValue]

        func string(_ key: String) -> String? {
            switch fields[key] {
            case .string(let text)?: return text
            case .number(let number)?:
                // Checked: `Int64(_:)` traps beyond its range (`"push_id": 1e300` killed the
                // app inside PushKit's callback; its input is a fuzz/push-payload seed).
                if let whole = Int64(exactly: number) { return String(whole) }
                return number.isFinite ? String(number) : nil
            default: return nil
            }
        }

        func required(_ key: String) throws -> String {
            guard let value = string(key), !value.isEmpty else { throw PushPayloadError.missing(key) }
            return value
        }

        func integer(_ value: JSONValue?) -> Int? {
            switch value {
            case .number(let number)?: return number.isFinite && abs(number) < 1e12 ? Int(number.rounded()) : nil
            case .string(let text)?: return Int(text)
            default: return nil
            }
        }

        /// APNs: `"geofence": {"status", "distance_m"}`; FCM: `geofence_status`,
        /// `geofence_distance_m` (strings).
        func geofence() -> GeofenceResult? {
            if case .object(let nested)? = fields["geofence"] {
                let status = nested["status"]?.stringValue.flatMap(GeofenceStatus.init(rawValue:)) ?? .unknown
                return GeofenceResult(status: status, distanceM: integer(nested["distance_m"]))
            }
            guard let status = string("geofence_status") else { return nil }
            return GeofenceResult(status: GeofenceStatus(rawValue: status) ?? .unknown,
                                  distanceM: integer(fields["geofence_distance_m"]))
        }
    }
}
