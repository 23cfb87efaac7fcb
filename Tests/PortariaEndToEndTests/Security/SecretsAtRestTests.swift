import Foundation
@testable import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension SecuritySuites {
    @Suite("Secrets at rest", .serialized)
    struct SecretsAtRestTests {
        static func keyFile(_ bytes: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }) throws -> URL {
            try AccountAbuseTests.writeSecret(Data(bytes).base64EncodedString())
        }

        @Test("--secrets-key-file wraps the secrets of a database from before (plaintext rows, on first start): the file holds no plaintext secret, and the database will not start without the right key")
        func keysAreWrapped() async throws {
            let (directory, plaintext) = try await SecretsKeyFileTests.legacyDatabase()
            let key = try Self.keyFile()
            defer { try? FileManager.default.removeItem(at: key.deletingLastPathComponent()) }
            let wrapping = try await TestServer.start(["--demo", "--secrets-key-file", key.path], directory: directory)
            defer { wrapping.discard() }
            let url = "sqlite://" + wrapping.databasePath
            let login = try await AccountAbuseTests.login(wrapping, "carlos")
            let token = try #require(try login.json()["jwt_token"] as? String)
            let wrapLog = wrapping.log
            #expect(await wrapping.stopKeepingFiles())
            #expect(wrapLog.contains("wrapped the database's plaintext secrets"), "\(wrapLog.suffix(1500))")
            #expect(!wrapLog.contains("stored in plaintext"))
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("data/secrets.key").path),
                    "a key file was made although --secrets-key-file was given")

            let wrapped = try await SecretsKeyFileTests.storedSecrets(wrapping.databasePath)
            #expect(wrapped.count == 3 && wrapped.allSatisfy { $0.hasPrefix("enc:v1:") }, "\(wrapped)")
            let stored = SecretsKeyFileTests.databaseBytes(wrapping.databasePath)
            for secret in plaintext {
                #expect(stored.range(of: Data(secret.utf8)) == nil, "a plaintext secret is still in the database file")
            }

            // Without the key, or with another, the server refuses to start, in one line.
            let keyless = try await runPortaria(["serve", "--port", "0", "--database", url], timeout: .seconds(20))
            #expect(keyless.status != 0 && keyless.stderr.contains("--secrets-key-file"), "\(keyless.stderr.suffix(800))")
            let other = try Self.keyFile()
            defer { try? FileManager.default.removeItem(at: other.deletingLastPathComponent()) }
            let wrongKey = try await runPortaria(["serve", "--port", "0", "--database", url, "--secrets-key-file", other.path], timeout: .seconds(20))
            #expect(wrongKey.status != 0 && wrongKey.stderr.contains("wrong key"), "\(wrongKey.stderr.suffix(800))")

            // PORTARIA_SECRETS_KEY_FILE works as well, and so does rotating with the key.
            let rotated = try await runPortaria(["admin", "rotate-jwt-key", "--database", url], environment: ["PORTARIA_SECRETS_KEY_FILE": key.path])
            #expect(rotated.status == 0, "\(rotated.stderr)")
            let fromEnvironment = try await TestServer.start(["--database", url], environment: ["PORTARIA_SECRETS_KEY_FILE": key.path])
            let again = try? await fromEnvironment.get("/v1/me", bearer: token)
            await fromEnvironment.stop()
            #expect(again?.status == 200)
        }

        @Test("--turn-secret-file keeps the TURN secret out of the process arguments; --turn-secret still works but warns; admin --password warns")
        func secretsStayOutOfPs() async throws {
            let secret = "turn-secret-\(UUID().uuidString.prefix(8))"
            let file = try AccountAbuseTests.writeSecret(secret)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            try await TestServer.with(["--demo", "--turn-url", "turn:127.0.0.1:3478", "--turn-secret-file", file.path]) { server in
                let arguments = (try? String(contentsOfFile: "/proc/\(server.process.processIdentifier)/cmdline", encoding: .utf8)) ?? ""
                #expect(!arguments.isEmpty && !arguments.contains(secret))
                let (text, _, _) = try await CallsEndToEndTests.iceServers(server, as: "portaria")
                let response = try JSONCoding.decoder().decode(ICEServersResponse.self, from: Data(text.utf8))
                let turn = try #require(response.iceServers.last)
                #expect(turn.credential == CallsEndToEndTests.hmacSHA1Base64(key: secret, message: try #require(turn.username)))
                #expect(!server.log.contains("visible to every user"))
            }
            try await TestServer.with(["--demo", "--turn-url", "turn:127.0.0.1:3478", "--turn-secret", secret]) { server in
                #expect(server.log.contains("--turn-secret on the command line is visible"))
            }
            let directory = try makeTemporaryDirectory("admin-password")
            defer { try? FileManager.default.removeItem(at: directory) }
            let created = try await runPortaria(["admin", "create-user", "--username", "zelador", "--name", "Zelador", "--password", "senha-no-ps",
                                                 "--database", "sqlite://" + directory.appendingPathComponent("p.db").path])
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stderr.contains("visible to every user"), "\(created.stderr)")
        }
    }
}
