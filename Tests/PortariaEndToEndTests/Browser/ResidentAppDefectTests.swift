import Foundation
import PortariaCore
import PortariaTestSupport
import Testing

/// Four ways `/app/` could mislead a resident, each in headless Chromium against the real
/// `portaria serve --demo`: times in the browser's zone instead of the condominium's, a
/// logout that drops the tap, a final 409 retried and shown in English, and a sentence
/// built from `resolved_by.name` that ignores `via`.
@Suite("Resident web app defects in Chromium", .serialized, .requires(.chromium))
struct ResidentAppDefectTests {
    let app = ResidentAppBrowserTests()

    /// Logs Maria into Residencial Demo at `base` and waits for `visit`'s Autorizar button.
    func loginAsMaria(_ browser: WebDriver, base: String, waitingFor visit: String?) async throws {
        try await browser.navigate("\(base)/app/")
        try await browser.type(try await browser.find(css: "#username"), "maria")
        try await browser.type(try await browser.find(css: "#password"), "demo1234")
        try await browser.click(css: "#login")
        try await browser.waitFor("the company choice") { try await browser.visibleText("#company") != nil }
        try await browser.click(try await browser.find(xpath: "//select[@id='company']/option[text()='Residencial Demo']"))
        try await browser.click(css: "#login")
        try await browser.waitForText("#title", containing: "Residencial Demo")
        if let visit { try await waitForButtons(browser, visit) }
    }

    func waitForButtons(_ browser: WebDriver, _ visit: String) async throws {
        try await browser.waitFor("the visit's Autorizar button", within: .seconds(30)) {
            try await browser.execute("return !!document.querySelector(arguments[0])",
                                      ["li.visit[data-id='\(visit)'] button[data-action=authorize]"]) as? Bool == true
        }
    }

    /// Keeps the visit's item as it is on screen (as if Maria's phone had not caught up yet).
    func holdStill(_ browser: WebDriver, _ visit: String) async throws {
        try await browser.execute("document.querySelector(arguments[0]).dataset.busy = '1'", ["li.visit[data-id='\(visit)']"])
    }

    /// `HH:mm` of `iso` in São Paulo, the demo condominium's zone.
    func saoPaulo(_ iso: String) throws -> String {
        let date = try #require(Timestamp.parse(iso), "not a timestamp: \(iso)")
        return ResolutionText.clock(date, timeZone: try #require(TimeZone(identifier: "America/Sao_Paulo")))
    }

    func visit(_ server: TestServer, _ id: String) async throws -> [String: Any] {
        let maria = try await RealtimeTests.login(server, "maria")
        return try await server.request("GET", "/v1/visits/\(id)", headers: [
            ("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID),
        ]).json()
    }

    @Test("Times are the condominium's (São Paulo), not the browser's zone (Tokyo here)")
    func timesInTheCondominiumZone() async throws {
        try await TestServer.with(["--demo"]) { server in
            let id = try await app.ring(server, name: "Visitante Fuso")
            let created = try #require(try await visit(server, id)["created_at"] as? String)
            let expected = try saoPaulo(created)
            try await WebDriver.with { browser in
                // Twelve hours from São Paulo: no clock of the two can be mistaken for the other.
                try await browser.cdp("Emulation.setTimezoneOverride", ["timezoneId": "Asia/Tokyo"])
                try await loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: id)
                let line = try await browser.waitForText("li.visit[data-id='\(id)']", containing: "A-101")
                #expect(line.contains("A-101 · \(expected)"), "expected \(expected) (São Paulo) in: \(line)")
            }
        }
    }

    @Test("An expired access token is refreshed and the tap sent, never a logout that drops it")
    func expiredTokenRefreshesAndSends() async throws {
        try await TestServer.with(["--demo"]) { server in
            let id = try await app.ring(server, name: "Visitante Sessão")
            try await WebDriver.with { browser in
                try await loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: id)
                // The access token goes bad wherever the app keeps it (the signature no
                // longer matches: the server answers 401, exactly as for an expired one).
                let spoil = """
                    const done = arguments[arguments.length - 1];
                    for (const store of [sessionStorage, localStorage]) {
                      for (const key of Object.keys(store)) {
                        try { const s = JSON.parse(store.getItem(key)); if (s && s.token) { s.token = s.token.slice(0, -4) + 'AAAA'; store.setItem(key, JSON.stringify(s)); } } catch {}
                      }
                    }
                    const open = indexedDB.open('portaria');
                    open.onerror = () => done('no database');
                    open.onsuccess = () => {
                      const db = open.result;
                      if (!db.objectStoreNames.contains('kv')) { db.close(); return done('no session store'); }
                      const tx = db.transaction('kv', 'readwrite');
                      const kv = tx.objectStore('kv');
                      const get = kv.get('session');
                      get.onsuccess = () => { const s = get.result; if (s) { s.token = s.token.slice(0, -4) + 'AAAA'; kv.put(s, 'session'); } };
                      tx.oncomplete = () => { db.close(); done('spoiled'); };
                    };
                    """
                // After a reload (the tab left open past 15 minutes and reopened) …
                _ = try await browser.executeAsync(spoil)
                try await browser.navigate("http://127.0.0.1:\(server.port)/app/")
                try await waitForButtons(browser, id)
                #expect(try await browser.visibleText("#view-login") == nil, "the reload logged Maria out")
                // … and while the screen is open, right before the tap.
                _ = try await browser.executeAsync(spoil)
                try await browser.click(css: "li.visit[data-id='\(id)'] button[data-action=authorize]")
                try await browser.waitForText("li.visit[data-id='\(id)'] .message", containing: "Visita autorizada")
                #expect(try await browser.visibleText("#view-login") == nil, "the tap logged Maria out")
                let resolution = try #require(try await visit(server, id)["resolution"] as? [String: Any])
                #expect(resolution["action"] as? String == "authorize")
                #expect((resolution["by"] as? [String: Any])?["name"] as? String == "Maria Souza")
            }
        }
    }

    @Test("A visit the visitor cancelled reads “O visitante desistiu às HH:MM”, sent once, never retried")
    func cancelledVisitIsSaidInPortugueseOnce() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (id, visitorToken) = try await app.ringWithToken(server, name: "Visitante Desiste")
            // Every request of the browser goes through this proxy, which counts them.
            let proxy = try FaultyProxy(upstreamPort: server.port)
            defer { proxy.stop() }
            try await WebDriver.with { browser in
                try await loginAsMaria(browser, base: proxy.url, waitingFor: id)
                try await holdStill(browser, id)
                let cancelled = try await server.request("POST", "/v1/visitor/visit/cancel",
                                                         headers: [("Authorization", "Bearer \(visitorToken)")])
                try #require(cancelled.status == 200, "\(cancelled.status) \(cancelled.text)")
                let at = try saoPaulo(try #require(try await visit(server, id)["updated_at"] as? String))
                try await browser.click(css: "li.visit[data-id='\(id)'] button[data-action=authorize]")
                let message = try await browser.waitForText("li.visit[data-id='\(id)'] .message", containing: "desistiu")
                #expect(message == "O visitante desistiu às \(at)", "\(message)")
                #expect(!message.contains("cannot") && !message.contains("Toque de novo"), "\(message)")
            }
            let resolves = proxy.seen("/resolve").filter { $0.method == "POST" }
            #expect(resolves.count == 1, "a closed visit was asked \(resolves.count) times")
        }
    }

    @Test("A delivery the unit's rule left at the concierge reads as automatic (the server's message and via)")
    func automaticResolutionUsesTheServersSentence() async throws {
        try await TestServer.with(["--demo"]) { server in
            let maria = try await RealtimeTests.login(server, "maria")
            let headers = [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)]
            let gate = try await server.request("GET", "/v1/gates/demo-gate")
            let units = try #require(try gate.json()["units"] as? [[String: Any]])
            let unit = try #require(units.first { $0["label"] as? String == "A-101" }?["id"] as? String)
            let current = try #require(try await server.request("GET", "/v1/units/\(unit)/settings", headers: headers).json()["settings"] as? [String: Any])
            // Ask, and after 20 s without an answer leave the parcel at the concierge.
            var settings = current
            settings["delivery_rule"] = "ask_then_concierge"
            settings["ring_step_seconds"] = 5
            settings["ring_window_seconds"] = 20
            let put = try await server.request("PUT", "/v1/units/\(unit)/settings", headers: headers + [("Content-Type", "application/json")],
                                               body: Array(try JSONSerialization.data(withJSONObject: settings)))
            try #require(put.status == 200, "\(put.status) \(put.text)")

            try await WebDriver.with { browser in
                // Logged in before the courier rings: the rule's 20 s run from the ring, and a
                // login on a loaded machine (under AddressSanitizer) took longer than that.
                try await loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: nil)
                let id = try await app.ring(server, name: "Entregador", kind: "delivery")
                try await waitForButtons(browser, id)
                try await holdStill(browser, id)
                var resolution: [String: Any] = [:]
                try await browser.waitFor("the delivery rule to resolve the parcel", within: .seconds(60), every: .milliseconds(500)) {
                    resolution = try await visit(server, id)["resolution"] as? [String: Any] ?? [:]
                    return !resolution.isEmpty
                }
                #expect(resolution["via"] as? String == "auto")
                let at = try saoPaulo(try #require(resolution["at"] as? String))
                try await browser.click(css: "li.visit[data-id='\(id)'] button[data-action=authorize]")
                let message = try await browser.waitForText("li.visit[data-id='\(id)'] .message", containing: "portaria")
                #expect(message == "Deixado na portaria automaticamente às \(at)", "\(message)")
            }
        }
    }

    @Test("An operator who logs in is told the app is for residents, and never sees the company's visits")
    func operatorIsTurnedAway() async throws {
        try await TestServer.with(["--demo"]) { server in
            _ = try await app.ring(server, name: "Visitante Qualquer")
            try await WebDriver.with { browser in
                try await browser.navigate("http://127.0.0.1:\(server.port)/app/")
                try await browser.type(try await browser.find(css: "#username"), "portaria")
                try await browser.type(try await browser.find(css: "#password"), "demo1234")
                try await browser.click(css: "#login")
                let message = try await browser.waitForText("#login-error", containing: "moradores")
                #expect(message.hasPrefix("Este app é para moradores"), "\(message)")
                #expect(try await browser.visibleText("#view-home") == nil)
                #expect(try await browser.execute("return document.querySelectorAll('li.visit').length") as? Int == 0)
            }
        }
    }
}
