import Foundation
import PortariaCore
import PortariaServer

/// `portaria-bench tokens`: the per-request cost of bearer verification, split into its
/// parts — the HS256 signature check alone, and the full `Authenticator.authenticate`
/// (signature + claims + the session read that makes logout immediate) on SQLite.
struct TokenBenchmark {
    func nanoseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
    }

    let iterations: Int

    init(options: Options) throws {
        iterations = try options.int("iterations", default: 100_000)
    }

    func run() async throws {
        let key = SigningKey(id: "bench", secret: Array(repeating: 7, count: 32))
        let codec = JWTCodec(keys: [key], currentKeyID: "bench")
        let now = Date()
        let claims = AccessClaims.issued(to: "user", session: "session", at: now, lifetime: 900, jti: "j")
        let token = codec.sign(claims)

        var start = ContinuousClock.now
        for _ in 0..<iterations { _ = codec.sign(claims) }
        let signNanos = nanoseconds(ContinuousClock.now - start) / Double(iterations)
        start = ContinuousClock.now
        for _ in 0..<iterations { _ = try? codec.verify(token, now: now) }
        let verifyNanos = nanoseconds(ContinuousClock.now - start) / Double(iterations)
        print(String(format: "tokens: HS256 sign %.1f µs, verify (signature + claims) %.1f µs per token (%d iterations)",
                     signNanos / 1000, verifyNanos / 1000, iterations))

        // The full bearer check on a real SQLite database with the demo data.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-bench-tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try await DatabaseFactory.open(url: "sqlite://" + directory.appendingPathComponent("bench.db").path)
        try await Migrator().migrate(database)
        try await DemoData.seedIfEmpty(database, log: Log(minimumLevel: .error))
        let secrets = try await ServiceSecrets.loadOrCreate(database)
        let auth = AuthService(database: database, secrets: secrets, sms: LogSmsSender(log: Log(minimumLevel: .error)))
        let login = try await auth.login(LoginRequest(username: "ana", password: DemoData.password), clientAddress: "bench")
        let authenticator = Authenticator(database: database, jwt: secrets.jwt)
        let request = HTTPRequest(method: "GET", path: "/v1/me", headers: ["authorization": "Bearer \(login.jwtToken)"])
        let rounds = max(1, iterations / 10)
        start = ContinuousClock.now
        for _ in 0..<rounds { _ = try await authenticator.authenticate(request) }
        let authNanos = nanoseconds(ContinuousClock.now - start) / Double(rounds)
        start = ContinuousClock.now
        for _ in 0..<rounds { _ = try await authenticator.caller(request) }
        let callerNanos = nanoseconds(ContinuousClock.now - start) / Double(rounds)
        print(String(format: "tokens: authenticate (verify + session read) %.1f µs; with company membership %.1f µs (SQLite, sequential, %d rounds)",
                     authNanos / 1000, callerNanos / 1000, rounds))
        printResult(scenario: "bearer verification", database: "sqlite",
                    String(format: "sign_us=%.2f verify_us=%.2f authenticate_us=%.1f caller_us=%.1f",
                           signNanos / 1000, verifyNanos / 1000, authNanos / 1000, callerNanos / 1000))
        await database.close()
    }
}
