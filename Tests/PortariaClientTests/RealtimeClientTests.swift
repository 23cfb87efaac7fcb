import Foundation
import PortariaClient
import PortariaCore
import Testing

/// A socket the test drives.
final class FakeConnection: RealtimeConnection, @unchecked Sendable {
    let messages: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    init() { (messages, continuation) = AsyncStream.makeStream(of: String.self) }
    func push(_ text: String) { continuation.yield(text) }
    func drop() { continuation.finish() }
    func send(_ text: String) {}
    func close() { continuation.finish() }
}

/// Hands out scripted connections (or handshake failures) in order, logging each connect.
final class FakeTransport: RealtimeTransport, @unchecked Sendable {
    let log: Locked<[String]>
    private let script = Locked<[Result<FakeConnection, RealtimeConnectError>]>([])
    let urls = Locked<[URL]>([])

    init(log: Locked<[String]>) { self.log = log }

    func then(_ results: Result<FakeConnection, RealtimeConnectError>...) { script.withLock { $0 += results } }

    func connect(url: URL, headers: [String: String]) async throws(RealtimeConnectError) -> any RealtimeConnection {
        urls.withLock { $0.append(url) }
        log.withLock { $0.append("connect \(url.query ?? "")") }
        let next = script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        switch next {
        case .success(let connection)?: return connection
        case .failure(let error)?: throw error
        case nil: return FakeConnection()   // parked: connected, silent
        }
    }
}

final class FakeCredentials: RealtimeCredentials, @unchecked Sendable {
    let rejected = Locked(0)
    func realtimeHeaders() async throws -> [String: String] { ["Authorization": "Bearer t-\(rejected.current)"] }
    func realtimeRejected(_ headers: [String: String]) async throws { rejected.withLock { $0 += 1 } }
}

@Suite("Realtime client", .timeLimit(.minutes(1)))
struct RealtimeClientTests {
    struct Rig {
        let log = Locked<[String]>([])
        let http: ScriptedHTTP
        let transport: FakeTransport
        let credentials = FakeCredentials()
        let clock = VirtualClock()
        let client: RealtimeClient

        init() {
            let log = log
            http = ScriptedHTTP(fallback: { request in
                let status = request.query.first { $0.name == "status" }?.value ?? ""
                log.withLock { $0.append("GET \(status)") }
                let visits = status == "pending" ? [Fixtures.visit(id: "p-1", kind: .visit, status: .unanswered)] : []
                return Fixtures.json(200, VisitPage(visits: visits, nextCursor: nil))
            })
            transport = FakeTransport(log: log)
            client = RealtimeClient(baseURL: URL(string: "http://portaria.test")!, http: http, credentials: credentials,
                                    transport: transport, clock: clock, random: .constant(0.5), deviceID: "install-1")
        }
    }

    static func event(_ type: String, seq: Int64) -> String {
        #"{"data":{"kind":"visit","status":"ringing","unit_label":"A-101","visit_id":"v-\#(seq)"},"seq":\#(seq),"type":"\#(type)"}"#
    }

    /// Reads updates until `count` have arrived (the suite's time limit turns a hang into a failure).
    static func next(_ iterator: inout AsyncStream<RealtimeClient.Update>.Iterator, _ count: Int = 1) async -> [RealtimeClient.Update] {
        var updates: [RealtimeClient.Update] = []
        for _ in 0..<count {
            guard let update = await iterator.next() else { break }
            updates.append(update)
        }
        return updates
    }

    static func summary(_ updates: [RealtimeClient.Update]) -> [String] {
        updates.map {
            switch $0 {
            case .state(let state): return "state \(state.rawValue)"
            case .snapshot(let pending, let recent): return "snapshot \(pending.count)/\(recent.count)"
            case .event(let type, let seq, _): return "\(type.rawValue) \(seq)"
            case .call(let type, _): return type
            }
        }
    }

    @Test("REST first, then the socket; a socket without since reads REST again after subscribed; each seq once, in order")
    func restFirstThenSocket() async throws {
        let rig = Rig()
        let socket = FakeConnection()
        rig.transport.then(.success(socket))
        var updates = rig.client.updates.makeAsyncIterator()
        await rig.client.start()
        #expect(Self.summary(await Self.next(&updates, 2)) == ["state connecting", "snapshot 1/0"])
        socket.push(#"{"seq":10,"type":"subscribed"}"#)
        #expect(Self.summary(await Self.next(&updates, 2)) == ["snapshot 1/0", "state live"])
        for seq: Int64 in [11, 11, 12, 9] { socket.push(Self.event("visit.ringing", seq: seq)) }
        socket.push(#"{"type":"pong"}"#)
        socket.push(#"{"seq":13,"type":"visit.teleported","data":{"visit_id":"x"}}"#)
        socket.push(Self.event("visit.resolved", seq: 14))
        #expect(Self.summary(await Self.next(&updates, 3)) == ["visit.ringing 11", "visit.ringing 12", "visit.resolved 14"])
        #expect(rig.log.current == ["GET pending", "GET history", "connect device_id=install-1", "GET pending", "GET history"])
        #expect(await rig.client.lastSeq == 14)
        await rig.client.finish()
    }

    @Test("a lost socket reconnects with backoff and since; resync_required reads REST, then the stream goes on")
    func reconnectAndResync() async throws {
        let rig = Rig()
        let first = FakeConnection()
        let second = FakeConnection()
        rig.transport.then(.failure(.unreachable("refused")), .success(first), .success(second))
        var updates = rig.client.updates.makeAsyncIterator()
        await rig.client.start()
        _ = await Self.next(&updates, 2)   // connecting, snapshot
        #expect(Self.summary(await Self.next(&updates, 1)) == ["state reconnecting"])
        first.push(#"{"seq":10,"type":"subscribed"}"#)
        _ = await Self.next(&updates, 2)   // snapshot, live
        first.push(Self.event("visit.created", seq: 11))
        _ = await Self.next(&updates, 1)
        first.drop()
        #expect(Self.summary(await Self.next(&updates, 1)) == ["state reconnecting"])
        second.push(#"{"seq":500,"type":"resync_required"}"#)
        second.push(#"{"seq":500,"type":"subscribed"}"#)
        second.push(Self.event("visit.ringing", seq: 500))
        second.push(Self.event("visit.ringing", seq: 501))
        #expect(Self.summary(await Self.next(&updates, 3)) == ["snapshot 1/0", "state live", "visit.ringing 501"])
        #expect(rig.transport.urls.current.map { $0.query ?? "" }
                == ["device_id=install-1", "device_id=install-1", "since=11&device_id=install-1"])
        // One backoff after the refused connect (½ s step, ¾ with jitter 0.5), one after the drop.
        #expect(rig.clock.sleeps == [0.375, 0.375])
        await rig.client.finish()
    }

    @Test("a 401 at the handshake refreshes the token and tries again at once")
    func handshakeRefresh() async throws {
        let rig = Rig()
        let socket = FakeConnection()
        rig.transport.then(.failure(.rejected(status: 401)), .success(socket))
        var updates = rig.client.updates.makeAsyncIterator()
        await rig.client.start()
        _ = await Self.next(&updates, 2)
        socket.push(#"{"seq":1,"type":"subscribed"}"#)
        let seen = Self.summary(await Self.next(&updates, 3))
        #expect(seen == ["state reconnecting", "snapshot 1/0", "state live"])
        #expect(rig.credentials.rejected.current == 1)
        #expect(rig.clock.sleeps.isEmpty)
        await rig.client.finish()
    }

    @Test("back to the foreground: REST first, then the socket from the last seq")
    func foreground() async throws {
        let rig = Rig()
        let first = FakeConnection()
        let second = FakeConnection()
        rig.transport.then(.success(first), .success(second))
        var updates = rig.client.updates.makeAsyncIterator()
        await rig.client.start()
        _ = await Self.next(&updates, 2)
        first.push(#"{"seq":7,"type":"subscribed"}"#)
        first.push(Self.event("visit.created", seq: 8))
        _ = await Self.next(&updates, 3)
        rig.log.withLock { $0.removeAll() }
        await rig.client.foreground()
        #expect(Self.summary(await Self.next(&updates, 2)) == ["state reconnecting", "snapshot 1/0"])
        second.push(#"{"seq":8,"type":"subscribed"}"#)
        #expect(Self.summary(await Self.next(&updates, 1)) == ["state live"])
        #expect(rig.log.current == ["GET pending", "GET history", "connect since=8&device_id=install-1"])
        await rig.client.finish()
    }
}
