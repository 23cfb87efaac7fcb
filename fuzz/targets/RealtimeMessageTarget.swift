import Foundation
import PortariaCore

// fuzz/realtime-message: what a realtime socket does with client text frames —
// RealtimeClientMessage.parse, CallSignal.decode of call frames, and the call state
// machine (CallSession) they drive. The input is up to 16 frames, one per line; each
// frame's first byte says which participant sends it. Properties, not only survival:
// `call.*` frames (and only they) parse as calls; a signal that decodes, written out
// again as a frame, parses and decodes to the same signal; what the visitor is sent of
// it carries no resident candidate but a relay one.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRealtimeMessage(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    let resident = CallPeer.resident(userID: "u1", deviceID: "d1")
    var (session, _) = CallSession.start(visitID: "visit-1", resident: resident)
    let peers: [CallPeer] = [.visitor(visitID: "visit-1"), resident, .visitor(visitID: "visit-2"),
                             .resident(userID: "u1", deviceID: "d2")]
    for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).prefix(16) {
        guard let sender = line.first else { continue }
        let peer = peers[Int(sender) % peers.count]
        let text = String(decoding: line.dropFirst(), as: UTF8.self)
        let message = RealtimeClientMessage.parse(text)
        invariant(RealtimeClientMessage.parse(text) == message, "parse is not a function of the text: \(text)")
        switch message {
        case .call(let type, let data):
            invariant(CallMessageType.isCallFrame(type), "\(type) parsed as a call frame")
            do {
                let signal = try CallSignal.decode(type: type, data: data)
                invariant(signal.type.rawValue == type, "\(type) decoded as \(signal.type)")
                checkRoundTrip(signal)
                for action in session.handle(CallEvent(signal, from: peer)) {
                    if case .send(let frame, _) = action { _ = frame.encodedData() }
                }
            } catch {
                _ = RealtimeClientMessage.errorFrame(error.error.code.rawValue, error.error.message)
            }
        case .unknown(let type):
            invariant(!CallMessageType.isCallFrame(type) && type != "ping", "\(type) parsed as unknown")
        case .ping, .invalid:
            break
        }
        if sender & 0x80 != 0 { _ = session.handle(.participantLeft(peer)) }
        if sender & 0x40 != 0 { _ = session.handle(.participantJoined(peer)) }
    }
    return 0
}

/// `signal` written as a client frame parses and decodes to the same signal, and its
/// visitor's copy keeps no candidate but a relay one.
func checkRoundTrip(_ signal: CallSignal) {
    let data: Data
    do {
        switch signal {
        case .offer(let description), .answer(let description): data = try JSONCoding.encoder().encode(description)
        case .ice(let ice): data = try JSONCoding.encoder().encode(ice)
        case .hangup(let hangup): data = try JSONCoding.encoder().encode(hangup)
        }
    } catch {
        invariant(false, "a decoded signal does not encode: \(error)")
        return
    }
    let frame = #"{"type":"\#(signal.type.rawValue)","data":"# + String(decoding: data, as: UTF8.self) + "}"
    guard case .call(let type, let bytes) = RealtimeClientMessage.parse(frame) else {
        invariant(false, "the written frame does not parse as a call: \(frame)")
        return
    }
    invariant((try? CallSignal.decode(type: type, data: bytes)) == signal, "round trip changed the signal: \(frame)")
    if case .ice(let ice)? = CandidatePrivacy.forVisitor(signal), let candidate = ice.candidate?.candidate, !candidate.isEmpty {
        invariant(CandidatePrivacy.type(of: candidate) == "relay", "a non-relay candidate reaches the visitor: \(candidate)")
    }
}
