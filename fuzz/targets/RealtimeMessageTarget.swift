import Foundation
import PortariaCore

// fuzz/realtime-message: what a realtime socket does with client text frames —
// RealtimeClientMessage.parse, CallSignal.decode of call frames, and the call state
// machine (CallSession) they drive. The input is up to 16 frames, one per line; each
// frame's first byte says which participant sends it.

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
        switch RealtimeClientMessage.parse(String(decoding: line.dropFirst(), as: UTF8.self)) {
        case .call(let type, let data):
            do {
                let signal = try CallSignal.decode(type: type, data: data)
                invariant(signal.type.rawValue == type, "\(type) decoded as \(signal.type)")
                for action in session.handle(CallEvent(signal, from: peer)) {
                    if case .send(let frame, _) = action { _ = frame.encodedData() }
                }
            } catch {
                _ = RealtimeClientMessage.errorFrame(error.error.code.rawValue, error.error.message)
            }
        case .ping, .unknown, .invalid:
            break
        }
        if sender & 0x80 != 0 { _ = session.handle(.participantLeft(peer)) }
        if sender & 0x40 != 0 { _ = session.handle(.participantJoined(peer)) }
    }
    return 0
}
