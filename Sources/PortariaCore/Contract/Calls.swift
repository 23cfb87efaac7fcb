import Foundation

// The video-call part of the contract: `GET /v1/calls/ice_servers` and the `call.*`
// frames relayed over `/v1/realtime` between the visitor's page and the one resident
// device that answered (docs/decisions/0009-video-calls-turn-and-signaling.md).
//
// Every key is spelled in snake_case here (no key strategy, see `JSONCoding`).

// MARK: - ICE servers

/// One entry of `RTCConfiguration.iceServers`, in the shape browsers and
/// libwebrtc accept as is (`urls`, `username`, `credential`).
public struct ICEServer: Codable, Sendable, Equatable {
    public var urls: [String]
    /// TURN REST API username, `<expiry unix seconds>:<subject>`; absent for STUN.
    public var username: String?
    /// base64(HMAC-SHA1(shared secret, username)); absent for STUN.
    public var credential: String?

    public init(urls: [String], username: String? = nil, credential: String? = nil) {
        self.urls = urls
        self.username = username
        self.credential = credential
    }

    enum CodingKeys: String, CodingKey { case urls, username, credential }

    // Absent rather than `null` for STUN entries: some WebRTC stacks reject a
    // `null` username where they accept a missing one.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(urls, forKey: .urls)
        try container.encodeIfPresent(username, forKey: .username)
        try container.encodeIfPresent(credential, forKey: .credential)
    }
}

/// `GET /v1/calls/ice_servers`.
public struct ICEServersResponse: Codable, Sendable, Equatable {
    /// Pass to `RTCPeerConnection` unchanged. Empty when the server has no TURN relay
    /// configured.
    public var iceServers: [ICEServer]
    /// Seconds the TURN credential stays usable for *starting* an allocation; fetch a
    /// fresh list for every call and for every ICE restart.
    public var ttl: Int
    /// Whether a TURN relay is configured (`--turn-url`). False means `ice_servers`
    /// is deliberately empty, not that something failed.
    public var turnConfigured: Bool
    /// Whether video calls can connect at all: false without TURN unless the server lets
    /// calls connect directly (`--calls-allow-direct`). The ring and the decisions work
    /// either way; a client shows "video unavailable" instead of connecting.
    public var callsAvailable: Bool
    /// `RTCPeerConnection`'s `iceTransportPolicy` for this caller: `relay` for a resident
    /// or operator while calls are relay-only (their own connectivity checks must not
    /// leave from their addresses either), `all` for the visitor's page and with
    /// `--calls-allow-direct`.
    public var iceTransportPolicy: ICETransportPolicy

    public init(iceServers: [ICEServer], ttl: Int, turnConfigured: Bool, callsAvailable: Bool = true,
                iceTransportPolicy: ICETransportPolicy = .all) {
        self.iceServers = iceServers
        self.ttl = ttl
        self.turnConfigured = turnConfigured
        self.callsAvailable = callsAvailable
        self.iceTransportPolicy = iceTransportPolicy
    }

    enum CodingKeys: String, CodingKey {
        case iceServers = "ice_servers", ttl, turnConfigured = "turn_configured", callsAvailable = "calls_available"
        case iceTransportPolicy = "ice_transport_policy"
    }

    /// A server without the two policy fields predates relay-only calls: its calls were
    /// available and direct.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iceServers = try container.decode([ICEServer].self, forKey: .iceServers)
        ttl = try container.decode(Int.self, forKey: .ttl)
        turnConfigured = try container.decode(Bool.self, forKey: .turnConfigured)
        callsAvailable = try container.decodeIfPresent(Bool.self, forKey: .callsAvailable) ?? true
        iceTransportPolicy = try container.decodeIfPresent(ICETransportPolicy.self, forKey: .iceTransportPolicy) ?? .all
    }
}

/// Which candidates a peer connection may use (`RTCIceTransportPolicy`).
public enum ICETransportPolicy: String, Codable, Sendable, Equatable {
    case all
    case relay
}

// MARK: - Signaling frames

/// The `type` of every call frame on `/v1/realtime`.
public enum CallMessageType: String, Sendable, CaseIterable, Codable {
    /// Client → server → the other participant: an SDP offer.
    case offer = "call.offer"
    /// Client → server → the offerer: the SDP answer.
    case answer = "call.answer"
    /// Client → server → the other participant: one trickled ICE candidate.
    case ice = "call.ice"
    /// Client → server: leave the call. Both participants then get `call.ended`.
    case hangup = "call.hangup"
    /// Server → both participants: the call is over, with the reason.
    case ended = "call.ended"

    /// The type of error frames (`data` is an `ErrorBody`), shared with the rest of
    /// the realtime stream.
    public static let errorFrameType = "error"

    /// Whether a frame of this `type` belongs to call signaling (the realtime layer
    /// routes every `call.*` frame here, including types this version does not know).
    public static func isCallFrame(_ type: String) -> Bool { type.hasPrefix("call.") }
}

/// `call.offer` and `call.answer` data: `{"visit_id", "sdp"}`.
public struct CallDescription: Codable, Sendable, Equatable {
    public var visitID: String
    public var sdp: String

    public init(visitID: String, sdp: String) {
        self.visitID = visitID
        self.sdp = sdp
    }

    enum CodingKeys: String, CodingKey { case visitID = "visit_id", sdp }
}

/// One trickled candidate as `RTCIceCandidateInit` carries it.
public struct ICECandidate: Codable, Sendable, Equatable {
    /// `candidate:…` (the SDP attribute without `a=`), or "" for end-of-candidates of
    /// one m-line.
    public var candidate: String
    public var sdpMid: String?
    public var sdpMLineIndex: Int?
    public var usernameFragment: String?

    public init(candidate: String, sdpMid: String? = nil, sdpMLineIndex: Int? = nil, usernameFragment: String? = nil) {
        self.candidate = candidate
        self.sdpMid = sdpMid
        self.sdpMLineIndex = sdpMLineIndex
        self.usernameFragment = usernameFragment
    }

    enum CodingKeys: String, CodingKey {
        case candidate, sdpMid = "sdp_mid", sdpMLineIndex = "sdp_m_line_index"
        case usernameFragment = "username_fragment"
    }
}

/// `call.ice` data: `{"visit_id", "candidate": {…} | null}`; `null` means the sender
/// has gathered all its candidates.
public struct CallICE: Codable, Sendable, Equatable {
    public var visitID: String
    public var candidate: ICECandidate?

    public init(visitID: String, candidate: ICECandidate?) {
        self.visitID = visitID
        self.candidate = candidate
    }

    enum CodingKeys: String, CodingKey { case visitID = "visit_id", candidate }

    // `candidate` must be present: `null` ends the candidates, but a frame that simply
    // forgot the member must not be read as that.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        visitID = try container.decode(String.self, forKey: .visitID)
        candidate = try container.decode(ICECandidate?.self, forKey: .candidate)
    }

    // `candidate: null` is meaningful (end of candidates), so it is written out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(visitID, forKey: .visitID)
        try container.encode(candidate, forKey: .candidate)
    }
}

/// `call.hangup` data: `{"visit_id"}`.
public struct CallHangup: Codable, Sendable, Equatable {
    public var visitID: String
    public init(visitID: String) { self.visitID = visitID }
    enum CodingKeys: String, CodingKey { case visitID = "visit_id" }
}

/// Which side of a call.
public enum CallRole: String, Codable, Sendable, CaseIterable {
    case visitor, resident
}

/// Why a call ended, as `call.ended` and the attempts timeline spell it.
public enum CallEndReason: String, Codable, Sendable, CaseIterable {
    /// A participant sent `call.hangup` (`ended_by` says who).
    case hangup
    /// A participant's socket went away and did not come back within the grace period.
    case participantLeft = "participant_left"
    /// An offer was not answered in time (or no offer came after the visit was answered).
    case negotiationTimeout = "negotiation_timeout"
    /// The call reached its maximum length.
    case maxDuration = "max_duration"
    /// The server ended it: the visit was resolved, cancelled or expired elsewhere.
    case visitClosed = "visit_closed"
    /// The server is shutting down.
    case serverShutdown = "server_shutdown"
}

/// `call.ended` data: `{"visit_id", "reason", "ended_by"}`.
public struct CallEnded: Codable, Sendable, Equatable {
    public var visitID: String
    public var reason: CallEndReason
    /// The participant whose hangup or departure ended the call; `null` for timeouts
    /// and server-side endings.
    public var endedBy: CallRole?

    public init(visitID: String, reason: CallEndReason, endedBy: CallRole?) {
        self.visitID = visitID
        self.reason = reason
        self.endedBy = endedBy
    }

    enum CodingKeys: String, CodingKey { case visitID = "visit_id", reason, endedBy = "ended_by" }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(visitID, forKey: .visitID)
        try container.encode(reason, forKey: .reason)
        try container.encode(endedBy, forKey: .endedBy)
    }
}

// MARK: - Error codes of call signaling

extension ErrorCode {
    /// A `call.*` frame whose type this server does not know.
    public static let unknownMessageType = ErrorCode("UNKNOWN_MESSAGE_TYPE")
    /// A call frame whose `data` is malformed (the error names the `field`).
    public static let invalidMessage = ErrorCode("INVALID_MESSAGE")
    /// An SDP larger than the limit.
    public static let messageTooLarge = ErrorCode("MESSAGE_TOO_LARGE")
    /// No call for that visit *that this socket is part of*: the same answer whether the
    /// call does not exist or belongs to someone else, so nothing leaks across tenants.
    public static let callNotFound = ErrorCode("CALL_NOT_FOUND")
    /// A valid message at the wrong moment (an answer with no offer pending, …).
    public static let callStateConflict = ErrorCode("CALL_STATE_CONFLICT")
    /// Too many candidates in one negotiation.
    public static let callLimitExceeded = ErrorCode("CALL_LIMIT_EXCEEDED")
}

// MARK: - Parsing and validating client frames

/// A validated call frame from a client.
public enum CallSignal: Sendable, Equatable {
    case offer(CallDescription)
    case answer(CallDescription)
    case ice(CallICE)
    case hangup(CallHangup)

    /// The visit the frame is about (the call's key).
    public var visitID: String {
        switch self {
        case .offer(let description), .answer(let description): description.visitID
        case .ice(let ice): ice.visitID
        case .hangup(let hangup): hangup.visitID
        }
    }

    public var type: CallMessageType {
        switch self {
        case .offer: .offer
        case .answer: .answer
        case .ice: .ice
        case .hangup: .hangup
        }
    }

    /// Limits a frame must respect; the defaults are the contract.
    public struct Limits: Sendable, Equatable {
        /// Largest SDP accepted, in UTF-8 bytes. Real offers with audio, video and a
        /// data channel are 3–10 KB; 64 KiB leaves room for many codecs without letting
        /// one frame become a memory or bandwidth lever against the other side.
        public var maxSDPBytes = 64 * 1024
        /// Largest `candidate` string; real ones are under 200 bytes.
        public var maxCandidateBytes = 1024
        public var maxVisitIDBytes = 64
        public init() {}
    }

    /// Parses and validates `data` of a client frame of `type`. Throws
    /// `CallSignalError` whose `error` is the body of the `error` frame to answer with.
    public static func decode(type: String, data: [UInt8], limits: Limits = Limits()) throws(CallSignalError) -> CallSignal {
        guard let messageType = CallMessageType(rawValue: type) else {
            throw CallSignalError(.unknownMessageType, "unknown message type '\(type.prefix(64))'", inReplyTo: type)
        }
        func decoded<T: Decodable>(_: T.Type) throws(CallSignalError) -> T {
            do { return try JSONCoding.decoder().decode(T.self, from: Data(data)) } catch let error as DecodingError {
                throw CallSignalError.from(error, type: type)
            } catch {
                throw CallSignalError(.invalidMessage, "data is not valid JSON", inReplyTo: type)
            }
        }
        let signal: CallSignal
        switch messageType {
        case .offer: signal = .offer(try decoded(CallDescription.self))
        case .answer: signal = .answer(try decoded(CallDescription.self))
        case .ice: signal = .ice(try decoded(CallICE.self))
        case .hangup: signal = .hangup(try decoded(CallHangup.self))
        case .ended:
            // Only the server says a call ended; a client says so with call.hangup.
            throw CallSignalError(.unknownMessageType, "call.ended is sent by the server; send call.hangup", inReplyTo: type)
        }
        try signal.validate(limits)
        return signal
    }

    /// The same, for a `data` value the realtime layer already parsed.
    public static func decode(type: String, data: JSONValue, limits: Limits = Limits()) throws(CallSignalError) -> CallSignal {
        let bytes: [UInt8]
        do { bytes = Array(try JSONCoding.encoder().encode(data)) } catch {
            throw CallSignalError(.invalidMessage, "data is not valid JSON", inReplyTo: type)
        }
        return try decode(type: type, data: bytes, limits: limits)
    }

    func validate(_ limits: Limits) throws(CallSignalError) {
        let type = self.type.rawValue
        let visitID = self.visitID
        guard !visitID.isEmpty, visitID.utf8.count <= limits.maxVisitIDBytes,
              visitID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw CallSignalError(.invalidMessage, "visit_id must be a visit id", field: "visit_id", inReplyTo: type)
        }
        switch self {
        case .offer(let description), .answer(let description):
            let size = description.sdp.utf8.count
            guard size <= limits.maxSDPBytes else {
                throw CallSignalError(.messageTooLarge, "sdp is \(size) bytes; the limit is \(limits.maxSDPBytes)",
                                      field: "sdp", inReplyTo: type, visitID: visitID)
            }
            // Every session description starts with the protocol version line (RFC 8866 §5).
            guard description.sdp.hasPrefix("v=0"), !description.sdp.utf8.contains(0) else {
                throw CallSignalError(.invalidMessage, "sdp must be a session description starting with v=0",
                                      field: "sdp", inReplyTo: type, visitID: visitID)
            }
        case .ice(let ice):
            guard let candidate = ice.candidate else { return }
            func fail(_ field: String, _ message: String) -> CallSignalError {
                CallSignalError(.invalidMessage, message, field: "candidate.\(field)", inReplyTo: type, visitID: visitID)
            }
            let text = candidate.candidate
            guard text.utf8.count <= limits.maxCandidateBytes, !text.contains(where: \.isNewline) else {
                throw fail("candidate", "candidate must be one line of at most \(limits.maxCandidateBytes) bytes")
            }
            // "" is the per-m-line end-of-candidates some browsers send.
            guard text.isEmpty || text.hasPrefix("candidate:") else {
                throw fail("candidate", "candidate must start with 'candidate:'")
            }
            // addIceCandidate() refuses a candidate naming neither; say so here.
            guard candidate.sdpMid != nil || candidate.sdpMLineIndex != nil else {
                throw fail("sdp_mid", "sdp_mid or sdp_m_line_index is required")
            }
            if let mid = candidate.sdpMid, mid.utf8.count > 64 || mid.contains(where: \.isNewline) {
                throw fail("sdp_mid", "sdp_mid must be at most 64 bytes")
            }
            if let index = candidate.sdpMLineIndex, !(0...255).contains(index) {
                throw fail("sdp_m_line_index", "sdp_m_line_index must be 0…255")
            }
            if let fragment = candidate.usernameFragment, fragment.utf8.count > 256 || fragment.contains(where: \.isNewline) {
                throw fail("username_fragment", "username_fragment must be at most 256 bytes")
            }
        case .hangup:
            return
        }
    }
}

/// Why a client's call frame was refused; `error` is the `data` of the `error` frame.
public struct CallSignalError: Error, Sendable, Equatable, CustomStringConvertible {
    public var error: ErrorBody

    public init(_ code: ErrorCode, _ message: String, field: String? = nil,
                inReplyTo type: String? = nil, visitID: String? = nil) {
        var details: [String: JSONValue] = [:]
        if let field { details["field"] = .string(field) }
        if let type { details["in_reply_to"] = .string(String(type.prefix(64))) }
        if let visitID { details["visit_id"] = .string(visitID) }
        error = ErrorBody(code: code, message: message, details: details)
    }

    public var description: String { "\(error.code): \(error.message)" }

    static func from(_ error: DecodingError, type: String) -> CallSignalError {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            (codingPath + (last.map { [$0] } ?? [])).map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath, key)
            return CallSignalError(.invalidMessage, "\(field) is required", field: field, inReplyTo: type)
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let field = path(context.codingPath)
            if field.isEmpty { return CallSignalError(.invalidMessage, "data must be a JSON object", inReplyTo: type) }
            return CallSignalError(.invalidMessage, "\(field) has the wrong type", field: field, inReplyTo: type)
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty { return CallSignalError(.invalidMessage, "data is not valid JSON", inReplyTo: type) }
            return CallSignalError(.invalidMessage, "\(field) is invalid", field: field, inReplyTo: type)
        @unknown default:
            return CallSignalError(.invalidMessage, "data is invalid", inReplyTo: type)
        }
    }
}
