import Foundation
import PortariaCore

// fuzz/push-payload: what a phone does with the bytes of a push (PushKit's dictionary, a
// notification's userInfo, an FCM or Web Push data map), before any network call. A payload
// that traps here kills the app inside PushKit's callback, and iOS stops delivering VoIP
// pushes to an app that does not report a call: decoding must never trap, and the receipt
// must be readable whatever else the payload holds.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPushPayload(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Data(fuzzInput(data, size))
    let receipt = PushPayload.receipt(json: bytes)
    if let receipt { invariant(!receipt.pushID.isEmpty && !receipt.ackToken.isEmpty, "empty receipt \(receipt)") }
    guard let payload = try? PushPayload.decode(json: bytes) else { return 0 }
    switch payload {
    case .unknown: break
    default: invariant(payload.pushID.map { !$0.isEmpty } == true, "a known type decoded without a push id: \(payload)")
    }
    // A payload that decodes carries the same receipt the receipt-only reader finds, when
    // both have one (the receiver acknowledges with whichever it has).
    if let receipt, let decoded = payload.receipt { invariant(decoded == receipt, "\(decoded) != \(receipt)") }
    return 0
}
