import Foundation

// Writes the generated seeds of fuzz/corpus/ (`scripts/fuzz --make-seeds`): real media
// built by the unit tests' MediaSamples, the crafted crash inputs of HostileMedia, and
// small valid tokens, paths, request bodies and realtime frames. Each file is one input.
// Seeds that are not generated here (crash inputs the fuzzers found) sit beside them.

@main
struct MakeSeeds {
    static func main() throws {
        let root = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "fuzz/corpus"
        var written = 0
        func write(_ target: String, _ name: String, _ bytes: [UInt8]) throws {
            let directory = URL(fileURLWithPath: root).appendingPathComponent(target)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(bytes).write(to: directory.appendingPathComponent(name))
            written += 1
        }
        func write(_ target: String, _ name: String, _ text: String) throws { try write(target, name, Array(text.utf8)) }

        // media-voice: one valid file per container, then every crafted crash.
        try write("media-voice", "valid-ogg-3s.ogg", MediaSamples.ogg(seconds: 3))
        try write("media-voice", "valid-webm-2s.webm", MediaSamples.webm(seconds: 2))
        try write("media-voice", "valid-m4a-5s.m4a", MediaSamples.m4a(seconds: 5))
        try write("media-voice", "valid-wav-2s.wav", MediaSamples.wav(seconds: 2))
        try write("media-voice", "valid-wav-stereo-list.wav", MediaSamples.wav(seconds: 0.25, rate: 48_000, channels: 2, list: true))
        try write("media-voice", "valid-webm-duration.webm", HostileMedia.webm(info: HostileMedia.duration(1_500)))
        for (name, bytes) in HostileMedia.voiceCrashes { try write("media-voice", name + ".bin", bytes) }

        // media-photo
        try write("media-photo", "valid.jpg", MediaSamples.jpeg())
        try write("media-photo", "valid.png", MediaSamples.png())
        let secondScan = MediaSamples.segment(0xE1, Array("Exif\0\0MM\0*GPS".utf8))
            + MediaSamples.segment(0xC4, [0x10] + [UInt8](repeating: 0, count: 15) + [1] + [0])
            + MediaSamples.segment(0xDD, [0, 4])
            + MediaSamples.segment(0xDA, [1, 1, 0, 0, 63, 0]) + [0x55, 0xFF, 0x00, 0xFF, 0xD3, 0x66]
        try write("media-photo", "two-scans-and-trailer.jpg",
                  Array(MediaSamples.jpeg().dropLast(2)) + secondScan + [0xFF, 0xD9] + Array("SEFH trailer".utf8))

        // jwt: signed with the fuzz target's key k1 (fuzz/targets/JWT.swift).
        let secret = Array("fuzz-signing-key-one-0123456789".utf8)
        func token(_ header: String, _ payload: String, sign: Bool = true) -> String {
            let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
            return input + "." + (sign ? Base64URL.encode(Crypto.hmacSHA256(key: secret, data: Array(input.utf8))) : "")
        }
        let header = #"{"alg":"HS256","kid":"k1","typ":"JWT"}"#
        func claims(iat: String = "1800000000", exp: String = "1800000900") -> String {
            #"{"aud":"portaria-api","exp":\#(exp),"iat":\#(iat),"iss":"portaria","jti":"j1","sid":"s1","sub":"u1"}"#
        }
        try write("jwt", "valid.txt", token(header, claims()))
        try write("jwt", "expired.txt", token(header, claims(exp: "1700000000")))
        try write("jwt", "crash-exp-int64-max.txt", token(header, claims(exp: String(Int64.max))))
        try write("jwt", "iat-int64-min.txt", token(header, claims(iat: String(Int64.min))))
        try write("jwt", "alg-none.txt", token(#"{"alg":"none","kid":"k1"}"#, claims(), sign: false))
        try write("jwt", "kid-k2.txt", token(#"{"alg":"HS256","kid":"k2"}"#, claims()))

        // router-path: first byte picks the method (0 GET, 1 POST, 2 PUT, 3 DELETE, 4 HEAD, …).
        for (index, path) in ["\u{0}/v1/visits/3f2a/photo", "\u{1}/v1/gates/demo-gate/visits", "\u{2}/v1/units/a%2Fb/settings",
                              "\u{0}/v1/visits/%E2%82%AC%20x", "\u{3}/v1/devices/%zz", "\u{4}//healthz//", "\u{0}/admin/../etc"].enumerated() {
            try write("router-path", "path-\(index).txt", path)
        }

        // json-request: first byte picks the type (fuzz/targets/JSONRequest.swift).
        let bodies: [(UInt8, String)] = [
            (0, #"{"a":[1,2.5,-3e10,"x\u00e9",null,true,{"b":{}}],"c":-0.0}"#),
            (1, #"{"username":"maria","password":"demo1234"}"#),
            (2, #"{"phone":"+5511999990000"}"#),
            (3, #"{"phone":"+5511999990000","code":"123456"}"#),
            (4, #"{"otp_token":"abc"}"#),
            (5, #"{"refresh_token":"abc"}"#),
            (6, #"{"refresh_token":null}"#),
            (7, #"{"installation_id":"i1","platform":"android","push_token":"t","voip_token":null,"app_version":"1.0","device_name":"Moto","locale":"pt-BR","capabilities":{"notifications_enabled":true,"full_screen_intent_allowed":false,"ignoring_battery_optimizations":true,"manufacturer":"motorola","os_version":"14"}}"#),
            (8, #"{"visit_id":"v1"}"#),
            (9, #"{"unit_id":"u1","kind":"delivery","visitor_name":"Entregador","carrier":"iFood","location":{"lat":-23.5617,"lon":-46.656,"accuracy_m":12.5}}"#),
            (10, #"{"action":"authorize","via":"app"}"#),
            (11, #"{"device_id":"d1"}"#),
            (12, #"{"delivery_rule":"ask_then_concierge","ring_order":["u1","u2"],"ring_mode":"sequential","ring_step_seconds":20,"ring_window_seconds":60}"#),
            (13, #"{"visit_id":"v1","candidate":{"candidate":"candidate:1 1 udp 2122260223 192.168.1.2 54321 typ host","sdp_mid":"0","sdp_m_line_index":0,"username_fragment":"abcd"}}"#),
        ]
        for (selector, body) in bodies { try write("json-request", "type-\(selector).json", [selector] + Array(body.utf8)) }

        // realtime-message: frames, one per line; the first byte of each picks the sender
        // (0 the visitor, 1 the answering resident device, 2 a stranger, 3 the resident's other phone).
        let offer = #"{"type":"call.offer","data":{"visit_id":"visit-1","sdp":"v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n"}}"#
        let answer = #"{"type":"call.answer","data":{"visit_id":"visit-1","sdp":"v=0\r\n"}}"#
        let ice = #"{"type":"call.ice","data":{"visit_id":"visit-1","candidate":{"candidate":"candidate:1 1 udp 1 10.0.0.1 9 typ host","sdp_mid":"0","sdp_m_line_index":0}}}"#
        let hangup = #"{"type":"call.hangup","data":{"visit_id":"visit-1"}}"#
        try write("realtime-message", "call.txt", ["\u{0}" + offer, "\u{1}" + answer, "\u{0}" + ice, "\u{1}" + ice, "\u{1}" + hangup].joined(separator: "\n"))
        try write("realtime-message", "ping-and-unknown.txt", "\u{0}{\"type\":\"ping\"}\n\u{2}{\"type\":\"subscribe\"}\n\u{3}" + offer)
        try write("realtime-message", "reconnect.txt", ["\u{80}" + offer, "\u{41}" + answer, "\u{0}" + hangup].joined(separator: "\n"))
        // push-response: byte 0 picks the reader (0 APNs, 1 FCM, 2 Web Push, 3 FCM OAuth) and,
        // above bit 1, the DATA chunk size; byte 1 the body limit, 16 × (byte + 1); then the
        // :status line, `name:value` header lines, an empty line and the body
        // (fuzz/targets/PushResponseTarget.swift). Bodies as Apple and Google send them.
        func reply(_ reader: UInt8, _ status: String, _ headers: [String], _ body: String, chunk: UInt8 = 63, limit: UInt8 = 255) -> [UInt8] {
            [reader | chunk << 2, limit] + Array(([status] + headers + ["", body]).joined(separator: "\n").utf8)
        }
        let apnsID = "apns-id:7c5f9a1e-2b3d-4e6f-8a9b-0c1d2e3f4a5b"
        try write("push-response", "apns-200.txt", reply(0, "200", [apnsID], ""))
        try write("push-response", "apns-410-unregistered.txt",
                  reply(0, "410", [apnsID, "content-type:application/json"], #"{"reason":"Unregistered","timestamp":1764680000000}"#))
        try write("push-response", "apns-400-bad-device-token.txt", reply(0, "400", [apnsID], #"{"reason":"BadDeviceToken"}"#))
        try write("push-response", "apns-403-expired-provider-token.txt", reply(0, "403", [apnsID], #"{"reason":"ExpiredProviderToken"}"#))
        try write("push-response", "apns-403-invalid-provider-token.txt", reply(0, "403", [apnsID], #"{"reason":"InvalidProviderToken"}"#))
        try write("push-response", "apns-429-retry-after.txt", reply(0, "429", [apnsID, "retry-after:120"], #"{"reason":"TooManyRequests"}"#))
        try write("push-response", "apns-503-http-date.txt",
                  reply(0, "503", ["retry-after:Wed, 02 Dec 2026 12:00:00 GMT"], #"{"reason":"ServiceUnavailable"}"#))
        try write("push-response", "apns-500-bad-device-token.txt", reply(0, "500", [], #"{"reason":"BadDeviceToken"}"#))
        try write("push-response", "apns-410-huge-timestamp.txt", reply(0, "410", [], #"{"reason":"Unregistered","timestamp":1e300}"#))
        try write("push-response", "apns-body-over-limit.txt",
                  reply(0, "400", [], #"{"reason":""# + String(repeating: "x", count: 80) + #""}"#, chunk: 7, limit: 3))
        try write("push-response", "fcm-200.txt", reply(1, "200", [], #"{"name":"projects/portaria-demo/messages/0:1764680000000000%31bd1c9631bd1c96"}"#))
        func fcmError(_ code: Int, _ status: String, _ errorCode: String) -> String {
            #"{"error":{"code":\#(code),"message":"Requested entity was not found.","status":"\#(status)","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}]}}"#
        }
        try write("push-response", "fcm-404-unregistered.txt", reply(1, "404", [], fcmError(404, "NOT_FOUND", "UNREGISTERED")))
        try write("push-response", "fcm-400-invalid-argument.txt", reply(1, "400", [], fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")))
        try write("push-response", "fcm-429-quota.txt", reply(1, "429", ["retry-after:30"], fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")))
        try write("push-response", "fcm-503-unavailable.txt", reply(1, "503", ["retry-after:inf"], fcmError(503, "UNAVAILABLE", "UNAVAILABLE")))
        try write("push-response", "fcm-401-unauthenticated.txt",
                  reply(1, "401", [], #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#))
        try write("push-response", "webpush-201.txt", reply(2, "201", ["location:https://fcm.googleapis.com/fcm/send/abc"], ""))
        try write("push-response", "webpush-410.txt", reply(2, "410", [], "push subscription has unsubscribed or expired.\n"))
        try write("push-response", "webpush-413.txt", reply(2, "413", [], ""))
        try write("push-response", "webpush-429.txt", reply(2, "429", ["retry-after:99999999999999999999"], ""))
        try write("push-response", "oauth-grant.txt",
                  reply(3, "200", ["content-type:application/json; charset=utf-8"],
                         #"{"access_token":"ya29.c.b0Aaekm1KexampleTOKEN-_~+/","expires_in":3599,"token_type":"Bearer"}"#))
        try write("push-response", "oauth-negative-lifetime.txt", reply(3, "200", [], #"{"access_token":"ya29.x","expires_in":-5}"#))
        try write("push-response", "oauth-invalid-grant.txt",
                  reply(3, "400", [], #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#))
        print("make-seeds: wrote \(written) seeds under \(root)")
    }
}
