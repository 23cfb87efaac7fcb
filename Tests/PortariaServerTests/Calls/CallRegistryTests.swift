import Foundation
import PortariaCore
import PortariaTestSupport
import Testing
@testable import PortariaServer

/// A clock that moves only when told to.
final class ManualClock: Clock, @unchecked Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let current = Locked(Instant(offset: .zero))
    var now: Instant { current.current }
    var minimumResolution: Duration { .nanoseconds(1) }

    func advance(by duration: Duration) { current.withLock { $0 = $0.advanced(by: duration) } }

    /// Returns once someone advanced the clock past `deadline` (polls: tests only).
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        while now < deadline {
            try Task.checkCancellation()
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}

@Suite("CallRegistry")
struct CallRegistryTests {
    typealias F = CallFixture

    func registry() -> (CallRegistry<ManualClock>, ManualClock) {
        let clock = ManualClock()
        return (CallRegistry(clock: clock), clock)
    }

    func json(_ text: String) -> [UInt8] { Array(text.utf8) }
    var offerJSON: [UInt8] { json(#"{"visit_id":"\#(F.visitID)","sdp":"v=0\r\ns=offer\r\n"}"#) }
    var answerJSON: [UInt8] { json(#"{"visit_id":"\#(F.visitID)","sdp":"v=0\r\ns=answer\r\n"}"#) }
    var hangupJSON: [UInt8] { json(#"{"visit_id":"\#(F.visitID)"}"#) }

    func sends(_ directives: [CallDirective]) -> [(String, CallPeer)] {
        directives.compactMap { if case .send(let frame, let peer) = $0 { (frame.type, peer) } else { nil } }
    }

    func records(_ directives: [CallDirective]) -> [CallTimelineRecord] {
        directives.compactMap { if case .record(let record) = $0 { record } else { nil } }
    }

    @Test("a whole call through receive(type:data:from:), with the connected time on the timeline")
    func wholeCall() async throws {
        let (registry, clock) = registry()
        let started = try await registry.start(visitID: F.visitID, resident: F.resident)
        #expect(records(started) == [CallTimelineRecord(entry: .started(visitID: F.visitID, resident: F.resident))])
        #expect(await registry.activeCalls == 1)

        let offer = await registry.receive(type: "call.offer", data: offerJSON, from: F.visitor)
        #expect(sends(offer).map(\.0) == ["call.offer"])
        #expect(sends(offer).map(\.1) == [F.resident])
        if case .send(let frame, _) = offer[0] {
            #expect(String(decoding: frame.encodedData(), as: UTF8.self) == #"{"sdp":"v=0\r\ns=offer\r\n","visit_id":"visit-1"}"#)
        }
        clock.advance(by: .seconds(3))
        let answer = await registry.receive(type: "call.answer", data: answerJSON, from: F.resident)
        #expect(sends(answer).map(\.0) == ["call.answer"])
        #expect(records(answer) == [CallTimelineRecord(entry: .connected(visitID: F.visitID))])
        #expect(await registry.state(of: F.visitID) == .connected)

        clock.advance(by: .seconds(72))
        let hangup = await registry.receive(type: "call.hangup", data: hangupJSON, from: F.visitor)
        #expect(sends(hangup).map(\.0) == ["call.ended", "call.ended"])
        #expect(Set(sends(hangup).map(\.1)) == [F.visitor, F.resident])
        #expect(records(hangup) == [CallTimelineRecord(
            entry: .ended(visitID: F.visitID, reason: .hangup, endedBy: .visitor, wasConnected: true), connectedFor: .seconds(72))])
        #expect(await registry.state(of: F.visitID) == nil)
        #expect(await registry.activeCalls == 0)
        #expect(await registry.nextDeadline() == nil)
    }

    @Test("strangers and unknown calls get the same CALL_NOT_FOUND, and nothing reaches the participants")
    func strangers() async throws {
        let (registry, _) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        var bodies: [ErrorBody] = []
        for stranger in F.strangers {
            let directives = await registry.receive(type: "call.offer", data: offerJSON, from: stranger)
            #expect(directives.count == 1)
            guard case .send(.error(let body), let peer) = directives[0] else { Issue.record("not an error"); continue }
            #expect(peer == stranger)
            bodies.append(body)
        }
        // A call that does not exist at all answers identically.
        let missing = await registry.receive(type: "call.offer", data: json(#"{"visit_id":"visit-9","sdp":"v=0"}"#), from: F.otherVisitor)
        guard case .send(.error(let missingBody), _) = missing.first else { Issue.record("not an error"); return }
        #expect(missingBody.code == .callNotFound && missingBody.message == bodies[0].message)
        #expect(bodies.allSatisfy { $0 == bodies[0] } && bodies[0].code == .callNotFound)
        #expect(await registry.state(of: F.visitID) == .waitingForOffer)
    }

    @Test("bad frames are answered to the sender only", arguments: [
        ("call.offer", #"{"visit_id":"visit-1"}"#, ErrorCode.invalidMessage),
        ("call.dance", #"{"visit_id":"visit-1"}"#, ErrorCode.unknownMessageType),
        ("call.ended", #"{"visit_id":"visit-1","reason":"hangup"}"#, ErrorCode.unknownMessageType),
        ("call.offer", "not json", ErrorCode.invalidMessage),
    ])
    func badFrames(type: String, data: String, code: ErrorCode) async throws {
        let (registry, _) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        let directives = await registry.receive(type: type, data: json(data), from: F.visitor)
        #expect(directives.count == 1)
        guard case .send(.error(let body), let peer) = directives.first else { Issue.record("not an error"); return }
        #expect(peer == F.visitor && body.code == code)
        #expect(await registry.state(of: F.visitID) == .waitingForOffer)
    }

    @Test("an oversized SDP is MESSAGE_TOO_LARGE and is not relayed")
    func oversized() async throws {
        let (registry, _) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        let sdp = "v=0" + String(repeating: "x", count: 70_000)
        let directives = await registry.receive(type: "call.offer", data: json(#"{"visit_id":"visit-1","sdp":"\#(sdp)"}"#), from: F.visitor)
        guard case .send(.error(let body), F.visitor) = directives.first else { Issue.record("not an error"); return }
        #expect(body.code == .messageTooLarge && directives.count == 1)
    }

    @Test("starting again: same device is a no-op, another device is refused")
    func startTwice() async throws {
        let (registry, _) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        #expect(try await registry.start(visitID: F.visitID, resident: F.resident).isEmpty)
        await #expect(throws: CallRegistryError.callInProgress(resident: F.resident)) {
            try await registry.start(visitID: F.visitID, resident: F.otherDevice)
        }
    }

    @Test("no offer within 45 s: negotiation_timeout, not a second earlier")
    func negotiationTimeout() async throws {
        let (registry, clock) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        #expect(await registry.nextDeadline() == clock.now.advanced(by: .seconds(45)))
        clock.advance(by: .seconds(44))
        #expect(await registry.expireDue().isEmpty)
        clock.advance(by: .seconds(1))
        let directives = await registry.expireDue()
        #expect(records(directives) == [CallTimelineRecord(
            entry: .ended(visitID: F.visitID, reason: .negotiationTimeout, endedBy: nil, wasConnected: false))])
        #expect(directives.contains(.send(F.ended(.negotiationTimeout, nil), to: F.visitor)))
        #expect(await registry.activeCalls == 0)
        #expect(await registry.expireDue().isEmpty) // fired once
    }

    @Test("an offer restarts the negotiation deadline; the answer cancels it")
    func negotiationRestarts() async throws {
        let (registry, clock) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        clock.advance(by: .seconds(40))
        _ = await registry.receive(type: "call.offer", data: offerJSON, from: F.visitor)
        clock.advance(by: .seconds(44))
        #expect(await registry.expireDue().isEmpty)
        _ = await registry.receive(type: "call.answer", data: answerJSON, from: F.resident)
        clock.advance(by: .seconds(120))
        #expect(await registry.expireDue().isEmpty)
        #expect(await registry.state(of: F.visitID) == .connected)
    }

    @Test("a device that drops and returns within 30 s keeps the call and gets what it missed")
    func reconnectWithinGrace() async throws {
        let (registry, clock) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        _ = await registry.participantLeft(F.resident)
        let offer = await registry.receive(type: "call.offer", data: offerJSON, from: F.visitor)
        #expect(sends(offer).isEmpty) // queued, not sent into the void
        clock.advance(by: .seconds(29))
        #expect(await registry.expireDue().isEmpty)
        let joined = await registry.participantJoined(F.resident)
        #expect(sends(joined).map(\.0) == ["call.offer"])
        clock.advance(by: .seconds(10))
        #expect(await registry.expireDue().isEmpty)
        #expect(await registry.state(of: F.visitID) == .offered(by: .visitor, renegotiation: false))
    }

    @Test("a participant gone for 30 s ends the call as participant_left")
    func reconnectTimeout() async throws {
        let (registry, clock) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        _ = await registry.receive(type: "call.offer", data: offerJSON, from: F.visitor)
        _ = await registry.receive(type: "call.answer", data: answerJSON, from: F.resident)
        clock.advance(by: .seconds(5))
        _ = await registry.participantLeft(F.visitor)
        clock.advance(by: .seconds(30))
        let directives = await registry.expireDue()
        #expect(records(directives) == [CallTimelineRecord(
            entry: .ended(visitID: F.visitID, reason: .participantLeft, endedBy: .visitor, wasConnected: true),
            connectedFor: .seconds(35))])
        #expect(directives.contains(.send(F.ended(.participantLeft, .visitor), to: F.resident)))
    }

    @Test("an answering device that never opens its socket ends the call after the grace period")
    func residentNeverJoins() async throws {
        let (registry, clock) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident, residentPresent: false)
        clock.advance(by: .seconds(30))
        let directives = await registry.expireDue()
        #expect(records(directives).first?.entry == .ended(visitID: F.visitID, reason: .participantLeft, endedBy: .resident, wasConnected: false))
    }

    @Test("the 15-minute cap ends even a healthy call")
    func maxDuration() async throws {
        let (registry, clock) = registry()
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        _ = await registry.receive(type: "call.offer", data: offerJSON, from: F.visitor)
        _ = await registry.receive(type: "call.answer", data: answerJSON, from: F.resident)
        clock.advance(by: .seconds(899))
        #expect(await registry.expireDue().isEmpty)
        clock.advance(by: .seconds(1))
        #expect(records(await registry.expireDue()).first?.entry
                == .ended(visitID: F.visitID, reason: .maxDuration, endedBy: nil, wasConnected: true))
    }

    @Test("several calls keep separate timers; a device in none of them changes nothing")
    func severalCalls() async throws {
        let (registry, clock) = registry()
        _ = try await registry.start(visitID: "visit-1", resident: F.resident)
        clock.advance(by: .seconds(20))
        _ = try await registry.start(visitID: "visit-2", resident: F.otherResident)
        #expect(await registry.participantLeft(F.otherDevice).isEmpty)
        clock.advance(by: .seconds(25))
        let first = await registry.expireDue()
        #expect(records(first).map(\.entry) == [.ended(visitID: "visit-1", reason: .negotiationTimeout, endedBy: nil, wasConnected: false)])
        #expect(await registry.state(of: "visit-2") == .waitingForOffer)
        clock.advance(by: .seconds(20))
        #expect(records(await registry.expireDue()).count == 1)
        #expect(await registry.activeCalls == 0)
    }

    @Test("close and closeAll end calls from the server side")
    func close() async throws {
        let (registry, _) = registry()
        _ = try await registry.start(visitID: "visit-1", resident: F.resident)
        _ = try await registry.start(visitID: "visit-2", resident: F.otherResident)
        #expect(await registry.close(visitID: "visit-9").isEmpty)
        let closed = await registry.close(visitID: "visit-1")
        #expect(closed.contains(.send(F.ended(.visitClosed, nil), to: F.visitor)))
        let all = await registry.closeAll()
        #expect(records(all).map(\.entry) == [.ended(visitID: "visit-2", reason: .serverShutdown, endedBy: nil, wasConnected: false)])
        #expect(await registry.activeCalls == 0)
    }

    @Test("run() fires due timers on the clock and stops when cancelled", .timeLimit(.minutes(1)))
    func runLoop() async throws {
        var limits = CallSession.Limits()
        limits.negotiationTimeout = .milliseconds(50)
        let registry = CallRegistry(clock: ContinuousClock(), limits: limits)
        _ = try await registry.start(visitID: F.visitID, resident: F.resident)
        let performed = Locked<[CallDirective]>([])
        let loop = Task { await registry.run(every: .milliseconds(10)) { directives in performed.withLock { $0 += directives } } }
        _ = await eventually(within: .seconds(10), every: .milliseconds(10)) { !performed.current.isEmpty }
        loop.cancel()
        await loop.value
        #expect(records(performed.current).first?.entry
                == .ended(visitID: F.visitID, reason: .negotiationTimeout, endedBy: nil, wasConnected: false))
    }
}

/// What a visitor may learn of a resident's network.
@Suite("Candidate privacy")
struct CandidatePrivacyTests {
    @Test("only relay candidates pass, with their related address blanked", arguments: [
        ("candidate:1 1 udp 2122260223 192.168.1.20 50000 typ host", nil),
        ("candidate:1 1 tcp 1518280447 192.168.1.20 9 typ host tcptype active", nil),
        ("candidate:2 1 udp 1686052607 198.51.100.20 50000 typ srflx raddr 192.168.1.20 rport 50000", nil),
        ("candidate:4 1 udp 1845501695 198.51.100.20 50000 typ prflx raddr 192.168.1.20 rport 50000", nil),
        ("candidate:1 1 udp 2122260223 4b1e2f9a-3c1d.local 50000 typ host", nil),
        ("candidate:garbage", nil),
        ("candidate:3 1 udp 41885439 203.0.113.9 61000 typ relay raddr 198.51.100.20 rport 50000",
         "candidate:3 1 udp 41885439 203.0.113.9 61000 typ relay raddr 0.0.0.0 rport 0"),
        ("", ""),
    ] as [(String, String?)])
    func candidates(_ input: String, _ expected: String?) {
        #expect(CandidatePrivacy.sanitize(candidate: input) == expected)
    }

    @Test("an SDP keeps its relay candidates and loses every address of the device")
    func sdp() {
        let sdp = "v=0\r\no=- 3 4 IN IP4 192.168.1.20\r\ns=-\r\nt=0 0\r\nm=video 50000 UDP/TLS/RTP/SAVPF 96\r\n"
            + "c=IN IP4 192.168.1.20\r\na=rtcp:50001 IN IP4 192.168.1.20\r\n"
            + "a=candidate:1 1 udp 2122260223 192.168.1.20 50000 typ host\r\n"
            + "a=candidate:3 1 udp 41885439 203.0.113.9 61000 typ relay raddr 198.51.100.20 rport 50000\r\n"
            + "a=ice-ufrag:abcd\r\n"
        let cleaned = CandidatePrivacy.sanitize(sdp: sdp)
        #expect(!cleaned.contains("192.168.1.20") && !cleaned.contains("198.51.100.20"), "\(cleaned)")
        #expect(cleaned.contains("a=candidate:3 1 udp 41885439 203.0.113.9 61000 typ relay raddr 0.0.0.0 rport 0"))
        #expect(cleaned.contains("a=ice-ufrag:abcd") && cleaned.contains("o=- 3 4 IN IP4 0.0.0.0") && cleaned.hasSuffix("\r\n"))
    }

    @Test("an SDP mixing CRLF, LF and a lone CR loses every host and srflx candidate, whatever ends its line")
    func mixedLineEndings() {
        // Each candidate follows a line that is not one: read with the wrong ending, the
        // pair is one "line" that does not start with a=candidate and would pass whole.
        let sdp = "v=0\r\no=- 3 4 IN IP4 192.168.1.20\r\na=ice-ufrag:abcd\n"
            + "a=candidate:1 1 udp 2122260223 192.168.1.21 50000 typ host\n"
            + "a=ice-pwd:efgh\r"
            + "a=candidate:2 1 udp 1686052607 198.51.100.22 50001 typ srflx raddr 192.168.1.21 rport 50000\r"
            + "a=candidate:4 1 udp 2122260223 192.168.1.23 50002 typ host\r\n"
            + "a=candidate:3 1 udp 41885439 203.0.113.9 61000 typ relay raddr 198.51.100.20 rport 50000\r\n"
        let cleaned = CandidatePrivacy.sanitize(sdp: sdp)
        for address in ["192.168.1.20", "192.168.1.21", "198.51.100.22", "192.168.1.23", "198.51.100.20"] {
            #expect(!cleaned.contains(address), "\(address) reached the visitor: \(cleaned)")
        }
        #expect(cleaned.contains("typ relay") && !cleaned.contains("\r\r") && cleaned.hasSuffix("\r\n"))
        #expect(cleaned.components(separatedBy: "\r\n").allSatisfy { !$0.contains("\n") && !$0.contains("\r") })
    }
}
