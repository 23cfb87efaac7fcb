import Foundation
import PortariaTestSupport
import Testing

/// The resident web app's other screens in headless Chromium against
/// the real `portaria serve --demo`: the SMS-code login with the company choice, the visit
/// detail (photo, where the visitor was, attempts timeline) and the settings (delivery
/// rule, ring order, devices, notification permission).
@Suite("Resident web app screens in Chromium", .serialized, .requires(.chromium))
struct ResidentAppScreensTests {
    static let mariaPhone = "+5511999990001"

    /// Signs in with the SMS code the demo server logs (its dev SMS sender), picking Residencial Demo.
    func smsLogin(_ browser: WebDriver, server: TestServer, wrongCodeFirst: Bool = false) async throws {
        try await browser.navigate("http://127.0.0.1:\(server.port)/app/")
        try await browser.click(css: "#login-mode")
        try await browser.waitFor("the phone field") { try await browser.visibleText("#phone") != nil }
        #expect(try await browser.visibleText("#username") == nil, "the password fields stay visible in SMS mode")
        try await browser.type(try await browser.find(css: "#phone"), Self.mariaPhone)
        try await browser.click(css: "#login")
        let sent = try await browser.waitForText("#code-sent", containing: "Enviamos um código por SMS para")
        #expect(sent.contains("•••••-0001"), "\(sent)")
        #expect(!sent.contains("99999"), "the whole number is read aloud: \(sent)")
        #expect(try await browser.execute("return document.activeElement.id") as? String == "code", "focus did not move to the code")
        #expect(try await browser.visibleText("#login") == "Confirmar código")
        let code = try await SecuritySuites.OTPAbuseTests.loggedCode(server, phone: Self.mariaPhone)
        if wrongCodeFirst {
            try await browser.type(try await browser.find(css: "#code"), code == "000000" ? "111111" : "000000")
            try await browser.click(css: "#login")
            try await browser.waitForText("#login-error", containing: "Código inválido ou expirado.")
            try await browser.execute("document.getElementById('code').value = ''")
        }
        try await browser.type(try await browser.find(css: "#code"), code)
        try await browser.click(css: "#login")
        // Maria lives in two condominiums: the same choice as after a password.
        try await browser.waitFor("the company choice") { try await browser.visibleText("#company") != nil }
        try await browser.click(try await browser.find(xpath: "//select[@id='company']/option[text()='Residencial Demo']"))
        try await browser.click(css: "#login")
        try await browser.waitForText("#title", containing: "Residencial Demo")
    }

    /// Waits for the home's last asynchronous block (the notification card, which pushes the
    /// lists down when it appears) so a click lands where the button was found.
    static func homeSettled(_ browser: WebDriver) async throws {
        try await browser.waitFor("the notification card", within: .seconds(30)) {
            !(try await browser.visibleText("#notify-state") ?? "").isEmpty
        }
    }

    @Test("SMS code login: the masked number, a wrong code in pt-BR, the logged code and the company choice reach the home")
    func smsCodeLogin() async throws {
        try await TestServer.with(["--demo"]) { server in
            let visit = try await ResidentAppBrowserTests().ring(server, name: "Visitante SMS")
            try await WebDriver.with { browser in
                try await smsLogin(browser, server: server, wrongCodeFirst: true)
                try await ResidentAppDefectTests().waitForButtons(browser, visit)
                try await browser.waitForText("#who", containing: "Olá, Maria Souza")
                await browser.screenshot("app-sms-home")
                // The code was single use: the server refuses it now (the browser spent it).
                let code = try await SecuritySuites.OTPAbuseTests.loggedCode(server, phone: Self.mariaPhone)
                let again = try await SecuritySuites.OTPAbuseTests.verify(server, Self.mariaPhone, code)
                #expect(again.status == 401, "\(again.status) \(again.text)")
            }
        }
    }

    @Test("Visit detail: the photo, 'A …m da portaria, a nordeste' with its compass arrow, the attempts timeline, focus in and back")
    func visitDetail() async throws {
        try await TestServer.with(["--demo"]) { server in
            // About 245 m north and 245 m east of the demo gate (-23.561684, -46.655981).
            let gate = try await server.request("GET", "/v1/gates/demo-gate")
            let units = try #require(try gate.json()["units"] as? [[String: Any]])
            let unit = try #require(units.first { $0["label"] as? String == "A-101" }?["id"] as? String)
            let created = try await server.postJSON("/v1/gates/demo-gate/visits", """
                {"unit_id":"\(unit)","kind":"visit","visitor_name":"Visitante Longe",\
                "location":{"lat":-23.559484,"lon":-46.653581,"accuracy_m":10}}
                """)
            try #require(created.status == 201, "\(created.status) \(created.text)")
            let body = try created.json()
            let visit = try #require((body["visit"] as? [String: Any])?["id"] as? String)
            let visitorToken = try #require(body["visitor_token"] as? String)
            let maria = try await RealtimeTests.login(server, "maria")
            let headers = [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)]
            let geofence = try #require(try await server.request("GET", "/v1/visits/\(visit)", headers: headers).json()["geofence"] as? [String: Any])
            let bearing = try #require(geofence["bearing_deg"] as? Int)
            #expect((20...70).contains(bearing), "bearing \(bearing)")

            try await WebDriver.with { browser in
                try await browser.navigate("http://127.0.0.1:\(server.port)/app/")
                // The visitor's photo, a real JPEG drawn by the browser, sent as the gate page does.
                let uploaded = try await browser.executeAsync("""
                    const done = arguments[arguments.length - 1];
                    const canvas = document.createElement('canvas'); canvas.width = 64; canvas.height = 48;
                    const g = canvas.getContext('2d'); g.fillStyle = '#0a6b2d'; g.fillRect(0, 0, 64, 48);
                    canvas.toBlob((blob) => fetch('/v1/visitor/visit/photo', { method: 'POST',
                      headers: { Authorization: 'Bearer ' + arguments[0], 'Content-Type': 'image/jpeg' }, body: blob })
                      .then((r) => done(r.status)).catch((e) => done(String(e))), 'image/jpeg', 0.9);
                    """, [visitorToken])
                #expect(uploaded as? Int == 201 || uploaded as? Int == 200, "photo upload: \(String(describing: uploaded))")

                try await ResidentAppDefectTests().loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: visit)
                try await Self.homeSettled(browser)
                try await browser.click(css: "li.visit[data-id='\(visit)'] button.details")
                try await browser.waitForText("#detail-title", containing: "Visitante Longe")
                #expect(try await browser.visibleText("#username") == nil)
                #expect(try await browser.execute("return document.getElementById('view-home').hidden") as? Bool == true)
                #expect(try await browser.execute("return document.activeElement.id") as? String == "detail-title")
                let location = try await browser.waitForText("#detail-location", containing: "da portaria, a nordeste")
                #expect(location.hasPrefix("A 3"), "about 345 m: \(location)")
                let arrow = try await browser.execute("return document.getElementById('detail-arrow').getAttribute('transform')") as? String
                #expect(arrow == "rotate(\(bearing))", "\(String(describing: arrow))")
                #expect(try await browser.execute("return document.getElementById('detail-compass').getBoundingClientRect().width > 0") as? Bool == true,
                        "the compass is not shown")
                try await browser.waitFor("the photo decoded") {
                    try await browser.execute("const i = document.getElementById('detail-photo'); return !i.hidden && i.complete && i.naturalWidth > 0") as? Bool == true
                }
                let timeline = try await browser.execute(
                    "return [...document.querySelectorAll('#detail-attempts li')].map((li) => li.dataset.kind + '|' + li.textContent)") as? [String] ?? []
                #expect(timeline.contains { $0.hasPrefix("ring|") && $0.contains("Tocou para ") }, "\(timeline)")
                #expect(timeline.allSatisfy { $0.range(of: #"\|\d\d:\d\d · "#, options: .regularExpression) != nil }, "\(timeline)")
                #expect(!timeline.contains { $0.contains("Evento") }, "an attempt kind without words: \(timeline)")
                await browser.screenshot("app-visit-detail")

                // Back: the home again, focus on the Detalhes button that opened the detail.
                try await browser.click(css: "#detail-back")
                try await browser.waitFor("the home") { try await browser.visibleText("#pending") != nil }
                let focused = try await browser.execute("return document.activeElement.closest('li.visit')?.dataset.id ?? ''") as? String
                #expect(focused == visit)

                // João denies while Maria looks at the detail: it follows the visit by itself
                // (the outcome line says who, the timeline has the decision).
                try await browser.click(css: "li.visit[data-id='\(visit)'] button.details")
                try await browser.waitForText("#detail-location", containing: "da portaria, a nordeste")
                try await ResidentAppBrowserTests().joaoDenies(server, visit)
                try await browser.waitForText("#detail-outcome", containing: "Negado por João Souza às ")
                try await browser.waitForText("#detail-attempts", containing: "João negou")
            }
        }
    }

    @Test("Focus on a list button survives a refresh: a new ring moves the list, a neighbour's decision redraws the item")
    func focusSurvivesRefresh() async throws {
        try await TestServer.with(["--demo"]) { server in
            let first = try await ResidentAppBrowserTests().ring(server, name: "Visitante Foco")
            try await WebDriver.with { browser in
                try await ResidentAppDefectTests().loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: first)
                try await Self.homeSettled(browser)
                let focusedItem = "return document.activeElement.closest('li.visit')?.dataset.id ?? ''"
                let focusedIsDetails = "return document.activeElement.classList.contains('details')"
                try await browser.execute("document.querySelector(arguments[0]).focus()", ["li.visit[data-id='\(first)'] button.details"])
                #expect(try await browser.execute(focusedItem) as? String == first)

                // A second ring: the list refreshes and the new item goes in above.
                let second = try await ResidentAppBrowserTests().ring(server, name: "Visitante Segundo")
                try await browser.waitFor("the second visit in the list", within: .seconds(30)) {
                    try await browser.execute("return !!document.querySelector(arguments[0])", ["li.visit[data-id='\(second)']"]) as? Bool == true
                }
                #expect(try await browser.execute(focusedItem) as? String == first, "focus left the list on a refresh")
                #expect(try await browser.execute(focusedIsDetails) as? Bool == true)

                // João denies the first: its item is redrawn in the history; focus follows it.
                try await ResidentAppBrowserTests().joaoDenies(server, first)
                try await browser.waitFor("the first visit in the history", within: .seconds(30)) {
                    try await browser.execute("return !!document.querySelector(arguments[0])", ["#history li.visit[data-id='\(first)']"]) as? Bool == true
                }
                #expect(try await browser.execute(focusedItem) as? String == first, "focus left the list when the item was redrawn")
                #expect(try await browser.execute(focusedIsDetails) as? Bool == true)
            }
        }
    }

    @Test("Settings: the delivery rule and the ring order are saved on the server; a device is removed; the notification state says how to fix it")
    func settings() async throws {
        try await TestServer.with(["--demo"]) { server in
            let visit = try await ResidentAppBrowserTests().ring(server, name: "Visitante Config")
            let maria = try await RealtimeTests.login(server, "maria")
            let headers = [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)]
            let me = try await server.request("GET", "/v1/me", headers: headers).json()
            let unit = try #require((me["units"] as? [[String: Any]])?.first { $0["label"] as? String == "A-101" }?["id"] as? String)
            let before = try await server.request("GET", "/v1/units/\(unit)/settings", headers: headers).json()
            let residents = try #require(before["residents"] as? [[String: Any]])
            try #require(residents.count >= 2, "A-101 needs two residents to reorder: \(residents)")
            let beforeOrder = try #require((before["settings"] as? [String: Any])?["ring_order"] as? [String])
            // A phone of Maria's, registered by the iOS app, to be removed from the browser.
            let phone = try await server.request("POST", "/v1/devices", headers: headers + [("Content-Type", "application/json")], body: Array("""
                {"installation_id":"ios-maria-1","platform":"android","push_token":"fcm-token-maria-1","device_name":"Celular da Maria"}
                """.utf8))
            try #require(phone.status == 201, "\(phone.status) \(phone.text)")

            try await WebDriver.with { browser in
                try await ResidentAppDefectTests().loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: visit)
                try await browser.cdp("Browser.setPermission", ["permission": ["name": "notifications"], "setting": "denied"])
                try await Self.homeSettled(browser)
                try await browser.click(css: "#open-settings")
                try await browser.waitFor("the A-101 settings") {
                    try await browser.execute("return !!document.querySelector(\"form.unit-settings input[value='leave_at_concierge']\")") as? Bool == true
                }
                #expect(try await browser.execute("return document.activeElement.id") as? String == "settings-title")
                try await browser.click(css: "form.unit-settings input[value='leave_at_concierge']")
                // The second resident moves up, by keyboard-reachable buttons with spoken names.
                let label = try await browser.execute(
                    "return document.querySelector('.ring-order li:nth-child(2) button[data-move=up]').getAttribute('aria-label')") as? String ?? ""
                #expect(label.hasPrefix("Mover ") && label.hasSuffix(" para cima na ordem de chamada"), "\(label)")
                try await browser.click(css: ".ring-order li:nth-child(2) button[data-move=up]")
                try await browser.click(css: "form.unit-settings button[type=submit]")
                try await browser.waitForText("form.unit-settings .message", containing: "Salvo ✓")
                let after = try #require(try await server.request("GET", "/v1/units/\(unit)/settings", headers: headers).json()["settings"] as? [String: Any])
                #expect(after["delivery_rule"] as? String == "leave_at_concierge")
                let afterOrder = try #require(after["ring_order"] as? [String])
                let drawn = beforeOrder + residents.compactMap { $0["id"] as? String }.filter { !beforeOrder.contains($0) }
                #expect(afterOrder == [drawn[1], drawn[0]] + drawn.dropFirst(2), "before \(beforeOrder), after \(afterOrder)")

                // Devices: Maria's phone is listed and removed.
                try await browser.waitForText("#devices", containing: "Celular da Maria · Android")
                try await browser.click(css: "#devices button[aria-label='Remover o aparelho Celular da Maria']")
                try await browser.waitFor("the device gone from the list") {
                    try await browser.execute("return document.querySelectorAll('#devices li').length") as? Int == 0
                }
                let devices = try await server.request("GET", "/v1/devices", headers: headers).json()["devices"] as? [Any]
                #expect(devices?.isEmpty == true, "\(String(describing: devices))")

                // Notifications blocked: the state says so and how to undo it.
                try await browser.waitFor("the notification state") {
                    try await browser.execute("return document.getElementById('settings-notify').dataset.state") as? String == "denied"
                }
                let state = try await browser.visibleText("#settings-notify") ?? ""
                #expect(state.hasPrefix("Desativadas — libere no navegador"), "\(state)")
                await browser.screenshot("app-settings")

                try await browser.click(css: "#settings-back")
                try await browser.waitFor("the home") { try await browser.visibleText("#pending") != nil }
                #expect(try await browser.execute("return document.activeElement.id") as? String == "open-settings")
            }
        }
    }
    @Test("Realtime reconnect asks for what it missed (?since=the last seq): the visit rung while the socket was down is replayed")
    func reconnectWithSince() async throws {
        try await TestServer.with(["--demo"]) { server in
            let first = try await ResidentAppBrowserTests().ring(server, name: "Visitante Antes")
            try await WebDriver.with { browser in
                // Every socket the page opens, with the frames it got, kept where the test can read them.
                try await browser.cdp("Page.addScriptToEvaluateOnNewDocument", ["source": """
                    window.__sockets = [];
                    const Native = window.WebSocket;
                    window.WebSocket = class extends Native {
                      constructor(url, protocols) {
                        super(url, protocols);
                        this.frames = [];
                        this.addEventListener('message', (e) => { try { this.frames.push(JSON.parse(e.data)); } catch {} });
                        window.__sockets.push(this);
                      }
                    };
                    """])
                try await ResidentAppDefectTests().loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: first)
                try await browser.waitFor("the first socket subscribed") {
                    try await browser.execute("return window.__sockets.length === 1 && window.__sockets[0].frames.some((f) => f.type === 'subscribed')") as? Bool == true
                }
                #expect(try await browser.execute("return window.__sockets[0].url.includes('since=')") as? Bool == false, "a first connection has nothing to resume")
                let during = try await ResidentAppBrowserTests().ring(server, name: "Visitante Durante")
                try await ResidentAppDefectTests().waitForButtons(browser, during)
                try await browser.waitFor("the visit.created frame") {
                    try await browser.execute("return window.__sockets[0].frames.some((f) => f.type === 'visit.created' && f.data && f.data.visit_id === arguments[0])", [during]) as? Bool == true
                }
                let lastSeq = try #require(try await browser.execute(
                    "return Math.max(...window.__sockets[0].frames.filter((f) => Number.isInteger(f.seq)).map((f) => f.seq))") as? Int)

                // The connection drops; a visit rings meanwhile.
                try await browser.execute("window.__sockets[0].close()")
                try await browser.waitFor("the polling fallback") {
                    try await browser.execute("return document.body.dataset.connection") as? String == "polling"
                }
                let missed = try await ResidentAppBrowserTests().ring(server, name: "Visitante Perdido")
                try await browser.waitFor("the second socket", within: .seconds(40)) {
                    try await browser.execute("return window.__sockets.length >= 2 && window.__sockets[1].readyState === 1") as? Bool == true
                }
                let url = try await browser.execute("return window.__sockets[1].url") as? String ?? ""
                #expect(url.contains("since=\(lastSeq)"), "\(url) (last seq \(lastSeq))")
                try await browser.waitFor("the missed visit replayed on the new socket") {
                    try await browser.execute("return window.__sockets[1].frames.some((f) => f.type === 'visit.created' && f.data && f.data.visit_id === arguments[0])", [missed]) as? Bool == true
                }
                try await ResidentAppDefectTests().waitForButtons(browser, missed)
                try await browser.waitFor("live again") { try await browser.execute("return document.body.dataset.connection") as? String == "live" }
            }
        }
    }

    @Test("Pendências: a recado is played in the list with the browser's player, fetched only on the tap")
    func voiceMessageInPendencias() async throws {
        try await TestServer.with(["--demo"]) { server in
            let (visit, visitorToken) = try await ResidentAppBrowserTests().ringWithToken(server, name: "Visitante Recado")
            let maria = try await RealtimeTests.login(server, "maria")
            let headers = [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)]
            try await WebDriver.with { browser in
                try await browser.navigate("http://127.0.0.1:\(server.port)/app/")
                // A real recording from Chromium's fake microphone, sent as the gate page sends it.
                let uploaded = try await browser.executeAsync("""
                    const done = arguments[arguments.length - 1];
                    const token = arguments[0];
                    navigator.mediaDevices.getUserMedia({ audio: true }).then((stream) => {
                      const type = MediaRecorder.isTypeSupported('audio/webm;codecs=opus') ? 'audio/webm;codecs=opus' : 'audio/ogg;codecs=opus';
                      const recorder = new MediaRecorder(stream, { mimeType: type });
                      const chunks = [];
                      recorder.ondataavailable = (e) => chunks.push(e.data);
                      recorder.onstop = () => {
                        stream.getTracks().forEach((t) => t.stop());
                        const blob = new Blob(chunks, { type: type.split(';')[0] });
                        fetch('/v1/visitor/visit/voice_message', { method: 'POST',
                          headers: { Authorization: 'Bearer ' + token, 'Content-Type': blob.type }, body: blob })
                          .then(async (r) => done(r.status + ' ' + await r.text())).catch((e) => done(String(e)));
                      };
                      recorder.start();
                      setTimeout(() => recorder.stop(), 1500);
                    }).catch((e) => done('no microphone: ' + e));
                    """, [visitorToken])
                let status = uploaded as? String ?? ""
                try #require(status.hasPrefix("20"), "voice upload: \(status)")
                let json = try await server.request("GET", "/v1/visits/\(visit)", headers: headers).json()
                try #require(json["voice_message"] != nil, "the visit has no recado: \(json)")

                try await ResidentAppDefectTests().loginAsMaria(browser, base: "http://127.0.0.1:\(server.port)", waitingFor: visit)
                let button = "li.visit[data-id='\(visit)'] button[data-voice]"
                try await browser.waitFor("the Ouvir recado button") { try await browser.visibleText(button) != nil }
                #expect((try await browser.visibleText(button) ?? "").hasPrefix("Ouvir recado"))
                #expect(try await browser.execute("return performance.getEntriesByType('resource').some((e) => e.name.includes('/voice_message'))") as? Bool == false,
                        "the recado was downloaded before the tap")
                try await Self.homeSettled(browser)
                try await browser.click(css: button)
                try await browser.waitFor("the player with the recording loaded") {
                    try await browser.execute("""
                        const a = document.querySelector(arguments[0]);
                        return !!a && a.controls && !a.error && a.readyState >= 1;
                        """, ["li.visit[data-id='\(visit)'] audio"]) as? Bool == true
                }
                #expect(try await browser.execute("return document.activeElement.tagName") as? String == "AUDIO")
                await browser.screenshot("app-voice-message")
            }
        }
    }
}
