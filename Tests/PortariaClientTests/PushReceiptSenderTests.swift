import Foundation
@testable import PortariaClient
import PortariaCore
import Testing

/// What an extension woken hours later runs: the payload is the credential.
@Suite("PushReceiptSender")
struct PushReceiptSenderTests {
    static let token = String(repeating: "a", count: 42) + "Q"
    /// Computed, not a stored `static let`: LeakSanitizer cannot see the pointer a Data
    /// kept to the end of the process holds (scripts/sanitizers/lsan.supp) and calls it a leak.
    static var ring: Data { Data(#"{"type":"visit.ring","push_id":"0f1e2d3c-aaaa-bbbb-cccc-000000000001","ack_token":"\#(token)","visit_id":"v-1","caller_name":"Pedro","unit_label":"A-101","geofence":{"status":"at_entrance","distance_m":12},"aps":{}}"#.utf8) }
    static let url = URL(string: "http://127.0.0.1:9")!
    static let acked = Timestamp.parse("2026-11-29T17:32:05Z")!

    static func sender(_ http: ScriptedHTTP, clock: VirtualClock) -> PushReceiptSender {
        PushReceiptSender(baseURL: url, transport: http, clock: clock, random: .constant(0.5))
    }

    @Test("acks with the payload's token, no Authorization, no company; the body is exactly {ack_token}")
    func request() async throws {
        let http = ScriptedHTTP(user: nil)
        http.then { _ in Fixtures.json(200, PushAck(pushID: "0f1e2d3c-aaaa-bbbb-cccc-000000000001", ackedAt: Self.acked)) }
        let clock = VirtualClock()
        let payload = try PushPayload.decode(json: Self.ring)
        #expect(payload.ackToken == Self.token)
        let outcome = await Self.sender(http, clock: clock).acknowledge(payload, deadline: clock.now().addingTimeInterval(25))
        #expect(outcome == .acknowledged(ackedAt: Self.acked))
        let sent = try #require(http.requests.first)
        #expect(sent.method == "POST")
        #expect(sent.path == "/v1/push/0f1e2d3c-aaaa-bbbb-cccc-000000000001/ack")
        #expect(sent.headers.keys.map { $0.lowercased() }.sorted() == ["content-type"])
        #expect(try JSONCoding.decoder().decode(JSONValue.self, from: sent.body ?? Data()) == .object(["ack_token": .string(Self.token)]))
    }

    @Test("retried with backoff through no answer, 503 with Retry-After, a proxy's 404 page, 429; until acked")
    func retries() async throws {
        let http = ScriptedHTTP(user: nil)
        http.then({ _ in throw TransportError("connection reset") },
                  { _ in ClientHTTPResponse(status: 503, headers: ["Retry-After": "3"]) },
                  { _ in ClientHTTPResponse(status: 404, body: Data("<html>captive portal</html>".utf8)) },
                  { _ in Fixtures.error(429, "RATE_LIMITED", headers: ["Retry-After": "1"]) },
                  { _ in Fixtures.json(200, PushAck(pushID: "0f1e2d3c-aaaa-bbbb-cccc-000000000001", ackedAt: Self.acked)) })
        let clock = VirtualClock()
        let outcome = await Self.sender(http, clock: clock).acknowledge(json: Self.ring, deadline: clock.now().addingTimeInterval(25))
        #expect(outcome == .acknowledged(ackedAt: Self.acked))
        #expect(http.requests.count == 5)
        // ½ s steps doubling with equal jitter at 0.5: 0.375, then max(0.75, 3), 1.5, max(3, 1).
        #expect(clock.sleeps == [0.375, 3, 1.5, 3])
    }

    @Test("refusals the API makes are final: 404 (wrong, expired, unknown) and 400 are not repeated", arguments: [404, 400])
    func final(status: Int) async throws {
        let http = ScriptedHTTP(user: nil)
        http.then { _ in Fixtures.error(status, status == 404 ? "NOT_FOUND" : "INVALID_REQUEST") }
        let clock = VirtualClock()
        let outcome = await Self.sender(http, clock: clock).acknowledge(json: Self.ring, deadline: clock.now().addingTimeInterval(25))
        #expect(outcome == .refused(status: status))
        #expect(http.requests.count == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test("gives up at the deadline (an extension's run time), never sleeping past it")
    func deadline() async throws {
        let http = ScriptedHTTP(user: nil)   // every request: no route to host
        let clock = VirtualClock()
        let start = clock.now()
        let outcome = await Self.sender(http, clock: clock).acknowledge(json: Self.ring, deadline: start.addingTimeInterval(20))
        guard case .gaveUp(let attempts) = outcome else { Issue.record("\(outcome)"); return }
        #expect(attempts == http.requests.count)
        #expect(attempts >= 4)
        #expect(clock.now() < start.addingTimeInterval(20))
    }

    @Test("no ack_token (an older server) or an id that is not one: nothing is sent")
    func nothingToSend() async throws {
        let http = ScriptedHTTP(user: nil)
        let clock = VirtualClock()
        let sender = Self.sender(http, clock: clock)
        let old = Data(#"{"type":"delivery","push_id":"p-1","visit_id":"v-1"}"#.utf8)
        #expect(await sender.acknowledge(json: old, deadline: clock.now().addingTimeInterval(5)) == .noCapability)
        #expect(await sender.acknowledge(try PushPayload.decode(json: old), deadline: clock.now().addingTimeInterval(5)) == .noCapability)
        let sneaky = PushReceiptCapability(pushID: "../../v1/visits/x/resolve?", ackToken: Self.token)
        #expect(await sender.acknowledge(sneaky, deadline: clock.now().addingTimeInterval(5)) == .refused(status: 404))
        #expect(http.requests.isEmpty)
    }

    @Test("an unreadable payload of a newer type still yields its receipt")
    func unknownType() throws {
        let json = Data(#"{"type":"visit.hologram","push_id":"p-9","ack_token":"\#(Self.token)"}"#.utf8)
        #expect(PushPayload.receipt(json: json) == PushReceiptCapability(pushID: "p-9", ackToken: Self.token))
        #expect(try PushPayload.decode(json: json).receipt == PushReceiptCapability(pushID: "p-9", ackToken: Self.token))
        // A ring that cannot be decoded (no visit_id) still acknowledges.
        let broken = Data(#"{"type":"visit.ring","push_id":"p-8","ack_token":"\#(Self.token)"}"#.utf8)
        #expect((try? PushPayload.decode(json: broken)) == nil)
        #expect(PushPayload.receipt(json: broken)?.pushID == "p-8")
    }

    @Test("the call coordinator's acknowledge effect carries the capability")
    func coordinatorCarriesToken() throws {
        var coordinator = IncomingCallCoordinator(myUserID: "u-me", deviceID: "d-1")
        let payload = try JSONCoding.decoder().decode(JSONValue.self, from: Self.ring)
        let outcome = coordinator.voipPush(payload, fallbackCallID: UUID(), now: Self.acked)
        #expect(outcome.effects.contains(.acknowledgePush(pushID: "0f1e2d3c-aaaa-bbbb-cccc-000000000001", ackToken: Self.token)))
    }
}
