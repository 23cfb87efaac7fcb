import Foundation

/// The two shapes a push payload travels in (see the top of PushPayload.swift).
public enum PushPayloadShape: Sendable {
    /// APNs: numbers as numbers, `geofence` nested.
    case apns
    /// FCM and Web Push data messages: every value a string, the geofence flattened into
    /// `geofence_status` and `geofence_distance_m`.
    case data
}

// The server writes the payload types the apps decode: the members `PushPayload.decode`
// reads are spelled here once more, beside the decoder, so a key cannot drift between the
// two sides (the server's renderers add only the platform envelope: `aps`, `android`).
extension PushPayload {
    /// The payload's members in `shape`: what `PushPayload.decode` reads back.
    public func fields(_ shape: PushPayloadShape) -> [String: JSONValue] {
        switch self {
        case .ring(let push):
            var fields = Self.common(.visitRing, push.pushID, push.visitID, push.ackToken)
            fields["caller_name"] = .string(push.callerName)
            fields["unit_label"] = .string(push.unitLabel)
            fields["kind"] = .string(push.kind.rawValue)
            if let expiresAt = push.expiresAt { fields["expires_at"] = .string(Timestamp.format(expiresAt)) }
            Self.write(push.geofence, shape, into: &fields)
            if let carrier = push.carrier { fields["carrier"] = .string(carrier) }
            return fields
        case .ringCancelled(let push):
            var fields = Self.common(.ringCancelled, push.pushID, push.visitID, push.ackToken)
            if let reason = push.reason { fields["reason"] = .string(reason.rawValue) }
            return fields
        case .delivery(let push):
            var fields = Self.common(.delivery, push.pushID, push.visitID, push.ackToken)
            fields["caller_name"] = .string(push.callerName)
            fields["unit_label"] = .string(push.unitLabel)
            if let carrier = push.carrier { fields["carrier"] = .string(carrier) }
            // A data message builds its notification in the app, which needs the kind.
            if shape == .data { fields["kind"] = .string(VisitKind.delivery.rawValue) }
            if let expiresAt = push.expiresAt { fields["expires_at"] = .string(Timestamp.format(expiresAt)) }
            if let geofence = push.geofence { Self.write(geofence, shape, into: &fields) }
            return fields
        case .deliveryResolved(let push):
            var fields = Self.common(.deliveryResolved, push.pushID, push.visitID, push.ackToken)
            fields["unit_label"] = .string(push.unitLabel)
            fields["text"] = .string(push.text)
            if let action = push.action { fields["action"] = .string(action.rawValue) }
            if let resolvedAt = push.resolvedAt { fields["resolved_at"] = .string(Timestamp.format(resolvedAt)) }
            if let via = push.via { fields["via"] = .string(via.rawValue) }
            if let name = push.resolvedByName { fields["resolved_by_name"] = .string(name) }
            return fields
        case .test(let pushID, let text, let ackToken):
            var fields = Self.common(.test, pushID, nil, ackToken)
            if let text { fields["text"] = .string(text) }
            return fields
        case .unknown(let type, let pushID, let ackToken):
            var fields: [String: JSONValue] = ["type": .string(type)]
            if let pushID { fields["push_id"] = .string(pushID) }
            if let ackToken { fields["ack_token"] = .string(ackToken) }
            return fields
        }
    }

    private static func common(_ type: PushPayloadType, _ pushID: String, _ visitID: String?,
                               _ ackToken: String?) -> [String: JSONValue] {
        var fields: [String: JSONValue] = ["type": .string(type.rawValue), "push_id": .string(pushID)]
        if let visitID, !visitID.isEmpty { fields["visit_id"] = .string(visitID) }
        if let ackToken { fields["ack_token"] = .string(ackToken) }
        return fields
    }

    private static func write(_ geofence: GeofenceResult, _ shape: PushPayloadShape, into fields: inout [String: JSONValue]) {
        switch shape {
        case .apns:
            var nested: [String: JSONValue] = ["status": .string(geofence.status.rawValue)]
            if let distance = geofence.distanceM { nested["distance_m"] = .number(Double(distance)) }
            fields["geofence"] = .object(nested)
        case .data:
            fields["geofence_status"] = .string(geofence.status.rawValue)
            if let distance = geofence.distanceM { fields["geofence_distance_m"] = .string(String(distance)) }
        }
    }
}
