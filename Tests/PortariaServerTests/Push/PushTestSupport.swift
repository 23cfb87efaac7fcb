import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

/// Calls routes in process, as the HTTP layer would (errors become their envelopes).
struct RouteClient {
    let router = Router()

    func call(_ method: String, _ path: String, token: String? = nil, company: String? = nil,
              json: String? = nil) async -> (status: Int, body: JSONValue) {
        var headers: [String: String] = [:]
        if let token { headers["authorization"] = "Bearer \(token)" }
        if let company { headers["x-company-id"] = company }
        if json != nil { headers["content-type"] = "application/json" }
        var request = HTTPRequest(method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
        let response: HTTPResponse
        switch router.match(method: method, path: path) {
        case .found(let route, let parameters, let handler):
            request.pathParameters = parameters
            request.route = route
            do { response = try await handler(request) } catch let error as HTTPError { response = error.response } catch {
                response = HTTPError(status: 500, code: .internalError, message: "\(error)").response
            }
        case .methodNotAllowed: response = HTTPResponse(status: 405)
        case .notFound: response = HTTPError.notFound().response
        }
        let body = (try? JSONCoding.decoder().decode(JSONValue.self, from: Data(response.body))) ?? .null
        return (response.status, body)
    }
}

/// The demo database with the device and push routes mounted, and logins at hand.
struct PushFixture {
    let auth: AuthFixture
    let client: RouteClient
    var database: any SQLDatabase { auth.storage.database }

    static func with(_ backend: Backend, _ body: (PushFixture) async throws -> Void) async throws {
        try await AuthFixture.with(backend) { auth in
            let client = RouteClient()
            DeviceRoutes(store: DeviceStore(database: auth.storage.database), authenticator: auth.authenticator).register(on: client.router)
            PushRoutes(receipts: PushReceipts(database: auth.storage.database), authenticator: auth.authenticator).register(on: client.router)
            try await body(PushFixture(auth: auth, client: client))
        }
    }

    func login(_ username: String) async throws -> String {
        try await auth.auth.login(LoginRequest(username: username, password: "demo1234"), clientAddress: "10.9.\(username.count).1").jwtToken
    }

    func userID(_ username: String) async throws -> String {
        try await database.read { db in try db.queryOne("SELECT id FROM users WHERE username = ?", .text(username))?.string("id") ?? "" }
    }

    func companyID(_ name: String) async throws -> String {
        try await database.read { db in try db.queryOne("SELECT id FROM companies WHERE name = ?", .text(name))?.string("id") ?? "" }
    }

    /// Registers a device straight in the store.
    @discardableResult
    func register(_ username: String, platform: String = "ios", pushToken: String = hexToken(), voipToken: String? = nil,
                  capabilities: DeviceCapabilities? = nil) async throws -> DeviceRecord {
        let registration = DeviceRegistration(installationID: UUID().uuidString, platform: platform, pushToken: pushToken,
                                              voipToken: voipToken ?? (platform == "ios" ? hexToken() : nil),
                                              appVersion: "1.0", deviceName: "\(username)'s phone", locale: "pt-BR",
                                              capabilities: capabilities)
        return try await DeviceStore(database: database).register(userID: try await userID(username), registration).0
    }

    /// Enqueues in its own write transaction, as an event handler would inside its own.
    func enqueue(_ request: PushRequest) async throws -> [EnqueuedPush] {
        try await database.write { db in try PushOutbox.enqueue(db, request) }
    }
}

/// The ring of the demo (docs/contract.md §6): a visitor at A-101.
func ringMessage(visitID: String = UUID().uuidString.lowercased()) -> PushMessage {
    PushMessage(visitID: visitID, callerName: "Carlos Entregador", unitLabel: "A-101", visitKind: .visit,
                geofence: GeofenceResult(status: .atEntrance, distanceM: 12))
}

/// A provider that counts what it is asked to send; answers with `outcome`.
final class CountingProvider: PushProvider, @unchecked Sendable {
    let name = "counting"
    let sent = Locked<[String: Int]>([:])
    let delay: Duration
    let answer: @Sendable (OutgoingPush) -> PushResult

    init(delay: Duration = .zero, answer: @escaping @Sendable (OutgoingPush) -> PushResult = { _ in PushResult(outcome: .accepted, httpStatus: 200) }) {
        self.delay = delay
        self.answer = answer
    }

    func send(_ push: OutgoingPush) async -> PushResult {
        sent.withLock { $0[push.pushID, default: 0] += 1 }
        if delay > .zero { try? await Task.sleep(for: delay) }
        return answer(push)
    }

    var providers: PushProviders { PushProviders(apns: self, fcm: self, web: self) }
}

/// Collects what the outbox reports.
final class RecordingSink: PushEventSink {
    let attempts = Locked<[PushAttempt]>([])
    func pushAttempted(_ attempt: PushAttempt, in db: any SQLConnection) throws {
        attempts.withLock { $0.append(attempt) }
    }
}

/// Fast retries for tests; the policy is the production one with a smaller base.
func testWorkerConfiguration() -> PushWorker.Configuration {
    var configuration = PushWorker.Configuration()
    configuration.retry = PushRetryPolicy(base: 0.05, cap: 1, maxAttempts: 5)
    configuration.pollInterval = .milliseconds(20)
    return configuration
}
