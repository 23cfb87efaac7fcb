import Foundation
import PortariaTestSupport
import Testing

/// The administration panel (`/admin/`) in headless Chromium at phone size against the
/// real `portaria serve --demo`, the browser set to Tokyo: the condominium's clock, the
/// login card gone after login, a way out, a page that fits the phone, the product's look.
@Suite("Admin panel in Chromium", .serialized, .requires(.chromium))
struct AdminPanelBrowserTests {
    /// "02/12/2026, 19:19" for `date` in São Paulo, as pt-BR's short date and time.
    static func saoPaulo(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "America/Sao_Paulo")
        formatter.dateFormat = "dd/MM/yyyy, HH:mm"
        return formatter.string(from: date)
    }

    @Test("Logged in from Tokyo, the admin reads São Paulo times, no login card, a “Sair”, one phone-wide page in the product's colours, focus on the heading, axe-clean")
    func adminPanelAtPhoneSizeInTokyo() async throws {
        let axe = try AccessibilityBrowserTests.axeSource()
        try await TestServer.with(["--demo"]) { server in
            // Maria's browser on a Xiaomi, as the web app registers it: a row with a risk.
            let maria = try await RealtimeTests.login(server, "maria")
            let registered = try await server.request("POST", "/v1/devices", headers: [
                ("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID), ("Content-Type", "application/json"),
            ], body: Array("""
                {"installation_id":"android-maria-1","platform":"android","push_token":"fcm-token-maria-1","device_name":"Celular da Maria",
                 "capabilities":{"notifications_enabled":true,"ignoring_battery_optimizations":false,"manufacturer":"xiaomi","os_version":"Android 13"}}
                """.utf8))
            try #require(registered.status == 201, "\(registered.status) \(registered.text)")
            try await WebDriver.with { browser in
                try await browser.cdp("Emulation.setTimezoneOverride", ["timezoneId": "Asia/Tokyo"])
                try await browser.navigate("http://127.0.0.1:\(server.port)/admin/")
                try await browser.type(try await browser.find(css: "#username"), "admin")
                try await browser.type(try await browser.find(css: "#password"), "demo1234")
                let before = Date()
                try await browser.click(css: "#login-button")
                let updated = try await browser.waitForText("#generated", containing: "Atualizado em")
                let after = Date()
                let expected = Set([Self.saoPaulo(before), Self.saoPaulo(after)])
                #expect(expected.contains { updated == "Atualizado em \($0)" }, "expected one of \(expected) (São Paulo): \(updated)")
                try await browser.waitForText("#devices tbody", containing: "Otimização de bateria ativa")
                await browser.screenshot("admin-panel")

                // What a sighted admin sees now: the panel only.
                let shown = try await browser.execute("""
                    const box = (id) => document.getElementById(id).getBoundingClientRect();
                    return { login: box('login').height, logout: box('logout').height,
                             wide: document.documentElement.scrollWidth, width: window.innerWidth,
                             focus: document.activeElement.id,
                             header: getComputedStyle(document.querySelector('header')).backgroundColor };
                    """) as? [String: Any] ?? [:]
                #expect(shown["login"] as? Int == 0, "the login card is still on screen: \(shown)")
                #expect((shown["logout"] as? Int ?? 0) > 0, "no Sair: \(shown)")
                #expect((shown["wide"] as? Int ?? .max) <= (shown["width"] as? Int ?? 0), "wider than the phone: \(shown)")
                #expect(shown["focus"] as? String == "title", "focus after login: \(shown)")
                #expect(shown["header"] as? String == "rgb(11, 61, 145)", "not the product's brand colour: \(shown)")

                try await browser.cdp("Page.setBypassCSP", ["enabled": true])
                let problems = try await AccessibilityBrowserTests().violations(browser, axe: axe, page: "admin-panel")
                #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")

                try await browser.click(css: "#logout")
                try await browser.waitFor("the login card again") {
                    try await browser.execute("return document.getElementById('login').getBoundingClientRect().height > 0 && document.getElementById('panel').getBoundingClientRect().height === 0") as? Bool == true
                }
            }
        }
    }
}
