import Foundation
import Testing

/// `GET /v1/push/web/vapid_public_key` and `POST /v1/devices` with `"platform": "web"`
/// against the real binary: a browser subscription is accepted only from a browser push
/// service, with keys that are what they claim; anything else is a 400 naming the field,
/// and nothing is written.
@Suite("Web Push registration")
struct WebPushRegistrationTests {
    /// RFC 8291's receiver key: a real point on P-256.
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    static func body(installation: String = "web-1", platform: String = "web", endpoint: String = "https://fcm.googleapis.com/fcm/send/abc:def",
                     p256dh: String = p256dh, auth: String = auth, extra: String = "", keysExtra: String = "") -> String {
        #"{"installation_id":"\#(installation)","platform":"\#(platform)"\#(extra),"web_push":{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"\#(keysExtra)}}}"#
    }

    @Test("The VAPID key is public and stable; a real subscription registers; every bad one is a 400 naming its field")
    func registration() async throws {
        try await TestServer.with(["--demo", "--vapid-subject", "mailto:portaria@example.com"]) { server in
            let key = try await server.request("GET", "/v1/push/web/vapid_public_key")
            #expect(key.status == 200)
            let publicKey = try #require(try key.json()["public_key"] as? String)
            #expect(publicKey.count == 87 && publicKey.hasPrefix("B"), "\(publicKey)")  // 0x04‖X‖Y, base64url
            #expect(try await server.request("GET", "/v1/push/web/vapid_public_key").json()["public_key"] as? String == publicKey)

            let maria = try await RealtimeTests.login(server, "maria")
            let headers = [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID), ("Content-Type", "application/json")]
            func register(_ json: String) async throws -> RawResponse {
                try await server.request("POST", "/v1/devices", headers: headers, body: Array(json.utf8))
            }
            var offCurve = Array(Self.p256dh)
            offCurve[80] = offCurve[80] == "A" ? "B" : "A"
            let refused: [(String, String)] = [
                (Self.body(endpoint: "https://evil.example/push/1"), "web_push.endpoint"),
                (Self.body(endpoint: "http://fcm.googleapis.com/fcm/send/x"), "web_push.endpoint"),
                (Self.body(endpoint: "https://127.0.0.1:9/push"), "web_push.endpoint"),
                (Self.body(endpoint: "https://x.fcm.googleapis.com.evil.example/x"), "web_push.endpoint"),
                (Self.body(p256dh: String(offCurve)), "web_push.keys.p256dh"),
                (Self.body(p256dh: String(Self.p256dh.dropLast(2))), "web_push.keys.p256dh"),
                (Self.body(auth: "BTBZMqHH6r4Tts7J_aSIgg=="), "web_push.keys.auth"),
                (Self.body(auth: "short"), "web_push.keys.auth"),
                (Self.body(extra: #","push_token":"abc""#), "push_token"),
                (Self.body(platform: "android", extra: #","push_token":"abc""#), "web_push"),
                (Self.body(keysExtra: #","extra":"x""#), "web_push.keys.extra"),
                (#"{"installation_id":"web-1","platform":"web"}"#, "web_push"),
                (#"{"installation_id":"web-1","platform":"web","web_push":"https://fcm.googleapis.com/x"}"#, "web_push"),
            ]
            for (json, field) in refused {
                let answer = try await register(json)
                #expect(answer.status == 400, "\(json): \(answer.status) \(answer.text)")
                let error = try answer.json()["error"] as? [String: Any]
                #expect(error?["field"] as? String == field, "\(json): \(answer.text)")
            }
            let none = try await server.request("GET", "/v1/devices", headers: headers).json()["devices"] as? [[String: Any]]
            #expect(none?.isEmpty == true, "a refused registration wrote something: \(String(describing: none))")

            let created = try await register(Self.body())
            #expect(created.status == 201, "\(created.text)")
            #expect(try created.json()["platform"] as? String == "web")
            #expect(try created.json()["push_token_status"] as? String == "active")
            // The same browser again (a new subscription after the old one expired) updates its row.
            let renewed = try await register(Self.body(endpoint: "https://updates.push.services.mozilla.com/wpush/v2/gAAAA"))
            #expect(renewed.status == 200, "\(renewed.text)")
            let devices = try await server.request("GET", "/v1/devices", headers: headers).json()["devices"] as? [[String: Any]]
            #expect(devices?.count == 1)
        }
    }

    @Test("--web-push-hosts and --vapid-subject are checked at start")
    func options() async throws {
        for arguments in [["--web-push-hosts", " , "], ["--web-push-hosts", "*.*.example"], ["--vapid-subject", "admin@example.com"]] {
            // A usage error stops `serve` before it opens anything.
            let result = try await runPortaria(["serve", "--port", "0"] + arguments)
            #expect(result.status != 0, "\(arguments) started")
            #expect(result.stderr.contains(arguments[0]), "\(arguments): \(result.stderr)")
        }
    }
}
