import Foundation
import PortariaTestSupport
import Testing

/// axe-core 4.12 (as the PyPI package axe-playwright-python bundles it; `scripts/bootstrap`
/// installs it into .venv) run inside Chromium on the pages people use: the gate page,
/// the resident app's login and home, and the admin page. No serious or critical
/// violation is allowed.
@Suite("Accessibility (axe-core) in Chromium", .serialized, .requires(.chromium))
struct AccessibilityBrowserTests {
    /// axe.min.js from the venv, found by glob (the Python version is part of the path).
    static func axeSource() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let lib = root.appendingPathComponent(".venv/lib")
        let pythons = (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []
        for python in pythons.sorted() {
            let path = lib.appendingPathComponent("\(python)/site-packages/axe_playwright_python/axe.min.js").path
            if let text = try? String(contentsOfFile: path, encoding: .utf8) { return text }
        }
        throw HarnessError("axe-core is missing from .venv: run scripts/bootstrap (scripts/testservers/requirements-nodeps.txt)")
    }

    /// The serious and critical violations on the page as it is now: "rule: target …".
    func violations(_ browser: WebDriver, axe: String, page: String) async throws -> [String] {
        try await browser.execute(axe + "\nwindow.axe = axe; return true;")
        let result = try await browser.executeAsync("""
            const done = arguments[arguments.length - 1];
            window.axe.run(document, { resultTypes: ['violations'] }).then((r) => done(r.violations
              .filter((v) => v.impact === 'serious' || v.impact === 'critical')
              .map((v) => v.id + ' (' + v.impact + '): ' + v.nodes.map((n) => n.target.join(' ') + ' — ' + (n.failureSummary || '')).join(' | '))))
              .catch((e) => done(['axe failed: ' + e]));
            """)
        return result as? [String] ?? ["axe gave no answer on \(page)"]
    }

    @Test("Gate page, resident app (login, home) and admin page: no serious or critical axe violation")
    func noSeriousViolations() async throws {
        let axe = try Self.axeSource()
        try await TestServer.with(["--demo"]) { server in
            let visit = try await ResidentAppBrowserTests().ring(server, name: "Visitante Acessível")
            let base = "http://127.0.0.1:\(server.port)"
            try await WebDriver.with { browser in
                // axe is injected as a script; the pages' CSP would refuse it.
                try await browser.cdp("Page.setBypassCSP", ["enabled": true])
                var found: [String: [String]] = [:]

                try await browser.navigate("\(base)/gate/demo-gate")
                try await browser.waitFor("the gate form") { try await browser.visibleText("#unit") != nil }
                found["gate"] = try await violations(browser, axe: axe, page: "gate")

                try await browser.navigate("\(base)/app/")
                try await browser.waitFor("the login form") { try await browser.visibleText("#username") != nil }
                found["app-login"] = try await violations(browser, axe: axe, page: "app-login")
                await browser.screenshot("app-login")

                try await ResidentAppDefectTests().loginAsMaria(browser, base: base, waitingFor: visit)
                found["app-home"] = try await violations(browser, axe: axe, page: "app-home")
                // The colours come from the generated tokens: Autorizar is the tokens' green.
                let green = try await browser.execute(
                    "return getComputedStyle(document.querySelector('li.visit button[data-action=authorize]')).backgroundColor") as? String
                #expect(green == "rgb(10, 107, 45)", "\(String(describing: green))")

                try await browser.navigate("\(base)/admin/")
                try await browser.waitFor("the admin login") { try await browser.visibleText("#username") != nil }
                found["admin"] = try await violations(browser, axe: axe, page: "admin")
                await browser.screenshot("admin-login")

                // The check can fail: an image without a text alternative (critical) is reported.
                try await browser.execute("const i = document.createElement('img'); i.src = 'icon.png'; document.body.append(i);")
                let planted = try await violations(browser, axe: axe, page: "planted")
                #expect(planted.contains { $0.hasPrefix("image-alt (critical)") }, "axe did not see a planted violation: \(planted)")

                for (page, list) in found.sorted(by: { $0.key < $1.key }) {
                    #expect(list.isEmpty, "\(page): \(list.joined(separator: "\n"))")
                }
            }
        }
    }
    @Test("Resident app's SMS login, visit detail and settings: no serious or critical axe violation")
    func newScreensHaveNoSeriousViolations() async throws {
        let axe = try Self.axeSource()
        try await TestServer.with(["--demo"]) { server in
            let visit = try await ResidentAppBrowserTests().ring(server, name: "Visitante Acessível")
            let base = "http://127.0.0.1:\(server.port)"
            try await WebDriver.with { browser in
                try await browser.cdp("Page.setBypassCSP", ["enabled": true])
                var found: [String: [String]] = [:]

                try await browser.navigate("\(base)/app/")
                try await browser.click(css: "#login-mode")
                try await browser.type(try await browser.find(css: "#phone"), ResidentAppScreensTests.mariaPhone)
                try await browser.click(css: "#login")
                try await browser.waitFor("the code field") { try await browser.visibleText("#code") != nil }
                found["app-sms-code"] = try await violations(browser, axe: axe, page: "app-sms-code")
                await browser.screenshot("app-sms-code")

                try await ResidentAppDefectTests().loginAsMaria(browser, base: base, waitingFor: visit)
                try await ResidentAppScreensTests.homeSettled(browser)
                try await browser.click(css: "li.visit[data-id='\(visit)'] button.details")
                try await browser.waitFor("the timeline", within: .seconds(30)) {
                    try await browser.execute("return document.querySelectorAll('#detail-attempts li').length") as? Int ?? 0 > 0
                }
                found["app-detail"] = try await violations(browser, axe: axe, page: "app-detail")

                try await browser.click(css: "#detail-back")
                try await browser.click(css: "#open-settings")
                try await browser.waitFor("the settings") {
                    try await browser.execute("return !!document.querySelector('form.unit-settings') && document.querySelectorAll('#settings-notify').length === 1 && document.getElementById('settings-notify').textContent !== ''") as? Bool == true
                }
                found["app-settings"] = try await violations(browser, axe: axe, page: "app-settings")

                for (page, list) in found.sorted(by: { $0.key < $1.key }) {
                    #expect(list.isEmpty, "\(page): \(list.joined(separator: "\n"))")
                }
            }
        }
    }
}
