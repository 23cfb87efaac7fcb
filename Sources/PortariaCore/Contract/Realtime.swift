import Foundation

/// The control frame types of `/v1/realtime` (visit events are `VisitEventType`,
/// call signaling is `CallMessageType`).
public enum RealtimeFrameType: String, Sendable, Codable, CaseIterable {
    /// Server → client, once per socket: every event committed after this frame reaches
    /// the socket; `seq` is where the stream stands.
    case subscribed
    /// Server → client, instead of a replay: `since` was too far back or unknown. The
    /// client reconciles over REST, then trusts the stream from `seq`.
    case resyncRequired = "resync_required"
    /// Client → server keepalive.
    case ping
    /// Server → client answer to `ping`.
    case pong
    /// Server → client: `data` is an `ErrorBody` (`UNKNOWN_MESSAGE_TYPE`, `INVALID_MESSAGE`,
    /// `CALL_NOT_FOUND`, …).
    case error
}

/// One frame as it travels: `{"type", "seq"?, "data"?}`.
public struct RealtimeFrame: Sendable, Equatable, Codable {
    public var type: String
    public var seq: Int64?
    public var data: JSONValue?

    public init(type: String, seq: Int64? = nil, data: JSONValue? = nil) {
        self.type = type
        self.seq = seq
        self.data = data
    }

    /// `{"type": "ping"}`, the only control frame a client sends.
    public static let ping = RealtimeFrame(type: RealtimeFrameType.ping.rawValue)

    /// The compact JSON text to put on the socket.
    public var jsonText: String {
        var object: [String: JSONValue] = ["type": .string(type)]
        if let seq { object["seq"] = .number(Double(seq)) }
        if let data { object["data"] = data }
        return JSONValue.object(object).jsonText
    }
}

/// A server frame, classified: what a realtime client switches over.
public enum RealtimeMessage: Sendable, Equatable {
    /// A visit event with its position in the stream.
    case event(VisitEventType, seq: Int64, VisitEventData)
    case subscribed(seq: Int64)
    case resyncRequired(seq: Int64)
    case pong
    case error(ErrorBody)
    /// A `call.*` frame (video-call signaling), passed on undecoded to the call layer.
    case call(type: String, data: JSONValue)
    /// A type this version does not know (or a malformed frame): ignored, as the
    /// contract asks, but visible to logs.
    case unknown(type: String)

    /// Reads one text frame. Never throws: a frame it cannot read is `.unknown`.
    public static func parse(_ text: String) -> RealtimeMessage {
        guard let frame = try? JSONCoding.decoder().decode(RealtimeFrame.self, from: Data(text.utf8)) else {
            return .unknown(type: "")
        }
        return parse(frame)
    }

    public static func parse(_ frame: RealtimeFrame) -> RealtimeMessage {
        if let control = RealtimeFrameType(rawValue: frame.type) {
            switch control {
            case .subscribed: return .subscribed(seq: frame.seq ?? 0)
            case .resyncRequired: return .resyncRequired(seq: frame.seq ?? 0)
            case .pong: return .pong
            case .ping: return .unknown(type: frame.type)
            case .error:
                if let data = frame.data, let body = try? data.decode(ErrorBody.self) { return .error(body) }
                return .error(ErrorBody(code: ErrorCode("UNKNOWN"), message: ""))
            }
        }
        if CallMessageType.isCallFrame(frame.type) {
            return .call(type: frame.type, data: frame.data ?? .object([:]))
        }
        if let type = VisitEventType(rawValue: frame.type), let seq = frame.seq,
           let data = frame.data, let event = try? data.decode(VisitEventData.self) {
            return .event(type, seq: seq, event)
        }
        return .unknown(type: frame.type)
    }
}

extension JSONValue {
    /// Decodes this value as `T` with the API's JSON dialect.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONCoding.decoder().decode(T.self, from: Data(jsonText.utf8))
    }
}
