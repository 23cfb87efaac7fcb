import Foundation
import PortariaCore

/// One message between instances about a video call, carried by PostgreSQL NOTIFY on
/// `portaria_calls` (decision 0056). A call's state lives on one instance, its *owner*;
/// the others forward what their sockets send (`signal`), say when a participant's sockets
/// come and go (`presence`), and deliver what the owner sends to a participant they hold
/// (`frame`); the owner says when it takes a call (`claimed`).
///
/// The routing fields (`kind`, visit, company, sender, addressee, peer) always travel in
/// the notification itself, so an instance that holds nobody of the call drops it after a
/// dictionary lookup. Only `type` and `data` (an SDP can be 64 KiB, NOTIFY takes < 8000
/// bytes) may be parked in a `call_relay` row, named by `ref`.
struct CallRelayMessage: Sendable, Equatable {
    enum Kind: String, Sendable {
        /// A participant's `call.*` frame, for the owner's `CallRegistry`.
        case signal
        /// A participant's first socket opened (`present`) or its last one closed on `from`.
        case presence
        /// A frame the owner's registry addressed to `peer`, for whoever holds its sockets.
        case frame
        /// `from` now owns the call of `visitID` with the resident device `peer`: an instance
        /// holding either participant answers with `presence` (its socket may have opened
        /// after its own look-up found no call yet).
        case claimed
        /// A participant's instance saw the visit close: for an owner that follows nobody
        /// of the company any more (and so did not see it), which checks and ends the call.
        case closed
    }

    var kind: Kind
    var visitID: String
    var companyID: String
    /// The instance that sent it (each instance ignores its own messages).
    var from: String
    /// The owner a `signal` or `presence` is for; nil for a `frame` (any instance holding `peer`).
    var to: String?
    var peer: CallPeer
    var present: Bool?
    /// `signal`: the client frame's type and `data` as sent; `frame`: the frame to deliver.
    var type: String?
    var data: String?
    /// The `call_relay` row holding the whole message when it was too large to notify.
    var ref: Int64?

    /// PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; a little margin.
    static let inlineLimit = 7900

    var jsonText: String {
        var object: [String: JSONValue] = [
            "k": .string(kind.rawValue), "v": .string(visitID), "c": .string(companyID), "f": .string(from),
        ]
        switch peer {
        case .visitor: object["p"] = .object(["visitor": .bool(true)])
        case .resident(let userID, let deviceID): object["p"] = .object(["user": .string(userID), "device": .string(deviceID)])
        }
        if let to { object["to"] = .string(to) }
        if let present { object["present"] = .bool(present) }
        if let type { object["t"] = .string(type) }
        if let data { object["d"] = .string(data) }
        if let ref { object["ref"] = .number(Double(ref)) }
        return JSONValue.object(object).jsonText
    }

    /// The routing part only, pointing at the row that holds the whole message.
    func reference(_ id: Int64) -> CallRelayMessage {
        var message = self
        message.type = nil
        message.data = nil
        message.ref = id
        return message
    }

    /// Nil for anything that is not a well-formed message (the channel is ours, but a
    /// malformed payload must cost nothing more than being dropped).
    static func parse(_ text: String) -> CallRelayMessage? {
        guard let json = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(text.utf8)),
              let kind = json["k"]?.stringValue.flatMap(Kind.init(rawValue:)),
              let visitID = json["v"]?.stringValue, let companyID = json["c"]?.stringValue,
              let from = json["f"]?.stringValue, let peerJSON = json["p"] else { return nil }
        let peer: CallPeer
        if peerJSON["visitor"] != nil {
            peer = .visitor(visitID: visitID)
        } else if let userID = peerJSON["user"]?.stringValue, let deviceID = peerJSON["device"]?.stringValue {
            peer = .resident(userID: userID, deviceID: deviceID)
        } else {
            return nil
        }
        var present: Bool?
        if case .bool(let value)? = json["present"] { present = value }
        var ref: Int64?
        if case .number(let value)? = json["ref"] {
            guard value >= 1, value <= 9_007_199_254_740_991, value == value.rounded() else { return nil }
            ref = Int64(value)
        }
        return CallRelayMessage(kind: kind, visitID: visitID, companyID: companyID, from: from,
                                to: json["to"]?.stringValue, peer: peer, present: present,
                                type: json["t"]?.stringValue, data: json["d"]?.stringValue, ref: ref)
    }
}
