import Foundation
import PortariaClient
@testable import PortariaCore
import Testing

@Suite("Resolve queue")
struct ResolveQueueTests {
    static let me = PersonRef(id: "u-me", name: "Maria Souza")
    static let joao = PersonRef(id: "u-joao", name: "João Souza")

    func queue(_ http: ScriptedHTTP, store: any ResolveQueueStore = InMemoryResolveQueueStore(),
               clock: VirtualClock = VirtualClock()) -> ResolveQueue {
        ResolveQueue(store: store, http: http, clock: clock, random: .constant(0.5), policy: .standard,
                     timeZone: { _ in Fixtures.saoPaulo })
    }

    @Test("the tap is on disk before the first byte is sent, with the key every attempt then carries")
    func durableBeforeSend() async throws {
        let directory = try temporaryDirectory("durable")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try FileResolveQueueStore(directory: directory)
        let http = ScriptedHTTP()
        let seenOnDisk = Locked<[String]>([])
        http.then({ request in
            // What a crash at this instant would leave behind: the decision, with this key.
            let stored = try FileResolveQueueStore(directory: directory).all()
            seenOnDisk.withLock { $0 = stored.map(\.idempotencyKey) }
            #expect(stored.first?.idempotencyKey == request.headers["Idempotency-Key"])
            throw TransportError("connection reset by peer")
        }, { _ in Fixtures.json(200, Fixtures.visit(kind: .delivery)) })
        let report = try await queue(http, store: store).resolve(visitID: "v-1", action: .leaveAtConcierge, companyID: "c-1", until: nil)
        #expect(report.sentence == "Entrega: deixar na portaria ✓")
        #expect(seenOnDisk.current.count == 1)
        let keys = Set(http.requests.map { $0.headers["Idempotency-Key"] })
        #expect(keys.count == 1 && keys.first! == seenOnDisk.current.first)
        #expect(http.requests.allSatisfy { $0.headers["X-Company-Id"] == "c-1" && $0.path == "/v1/visits/v-1/resolve" })
        #expect(try store.all().isEmpty, "a terminal answer takes the decision off the queue")
    }

    @Test("no answer, 503 with Retry-After, 500, then 200: backoff with jitter, never sooner than Retry-After")
    func backoffAndRetryAfter() async throws {
        let http = ScriptedHTTP()
        http.then({ _ in throw TransportError("timed out") },
                  { _ in Fixtures.error(503, "SERVICE_UNAVAILABLE", headers: ["Retry-After": "7"]) },
                  { _ in ClientHTTPResponse(status: 500, body: Data("<html>".utf8)) },
                  { _ in Fixtures.json(200, Fixtures.visit(kind: .visit), headers: ["Idempotent-Replayed": "true"]) })
        let clock = VirtualClock()
        let report = try await queue(http, clock: clock).resolve(visitID: "v-1", action: .authorize, companyID: nil, until: nil)
        #expect(report.outcome == .resolved(.authorize, kind: .visit, replayed: true))
        #expect(report.sentence == "Visita autorizada ✓")
        // Equal jitter at 0.5: ¾ of each step (1 s, 2 s, 4 s); the 503 asked for 7 s.
        #expect(clock.sleeps == [0.75, 7, 3])
        #expect(report.item.attempts == 4)
    }

    static let terminalCases: [(String, ResolutionAction, ClientHTTPResponse, [ClientHTTPResponse], String)] = [
        ("success, delivery", .leaveAtConcierge, Fixtures.json(200, Fixtures.visit(kind: .delivery)), [], "Entrega: deixar na portaria ✓"),
        ("success, visit denied", .deny, Fixtures.json(200, Fixtures.visit(kind: .visit)), [], "Visita negada ✓"),
        ("someone else first", .deny, Fixtures.alreadyResolved(by: joao), [], "João já autorizou às 14:32"),
        ("myself first, on another phone", .authorize, Fixtures.alreadyResolved(by: me), [], "Você já autorizou às 14:32"),
        ("the delivery rule first", .authorize, Fixtures.alreadyResolved(by: .automatic, action: .leaveAtConcierge, via: .auto), [],
         "Deixado na portaria automaticamente às 14:32"),
        ("visitor gave up, time from the visit", .authorize,
         Fixtures.error(409, "VISIT_CLOSED", "the visit is already cancelled", details: ["status": "cancelled"]),
         [Fixtures.json(200, Fixtures.visit(kind: .visit, status: .cancelled, updatedAt: Fixtures.at1432.addingTimeInterval(8 * 60)))],
         "O visitante desistiu às 14:40"),
        ("visitor gave up, visit unreadable", .authorize,
         Fixtures.error(409, "VISIT_CLOSED", details: ["status": "cancelled"]), [ClientHTTPResponse(status: 503)],
         "O visitante desistiu"),
        ("expired", .authorize,
         Fixtures.error(409, "VISIT_CLOSED", details: ["status": "expired"]),
         [Fixtures.json(200, Fixtures.visit(kind: .delivery, status: .expired))], "A visita expirou às 14:32 sem resposta"),
        ("visit gone for this user", .authorize, Fixtures.error(404, "NOT_FOUND", "visit not found"), [],
         "Esta visita não está mais disponível para você"),
        ("rights removed", .authorize, Fixtures.error(403, "FORBIDDEN"), [], "Você não tem permissão para decidir esta visita"),
        ("key reused with another body", .authorize, Fixtures.error(422, "IDEMPOTENCY_KEY_MISMATCH"), [],
         "Não foi possível registrar a decisão. Tente de novo pelo app"),
    ]

    @Test("every terminal answer becomes a pt-BR sentence in the condominium's time zone",
          arguments: terminalCases.indices)
    func terminalSentences(_ index: Int) async throws {
        let (name, action, answer, followUps, sentence) = Self.terminalCases[index]
        let http = ScriptedHTTP()
        http.then({ _ in answer })
        for followUp in followUps { http.then({ _ in followUp }) }
        let store = InMemoryResolveQueueStore()
        let report = try await queue(http, store: store).resolve(visitID: "v-1", action: action, companyID: "c-1", until: nil)
        #expect(report.sentence == sentence, "\(name)")
        #expect(report.isFinished, "\(name)")
        #expect(try store.all().isEmpty, "\(name)")
    }

    @Test("whatever the server or a proxy answers, the user never reads a status code or an error code",
          arguments: [400, 401, 403, 404, 405, 408, 409, 410, 413, 415, 422, 425, 429, 500, 502, 503, 504])
    func neverRawHTTP(_ status: Int) async throws {
        for body in [Fixtures.error(status, "SOME_SERVER_CODE", "english detail from the server"),
                     ClientHTTPResponse(status: status, body: Data("<html>Bad Gateway</html>".utf8))] {
            let http = ScriptedHTTP(fallback: { _ in body })
            let report = try await queue(http).resolve(visitID: "v-1", action: .authorize, companyID: nil,
                                                       until: VirtualClock().now().addingTimeInterval(30))
            #expect(report.sentence.range(of: #"\d{3}"#, options: .regularExpression) == nil, "\(status): \(report.sentence)")
            #expect(report.sentence.range(of: #"[A-Z_]{4,}"#, options: .regularExpression) == nil, "\(status): \(report.sentence)")
            #expect(!report.sentence.contains("english"))
        }
    }

    @Test("server unreachable until the deadline: still queued, attempts counted on disk, sentence says so")
    func queuedUntilDeadline() async throws {
        let http = ScriptedHTTP()   // every request: no route to host
        let clock = VirtualClock()
        let store = InMemoryResolveQueueStore()
        let report = try await queue(http, store: store, clock: clock)
            .resolve(visitID: "v-1", action: .authorize, companyID: nil, until: clock.now().addingTimeInterval(10))
        #expect(report.state == .queued(.unreachable))
        #expect(report.sentence == "Sem conexão com a portaria. Sua decisão (autorizar) foi guardada e será enviada assim que possível")
        let stored = try #require(try store.all().first)
        #expect(stored.attempts == report.item.attempts)
        #expect(stored.attempts >= 3)
        #expect(stored.lastProblem == .unreachable)
        #expect(stored.nextAttemptAt > clock.now().addingTimeInterval(-0.001))
    }

    @Test("REQUEST_IN_PROGRESS (our own earlier attempt still running) is waited for, then replayed")
    func requestInProgress() async throws {
        let http = ScriptedHTTP()
        http.then({ _ in Fixtures.error(409, "REQUEST_IN_PROGRESS", headers: ["Retry-After": "2"]) },
                  { _ in Fixtures.json(200, Fixtures.visit(kind: .delivery), headers: ["Idempotent-Replayed": "true"]) })
        let clock = VirtualClock()
        let report = try await queue(http, clock: clock).resolve(visitID: "v-1", action: .authorize, companyID: nil, until: nil)
        #expect(report.outcome == .resolved(.authorize, kind: .delivery, replayed: true))
        #expect(clock.sleeps == [2])
    }

    @Test("a process that died mid-retry leaves the decision on disk; the next launch finishes it with the same key")
    func survivesProcessDeath() async throws {
        let directory = try temporaryDirectory("death")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = VirtualClock()
        let first = ScriptedHTTP()
        let report = try await queue(first, store: try FileResolveQueueStore(directory: directory), clock: clock)
            .resolve(visitID: "v-1", action: .deny, companyID: "c-1", until: clock.now())
        #expect(report.state == .queued(.unreachable))
        let key = try #require(first.requests.first?.headers["Idempotency-Key"])

        // "Next launch": new objects, same directory.
        let second = ScriptedHTTP()
        second.then({ _ in Fixtures.json(200, Fixtures.visit(kind: .visit), headers: ["Idempotent-Replayed": "true"]) })
        let relaunched = queue(second, store: try FileResolveQueueStore(directory: directory), clock: clock)
        #expect(try await relaunched.pending().map(\.idempotencyKey) == [key])
        let reports = await relaunched.sync(until: nil)
        #expect(reports.map(\.sentence) == ["Visita negada ✓"])
        #expect(second.requests.map { $0.headers["Idempotency-Key"] } == [key])
        #expect(try await relaunched.pending().isEmpty)
    }

    @Test("a decision is never sent with another user's session, and never dropped for it")
    func otherUser() async throws {
        let http = ScriptedHTTP()
        let store = InMemoryResolveQueueStore()
        let queue = queue(http, store: store)
        let item = try await queue.tap(visitID: "v-1", action: .authorize, companyID: nil)
        http.setUser("u-someone-else")
        let report = await queue.send(item, until: nil)
        #expect(report.state == .queued(.otherUser))
        http.setUser(nil)
        #expect(await queue.send(item, until: nil).state == .queued(.needsLogin))
        #expect(http.requests.isEmpty)
        #expect(try store.all().count == 1)

        http.setUser("u-me")
        http.then({ _ in Fixtures.json(200, Fixtures.visit(kind: .delivery)) })
        #expect(await queue.sync(until: nil).map(\.sentence) == ["Entrega: autorizada ✓"])
    }

    @Test("a tap needs a logged-in user")
    func tapNeedsUser() async throws {
        let http = ScriptedHTTP(user: nil)
        await #expect(throws: ResolveQueue.QueueError.notLoggedIn) {
            _ = try await queue(http).tap(visitID: "v-1", action: .authorize, companyID: nil)
        }
    }
}

@Suite("Resolve queue and the session: an expired access token is refreshed, never a reason to drop")
struct ResolveQueueSessionTests {
    /// A server that knows one valid access token at a time and rotates on refresh.
    final class TokenServer: HTTPTransport, @unchecked Sendable {
        let state = Locked<(valid: String, refresh: String, refreshWorks: Bool, resolves: [String], refreshes: Int)>(
            ("old-access", "refresh-1", true, [], 0))

        func send(_ request: ClientHTTPRequest, to baseURL: URL) async throws -> ClientHTTPResponse {
            state.withLock { state in
                switch request.path {
                case "/v1/auth/login", "/v1/auth/refresh":
                    if request.path == "/v1/auth/refresh" {
                        state.refreshes += 1
                        guard state.refreshWorks else { return Fixtures.error(401, "REFRESH_TOKEN_REUSED") }
                        state.valid = "access-\(state.refreshes)"
                    }
                    return Fixtures.json(200, LoginResponse(jwtToken: state.valid, refreshToken: "refresh-\(state.refreshes + 1)",
                                                            expiresIn: 900, userID: "u-me", master: false, driver: false,
                                                            companies: [CompanyGrant(id: "c-1", name: "Residencial Demo", permissions: [], sectors: [])]))
                default:
                    guard request.headers["Authorization"] == "Bearer \(state.valid)" else { return Fixtures.error(401, "UNAUTHORIZED") }
                    state.resolves.append(request.headers["Idempotency-Key"] ?? "")
                    return Fixtures.json(200, Fixtures.visit(kind: .delivery))
                }
            }
        }
    }

    @Test("401 → one refresh → the same decision, same key, lands")
    func refreshThenLand() async throws {
        let server = TokenServer()
        let session = SessionManager(api: APIClient(baseURL: URL(string: "http://portaria.test")!, transport: server),
                                     secure: InMemorySecureStore(), preferences: InMemoryPreferences())
        _ = try await session.login(username: "maria", password: "x")
        server.state.withLock { $0.valid = "rotated-by-the-clock" }   // the access token expired between tap and send
        let queue = ResolveQueue(store: InMemoryResolveQueueStore(), http: session, clock: VirtualClock(), random: .constant(0.5))
        let report = try await queue.resolve(visitID: "v-1", action: .leaveAtConcierge, companyID: "c-1", until: nil)
        #expect(report.sentence == "Entrega: deixar na portaria ✓")
        #expect(server.state.current.refreshes == 1)
        #expect(server.state.current.resolves.count == 1)
    }

    @Test("the refresh is refused: the decision waits for the same user's next login, then lands")
    func sessionEndedKeepsDecision() async throws {
        let server = TokenServer()
        let secure = InMemorySecureStore()
        let session = SessionManager(api: APIClient(baseURL: URL(string: "http://portaria.test")!, transport: server),
                                     secure: secure, preferences: InMemoryPreferences())
        _ = try await session.login(username: "maria", password: "x")
        server.state.withLock {
            $0.valid = "expired"
            $0.refreshWorks = false
        }
        let store = InMemoryResolveQueueStore()
        let queue = ResolveQueue(store: store, http: session, clock: VirtualClock(), random: .constant(0.5))
        let report = try await queue.resolve(visitID: "v-1", action: .authorize, companyID: "c-1", until: nil)
        #expect(report.state == .queued(.needsLogin))
        #expect(report.sentence == "Sua sessão expirou. Entre novamente para enviar sua decisão (autorizar)")
        #expect(try store.all().count == 1)

        server.state.withLock { $0.refreshWorks = true }
        _ = try await session.login(username: "maria", password: "x")
        #expect(await queue.sync(until: nil).map(\.sentence) == ["Entrega: autorizada ✓"])
        #expect(try store.all().isEmpty)
    }
}

@Suite("Resolve queue file store")
struct FileResolveQueueStoreTests {
    @Test("owner-only files, no temporary left behind, stale temporaries removed, unsafe keys refused")
    func files() throws {
        let directory = try temporaryDirectory("store")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try FileResolveQueueStore(directory: directory + "/queue")
        let item = QueuedResolution(idempotencyKey: "0b7c3a52-5c55-4b7e-9d7c-4c1e2a3b4d5e", visitID: "v-1", action: .authorize,
                                    via: .app, companyID: "c-1", userID: "u-me", tappedAt: Fixtures.at1432)
        try store.save(item)
        var updated = item
        updated.attempts = 3
        try store.save(updated)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory + "/queue")
        #expect(names == [item.idempotencyKey + ".json"])
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/queue/" + names[0])
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory + "/queue")[.posixPermissions] as? NSNumber
        #expect(directoryMode?.intValue == 0o700)
        #expect(try store.all() == [updated])

        // A write interrupted before its rename: never acknowledged, so it is discarded.
        _ = FileManager.default.createFile(atPath: directory + "/queue/.abc.tmp-1234", contents: Data("{\"half".utf8))
        #expect(try store.all() == [updated])
        #expect(!FileManager.default.fileExists(atPath: directory + "/queue/.abc.tmp-1234"))

        let unsafe = QueuedResolution(idempotencyKey: "../../etc/passwd", visitID: "v", action: .deny, via: .app,
                                      companyID: nil, userID: "u", tappedAt: Fixtures.at1432)
        #expect(throws: ResolveQueueStoreError.self) { try store.save(unsafe) }
        try store.remove(idempotencyKey: item.idempotencyKey)
        #expect(try store.all().isEmpty)
    }
}
