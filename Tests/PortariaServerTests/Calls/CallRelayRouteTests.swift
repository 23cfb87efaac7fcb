import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

/// Decision 0056's leftover: a frame relayed to a participant's other instance travels under
/// its own call, not the first owned call in which that participant is connected elsewhere.
@Suite("Call frames relayed under their own call")
struct CallRelayRouteTests {
    @Test("a resident in two calls owned here: each frame goes under its own visit; none for a call the peer is not elsewhere in")
    func framesTravelUnderTheirOwnCall() {
        // Maria takes part in both calls; her phone is on another instance for both.
        let owned = ["visit-a", "visit-b", "visit-c"]
        let elsewhere: Set<String> = ["visit-a", "visit-b"]
        let isElsewhere: (String) -> Bool = { elsewhere.contains($0) }
        let answerB = CallFrame.answer(CallDescription(visitID: "visit-b", sdp: "v=0"))
        #expect(CallRelayRoute.visitID(for: answerB, owned: owned, peerIsElsewhere: isElsewhere) == "visit-b")
        let iceA = CallFrame.ice(CallICE(visitID: "visit-a", candidate: nil))
        #expect(CallRelayRoute.visitID(for: iceA, owned: owned, peerIsElsewhere: isElsewhere) == "visit-a")
        // Her phone is here for visit-c: nothing to relay, not visit-a's route.
        let offerC = CallFrame.offer(CallDescription(visitID: "visit-c", sdp: "v=0"))
        #expect(CallRelayRoute.visitID(for: offerC, owned: owned, peerIsElsewhere: isElsewhere) == nil)
        // A call not owned here is not relayed from here.
        let offerD = CallFrame.offer(CallDescription(visitID: "visit-d", sdp: "v=0"))
        #expect(CallRelayRoute.visitID(for: offerD, owned: owned, peerIsElsewhere: { _ in true }) == nil)
    }

    @Test("an error frame names its visit when it has one; one without goes with the first such call by id")
    func errorFrames() {
        let owned = ["visit-b", "visit-a"]
        let named = CallFrame.error(CallSession.notFound(.offer, "visit-b"))
        #expect(named.visitID == "visit-b")
        #expect(CallRelayRoute.visitID(for: named, owned: owned, peerIsElsewhere: { _ in true }) == "visit-b")
        let anonymous = CallFrame.error(ErrorBody(code: .callNotFound, message: "no call"))
        #expect(anonymous.visitID == nil)
        #expect(CallRelayRoute.visitID(for: anonymous, owned: owned, peerIsElsewhere: { _ in true }) == "visit-a")
    }
}
