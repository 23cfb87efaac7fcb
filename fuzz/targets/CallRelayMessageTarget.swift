import Foundation
import PortariaCore

// fuzz/call-relay-message: what an instance does with a NOTIFY payload on `portaria_calls`
// (decision 0040). The channel is the instances' own, but a payload carries a client's call
// frame, and a malformed one must cost nothing more than being dropped: parse never traps,
// and whatever parses survives its own encoding unchanged (what the sender wrote is what the
// receiver reads).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCallRelayMessage(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)
    guard let message = CallRelayMessage.parse(text) else { return 0 }
    let again = CallRelayMessage.parse(message.jsonText)
    invariant(again == message, "round trip changed \(message) into \(String(describing: again))")
    if let ref = message.ref { invariant(ref >= 1, "ref \(ref) accepted") }
    _ = message.reference(1)
    return 0
}
