import COpenSSL
import Foundation
import PortariaCore
import Testing

/// `GET /v1/calls/ice_servers` on the real binary, with and without `--turn-url`.
/// (That the credential opens a real coturn allocation is proven in-process by
/// PortariaServerTests/Calls/CoturnTests, through the same route.)
@Suite("Calls end to end")
struct CallsEndToEndTests {
    static func iceServers(_ server: TestServer, as username: String) async throws -> (body: String, userID: String, cacheControl: String?) {
        let login = try await server.postJSON("/v1/auth/login", #"{"username":"\#(username)","password":"demo1234"}"#)
        try #require(login.status == 200)
        let body = try login.json()
        let token = try #require(body["jwt_token"] as? String)
        let userID = try #require(body["user_id"] as? String)
        let company = try #require((body["companies"] as? [[String: Any]])?.first?["id"] as? String)
        let response = try await server.request("GET", "/v1/calls/ice_servers",
                                                headers: [("Authorization", "Bearer \(token)"), ("X-Company-Id", company)])
        try #require(response.status == 200, "\(response.status) \(response.text)")
        return (response.text, userID, response.header("cache-control"))
    }

    @Test("with --turn-url: STUN and TURN URLs and a TURN REST credential valid for ten minutes")
    func withTURN() async throws {
        let secret = "e2e-secret"
        try await TestServer.with(["--demo", "--turn-url", "turn:127.0.0.1:3478", "--turn-secret", secret]) { server in
            let before = Int(Date().timeIntervalSince1970)
            let (text, userID, cacheControl) = try await Self.iceServers(server, as: "portaria")
            let after = Int(Date().timeIntervalSince1970)
            #expect(cacheControl == "no-store")
            let response = try JSONCoding.decoder().decode(ICEServersResponse.self, from: Data(text.utf8))
            #expect(response.turnConfigured && response.ttl == 600)
            #expect(response.iceServers.map(\.urls) == [
                ["stun:127.0.0.1:3478"],
                ["turn:127.0.0.1:3478?transport=udp", "turn:127.0.0.1:3478?transport=tcp"],
            ])
            let turn = response.iceServers[1]
            let username = try #require(turn.username)
            let parts = username.split(separator: ":", maxSplits: 1).map(String.init)
            #expect(parts.count == 2 && parts[1] == userID)
            let expiry = try #require(Int(parts[0]))
            #expect((before + 600)...(after + 600) ~= expiry)
            // The credential is what coturn recomputes: base64(HMAC-SHA1(secret, username)).
            #expect(turn.credential == Self.hmacSHA1Base64(key: secret, message: username))
        }
    }

    @Test("without --turn-url: an empty list that says TURN is not configured and calls are unavailable")
    func withoutTURN() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (text, _, _) = try await Self.iceServers(server, as: "maria")
            #expect(text == #"{"calls_available":false,"ice_servers":[],"ice_transport_policy":"relay","ttl":600,"turn_configured":false}"#)
        }
    }

    @Test("a resident is told to gather relay candidates only, unless --calls-allow-direct", arguments: [false, true])
    func residentTransportPolicy(_ direct: Bool) async throws {
        try await TestServer.with(["--demo", "--turn-url", "turn:127.0.0.1:3478", "--turn-secret", "s"] + (direct ? ["--calls-allow-direct"] : [])) { server in
            let (text, _, _) = try await Self.iceServers(server, as: "maria")
            let response = try JSONCoding.decoder().decode(ICEServersResponse.self, from: Data(text.utf8))
            #expect(response.callsAvailable && response.iceTransportPolicy == (direct ? .all : .relay), "\(text)")
        }
    }

    @Test("a bad --turn-url is a usage error at startup", arguments: [
        ["serve", "--turn-url", "turn:127.0.0.1:99999", "--turn-secret", "x"],
        ["serve", "--turn-url", "turn:127.0.0.1?transport=udp", "--turn-secret", "x"],
        ["serve", "--turn-url", "turn:127.0.0.1"],
    ])
    func badTURNURL(_ arguments: [String]) async throws {
        let result = try await runPortaria(arguments)
        #expect(result.status == 64, "\(arguments) → \(result.status): \(result.stderr)")
        #expect(result.stderrLines.count == 1 && result.stderr.contains("--turn"), "\(result.stderr)")
    }

    /// Computed independently of the server's `Crypto` (libcrypto directly).
    static func hmacSHA1Base64(key: String, message: String) -> String {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let keyBytes = Array(key.utf8), messageBytes = Array(message.utf8)
        _ = HMAC(EVP_sha1(), keyBytes, Int32(keyBytes.count), messageBytes, messageBytes.count, &output, &length)
        return Data(output.prefix(Int(length))).base64EncodedString()
    }
}
