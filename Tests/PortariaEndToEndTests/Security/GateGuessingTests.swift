import Foundation
@testable import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension SecuritySuites {
    @Suite("Abuse limits: gate tokens")
    struct GateGuessingTests {
        static func randomToken() -> String { "guess-" + UUID().uuidString.lowercased().prefix(18) }

        @Test("unknown gate tokens count per address: 20 guesses get 404, then every gate request from that address is 429 with Retry-After, and refused attempts write nothing")
        func guessingIsLimitedPerAddress() async throws {
            let server = try await TestServer.start(["--demo"])
            defer { server.discard() }
            do {
                let unit = try await Self.unitID(server)
                for attempt in 1...20 {
                    // Half views, half visits: both count in the same per-address bucket.
                    let response = attempt % 2 == 0
                        ? try await server.get("/v1/gates/\(Self.randomToken())")
                        : try await server.post("/v1/gates/\(Self.randomToken())/visits",
                                                json: #"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Guess"}"#)
                    #expect(response.status == 404, "guess \(attempt): \(response.status) \(response.text)")
                }
                let refused = try await server.get("/v1/gates/\(Self.randomToken())")
                #expect(refused.status == 429)
                #expect(try refused.errorEnvelope().code == .rateLimited)
                let retryAfter = Int(refused.header("retry-after") ?? "") ?? 0
                #expect((1...600).contains(retryAfter), "Retry-After \(refused.header("retry-after") ?? "none")")
                // A real token from that address is refused too: a 200 among 429s would tell
                // the guesser it found one.
                #expect(try await server.get("/v1/gates/demo-gate").status == 429)
                let post = try await server.post("/v1/gates/demo-gate/visits",
                                                 json: #"{"unit_id":"\#(unit)","kind":"visit","visitor_name":"Guess"}"#)
                #expect(post.status == 429)
                for _ in 0..<30 {
                    #expect(try await server.get("/v1/gates/\(Self.randomToken())").status == 429)
                }
            } catch {
                _ = await server.stopKeepingFiles()
                throw error
            }
            #expect(await server.stopKeepingFiles(), "the server did not exit cleanly:\n\(server.log.suffix(2000))")
            // Exactly the 20 counted guesses: the 33 refused requests committed nothing.
            let rows = try await SQLiteProbe.rows(server.databasePath,
                                                  "SELECT bucket, count, expires_at IS NOT NULL FROM rate_limits WHERE bucket LIKE 'gate-unknown:%'")
            #expect(rows == [["gate-unknown:127.0.0.1", "20", "1"]], "\(rows)")
        }

        @Test("admin create-gate makes a random 128-bit token by default and refuses a short chosen one")
        func randomGateTokens() async throws {
            let directory = try makeTemporaryDirectory("gates")
            defer { try? FileManager.default.removeItem(at: directory) }
            let url = "sqlite://" + directory.appendingPathComponent("p.db").path
            let company = try await runPortaria(["admin", "create-company", "--name", "Edifício Teste", "--database", url, "--json"])
            #expect(company.status == 0, "\(company.stderr)")
            var tokens: Set<String> = []
            for _ in 0..<2 {
                let gate = try await runPortaria(["admin", "create-gate", "--company", "Edifício Teste", "--database", url, "--json"])
                #expect(gate.status == 0, "\(gate.stderr)")
                let object = try JSONSerialization.jsonObject(with: Data(gate.stdout.utf8)) as? [String: Any]
                let token = try #require(object?["token"] as? String)
                // 16 random bytes in base64url: 22 characters of 64 symbols (128 bits).
                #expect(token.count >= 22 && token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }, "\(token)")
                tokens.insert(token)
            }
            #expect(tokens.count == 2)
            let short = try await runPortaria(["admin", "create-gate", "--company", "Edifício Teste", "--token", "portao-1", "--database", url])
            #expect(short.status != 0)
            #expect(short.stderr.contains("at least 22"), "\(short.stderr)")

            // The new gate works at once.
            let token = try #require(tokens.first)
            let server = try await TestServer.start(["--database", url])
            let info = try? await server.get("/v1/gates/\(token)")
            await server.stop()
            #expect(info?.status == 200, "\(info?.status ?? 0) \(info?.text ?? "")")
            #expect((try info?.json()["company"] as? [String: Any])?["name"] as? String == "Edifício Teste")
        }

        static func unitID(_ server: TestServer, gate: String = "demo-gate", label: String = "A-101") async throws -> String {
            let gate = try await server.get("/v1/gates/\(gate)")
            let units = try #require(try gate.json()["units"] as? [[String: Any]])
            return try #require(units.first { $0["label"] as? String == label }?["id"] as? String)
        }
    }
}
