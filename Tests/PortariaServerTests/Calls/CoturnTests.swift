import Foundation
import PortariaCore
import Testing
@testable import PortariaServer
import PortariaTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real coturn (`turnserver` from Debian's `coturn`, installed by scripts/bootstrap)
/// on 127.0.0.1 at a free port, in TURN REST API mode, with everything it writes
/// (log, pid file, its SQLite user db) in a temporary directory.
final class CoturnProcess: @unchecked Sendable {
    static let binary = "/usr/bin/turnserver"
    static let realm = "portaria.test"

    let process: Process
    let port: UInt16
    let directory: URL
    let secret: String

    var log: String { (try? String(contentsOf: directory.appendingPathComponent("turnserver.log"), encoding: .utf8)) ?? "" }

    private init(process: Process, port: UInt16, directory: URL, secret: String) {
        self.process = process
        self.port = port
        self.directory = directory
        self.secret = secret
    }


    /// Starts coturn and returns once it answers a STUN Binding on both UDP and TCP.
    /// The port is one the kernel just handed out; if another process takes it in the
    /// meantime coturn cannot bind and the next attempt picks another.
    static func start(secret: String, extraArguments: [String] = []) async throws -> CoturnProcess {
        var lastError: any Error = TURNTestError("coturn did not start")
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-coturn-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let logPath = directory.appendingPathComponent("turnserver.log").path
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            // No configuration file: every setting is here, so the machine's
            // /etc/turnserver.conf cannot change what the test sees.
            process.arguments = [
                "--use-auth-secret", "--static-auth-secret=\(secret)", "--realm=\(realm)",
                "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1", "--listening-port=\(port)",
                "--no-tls", "--no-dtls", "--no-cli", "--no-rfc5780", "--no-multicast-peers",
                "--log-file=stdout", "--simple-log", "--verbose",
                "--userdb=\(directory.appendingPathComponent("turndb").path)",
                "--pidfile=\(directory.appendingPathComponent("turnserver.pid").path)",
            ] + extraArguments
            process.standardOutput = FileHandle(forWritingAtPath: logPath)
            process.standardError = FileHandle(forWritingAtPath: logPath)
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let coturn = CoturnProcess(process: process, port: port, directory: directory, secret: secret)
            do {
                try await coturn.waitUntilReady(within: .seconds(10))
                return coturn
            } catch {
                lastError = TURNTestError("\(error); coturn log:\n\(coturn.log.suffix(2000))")
                await coturn.stop()
            }
        }
        throw lastError
    }

    private func waitUntilReady(within timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        let port = port
        while ContinuousClock.now < deadline {
            guard process.isRunning else { throw TURNTestError("turnserver exited with status \(process.terminationStatus)") }
            let ready = (try? await offload {
                try STUNConnection(port: port, transport: .udp, timeout: .milliseconds(200)).bind()
                    && STUNConnection(port: port, transport: .tcp, timeout: .milliseconds(200)).bind()
            }) ?? false
            if ready { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TURNTestError("turnserver did not answer STUN on 127.0.0.1:\(port) within \(timeout)")
    }

    /// SIGTERM, then SIGKILL if it lingers; removes the directory. Waits on a Dispatch
    /// thread rather than with `Task.sleep`, so it still works when the test was
    /// cancelled (a time limit) — exactly when cleaning up matters most.
    func stop() async {
        let process = process
        _ = try? await offload {
            defer { reap(process) }
            guard process.isRunning else { return }
            process.terminate()
            func wait(_ timeout: Duration) -> Bool {
                let deadline = ContinuousClock.now + timeout
                while process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
                return !process.isRunning
            }
            if !wait(.seconds(3)) {
                kill(process.processIdentifier, SIGKILL)
                _ = wait(.seconds(2))
            }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `body` with a running coturn and always stops it afterwards.
    static func with(secret: String, extraArguments: [String] = [], _ body: (CoturnProcess) async throws -> Void) async throws {
        let coturn = try await start(secret: secret, extraArguments: extraArguments)
        do {
            try await body(coturn)
        } catch {
            await coturn.stop()
            throw error
        }
        await coturn.stop()
    }

    /// A port free for both UDP and TCP on 127.0.0.1 right now.
    static func freeLoopbackPort() throws -> UInt16 {
        for _ in 0..<20 {
            let udp = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(udp) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(udp, $0, length) == 0 && getsockname(udp, $0, &length) == 0
                }
            }
            guard bound else { continue }
            let port = UInt16(bigEndian: address.sin_port)
            // The same number must be free for TCP too (coturn listens on both).
            let tcp = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(tcp) }
            var tcpAddress = address
            let tcpFree = withUnsafePointer(to: &tcpAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(tcp, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if tcpFree && port > 1024 { return port }
        }
        throw TURNTestError("no free loopback port")
    }
}

extension Requirement {
    static let coturn = executable("coturn (turnserver)", at: { CoturnProcess.binary }, remedy: "scripts/bootstrap installs it")
}

@Suite("TURN credentials against a real coturn", .serialized, .requires(.coturn))
struct CoturnTests {
    static let secret = "portaria-test-\(UUID().uuidString)"

    /// The list `GET /v1/calls/ice_servers` answers maria, through the real route and
    /// authenticator, with the provider pointed at `coturn`.
    static func iceServers(for coturn: CoturnProcess, provider: (TURNSettings) -> ICEServerProvider) async throws -> ICEServersResponse {
        var response: ICEServersResponse?
        try await AuthFixture.with(.sqlite) { fixture in
            let login = try await fixture.auth.login(LoginRequest(username: "maria", password: "demo1234"), clientAddress: "10.0.0.1")
            let turn = try TURNSettings.parse(url: "turn:127.0.0.1:\(coturn.port)", secret: coturn.secret)
            let router = Router()
            CallRoutes(iceServers: provider(turn), authenticator: fixture.authenticator,
                       visitorVisit: { _ in throw HTTPError.unauthorized("no visitors here") }).register(on: router)
            guard case .found(_, _, let handler) = router.match(method: "GET", path: "/v1/calls/ice_servers") else {
                throw TURNTestError("route not registered")
            }
            let answer = try await handler(fixture.request(token: login.jwtToken, company: login.companies[0].id))
            #expect(answer.status == 200)
            #expect(answer.header("Cache-Control") == "no-store")
            response = try JSONCoding.decoder().decode(ICEServersResponse.self, from: Data(answer.body))
            #expect(response?.iceServers.first?.urls == ["stun:127.0.0.1:\(coturn.port)"])
            let username = try #require(response?.iceServers.last?.username)
            #expect(username.hasSuffix(":\(login.userID)"))
        }
        return try #require(response)
    }

    static func relay(_ response: ICEServersResponse) throws -> (username: String, credential: String, transports: [String]) {
        let entry = try #require(response.iceServers.first { $0.username != nil })
        let transports = entry.urls.compactMap { $0.split(separator: "=").last.map(String.init) }
        return (try #require(entry.username), try #require(entry.credential), transports)
    }

    @Test("a credential from /v1/calls/ice_servers opens a real allocation over UDP and TCP", .timeLimit(.minutes(1)))
    func allocateSucceeds() async throws {
        try await CoturnProcess.with(secret: Self.secret) { coturn in
            let response = try await Self.iceServers(for: coturn) { ICEServerProvider(turn: $0) }
            #expect(response.turnConfigured && response.ttl == 600)
            let (username, credential, transports) = try Self.relay(response)
            #expect(transports == ["udp", "tcp"])
            let port = coturn.port
            for transport in [STUNConnection.Transport.udp, .tcp] {
                let outcome = try await offload {
                    try STUNConnection(port: port, transport: transport).allocate(username: username, password: credential)
                }
                guard case .allocated(let relayed) = outcome else {
                    Issue.record("Allocate over \(transport) was refused: \(outcome); coturn log:\n\(coturn.log.suffix(1500))")
                    continue
                }
                #expect(relayed.hasPrefix("127.0.0.1:"), "relayed address \(relayed)")
            }
        }
    }

    @Test("a wrong credential, another secret or an expired username is refused with 401", .timeLimit(.minutes(1)))
    func allocateRefused() async throws {
        try await CoturnProcess.with(secret: Self.secret) { coturn in
            let port = coturn.port
            func outcome(_ username: String, _ password: String) async throws -> AllocateOutcome {
                try await offload { try STUNConnection(port: port, transport: .udp).allocate(username: username, password: password) }
            }
            let good = try Self.relay(try await Self.iceServers(for: coturn) { ICEServerProvider(turn: $0) })

            // The right username with a tampered credential.
            var tampered = Array(good.credential)
            tampered[0] = tampered[0] == "A" ? "B" : "A"
            #expect(try await outcome(good.username, String(tampered)) == .refused(code: 401))

            // A credential minted with another secret (a misconfigured instance).
            let foreign = ICEServerProvider.credential(secret: "not-the-secret", subject: "u", expiresAt: Int(Date().timeIntervalSince1970) + 600)
            #expect(try await outcome(foreign.username, foreign.credential) == .refused(code: 401))

            // A username whose expiry moved: the HMAC no longer matches.
            let parts = good.username.split(separator: ":", maxSplits: 1)
            let extended = "\(Int(parts[0])! + 3600):\(parts[1])"
            #expect(try await outcome(extended, good.credential) == .refused(code: 401))

            // Expired: minted by the real provider eleven minutes ago (ttl ten), so
            // correctly signed but past its expiry.
            let past = Date().addingTimeInterval(-660)
            let expired = try Self.relay(try await Self.iceServers(for: coturn) { ICEServerProvider(turn: $0, now: { past }) })
            #expect(try await outcome(expired.username, expired.credential) == .refused(code: 401))

            // And the good one still works on the same server: the refusals were about
            // the credentials, not a broken server.
            let again = try await outcome(good.username, good.credential)
            guard case .allocated = again else {
                Issue.record("the valid credential was refused: \(again); coturn log:\n\(coturn.log.suffix(1500))")
                return
            }
        }
    }

    /// The relay policy lines of docs/coturn/turnserver.conf, as coturn options.
    static func documentedPolicy() throws -> [String] {
        let text = try String(contentsOfFile: Repository.root + "/docs/coturn/turnserver.conf", encoding: .utf8)
        guard let start = text.range(of: "# --- Relay policy (tested) ---") else { throw TURNTestError("no relay policy section") }
        return text[start.upperBound...].split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            .map { "--" + $0 }
    }

    @Test("the documented coturn policy refuses relays to metadata, CGNAT, loopback, private and reserved addresses, the TURN host's own public address, and TCP relays",
          .timeLimit(.minutes(1)))
    func documentedPolicyDeniesInternalPeers() async throws {
        let policy = try Self.documentedPolicy()
        #expect(policy.contains("--no-tcp-relay") && policy.contains { $0.hasPrefix("--denied-peer-ip=169.254.") })
        try await CoturnProcess.with(secret: Self.secret, extraArguments: policy) { coturn in
            let (username, credential, _) = try Self.relay(try await Self.iceServers(for: coturn) { ICEServerProvider(turn: $0) })
            let port = coturn.port
            let outcomes = try await offload { () -> [String: Int?] in
                let connection = try STUNConnection(port: port, transport: .udp)
                let (opened, refused) = try connection.openAllocation(username: username, password: credential)
                guard let allocation = opened else { throw TURNTestError("allocation refused: \(refused ?? 0)") }
                var outcomes: [String: Int?] = [:]
                for peer in ["169.254.169.254", "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1",
                             "0.0.0.1", "198.18.0.1", "224.0.0.1", "203.0.113.10", "203.0.113.7"] {
                    outcomes[peer] = try connection.createPermission(allocation, peer: peer)
                }
                return outcomes
            }
            for (peer, code) in outcomes where peer != "203.0.113.7" {
                #expect(code == 403, "relay to \(peer) was not refused (\(String(describing: code))); coturn log:\n\(coturn.log.suffix(800))")
            }
            // A public peer is allowed (no packet leaves: a permission only opens the relay).
            #expect(outcomes["203.0.113.7"] == .some(nil), "a public peer was refused: \(String(describing: outcomes["203.0.113.7"])); coturn log:\n\(coturn.log.suffix(1500))")

            // RFC 6062 TCP relays are off.
            let tcp = try await offload {
                try STUNConnection(port: port, transport: .tcp).openAllocation(username: username, password: credential, transport: 6).1
            }
            #expect(tcp == 442, "a TCP relay allocation was not refused with 442 (got \(String(describing: tcp)))")
        }
    }
}
