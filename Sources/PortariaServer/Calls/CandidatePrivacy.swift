import PortariaCore

/// Keeps the resident's IP addresses from the anonymous visitor (LGPD; decision 0066).
///
/// A WebRTC peer announces its addresses as ICE candidates: `host` (the phone's own LAN or
/// carrier address, or an mDNS `.local` name), `srflx`/`prflx` (its public address as a
/// STUN server or the peer saw it) and `relay` (an address on our TURN server). Anyone who
/// scans the gate's QR code can ring, so the resident's side reaches the visitor through
/// TURN only: unless `--calls-allow-direct` is given, the server forwards only `relay`
/// candidates from a resident to a visitor, in trickled `call.ice` frames and inside the
/// SDP of `call.offer`/`call.answer`, and blanks the SDP's connection addresses. The
/// server is the one party the visitor cannot talk around, so it enforces this whatever
/// the resident's client does. The visitor's own candidates are not touched (the gate page
/// is the party that chose to reveal itself). Without TURN no candidate is left, so
/// calls are offered as unavailable (`calls_available: false`).
public enum CandidatePrivacy {
    /// The candidate type of `candidate:…` (an SDP attribute value), or nil if unreadable.
    static func type(of candidate: String) -> String? {
        let fields = candidate.split(separator: " ")
        guard let index = fields.firstIndex(of: "typ"), index + 1 < fields.count else { return nil }
        return String(fields[index + 1])
    }

    /// The candidate as the visitor may see it: relay candidates only, with the related
    /// address (`raddr`, the resident's public or local address the relay was allocated
    /// for) blanked; nil for anything else. The empty candidate (end of candidates)
    /// carries no address and passes.
    static func sanitize(candidate: String) -> String? {
        let prefix = candidate.hasPrefix("a=") ? "a=" : ""
        let value = String(candidate.dropFirst(prefix.count))
        if value.trimmingCharacters(in: .whitespaces).isEmpty { return candidate }
        guard type(of: value) == "relay" else { return nil }
        var fields = value.split(separator: " ").map(String.init)
        for (index, field) in fields.enumerated() where index + 1 < fields.count {
            if field == "raddr" { fields[index + 1] = "0.0.0.0" }
            if field == "rport" { fields[index + 1] = "0" }
        }
        return prefix + fields.joined(separator: " ")
    }

    /// The SDP without non-relay candidate lines, with the addresses of `o=`, `c=` and
    /// `a=rtcp:` blanked (they may name the device or its default candidate).
    ///
    /// Every line ending counts — CRLF, LF or a lone CR, mixed in one SDP — since a
    /// candidate after an ending this filter did not split on would pass unread while the
    /// visitor's browser still reads it as a line. The lines leave with one ending: CRLF
    /// when the SDP used any, LF otherwise.
    static func sanitize(sdp: String) -> String {
        let separator = sdp.contains("\r\n") ? "\r\n" : "\n"
        var lines: [String] = []
        // "\r\n" is one Character in Swift; `isNewline` is true for it, "\n" and "\r".
        for line in sdp.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init) {
            if line.hasPrefix("a=candidate:") {
                if let kept = sanitize(candidate: line) { lines.append(kept) }
            } else if line.hasPrefix("o="), line.split(separator: " ").count == 6 {
                // o=<username> <session id> <version> IN IP4 <address>: browsers write
                // 127.0.0.1 here, other stacks the real address.
                var fields = line.split(separator: " ").map(String.init)
                fields[5] = fields[4] == "IP6" ? "::" : "0.0.0.0"
                lines.append(fields.joined(separator: " "))
            } else if line.hasPrefix("c=IN IP4 ") {
                lines.append("c=IN IP4 0.0.0.0")
            } else if line.hasPrefix("c=IN IP6 ") {
                lines.append("c=IN IP6 ::")
            } else if line.hasPrefix("a=rtcp:"), let port = line.dropFirst("a=rtcp:".count).split(separator: " ").first {
                lines.append("a=rtcp:\(port) IN IP4 0.0.0.0")
            } else {
                lines.append(line)
            }
        }
        return lines.joined(separator: separator)
    }

    /// `signal` as the visitor may see it, or nil when it must not be forwarded at all.
    public static func forVisitor(_ signal: CallSignal) -> CallSignal? {
        switch signal {
        case .ice(var ice):
            // `null` ends the candidates and carries no address.
            guard var candidate = ice.candidate else { return signal }
            guard let kept = sanitize(candidate: candidate.candidate) else { return nil }
            candidate.candidate = kept
            ice.candidate = candidate
            return .ice(ice)
        case .offer(var description):
            description.sdp = sanitize(sdp: description.sdp)
            return .offer(description)
        case .answer(var description):
            description.sdp = sanitize(sdp: description.sdp)
            return .answer(description)
        case .hangup:
            return signal
        }
    }
}
