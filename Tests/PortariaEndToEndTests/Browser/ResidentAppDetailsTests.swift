import Foundation
import PortariaTestSupport
import Testing

/// What a keyboard user, a resident on a bad connection and a visitor at the gate meet in
/// the web pages, in headless Chromium against the real `portaria serve --demo`: focus that
/// stays where the person is, an app that opens offline in pt-BR, sentences styled for
/// what they are, and the gate page's outcome never contradicted.
@Suite("Resident app and gate page details in Chromium", .serialized, .requires(.chromium))
struct ResidentAppDetailsTests {
    let app = ResidentAppBrowserTests()
    let defects = ResidentAppDefectTests()

    /// WCAG's contrast ratio of two `rgb(…)` colours, computed in the page.
    static let contrast = """
        const lum = (css) => { const [r, g, b] = css.match(/[0-9.]+/g).slice(0, 3).map(Number).map((v) => v / 255)
          .map((c) => c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4)); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
        const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
        """

    @Test("Focus goes to the first heading after login and stays on the decided visit's result; the loser's sentence is not an error; the focus ring has ≥ 3:1 contrast")
    func focusAndStyles() async throws {
        try await TestServer.with(["--demo"]) { server in
            let mine = try await app.ring(server, name: "Visitante Foco")
            let lost = try await app.ring(server, name: "Visitante Perdido")
            try await WebDriver.with { browser in
                try await defects.loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: mine)
                #expect(try await browser.execute("return document.activeElement.id") as? String == "title", "focus after login")

                // The keyboard reaches Autorizar and presses it.
                try await browser.execute("document.querySelector(arguments[0]).focus()", ["li.visit[data-id='\(mine)'] button[data-action=authorize]"])
                try await browser.command("POST", "/actions", ["actions": [["type": "key", "id": "keyboard", "actions": [
                    ["type": "keyDown", "value": "\u{E007}"], ["type": "keyUp", "value": "\u{E007}"]]]]])
                try await browser.waitForText("li.visit[data-id='\(mine)'] .message", containing: "Visita autorizada")
                let focus = try await browser.execute("""
                    const e = document.activeElement;
                    return { tag: e.tagName, inItem: !!e.closest(arguments[0]), text: e.textContent };
                    """, ["li.visit[data-id='\(mine)']"]) as? [String: Any] ?? [:]
                #expect(focus["inItem"] as? Bool == true, "focus left the decided visit: \(focus)")

                // The ring drawn by :focus-visible stands out from the page (≥ 3:1).
                try await browser.command("POST", "/actions", ["actions": [["type": "key", "id": "keyboard", "actions": [
                    ["type": "keyDown", "value": "\u{E004}"], ["type": "keyUp", "value": "\u{E004}"]]]]])
                let ring = try await browser.execute(Self.contrast + """
                    const e = document.activeElement;
                    const style = getComputedStyle(e);
                    return { tag: e.tagName, visible: e.matches(':focus-visible'), outline: style.outlineStyle,
                             ratio: ratio(style.outlineColor, 'rgb(255, 255, 255)') };
                    """) as? [String: Any] ?? [:]
                #expect(ring["visible"] as? Bool == true && ring["outline"] as? String == "solid", "\(ring)")
                #expect((ring["ratio"] as? Double ?? 0) >= 3, "focus ring contrast: \(ring)")

                // João was first: Maria's sentence is news, in the ink colour, not the error red.
                // (Her screen has not caught up yet: the item keeps its buttons.)
                try await defects.holdStill(browser, lost)
                try await app.joaoDenies(server, lost)
                try await browser.click(css: "li.visit[data-id='\(lost)'] button[data-action=authorize]")
                try await browser.waitForText("li.visit[data-id='\(lost)'] .message", containing: "já negou")
                let colour = try await browser.execute("return getComputedStyle(document.querySelector(arguments[0])).color",
                                                       ["li.visit[data-id='\(lost)'] .message"]) as? String
                #expect(colour == "rgb(17, 17, 17)", "the loser's sentence is styled as an error: \(String(describing: colour))")
            }
        }
    }

    @Test("The timeline says what was decided, “Localização desconhecida” is not bold, and the settings' radios are ≥ 24 px")
    func detailAndSettings() async throws {
        try await TestServer.with(["--demo"]) { server in
            let visit = try await app.ring(server, name: "Visitante Linha")
            try await app.joaoDenies(server, visit)
            try await WebDriver.with { browser in
                try await defects.loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: nil)
                try await ResidentAppScreensTests.homeSettled(browser)
                try await browser.click(css: "li.visit[data-id='\(visit)'] button.details")
                try await browser.waitFor("the timeline's resolution", within: .seconds(30)) {
                    try await browser.execute("return !!document.querySelector('#detail-attempts li[data-kind=resolution]')") as? Bool == true
                }
                let line = try await browser.visibleText("#detail-attempts li[data-kind=resolution]") ?? ""
                #expect(line.hasSuffix("João negou"), "\(line)")
                let location = try await browser.execute("""
                    const e = document.getElementById('detail-location');
                    return { text: e.textContent, weight: Number(getComputedStyle(e).fontWeight) };
                    """) as? [String: Any] ?? [:]
                #expect(location["text"] as? String == "Localização desconhecida", "\(location)")
                #expect((location["weight"] as? Int ?? 700) <= 400, "\(location)")

                try await browser.click(css: "#detail-back")
                try await browser.click(css: "#open-settings")
                try await browser.waitFor("the unit settings") {
                    try await browser.execute("return !!document.querySelector('form.unit-settings input[type=radio]')") as? Bool == true
                }
                let smallest = try await browser.execute("""
                    return Math.min(...[...document.querySelectorAll('form.unit-settings input[type=radio]')]
                      .map((r) => Math.min(r.getBoundingClientRect().width, r.getBoundingClientRect().height)));
                    """) as? Double ?? 0
                #expect(smallest >= 24, "a radio is \(smallest) px")
            }
        }
    }

    @Test("An administrator who logs into /app/ is pointed to /admin/")
    func adminIsPointedToThePanel() async throws {
        try await TestServer.with(["--demo"]) { server in
            try await WebDriver.with { browser in
                try await browser.navigate("http://127.0.0.1:\(server.port)/app/")
                try await browser.type(try await browser.find(css: "#username"), "admin")
                try await browser.type(try await browser.find(css: "#password"), "demo1234")
                try await browser.click(css: "#login")
                let message = try await browser.waitForText("#login-error", containing: "moradores")
                #expect(message.contains("/admin/"), "\(message)")
                #expect(try await browser.execute("return document.querySelector('#login-error a')?.getAttribute('href')") as? String == "/admin/")
            }
        }
    }

    @Test("Reloaded with the server out of reach, the installed app opens from its service worker in pt-BR")
    func offlineShell() async throws {
        try await TestServer.with(["--demo"]) { server in
            let proxy = try FaultyProxy(upstreamPort: server.port)
            try await WebDriver.with { browser in
                try await browser.navigate("\(proxy.url)/app/")
                try await browser.waitFor("the service worker in control", within: .seconds(30)) {
                    try await browser.executeAsync("""
                        const done = arguments[arguments.length - 1];
                        navigator.serviceWorker.ready.then(() => caches.keys()).then((keys) => Promise.all(keys.map((k) => caches.open(k).then((c) => c.keys()))))
                          .then((lists) => done(!!navigator.serviceWorker.controller && lists.flat().some((r) => r.url.endsWith('/app/app.js'))))
                          .catch(() => done(false));
                        """) as? Bool == true
                }
                proxy.stop()
                try await browser.navigate("\(proxy.url)/app/")
                try await browser.waitFor("the app's login, offline") {
                    try await browser.execute("return document.documentElement.lang === 'pt-BR' && !!document.getElementById('username')") as? Bool == true
                }
                #expect(try await browser.visibleText("#title") == "Entrar")
            }
        }
    }

    @Test("A visitor's Cancelar that lands after the decision leaves “Autorizado — pode entrar” alone, with no red line under it")
    func gateCancelAfterDecision() async throws {
        try await TestServer.with(["--demo"]) { server in
            try await WebDriver.with { browser in
                try await browser.navigate("http://127.0.0.1:\(server.port)/gate/demo-gate")
                try await browser.waitFor("the unit list") {
                    try await browser.execute("return document.querySelectorAll('#unit option').length") as? Int == 4
                }
                try await browser.click(try await browser.find(xpath: "//select[@id='unit']/option[text()='A-101']"))
                try await browser.type(try await browser.find(css: "#name"), "Visitante Arrependido")
                try await browser.click(css: "#ring")
                try await browser.waitForText("#visit-state", containing: "Chamando")
                let maria = try await RealtimeTests.login(server, "maria")
                let headers = [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)]
                let list = try await server.request("GET", "/v1/visits", headers: headers).json()
                let visit = try #require((list["visits"] as? [[String: Any]])?.first { $0["visitor_name"] as? String == "Visitante Arrependido" }?["id"] as? String)
                let resolved = try await server.request("POST", "/v1/visits/\(visit)/resolve", headers: headers + [
                    ("Content-Type", "application/json"), ("Idempotency-Key", UUID().uuidString)], body: Array(#"{"action":"authorize"}"#.utf8))
                try #require(resolved.status == 200, "\(resolved.text)")
                try await browser.waitForText("#visit-state", containing: "Autorizado — pode entrar")
                // The visitor's finger was already on Cancelar as the screen changed.
                try await browser.execute("const b = document.getElementById('visit-cancel'); b.hidden = false; b.click();")
                try await browser.waitFor("the cancel's answer") {
                    try await browser.execute("return !document.getElementById('visit-cancel').disabled") as? Bool == true
                }
                #expect(try await browser.visibleText("#visit-state") == "Autorizado — pode entrar")
                let error = try await browser.visibleText("#visit-error")
                #expect(error == nil, "a red line under the outcome: \(error ?? "")")
            }
        }
    }

    @Test("On a Xiaomi phone, Configurações shows Xiaomi's steps to keep its power saver from silencing the browser")
    func batteryStepsForTheMaker() async throws {
        try await TestServer.with(["--demo"]) { server in
            try await WebDriver.with { browser in
                try await browser.cdp("Emulation.setUserAgentOverride", ["userAgent":
                    "Mozilla/5.0 (Linux; Android 13; Redmi Note 12) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36"])
                try await defects.loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: nil)
                try await ResidentAppScreensTests.homeSettled(browser)
                try await browser.click(css: "#open-settings")
                let intro = try await browser.waitForText("#battery-intro", containing: "Xiaomi")
                #expect(intro.contains("Xiaomi"), "\(intro)")
                let steps = try await browser.execute("return [...document.querySelectorAll('#battery-steps li')].map((li) => li.textContent)") as? [String] ?? []
                #expect(steps.contains("Economia de bateria → Sem restrições."), "\(steps)")
                try await browser.click(css: "#battery-done")
                try await browser.waitForText("#battery-state", containing: "já liberou")
                // What the device registration reports (`capabilities.manufacturer`, `os_version`)
                // for this phone and for other makers' user agents.
                let seen = try await browser.executeAsync("""
                    const done = arguments[arguments.length - 1];
                    import('/shared/device.js').then(async (m) => {
                      const here = await m.currentDevice();
                      const ua = (model) => `Mozilla/5.0 (Linux; Android 14; ${model}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36`;
                      done([`${here.platform}/${here.maker}/${here.osVersion}`,
                            ...['SM-S911B', 'moto g(60)', 'ELE-L29', 'Pixel 8'].map((model) => m.describeDevice(ua(model)).maker),
                            m.describeDevice('Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1').osVersion]);
                    }).catch((e) => done([String(e)]));
                    """) as? [String] ?? []
                #expect(seen == ["android/xiaomi/Android 13", "samsung", "motorola", "huawei", "", "iOS 17.4"], "\(seen)")
            }
        }
    }
}
