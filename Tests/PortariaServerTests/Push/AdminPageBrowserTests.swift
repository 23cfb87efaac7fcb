import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Drives Debian's Chromium (headless, through the shared WebDriver client of
/// PortariaTestSupport) against the admin page served by a real HTTP server in this process.
@Suite("Admin push-health page in Chromium", .serialized)
struct AdminPageBrowserTests {
    @Test("admin logs in, sees failing devices first with pt-BR labels and risk flags", .requires(.chromium))
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
            // The page and the shared modules it imports (the API client).
            StaticFiles(root: Repository.root + "/Web").register(on: router, section: "admin")
            StaticFiles(root: Repository.root + "/Web").register(on: router, section: "shared")
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            let server = HTTPServer(router: router, configuration: configuration)
            try server.start()

            do {
                try await WebDriver.with { browser in
                    try await browser.navigate("http://127.0.0.1:\(server.port)/admin/")
                    #expect(try await browser.execute("return document.title") as? String == "Portaria — Saúde das notificações")
                    try await browser.type(try await browser.find(css: "#username"), "admin")
                    try await browser.type(try await browser.find(css: "#password"), "demo1234")
                    try await browser.click(css: "#login-button")
                    var rows: [[String: Any]] = []
                    try await browser.waitFor("two device rows") {
                        rows = try await browser.execute(
                            "return [...document.querySelectorAll('#devices tbody tr')].map(r => ({cls: r.className, text: r.innerText}))"
                        ) as? [[String: Any]] ?? []
                        return rows.count == 2
                    }
                    let first = rows.first?["text"] as? String ?? ""
                    #expect(rows.first?["cls"] as? String == "failing")
                    #expect(first.contains("Falhando") && first.contains("Maria Souza") && first.contains("Token recusado pelo provedor"))
                    let second = rows.last?["text"] as? String ?? ""
                    #expect(second.contains("João Souza") && second.contains("Otimização de bateria ativa"))
                    let summary = try await browser.execute("return document.querySelector('#summary').innerText") as? String
                    #expect(summary?.contains("Falhando") == true)
                }
            } catch {
                await server.shutdown()
                throw error
            }
            await server.shutdown()
        }
    }
}
