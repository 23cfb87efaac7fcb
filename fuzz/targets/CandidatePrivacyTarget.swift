import Foundation
import PortariaCore

// fuzz/candidate-privacy: CandidatePrivacy, the filter between a resident's call frames
// and the anonymous visitor (decision 0066). The input is SDP text; between its lines the
// target plants the resident's addresses where a WebRTC stack writes them — host, srflx,
// prflx and mDNS candidates, a relay candidate's raddr, the o=, c= and a=rtcp: lines —
// chosen by the input's bytes. The fuzzed text never contains the digit 7, so the planted
// addresses (all spelled with 77) can come from nowhere else.
// Properties: no planted address survives the filter, in the SDP of an offer or answer or
// in a trickled candidate; every candidate that survives is a relay one; the filter is
// idempotent (filtering its own output changes nothing).
// Line endings are chosen per line by the input (CRLF, LF or a lone CR, mixed): a
// resident's own client may send anything, and a browser reads each as a line end.

let residentAddresses = ["192.168.77.7", "203.0.113.77", "2001:db8::77", "resident-77.local"]
let planted = [
    "a=candidate:1 1 udp 2122260223 192.168.77.7 54321 typ host generation 0",
    "a=candidate:2 1 udp 1686052607 203.0.113.77 54321 typ srflx raddr 192.168.77.7 rport 54321",
    "a=candidate:3 1 udp 41885439 198.51.100.1 3478 typ relay raddr 203.0.113.77 rport 54321",
    "a=candidate:4 1 udp 2122260223 resident-77.local 54321 typ host",
    "a=candidate:5 1 udp 1845501695 2001:db8::77 9 typ prflx raddr :: rport 0",
    "a=candidate:6 1 tcp 1518280447 192.168.77.7 9 typ host tcptype active",
    "o=- 4611731400430051336 2 IN IP4 192.168.77.7",
    "o=- 4611731400430051336 2 IN IP6 2001:db8::77",
    "c=IN IP4 192.168.77.7",
    "c=IN IP6 2001:db8::77",
    "a=rtcp:9 IN IP4 203.0.113.77",
]

func leaks(_ text: String) -> String? { residentAddresses.first { text.contains($0) } }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCandidatePrivacy(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard let selector = bytes.first else { return 0 }
    // By scalar: "\r\n" is one Character, which a Character filter would keep.
    let scalars = String(decoding: bytes.dropFirst(), as: UTF8.self).unicodeScalars.filter { $0 != "7" && $0 != "\r" }
    let text = String(String.UnicodeScalarView(scalars))
    let endings = ["\r\n", "\n", "\r"]
    var lines = ["v=0"]
    for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).prefix(64).enumerated() {
        lines.append(String(line))
        let choice = Int(bytes[(index + 1) % bytes.count])
        if choice % 3 == 0 { lines.append(planted[choice / 3 % planted.count]) }
    }
    lines.append(planted[Int(selector >> 1) % planted.count])
    var sdp = ""
    for (index, line) in lines.enumerated() {
        if index > 0 { sdp += endings[Int(bytes[index % bytes.count] >> 2) % endings.count] }
        sdp += line
    }

    let filtered = CandidatePrivacy.sanitize(sdp: sdp)
    if let address = leaks(filtered) { invariant(false, "\(address) survives in the SDP:\n\(filtered)") }
    for line in filtered.split(whereSeparator: \.isNewline) where line.hasPrefix("a=candidate:") {
        invariant(CandidatePrivacy.type(of: String(line.dropFirst(2))) == "relay", "a non-relay candidate survives: \(line)")
    }
    invariant(CandidatePrivacy.sanitize(sdp: filtered) == filtered, "filtering twice changed the SDP")

    // The same through a call.offer frame, and each candidate line trickled alone.
    if case .offer(let description)? = CandidatePrivacy.forVisitor(.offer(CallDescription(visitID: "v1", sdp: sdp))) {
        invariant(description.sdp == filtered, "an offer's SDP is filtered differently")
    } else {
        invariant(false, "an offer was dropped instead of filtered")
    }
    for line in lines where line.hasPrefix("a=candidate:") {
        let signal = CallSignal.ice(CallICE(visitID: "v1", candidate: ICECandidate(candidate: String(line.dropFirst(2)), sdpMid: "0")))
        guard case .ice(let ice)? = CandidatePrivacy.forVisitor(signal), let kept = ice.candidate?.candidate else { continue }
        if let address = leaks(kept) { invariant(false, "\(address) survives in a trickled candidate: \(kept)") }
        invariant(kept.trimmingCharacters(in: .whitespaces).isEmpty || CandidatePrivacy.type(of: kept) == "relay",
                  "a non-relay candidate is trickled: \(kept)")
    }
    return 0
}
