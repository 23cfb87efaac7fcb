import Foundation
import PortariaCore

/// One text frame a client sent on a realtime socket, parsed. Pure (no feed state), so
/// the exact code the feed runs on untrusted frames is also fuzzed on its own
/// (`fuzz/realtime-message`).
enum RealtimeClientMessage: Equatable {
    case ping
    /// A `call.*` frame: its type and its `data` member as JSON bytes, for `CallSignal.decode`.
    case call(type: String, data: [UInt8])
    case unknown(type: String)
    /// Not a JSON object with a string `type`.
    case invalid

    static func parse(_ text: String) -> RealtimeClientMessage {
        guard let message = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(text.utf8)),
              let type = message["type"]?.stringValue else {
            return .invalid
        }
        switch type {
        case "ping":
            return .ping
        case _ where CallMessageType.isCallFrame(type):
            return .call(type: type, data: Array((message["data"] ?? .object([:])).jsonText.utf8))
        default:
            return .unknown(type: type)
        }
    }
}

extension RealtimeClientMessage {
    /// The `error` frame that answers a client message (no seq: it is no event).
    static func errorFrame(_ code: String, _ message: String) -> String {
        JSONValue.object(["type": .string("error"), "data": .object(["code": .string(code), "message": .string(message)])]).jsonText
    }
}
