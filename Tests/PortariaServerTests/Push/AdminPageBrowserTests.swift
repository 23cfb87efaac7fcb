import Foundation
import PortariaCore
@testable import PortariaServer
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Drives Debian's Chromium (headless, through chromedriver's WebDriver HTTP API) against
/// the admin page served by a real HTTP server in this process.
@Suite("Admin push-health page in Chromium", .serialized)
struct AdminPageBrowserTests {
    static let available = FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")

    /// A minimal W3C WebDriver client over libcurl.
    struct WebDriver {
        let base: String
        let http = OutboundHTTPClient()
        var session = ""

        func call(_ method: String, _ path: String, _ body: JSONValue? = nil) async throws -> JSONValue {
            let response = try await http.send(OutboundRequest(method: method, url: base + path,
                                                               headers: [("Content-Type", "application/json")],
                                                               body: body.map { Array($0.jsonText.utf8) } ?? [], timeout: 60))
            let json = try JSONCoding.decoder().decode(JSONValue.self, from: Data(response.body))
            guard response.status == 200 else { throw FixtureError("WebDriver \(method) \(path): \(response.status) \(json)") }
            return json["value"] ?? .null
        }

        func element(_ css: String) async throws -> String {
            let value = try await call("POST", "/session/\(session)/element", .object(["using": "css selector", "value": .string(css)]))
            guard case .object(let object) = value, let id = object.values.first?.stringValue else { throw FixtureError("no element \(css)") }
            return id
        }

        func script(_ source: String) async throws -> JSONValue {
            try await call("POST", "/session/\(session)/execute/sync", .object(["script": .string(source), "args": .array([])]))
        }
    }

    @Test("admin logs in, sees failing devices first with pt-BR labels and risk flags", .enabled(if: available))
    func failingFirst() async throws {
        try await PushFixture.with(.sqlite) { fixture in
            // Devices: Maria's iPhone whose VoIP token APNs refused, João's Xiaomi with battery optimisation on.
            let maria = try await fixture.register("maria")
            try await fixture.register("joao", platform: "android", pushToken: "fcm-joao",
                                       capabilities: .init(notificationsEnabled: true, fullScreenIntentAllowed: true,
                                                           ignoringBatteryOptimizations: false, manufacturer: "Xiaomi"))
            try await fixture.database.write { db in
                try db.execute("UPDATE devices SET voip_token_status = 'unregistered', consecutive_failures = 1, last_error = 'Unregistered' WHERE id = ?",
                               .text(maria.id))
            }
            let router = Router()
            AuthRoutes(auth: fixture.auth.auth, authenticator: fixture.auth.authenticator).register(on: router)
            PushRoutes(receipts: PushReceipts(database: fixture.database), authenticator: fixture.auth.authenticator).register(on: router)
            StaticFiles(root: Repository.root + "/Web").register(on: router, section: "admin")
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            let server = HTTPServer(router: router, configuration: configuration)
            try server.start()

            let driverPort = Int.random(in: 30_000...60_000)
            let driver = Process()
            driver.executableURL = URL(fileURLWithPath: "/usr/bin/chromedriver")
            driver.arguments = ["--port=\(driverPort)", "--allowed-ips=127.0.0.1"]
            driver.standardOutput = FileHandle.nullDevice
            driver.standardError = FileHandle.nullDevice
            try driver.run()
            defer {
                kill(driver.processIdentifier, SIGKILL)
            }
            var webDriver = WebDriver(base: "http://127.0.0.1:\(driverPort)")
            for _ in 0..<100 {
                if (try? await webDriver.call("GET", "/status")) != nil { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let session = try await webDriver.call("POST", "/session", .object(["capabilities": .object(["alwaysMatch": .object([
                "browserName": "chrome",
                "goog:chromeOptions": .object(["binary": "/usr/bin/chromium",
                                               "args": .array(["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])]),
            ])])]))
            webDriver.session = try #require(session["sessionId"]?.stringValue)
            do {
                _ = try await webDriver.call("POST", "/session/\(webDriver.session)/url", .object(["url": .string("http://127.0.0.1:\(server.port)/admin/")]))
                let title = try await webDriver.call("GET", "/session/\(webDriver.session)/title")
                #expect(title.stringValue == "Portaria — Saúde das notificações")
                _ = try await webDriver.call("POST", "/session/\(webDriver.session)/element/\(try await webDriver.element("#username"))/value", .object(["text": "admin"]))
                _ = try await webDriver.call("POST", "/session/\(webDriver.session)/element/\(try await webDriver.element("#password"))/value", .object(["text": "demo1234"]))
                _ = try await webDriver.call("POST", "/session/\(webDriver.session)/element/\(try await webDriver.element("#login-button"))/click", .object([:]))
                var rows: [JSONValue] = []
                for _ in 0..<100 {
                    if case .array(let found) = try await webDriver.script(
                        "return [...document.querySelectorAll('#devices tbody tr')].map(r => ({cls: r.className, text: r.innerText}))"),
                       found.count == 2 {
                        rows = found
                        break
                    }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(rows.count == 2)
                let first = rows.first?["text"]?.stringValue ?? ""
                #expect(rows.first?["cls"]?.stringValue == "failing")
                #expect(first.contains("Falhando") && first.contains("Maria Souza") && first.contains("Token recusado pelo provedor"))
                let second = rows.last?["text"]?.stringValue ?? ""
                #expect(second.contains("João Souza") && second.contains("Otimização de bateria ativa"))
                let summary = try await webDriver.script("return document.querySelector('#summary').innerText")
                #expect(summary.stringValue?.contains("Falhando") == true)
            } catch {
                _ = try? await webDriver.call("DELETE", "/session/\(webDriver.session)")
                await server.shutdown()
                throw error
            }
            _ = try? await webDriver.call("DELETE", "/session/\(webDriver.session)")
            await server.shutdown()
        }
    }
}
