import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// Pushes to one provider share one TCP connection however many are in flight, and
/// the server's stream limit and the client's own are both honoured (the excess waits).
/// The fake APNs counts the TCP connections it accepts and the streams open at once on
/// its side.
@Suite("APNs connection: one TCP connection, bounded streams", .serialized)
struct PushConnectionTests {
    static func ring(_ token: String, _ index: Int) -> OutgoingPush {
        OutgoingPush(pushID: UUID().uuidString.lowercased(), kind: .visitRing, platform: "ios", tokenKind: .voip, token: token,
                     message: PushMessage(visitID: UUID().uuidString.lowercased(), callerName: "Visitante \(index)",
                                          unitLabel: "A-101", visitKind: .visit),
                     deadline: Date().addingTimeInterval(120))
    }

    /// Sends `count` pushes at once; the fake holds each answer `delay` seconds so that
    /// streams pile up on the connection.
    static func sendAtOnce(count: Int, delay: Double, serverStreams: Int, clientStreams: Int)
        async throws -> (results: [PushResult], fixture: APNsFixture, pki: TestPKI) {
        let pki = try await TestPKI.make()
        let token = hexToken()
        let answers = Array(repeating: JSONValue.object(["status": 200, "delay": .number(delay)]), count: count)
        let apns = try APNsFixture.make(pki: pki, script: [token: answers], serverStreams: serverStreams,
                                        clientStreams: clientStreams)
        let provider = apns.provider
        let results = await withTaskGroup(of: PushResult.self) { group -> [PushResult] in
            for index in 0..<count { group.addTask { await provider.send(Self.ring(token, index)) } }
            var results: [PushResult] = []
            for await result in group { results.append(result) }
            return results
        }
        return (results, apns, pki)
    }

    @Test("start() puts an APNs push on the wire before anyone awaits its outcome, and the outcome is APNs' answer")
    func startSendsAtOnce() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let apns = try APNsFixture.make(pki: pki)
        defer { apns.stop() }
        // The gate POST's committing thread calls start() and leaves the waiting to a task.
        let started = apns.provider.start(Self.ring(hexToken(), 1))
        #expect(await eventually(within: .seconds(30)) { apns.server.records().count == 1 })
        let result = await started.result()
        #expect(result.outcome == .accepted)
        #expect(apns.server.records().map { $0["status"]?.intValue } == [200])
    }

    @Test("120 pushes at once to an APNs that allows 10 streams: one TCP connection, never more than 10 streams open")
    func serverStreamLimit() async throws {
        let (results, apns, pki) = try await Self.sendAtOnce(count: 120, delay: 0.2, serverStreams: 10, clientStreams: 100)
        defer { apns.stop(); pki.remove() }
        #expect(results.filter { $0.outcome == .accepted }.count == 120, "\(Set(results.map { "\($0.outcome) \($0.reason ?? "")" }))")
        let stats = apns.stats()
        #expect(stats.connectionsAccepted == 1, "TCP connections the fake accepted")
        #expect(stats.maxOpenStreams <= 10, "the server's SETTINGS_MAX_CONCURRENT_STREAMS")
        #expect(stats.maxOpenStreams > 1, "pushes were multiplexed, not sent one by one")
        #expect(apns.provider.client.connectionsOpened.current == 1)
        #expect(apns.server.records().count == 120)
    }

    @Test("64 pushes at once with the client allowing 8 streams: 8 open at most, one connection, each push sent once")
    func clientStreamLimitAndHandleReuse() async throws {
        let (results, apns, pki) = try await Self.sendAtOnce(count: 64, delay: 0.1, serverStreams: 1000, clientStreams: 8)
        defer { apns.stop(); pki.remove() }
        #expect(results.filter { $0.outcome == .accepted }.count == 64)
        let stats = apns.stats()
        #expect(stats.connectionsAccepted == 1)
        #expect(stats.maxOpenStreams <= 8, "pushes beyond the client's limit waited in the client")
        #expect(stats.maxOpenStreams > 1)
        // Every push reached the fake with its own id, none lost or doubled.
        let ids = apns.server.records().compactMap { $0["headers"]?["apns-id"]?.stringValue }
        #expect(ids.count == 64 && Set(ids).count == 64)
    }

    @Test("a push that cannot get a stream before its timeout fails as a transport error, and the next one still goes")
    func timeoutWhileWaiting() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let slow = hexToken()
        let fast = hexToken()
        // Held 8 s, inside the provider's own 10 s timeout: long enough that a request with a
        // 0.5 s timeout waiting behind it ends first however loaded the machine.
        let apns = try APNsFixture.make(pki: pki, script: [slow: [.object(["status": 200, "delay": 8])]], clientStreams: 1)
        defer { apns.stop() }
        let client = apns.provider.client
        // The client's one stream is held by the fake; a request with a 0.5 s timeout waits behind it.
        let slowAnswered = Locked(false)
        let provider = apns.provider
        let first = Task {
            let result = await provider.send(Self.ring(slow, 0))
            slowAnswered.withLock { $0 = true }
            return result
        }
        #expect(await eventually(within: .seconds(30)) { apns.stats().maxOpenStreams == 1 }, "the slow push reached the fake")
        await #expect(throws: OutboundHTTPError.self) {
            _ = try await client.send(OutboundRequest(method: "GET", url: apns.server.url + "/health", timeout: 0.5))
        }
        // Failed at its own timeout, while the busy stream was still held — not after it.
        #expect(!slowAnswered.current, "the waiting request ended only once the busy stream was answered")
        #expect(await first.value.outcome == .accepted)
        #expect(await apns.provider.send(Self.ring(fast, 1)).outcome == .accepted)
    }
}
