import Foundation
import PortariaTestSupport
import Testing

/// The minimal resident web client (`Web/app/`) in headless Chromium against the real
/// `portaria serve --demo`: log in, see the visits, resolve with one tap, and the
/// "Maria já autorizou" answer when someone else was first, and no tap on a visit that
/// has just moved under the finger — in Chromium and in WebKit (the iPhone's engine).
@Suite("Resident web client in Chromium", .serialized, .requires(.chromium))
struct ResidentAppBrowserTests {
    /// Rings A-101 from the demo gate as `name`; returns the visit id.
    func ring(_ server: TestServer, name: String, kind: String = "visit") async throws -> String {
        try await ringWithToken(server, name: name, kind: kind).id
    }

    /// João (A-101's other resident) denies `visit` through the API, as his phone would.
    func joaoDenies(_ server: TestServer, _ visit: String) async throws {
        let joao = try await RealtimeTests.login(server, "joao")
        let denied = try await server.request("POST", "/v1/visits/\(visit)/resolve", headers: [
            ("Authorization", "Bearer \(joao.token)"), ("X-Company-Id", joao.companyID),
            ("Content-Type", "application/json"), ("Idempotency-Key", UUID().uuidString),
        ], body: Array(#"{"action":"deny"}"#.utf8))
        #expect(denied.status == 200, "\(denied.text)")
    }

    /// Rings A-101 from the demo gate, from `location` when given (as the gate page sends
    /// it); returns the visit id and the visitor token.
    func ringWithToken(_ server: TestServer, name: String, kind: String = "visit",
                       location: (lat: Double, lon: Double, accuracy: Double)? = nil) async throws -> (id: String, token: String) {
        let gate = try await server.request("GET", "/v1/gates/demo-gate")
        let units = try #require(try gate.json()["units"] as? [[String: Any]])
        let unit = try #require(units.first { $0["label"] as? String == "A-101" }?["id"] as? String)
        let carrier = kind == "delivery" ? #","carrier":"Loggi""# : ""
        let place = location.map { #","location":{"lat":\#($0.lat),"lon":\#($0.lon),"accuracy_m":\#($0.accuracy)}"# } ?? ""
        let created = try await server.postJSON("/v1/gates/demo-gate/visits",
                                                #"{"unit_id":"\#(unit)","kind":"\#(kind)","visitor_name":"\#(name)"\#(carrier)\#(place)}"#)
        try #require(created.status == 201, "\(created.status) \(created.text)")
        let body = try created.json()
        return (try #require((body["visit"] as? [String: Any])?["id"] as? String), try #require(body["visitor_token"] as? String))
    }

    @Test("Maria logs in, authorizes with one tap, sees who was first on a visit João denied, and a tap as the list moves does nothing",
          arguments: BrowserEngine.underTest)
    func loginResolveAndAlreadyResolved(engine: BrowserEngine) async throws {
        try await TestServer.with(["--demo"]) { server in
            let first = try await ring(server, name: "Visitante Um")
            let second = try await ring(server, name: "Visitante Dois")
            try await WebDriver.with(engine) { browser in
                try await browser.navigate("http://\(engine.loopbackHost):\(server.port)/app/")
                try await browser.type(try await browser.find(css: "#username"), "maria")
                try await browser.type(try await browser.find(css: "#password"), "demo1234")
                try await browser.click(css: "#login")
                // Maria lives in two condominiums: she picks one.
                try await browser.waitFor("the company choice") { try await browser.visibleText("#company") != nil }
                try await browser.click(try await browser.find(xpath: "//select[@id='company']/option[text()='Residencial Demo']"))
                try await browser.click(css: "#login")
                try await browser.waitForText("#title", containing: "Residencial Demo")
                try await browser.waitFor("both visits with their buttons") {
                    try await browser.execute("return document.querySelectorAll('li.visit button[data-action=authorize]').length") as? Int == 2
                }
                if engine == .chromium { await browser.screenshot("app-home") }

                // One tap authorizes the first visit.
                try await browser.click(css: "li.visit[data-id='\(first)'] button[data-action=authorize]")
                try await browser.waitForText("li.visit[data-id='\(first)'] .message", containing: "Visita autorizada")
                let maria = try await RealtimeTests.login(server, "maria")
                let headers = [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)]
                let resolved = try await server.request("GET", "/v1/visits/\(first)", headers: headers).json()
                let resolution = try #require(resolved["resolution"] as? [String: Any])
                #expect(resolution["action"] as? String == "authorize")
                #expect((resolution["by"] as? [String: Any])?["name"] as? String == "Maria Souza")

                // João denies the second one from his phone while Maria's screen has not
                // caught up yet (held still here, as if she were offline for a moment).
                try await browser.execute("document.querySelector(arguments[0]).dataset.busy = '1'", ["li.visit[data-id='\(second)']"])
                // Maria's finger is on its way to "Autorizar": it lands the instant the list
                // moves the item (from "Tocando agora" to the history, where another item's
                // "Atender" was). That tap must do nothing, and say why (decision 0057).
                try await browser.execute("""
                    const id = arguments[0];
                    new MutationObserver((records, observer) => {
                      const item = document.querySelector(`#history li.visit[data-id="${id}"]`);
                      const button = item && item.querySelector('button[data-action=authorize]');
                      if (!button) return;
                      observer.disconnect();
                      const early = Number(item.dataset.settlesAt || 0) - performance.now();
                      button.click();
                      window.tapAfterMove = { early, disabled: button.disabled, message: item.querySelector('.message').textContent };
                    }).observe(document.getElementById('history'), { childList: true });
                    """, [second])
                try await joaoDenies(server, second)
                var tap: [String: Any] = [:]
                try await browser.waitFor("the tap that lands as the item moves to the history") {
                    tap = try await browser.execute("return window.tapAfterMove || null") as? [String: Any] ?? [:]
                    return !tap.isEmpty
                }
                #expect((tap["early"] as? Double ?? 0) > 0, "the tap came after the item settled: \(tap)")
                #expect(tap["message"] as? String == "A lista acabou de mudar. Confira a visita e toque de novo.", "\(tap)")
                #expect(tap["disabled"] as? Bool == false, "the tap started a resolve: \(tap)")
                // A deliberate tap once the item is still is taken (click waits for still).
                try await browser.click(css: "li.visit[data-id='\(second)'] button[data-action=authorize]")
                let message = try await browser.waitForText("li.visit[data-id='\(second)'] .message", containing: "já negou")
                #expect(message.hasPrefix("João já negou às "), "\(message)")
                if engine == .chromium { await browser.screenshot("app-already-resolved") }
            }
        }
    }
}
