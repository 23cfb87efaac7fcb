import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A resolver that maps names to the local servers a test started, and can hold one
/// name's lookup until the test lets it go (a DNS server that does not answer).
final class ScriptedResolver: HostResolver, @unchecked Sendable {
    private let table: [String: [ResolvedAddress]]
    private let held: String?
    private let gate = DispatchSemaphore(value: 0)
    let lookups = Locked<[String]>([])

    init(_ table: [String: [ResolvedAddress]], holding held: String? = nil) {
        self.table = table
        self.held = held
    }

    func release() { gate.signal() }

    func addresses(host: String, port: Int) throws -> [ResolvedAddress] {
        lookups.withLock { $0.append(host) }
        if host == held { gate.wait() }
        guard let addresses = table[host] else { throw OutboundHTTPError.transport("cannot resolve \(host): no such name") }
        return addresses
    }
}

/// A loopback address whose connects are never answered: a listening socket whose accept
/// queue is full drops further SYNs (Linux), as a dead host on the path would.
final class SilentAddress {
    let listener: Int32
    var fillers: [Int32] = []
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listener = descriptor
        var address = Self.loopback(0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 0) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard listening else { throw FixtureError("bind/listen: \(String(cString: strerror(errno)))") }
        port = Int(UInt16(bigEndian: address.sin_port))
        // Fill the queue (it takes backlog + 1) with connects nobody accepts.
        for _ in 0..<3 { fillers.append(Self.startConnect(port)) }
    }

    static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    static func startConnect(_ port: Int) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = loopback(port)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return descriptor
    }

    /// Whether one more connect is still unanswered after `milliseconds`: the premise of
    /// the tests that use this address.
    func staysSilent(milliseconds: Int32) -> Bool {
        let probe = Self.startConnect(port)
        defer { close(probe) }
        var descriptor = pollfd(fd: probe, events: Int16(POLLOUT), revents: 0)
        return poll(&descriptor, 1, milliseconds) == 0
    }

    deinit {
        for filler in fillers { close(filler) }
        close(listener)
    }
}

/// A silent address that starts answering when told to: from then on it accepts every
/// connection (the queue's fillers too) and relays its bytes to a live server, as a
/// congested path that clears would.
final class LateAddress {
    let silent: SilentAddress
    private let target: Int

    init(relayingTo target: Int) throws {
        silent = try SilentAddress()
        self.target = target
    }

    func startAnswering() {
        let (listener, target) = (silent.listener, target)
        Thread {
            while true {
                let accepted = accept(listener, nil, nil)
                guard accepted >= 0 else { return }
                let upstream = SilentAddress.startConnect(target)
                var ready = pollfd(fd: upstream, events: Int16(POLLOUT), revents: 0)
                _ = poll(&ready, 1, 5000)
                let flags = fcntl(upstream, F_GETFL)
                _ = fcntl(upstream, F_SETFL, flags & ~Int32(O_NONBLOCK))
                for (from, to) in [(accepted, upstream), (upstream, accepted)] {
                    Thread {
                        var buffer = [UInt8](repeating: 0, count: 16384)
                        while true {
                            let count = read(from, &buffer, buffer.count)
                            guard count > 0, write(to, buffer, count) == count else { break }
                        }
                        shutdown(to, Int32(SHUT_WR))
                    }.start()
                }
            }
        }.start()
    }
}

/// Name lookups run off the client's I/O thread, and a connect tries every address of the
/// name in turn: a slow DNS answer or one dead address of a push service does not stop
/// the pushes.
@Suite("HTTP/2 client: name lookups off the I/O thread, each address tried in turn", .serialized)
struct HTTP2ClientAddressTests {
    @Test("a name whose lookup hangs holds up only its own origin: a request to another origin is answered meanwhile")
    func slowLookupHoldsOnlyItsOrigin() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let (server, url) = try await HTTP2ClientTests.sink(pki, [])
        defer { server.stop() }
        let local = try #require(ResolvedAddress(numeric: "127.0.0.1", port: server.port))
        let resolver = ScriptedResolver(["localhost": [local], "127.0.0.1": [local]], holding: "localhost")
        let client = try HTTP2Client(caFile: pki.caFile, resolver: resolver)
        defer { client.shutdown() }
        let released = Locked(false)
        // Whatever happens, the held lookup ends, so a failing run ends too.
        DispatchQueue.global().asyncAfter(deadline: .now() + 20) { released.withLock { $0 = true }; resolver.release() }

        let slow = Task { try await client.send(request("https://localhost:\(server.port)/3/device/token")) }
        #expect(await eventually { resolver.lookups.current.contains("localhost") })
        let other = try await client.send(request(url))
        #expect(other.status == 200)
        #expect(!released.current, "the other origin's request was answered while the lookup still hung")

        released.withLock { $0 = true }
        resolver.release()
        #expect(try await slow.value.status == 200, "the held origin's request goes out once its name resolves")
    }

    /// A client whose resolver gives `localhost` the port `first` on 127.0.0.1, then a live
    /// nghttpd's; the test runs `body` with it.
    static func withFirstAddress(port first: Int, connectTimeout: Duration = .seconds(5), attemptDelay: Duration = .milliseconds(250),
                                 _ body: (HTTP2Client, _ url: String, ScriptedResolver) async throws -> Void) async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let (server, _) = try await HTTP2ClientTests.sink(pki, [])
        defer { server.stop() }
        let firstAddress = try #require(ResolvedAddress(numeric: "127.0.0.1", port: first))
        let live = try #require(ResolvedAddress(numeric: "127.0.0.1", port: server.port))
        let resolver = ScriptedResolver(["localhost": [firstAddress, live]])
        let client = try HTTP2Client(caFile: pki.caFile, connectTimeout: connectTimeout, attemptDelay: attemptDelay, resolver: resolver)
        defer { client.shutdown() }
        try await body(client, "https://localhost:\(server.port)/3/device/token", resolver)
    }

    @Test("the first address refuses the connect: the next address of the name is tried and the request answered")
    func refusedAddressFallsThrough() async throws {
        try await Self.withFirstAddress(port: try unusedPort()) { client, url, _ async throws in
            #expect(try await client.send(request(url)).status == 200)
            #expect(client.connectionsOpened.current == 2, "one connect per address")
        }
    }

    @Test("the first address never answers the connect: after the connect timeout the next one is tried and the request answered")
    func silentAddressTimesOut() async throws {
        let silent = try SilentAddress()
        try #require(silent.staysSilent(milliseconds: 300), "this kernel answers connects to a full accept queue")
        // The request's own timeout (30 s) is far above the connect timeout: only moving
        // on to the next address can answer it. No racing here: the attempt delay is longer.
        try await Self.withFirstAddress(port: silent.port, connectTimeout: .milliseconds(300), attemptDelay: .seconds(60)) { client, url, _ async throws in
            #expect(try await client.send(request(url)).status == 200)
            #expect(client.connectionsOpened.current == 2)
        }
    }

    @Test("a connect left unanswered does not hold a ring for the connect timeout: the next address is raced beside it and the first to connect is kept")
    func slowConnectIsRaced() async throws {
        let silent = try SilentAddress()
        try #require(silent.staysSilent(milliseconds: 300), "this kernel answers connects to a full accept queue")
        // The connect timeout (60 s) is far above the request's own (10 s): only starting the
        // next address beside the silent one, after the attempt delay, can answer it.
        try await Self.withFirstAddress(port: silent.port, connectTimeout: .seconds(60)) { client, url, _ async throws in
            #expect(try await client.send(request(url, timeout: 10)).status == 200)
            #expect(client.connectionsOpened.current == 2)
            #expect(try await client.send(request(url, timeout: 10)).status == 200, "the raced connection carries the next request")
            #expect(client.connectionsOpened.current == 2)
        }
    }

    @Test("the address raced after a silent one refuses: the silent connect, still going, is waited for and carries the request once it connects")
    func racedConnectResumes() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let (server, _) = try await HTTP2ClientTests.sink(pki, [])
        defer { server.stop() }
        let late = try LateAddress(relayingTo: server.port)
        try #require(late.silent.staysSilent(milliseconds: 300), "this kernel answers connects to a full accept queue")
        let slow = try #require(ResolvedAddress(numeric: "127.0.0.1", port: late.silent.port))
        let refusing = try #require(ResolvedAddress(numeric: "127.0.0.1", port: try unusedPort()))
        // A connect timeout past the kernel's third SYN (sent 7 s in): the freed queue takes one.
        let client = try HTTP2Client(caFile: pki.caFile, connectTimeout: .seconds(15),
                                     resolver: ScriptedResolver(["localhost": [slow, refusing]]))
        defer { client.shutdown() }
        let answer = Task { try await client.send(request("https://localhost:\(server.port)/3/device/token", timeout: 20)) }
        // By now the refusing address has been raced and has failed: the request must not
        // have failed with it.
        try await Task.sleep(for: .seconds(1))
        late.startAnswering()
        #expect(try await answer.value.status == 200)
        #expect(client.connectionsOpened.current == 2, "the silent address and the refusing one")
    }

    @Test("a name's IPv6 and IPv4 addresses take turns, led by the first address's family; lately failed ones still go last")
    func familiesTakeTurns() throws {
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let v6 = try (1...3).map { try #require(ResolvedAddress(numeric: "2001:db8::\($0)", port: 443)) }
        let v4 = try (1...2).map { try #require(ResolvedAddress(numeric: "192.0.2.\($0)", port: 443)) }
        #expect(client.inTryingOrder(v6 + v4).map(\.description)
                == ["[2001:db8::1]:443", "192.0.2.1:443", "[2001:db8::2]:443", "192.0.2.2:443", "[2001:db8::3]:443"])
        #expect(client.inTryingOrder([v4[0], v6[0], v6[1]]).map(\.description) == ["192.0.2.1:443", "[2001:db8::1]:443", "[2001:db8::2]:443"])
        client.failedAddresses = [v6[0].description: ContinuousClock.now]
        #expect(client.inTryingOrder(v6 + v4).map(\.description)
                == ["[2001:db8::2]:443", "192.0.2.1:443", "[2001:db8::3]:443", "192.0.2.2:443", "[2001:db8::1]:443"])
    }

    @Test("an address that takes the connection but never answers TLS gives way to the next after the timeout")
    func silentTLSTimesOut() async throws {
        // Listening, never accepting: the kernel completes the TCP handshake, nobody speaks TLS.
        let mute = try LoopbackPort(listening: true)
        try await Self.withFirstAddress(port: Int(mute.port), connectTimeout: .milliseconds(300)) { client, url, _ async throws in
            #expect(try await client.send(request(url)).status == 200)
            #expect(client.connectionsOpened.current == 2)
        }
    }

    @Test("the walk through a name's addresses goes on after the request that started it gave up, so the next request finds the connection up")
    func walkOutlivesTheRequest() async throws {
        let silent = try SilentAddress()
        try #require(silent.staysSilent(milliseconds: 300), "this kernel answers connects to a full accept queue")
        try await Self.withFirstAddress(port: silent.port, connectTimeout: .milliseconds(500), attemptDelay: .seconds(60)) { client, url, resolver async throws in
            // Gives up while the first address is still being waited for.
            await #expect(throws: OutboundHTTPError.self) { try await client.send(request(url, timeout: 0.1)) }
            #expect(try await client.send(request(url)).status == 200)
            #expect(client.connectionsOpened.current == 2, "the second request rode the connection the walk opened")
            #expect(resolver.lookups.current == ["localhost"], "one lookup, one walk")
        }
    }

    @Test("addresses that failed lately are tried last, the longest-failed first")
    func failedAddressesGoLast() throws {
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let addresses = try (1...4).map { try #require(ResolvedAddress(numeric: "127.0.0.\($0)", port: 443)) }
        let now = ContinuousClock.now
        client.failedAddresses = [addresses[0].description: now, addresses[2].description: now.advanced(by: .seconds(-30)),
                                  addresses[3].description: now.advanced(by: .seconds(-3600))]
        #expect(client.inTryingOrder(addresses).map(\.description) == ["127.0.0.2:443", "127.0.0.4:443", "127.0.0.3:443", "127.0.0.1:443"],
                "a failure an hour old no longer counts; of the recent ones the older goes first")
    }

    @Test("every address refuses, or the name does not resolve: the request fails as a transport error naming why")
    func noAddressWorks() async throws {
        let refusing = try #require(ResolvedAddress(numeric: "127.0.0.1", port: try unusedPort()))
        let alsoRefusing = try #require(ResolvedAddress(numeric: "127.0.0.1", port: try unusedPort()))
        let resolver = ScriptedResolver(["localhost": [refusing, alsoRefusing]])
        let client = try HTTP2Client(resolver: resolver)
        defer { client.shutdown() }
        do {
            _ = try await client.send(request("https://localhost/3/device/token"))
            Issue.record("a request with no reachable address was answered")
        } catch let error as OutboundHTTPError {
            #expect("\(error)".contains(alsoRefusing.description), "the last address tried is named: \(error)")
        }
        #expect(client.connectionsOpened.current == 2)
        do {
            _ = try await client.send(request("https://nowhere.invalid/3/device/token"))
            Issue.record("a request to a name that does not resolve was answered")
        } catch let error as OutboundHTTPError {
            #expect("\(error)".contains("cannot resolve nowhere.invalid"), "\(error)")
        }
    }

    // Numeric names only: a test sends nothing to a DNS server.
    @Test("the system resolver gives a numeric name's address, printable with its port")
    func systemResolver() throws {
        let v4 = try SystemHostResolver().addresses(host: "127.0.0.1", port: 8443)
        #expect(v4.map(\.description) == ["127.0.0.1:8443"])
        let v6 = try SystemHostResolver().addresses(host: "::1", port: 443)
        #expect(v6.map(\.description) == ["[::1]:443"])
    }
}
