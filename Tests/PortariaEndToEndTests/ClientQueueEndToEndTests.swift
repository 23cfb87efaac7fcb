import Foundation
import PortariaCore
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `portaria client` (the `PortariaClient` core on a terminal) against the real server,
/// through a fault-injecting proxy: the resolve queue lands every tapped decision exactly
/// once, says what happened in pt-BR, and never loses one to a reset, a dead process, a
/// server that is down, or an expired token.
@Suite("Client resolve queue end to end", .serialized)
struct ClientQueueEndToEndTests {
    static let saoPaulo = TimeZone(identifier: "America/Sao_Paulo")!

    // MARK: Helpers

    /// A client home directory (session file, queue) of its own.
    struct Phone {
        let home: URL
        var environment: [String: String] { ["PORTARIA_CLIENT_HOME": home.path] }
        var queueFiles: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: home.appendingPathComponent("queue").path)) ?? [])
                .filter { $0.hasSuffix(".json") }
        }

        static func make(_ label: String) throws -> Phone { Phone(home: try makeTemporaryDirectory("phone-\(label)")) }

        func run(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> CommandResult {
            try await runPortaria(["client"] + arguments, environment: environment, timeout: timeout)
        }

        func login(_ username: String, url: String) async throws {
            let result = try await run(["login", "--url", url, "--username", username, "--password", "demo1234",
                                        "--company", "Residencial Demo"])
            #expect(result.status == 0, "login \(username): \(result.stderr)")
            #expect(result.stdout.contains("logged in — Residencial Demo"), "\(result.stdout)")
        }

        func remove() { try? FileManager.default.removeItem(at: home) }
    }

    /// A visitor (or courier) at the demo gate for A-101; returns the visit id.
    static func arrive(_ server: TestServer, kind: String = "delivery", name: String = "Pedro") async throws -> String {
        let gate = try await server.request("GET", "/v1/gates/demo-gate").json()
        let units = try #require(gate["units"] as? [[String: Any]])
        let unit = try #require(units.first { $0["label"] as? String == "A-101" }?["id"] as? String)
        let created = try await server.postJSON("/v1/gates/demo-gate/visits",
                                                #"{"unit_id":"\#(unit)","kind":"\#(kind)","visitor_name":"\#(name)"}"#)
        #expect(created.status == 201, "\(created.text)")
        return try #require((try created.json()["visit"] as? [String: Any])?["id"] as? String)
    }

    /// The visit as Maria sees it, straight from the server (not through the proxy).
    static func visit(_ server: TestServer, _ id: String) async throws -> Visit {
        let login = try await HTTP.send("POST", server.baseURL.appendingPathComponent("/v1/auth/login"),
                                        json: #"{"username":"maria","password":"demo1234"}"#)
        let body = try login.decode(LoginResponse.self)
        let company = try #require(body.companies.first { $0.name == "Residencial Demo" })
        let answer = try await HTTP.send("GET", server.baseURL.appendingPathComponent("/v1/visits/\(id)"),
                                         headers: ["Authorization": "Bearer \(body.jwtToken)", "X-Company-Id": company.id])
        #expect(answer.status == 200)
        return try answer.decode(Visit.self)
    }

    /// Exactly one decision recorded on the server, by `name`, with `action`.
    static func expectExactlyOneResolution(_ server: TestServer, _ id: String, by name: String, action: ResolutionAction,
                                           sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let visit = try await visit(server, id)
        #expect(visit.status == .resolved, sourceLocation: sourceLocation)
        #expect(visit.resolution?.by.name == name, sourceLocation: sourceLocation)
        #expect(visit.resolution?.action == action, sourceLocation: sourceLocation)
        #expect(visit.attempts.filter { $0.kind == .resolution }.count == 1,
                "timeline: \(visit.attempts.map(\.kind.rawValue))", sourceLocation: sourceLocation)
    }

    /// Every resolve request the proxy saw carried one and the same key.
    static func expectOneKey(_ proxy: FaultyProxy, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        let keys = Set(proxy.seen("/resolve").map(\.idempotencyKey))
        #expect(keys.count == 1 && keys.first! != nil, "keys: \(keys)", sourceLocation: sourceLocation)
        return keys.first ?? nil
    }

    // MARK: Proofs

    @Test("reset after the server answered, then a dropped connection, then a slow answer: one resolution, the replayed answer")
    func faultyNetworkExactlyOnce() async throws {
        try await TestServer.with(["--demo"]) { server in
            let proxy = try FaultyProxy(upstreamPort: server.port)
            defer { proxy.stop() }
            let maria = try Phone.make("maria")
            defer { maria.remove() }
            try await maria.login("maria", url: proxy.url)
            let id = try await Self.arrive(server)

            let attempts = Locked(0)
            proxy.setRule { method, path, _ in
                guard path.hasSuffix("/resolve") else { return .pass }
                let attempt = attempts.withLock { count -> Int in
                    count += 1
                    return count
                }
                switch attempt {
                case 1: return .resetAfterRequest   // the decision lands; the phone never hears
                case 2: return .drop                // then the network fails outright
                default: return .delay(.milliseconds(700))
                }
            }
            let result = try await maria.run(["resolve", id, "leave_at_concierge", "--wait", "30"])
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout == "Entrega: deixar na portaria ✓\n")
            let resolves = proxy.seen("/resolve")
            #expect(resolves.count == 3)
            #expect(resolves.first?.status == 200 && resolves.first?.replayed == false, "the first attempt decided")
            #expect(resolves.last?.status == 200 && resolves.last?.replayed == true, "the last one got the stored answer")
            _ = Self.expectOneKey(proxy)
            try await Self.expectExactlyOneResolution(server, id, by: "Maria Souza", action: .leaveAtConcierge)
            #expect(maria.queueFiles.isEmpty)
        }
    }

    @Test("a client killed mid-retry leaves the decision on disk; sync finishes it with the same key")
    func killedMidRetry() async throws {
        try await TestServer.with(["--demo"]) { server in
            let proxy = try FaultyProxy(upstreamPort: server.port)
            defer { proxy.stop() }
            let maria = try Phone.make("maria")
            defer { maria.remove() }
            try await maria.login("maria", url: proxy.url)
            let id = try await Self.arrive(server)

            proxy.setRule { _, path, _ in path.hasSuffix("/resolve") ? .drop : .pass }
            let client = try ClientProcess.start(["client", "resolve", id, "authorize", "--wait", "120"], environment: maria.environment)
            let retrying = await eventually(within: .seconds(30)) { proxy.seen("/resolve").count >= 2 }
            #expect(retrying, "the client did not retry")
            await client.kill9()
            #expect(client.wasKilled)
            #expect(maria.queueFiles.count == 1, "the decision must be on disk: \(maria.queueFiles)")
            let keyBeforeDeath = Self.expectOneKey(proxy)

            proxy.setRule { _, _, _ in .pass }
            let sync = try await maria.run(["sync", "--wait", "20"])
            #expect(sync.status == 0, "\(sync.stdout)\n\(sync.stderr)")
            #expect(sync.stdout == "\(id)  Entrega: autorizada ✓\n")
            #expect(Self.expectOneKey(proxy) == keyBeforeDeath)
            try await Self.expectExactlyOneResolution(server, id, by: "Maria Souza", action: .authorize)
            #expect(maria.queueFiles.isEmpty)
        }
    }

    @Test("tapped while the server is down: queued, non-zero exit; sync sends it once the server is back")
    func serverDownThenSync() async throws {
        var server = try await TestServer.start(["--demo"])
        let proxy = try FaultyProxy(upstreamPort: server.port)
        let maria = try Phone.make("maria")
        defer {
            proxy.stop()
            maria.remove()
        }
        do {
            try await maria.login("maria", url: proxy.url)
            let id = try await Self.arrive(server)
            await server.kill9()

            let tapped = try await maria.run(["resolve", id, "deny", "--wait", "2"])
            #expect(tapped.status == 75)
            #expect(tapped.stdout == "Sem conexão com a portaria. Sua decisão (negar) foi guardada e será enviada assim que possível\n")
            #expect(tapped.stderr.contains("queued"), "\(tapped.stderr)")
            #expect(maria.queueFiles.count == 1)

            let stillDown = try await maria.run(["sync", "--wait", "1"])
            #expect(stillDown.status == 75)

            server = try await server.restart()
            proxy.setUpstream(port: server.port)
            let sync = try await maria.run(["sync", "--wait", "20"])
            #expect(sync.status == 0, "\(sync.stdout)\n\(sync.stderr)")
            #expect(sync.stdout == "\(id)  Entrega: recusada ✓\n")
            try await Self.expectExactlyOneResolution(server, id, by: "Maria Souza", action: .deny)
            #expect(maria.queueFiles.isEmpty)
            let again = try await maria.run(["sync"])
            #expect(again.stdout == "nada na fila\n")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("two residents at once: one decides, the other reads who and when")
    func twoResidentsAtOnce() async throws {
        try await TestServer.with(["--demo"]) { server in
            let maria = try Phone.make("maria")
            let joao = try Phone.make("joao")
            defer {
                maria.remove()
                joao.remove()
            }
            try await maria.login("maria", url: server.baseURL.absoluteString)
            try await joao.login("joao", url: server.baseURL.absoluteString)
            let id = try await Self.arrive(server, kind: "visit")

            async let fromMaria = maria.run(["resolve", id, "authorize"])
            async let fromJoao = joao.run(["resolve", id, "deny"])
            let (mariaResult, joaoResult) = try await (fromMaria, fromJoao)
            let visit = try await Self.visit(server, id)
            let resolution = try #require(visit.resolution)
            let time = ResolutionText.clock(resolution.at, timeZone: Self.saoPaulo)
            let (winner, loser) = resolution.by.name == "Maria Souza" ? (mariaResult, joaoResult) : (joaoResult, mariaResult)
            #expect(winner.status == 0)
            #expect(winner.stdout == (resolution.action == .authorize ? "Visita autorizada ✓\n" : "Visita negada ✓\n"))
            #expect(loser.status == 3, "\(loser.stdout)\(loser.stderr)")
            let verb = resolution.action == .authorize ? "autorizou" : "negou"
            #expect(loser.stdout == "\(ResolutionText.firstName(resolution.by.name)) já \(verb) às \(time)\n")
            #expect(visit.attempts.filter { $0.kind == .resolution }.count == 1)
        }
    }

    @Test("an access token that expired between tap and send is refreshed and the decision lands")
    func expiredTokenRefreshed() async throws {
        try await TestServer.with(["--demo"]) { server in
            let maria = try Phone.make("maria")
            defer { maria.remove() }
            try await maria.login("maria", url: server.baseURL.absoluteString)
            let id = try await Self.arrive(server)

            // The server has no switch for short token lifetimes: make the stored access
            // token one the server refuses (signature broken), as an expired one would be.
            let sessionFile = maria.home.appendingPathComponent("session.json")
            var session = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: sessionFile)) as? [String: String])
            let token = try #require(session["jwt_token"])
            let refreshBefore = session["refresh_token"]
            session["jwt_token"] = String(token.dropLast(4)) + (token.hasSuffix("AAAA") ? "BBBB" : "AAAA")
            try JSONSerialization.data(withJSONObject: session).write(to: sessionFile)

            let result = try await maria.run(["resolve", id, "authorize"])
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout == "Entrega: autorizada ✓\n")
            try await Self.expectExactlyOneResolution(server, id, by: "Maria Souza", action: .authorize)
            let after = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: sessionFile)) as? [String: String])
            #expect(after["refresh_token"] != refreshBefore, "the refresh token rotated")
            #expect(after["jwt_token"] != session["jwt_token"])
        }
    }

    @Test("done when: Maria logs in, watches A-101 ring, and resolves through the queue over the faulty proxy, exactly once")
    func mariaWatchesAndResolves() async throws {
        try await TestServer.with(["--demo"]) { server in
            let proxy = try FaultyProxy(upstreamPort: server.port)
            defer { proxy.stop() }
            let maria = try Phone.make("maria")
            defer { maria.remove() }
            try await maria.login("maria", url: proxy.url)

            let watch = try ClientProcess.start(["client", "watch", "--seconds", "120"], environment: maria.environment)
            defer { watch.terminate() }
            #expect(await watch.waitForOutput("# Conectado", within: .seconds(20)), "watch never went live:\n\(watch.output)\n\(watch.errors)")

            let id = try await Self.arrive(server, kind: "visit", name: "Pedro")
            #expect(await watch.waitForOutput("visit.ringing  A-101  \(id)", within: .seconds(20)), "\(watch.output)")

            // The network changes under the watching phone: it reconnects (REST first, then
            // the socket with since) and keeps going.
            proxy.dropAll()
            #expect(await watch.waitForOutput("# Reconectando…", within: .seconds(20)), "\(watch.output)")
            #expect(await watch.waitForOutput(count: 2, of: "# Conectado", within: .seconds(30)), "\(watch.output)")

            let attempts = Locked(0)
            proxy.setRule { _, path, _ in
                guard path.hasSuffix("/resolve") else { return .pass }
                let attempt = attempts.withLock { count -> Int in
                    count += 1
                    return count
                }
                return attempt == 1 ? .resetAfterRequest : .pass
            }
            let result = try await maria.run(["resolve", id, "authorize", "--wait", "30"])
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout == "Visita autorizada ✓\n")
            #expect(await watch.waitForOutput("visit.resolved  A-101  \(id)  Maria autorizou às", within: .seconds(20)), "\(watch.output)")
            _ = Self.expectOneKey(proxy)
            try await Self.expectExactlyOneResolution(server, id, by: "Maria Souza", action: .authorize)
            // Each event once, even across the reconnect's replay.
            let resolvedLines = watch.output.split(separator: "\n").filter { $0.contains("visit.resolved") }
            #expect(resolvedLines.count == 1)
            let seqs = watch.output.split(separator: "\n").compactMap { line -> Int? in
                guard line.hasPrefix("["), let end = line.firstIndex(of: "]") else { return nil }
                return Int(line[line.index(after: line.startIndex)..<end])
            }
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "seqs \(seqs)")
        }
    }
}

/// A `portaria` process left running (watch, a resolve to kill mid-retry).
final class ClientProcess: @unchecked Sendable {
    let process: Process
    let directory: URL

    static func start(_ arguments: [String], environment: [String: String]) throws -> ClientProcess {
        let started = try CapturedProcess.start(try PortariaBinary.require(), arguments,
                                                environment: PortariaBinary.environment(environment), label: "client-process")
        return ClientProcess(process: started.process, directory: started.directory)
    }

    private init(process: Process, directory: URL) {
        self.process = process
        self.directory = directory
    }

    var output: String { (try? String(contentsOf: directory.appendingPathComponent("stdout"), encoding: .utf8)) ?? "" }
    var errors: String { (try? String(contentsOf: directory.appendingPathComponent("stderr"), encoding: .utf8)) ?? "" }
    var wasKilled: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }

    func waitForOutput(_ text: String, within timeout: Duration) async -> Bool {
        await waitForOutput(count: 1, of: text, within: timeout)
    }

    func waitForOutput(count: Int, of text: String, within timeout: Duration) async -> Bool {
        await eventually(within: timeout) { self.output.components(separatedBy: text).count - 1 >= count }
    }

    func kill9() async {
        kill(process.processIdentifier, SIGKILL)
        _ = await waitForExit(process, within: .seconds(10))
    }

    func terminate() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Device registration through `portaria client`: login registers, a new token renews
/// the same installation, logout unregisters — and the next ring pushes nothing to it.
@Suite("Client device registration end to end")
struct ClientDeviceEndToEndTests {
    typealias Phone = ClientQueueEndToEndTests.Phone

    static func deviceID(in output: String) -> String? {
        guard let range = output.range(of: #"device registered \(([0-9a-f-]+)\)"#, options: .regularExpression) else { return nil }
        return String(output[range].dropFirst("device registered (".count).dropLast())
    }

    struct Direct {
        let server: TestServer
        let token: String
        let company: String
        static func login(_ server: TestServer, _ username: String) async throws -> Direct {
            let login = try await HTTP.send("POST", server.baseURL.appendingPathComponent("/v1/auth/login"),
                                            json: #"{"username":"\#(username)","password":"demo1234"}"#)
            let body = try login.decode(LoginResponse.self)
            let company = try #require(body.companies.first { $0.name == "Residencial Demo" })
            return Direct(server: server, token: body.jwtToken, company: company.id)
        }
        func send(_ method: String, _ path: String, json: String? = nil) async throws -> RawResponse {
            try await HTTP.send(method, server.baseURL.appendingPathComponent(path),
                                headers: ["Authorization": "Bearer \(token)", "X-Company-Id": company], json: json)
        }
        func devices() async throws -> [DeviceView] {
            try (try await send("GET", "/v1/devices")).decode(DeviceList.self).devices
        }
        func pushes(_ visitID: String) async throws -> [VisitAttempt] {
            let visit = try (try await send("GET", "/v1/visits/\(visitID)")).decode(Visit.self)
            return visit.attempts.filter { $0.kind == .pushSent }
        }
    }

    @Test("login registers, renewal keeps the installation, logout unregisters and the next ring sends that phone nothing")
    func registerRenewUnregister() async throws {
        try await TestServer.with(["--demo"]) { server in
            let maria = try Phone.make("maria")
            let joao = try Phone.make("joao")
            defer {
                maria.remove()
                joao.remove()
            }
            let url = server.baseURL.absoluteString
            let first = try await maria.run(["login", "--url", url, "--username", "maria", "--password", "demo1234",
                                             "--company", "Residencial Demo", "--push-token", "fcm-maria-1", "--platform", "android"])
            #expect(first.status == 0, "\(first.stderr)")
            let mariaDevice = try #require(Self.deviceID(in: first.stdout), "\(first.stdout)")
            let joaoLogin = try await joao.run(["login", "--url", url, "--username", "joao", "--password", "demo1234",
                                                "--push-token", "fcm-joao-1", "--platform", "android"])
            let joaoDevice = try #require(Self.deviceID(in: joaoLogin.stdout), "\(joaoLogin.stdout)\(joaoLogin.stderr)")

            // Ring both residents at once, so João's push is the sign the ring's pushes went out.
            let asMaria = try await Direct.login(server, "maria")
            let gate = try await server.request("GET", "/v1/gates/demo-gate").json()
            let unit = try #require((gate["units"] as? [[String: Any]])?.first { $0["label"] as? String == "A-101" }?["id"] as? String)
            let settings = try (try await asMaria.send("GET", "/v1/units/\(unit)/settings")).decode(UnitSettingsResponse.self)
            var changed = settings.settings
            changed.ringMode = .simultaneous
            let put = try await asMaria.send("PUT", "/v1/units/\(unit)/settings",
                                             json: String(decoding: try JSONCoding.encoder().encode(changed), as: UTF8.self))
            #expect(put.status == 200, "\(put.text)")

            // A new token from the system: same installation, same device, renewed.
            let renewed = try await maria.run(["login", "--url", url, "--username", "maria", "--password", "demo1234",
                                               "--company", "Residencial Demo", "--push-token", "fcm-maria-2", "--platform", "android"])
            #expect(Self.deviceID(in: renewed.stdout) == mariaDevice, "\(renewed.stdout)")
            #expect(try await asMaria.devices().map(\.id) == [mariaDevice])

            let before = try await ClientQueueEndToEndTests.arrive(server, kind: "visit")
            let reached = await eventually(within: .seconds(20)) {
                let devices = Set((try? await asMaria.pushes(before))?.compactMap(\.deviceID) ?? [])
                return devices.isSuperset(of: [mariaDevice, joaoDevice])
            }
            let pushedBefore = (try? await asMaria.pushes(before)) ?? []
            #expect(reached, "both phones should be pushed: \(pushedBefore)")

            let out = try await maria.run(["logout"])
            #expect(out.status == 0, "\(out.stderr)")
            #expect(out.stdout.contains("device unregistered (\(mariaDevice))"), "\(out.stdout)")
            #expect(try await asMaria.devices().isEmpty)

            let after = try await ClientQueueEndToEndTests.arrive(server, kind: "visit", name: "Lia")
            let joaoPushed = await eventually(within: .seconds(20)) {
                ((try? await asMaria.pushes(after)) ?? []).contains { $0.deviceID == joaoDevice }
            }
            #expect(joaoPushed)
            let toMaria = try await asMaria.pushes(after).filter { $0.deviceID == mariaDevice || $0.user?.name == "Maria Souza" }
            #expect(toMaria.isEmpty, "a logged-out phone got \(toMaria)")
        }
    }
}

@Suite("Client commands end to end")
struct ClientCommandsEndToEndTests {
    typealias Phone = ClientQueueEndToEndTests.Phone

    @Test("companies marks the selected one; pending lists an unanswered visit (text and --json); logout ends the session")
    func companiesPendingLogout() async throws {
        try await TestServer.with(["--demo"]) { server in
            let maria = try Phone.make("maria")
            defer { maria.remove() }
            try await maria.login("maria", url: server.baseURL.absoluteString)
            let companies = try await maria.run(["companies"])
            #expect(companies.stdout.split(separator: "\n").filter { $0.hasPrefix("*") }.map { $0.split(separator: " ").dropFirst().prefix(2).joined(separator: " ") }
                    == ["Residencial Demo"], "\(companies.stdout)")
            #expect(companies.stdout.contains("  Condomínio Azul"))

            // A short ring window, so the visit becomes a pendência within seconds.
            let asMaria = try await ClientDeviceEndToEndTests.Direct.login(server, "maria")
            let gate = try await server.request("GET", "/v1/gates/demo-gate").json()
            let unit = try #require((gate["units"] as? [[String: Any]])?.first { $0["label"] as? String == "A-101" }?["id"] as? String)
            let current = try (try await asMaria.send("GET", "/v1/units/\(unit)/settings")).decode(UnitSettingsResponse.self)
            var settings = current.settings
            settings.ringStepSeconds = 5
            settings.ringWindowSeconds = 10
            let put = try await asMaria.send("PUT", "/v1/units/\(unit)/settings", json: String(decoding: try JSONCoding.encoder().encode(settings), as: UTF8.self))
            #expect(put.status == 200)
            let id = try await ClientQueueEndToEndTests.arrive(server, kind: "delivery", name: "Pedro")

            let listed = await eventually(within: .seconds(30), every: .milliseconds(500)) {
                ((try? await maria.run(["pending"]))?.stdout ?? "").contains(id)
            }
            #expect(listed)
            let text = try await maria.run(["pending"])
            #expect(text.stdout.contains("\(id)  A-101  entrega  Pedro"), "\(text.stdout)")
            let json = try await maria.run(["pending", "--json"])
            let visits = try JSONCoding.decoder().decode([Visit].self, from: Data(json.stdout.utf8))
            #expect(visits.map(\.id) == [id])
            #expect(visits.first?.status == .unanswered)

            let out = try await maria.run(["logout"])
            #expect(out.stdout == "logged out\n", "\(out.stdout)")
            let after = try await maria.run(["pending"])
            #expect(after.status == 1)
            #expect(after.stderr.contains("not logged in"), "\(after.stderr)")
        }
    }
}
