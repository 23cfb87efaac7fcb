import Foundation
import PortariaCore
import PortariaTestSupport
import Testing

/// The gate page (`Web/gate/`) in a real headless Chromium driven over WebDriver, against
/// the real `portaria serve --demo`. Skipped only when chromium or chromedriver is not
/// installed (CI installs both through scripts/bootstrap).
@Suite("Gate page in Chromium", .serialized, .requires(.chromium))
struct GateBrowserTests {
    /// The demo company's gate (DemoData): where the visitor "stands" in the delivery test.
    static let gate = (lat: -23.561684, lon: -46.655981)

    func json(_ response: RawResponse) throws -> [String: Any] { try response.json() }

    /// Grants geolocation to the page's origin and places the browser at `lat, lon`.
    func placeBrowser(_ browser: WebDriver, origin: String, lat: Double, lon: Double, accuracy: Double) async throws {
        try await browser.cdp("Browser.grantPermissions", ["origin": origin, "permissions": ["geolocation"]])
        try await browser.cdp("Emulation.setGeolocationOverride", ["latitude": lat, "longitude": lon, "accuracy": accuracy])
    }

    /// Opens the demo gate's page and waits for its unit list (three units and the prompt).
    func openGate(_ browser: WebDriver, _ server: TestServer) async throws {
        try await browser.navigate("http://127.0.0.1:\(server.port)/gate/demo-gate")
        try await browser.waitFor("the unit list") {
            try await browser.execute("return document.querySelectorAll('#unit option').length") as? Int == 4
        }
    }

    /// Fills the form's two required fields: the unit (by its label) and the visitor's name.
    func fill(_ browser: WebDriver, unit: String, name: String) async throws {
        try await browser.click(try await browser.find(xpath: "//select[@id='unit']/option[text()='\(unit)']"))
        try await browser.type(try await browser.find(css: "#name"), name)
    }

    /// Chooses the unit, types the name and rings.
    func ring(_ browser: WebDriver, unit: String, name: String) async throws {
        try await fill(browser, unit: unit, name: name)
        try await browser.click(css: "#ring")
    }

    @Test("A ring answered 503 (a read-only PostgreSQL) is rung again by the page itself once the database takes writes: one visit",
          .requires(.postgres))
    func ringRetriedAfterDatabaseFault() async throws {
        let database = try #require(try TestPostgres.createDatabase())
        defer { database.drop() }
        let name = database.name
        let terminate = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()"
        try await TestServer.with(["--demo", "--database", database.url]) { server in
            try await WebDriver.with { browser in
                try await openGate(browser, server)
                try await fill(browser, unit: "A-101", name: "Visitante Paciente")

                try TestPostgres.run("ALTER DATABASE \(name) SET default_transaction_read_only = on")
                try TestPostgres.run(terminate)
                try await browser.click(css: "#ring")
                try await browser.waitForText("#form-error", containing: "Tentando de novo", within: .seconds(20))
                try TestPostgres.run("ALTER DATABASE \(name) RESET default_transaction_read_only")
                try TestPostgres.run(terminate)
                try await browser.waitForText("#visit-state", containing: "Chamando", within: .seconds(60))

                // A pooled connection the database ended fails once (503) before it reconnects.
                var answered = 0
                for _ in 0..<20 where answered != 200 {
                    answered = try await server.postJSON("/v1/auth/login", #"{"username":"maria","password":"demo1234"}"#).status
                }
                #expect(answered == 200)
                let maria = try await RealtimeTests.login(server, "maria")
                // Every visit of the unit, whatever its status.
                let all = try await server.request("GET", "/v1/visits",
                                                   headers: [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)])
                #expect(all.status == 200)
                #expect(all.text.components(separatedBy: "Visitante Paciente").count - 1 == 1, "one visit, not one per attempt: \(all.text)")
                #expect(server.log.contains("\"status\":503"), "the first attempt met the fault")
            }
        }
    }

    /// In WebKit the location step is left out: MiniBrowser has no position to give (no
    /// GeoClue) and no DevTools protocol to place it; the visit then has no geofence.
    @Test("A courier rings A-101 with a photo and location; Maria authorizes and the page shows it live",
          arguments: BrowserEngine.underTest)
    func deliveryWithPhotoAndLocationFollowedLive(engine: BrowserEngine) async throws {
        let located = engine == .chromium
        try await TestServer.with(["--demo"]) { server in
            try await WebDriver.with(engine) { browser in
                let origin = "http://\(engine.loopbackHost):\(server.port)"
                try await browser.navigate("\(origin)/gate/demo-gate")
                if located { try await placeBrowser(browser, origin: origin, lat: Self.gate.lat, lon: Self.gate.lon, accuracy: 12) }

                // The gate: company name and the units, never a resident's name.
                try await browser.waitForText("#company", containing: "Residencial Demo")
                try await browser.waitFor("the unit list") {
                    try await browser.execute("return document.querySelectorAll('#unit option').length") as? Int == 4
                }
                let labels = try await browser.execute(
                    "return Array.from(document.querySelectorAll('#unit option')).slice(1).map(o => o.textContent)") as? [String]
                #expect(labels == ["A-101", "A-102", "B-201"])
                let pageText = try await browser.execute("return document.body.innerText") as? String ?? ""
                for resident in ["Maria", "João", "Ana", "Souza", "Lima"] {
                    #expect(!pageText.contains(resident), "the gate page shows a resident's name: \(resident)")
                }

                // The form: unit, name, delivery by Mercado Livre.
                try await fill(browser, unit: "A-101", name: "Entregador Teste")
                try await browser.click(css: "label[for=kind-delivery]")
                try await browser.waitFor("the carrier select") { try await browser.visibleText("#carrier") != nil }
                try await browser.click(try await browser.find(xpath: "//select[@id='carrier']/option[text()='Mercado Livre']"))

                // Location, with its accuracy.
                if located {
                    try await browser.click(css: "#location-button")
                    try await browser.waitForText("#location-status", containing: "precisão de 12 m")
                }

                // Camera (Chromium's fake device) → snapshot.
                try await browser.click(css: "#camera-open")
                try await browser.click(css: "#camera-shoot")
                try await browser.waitFor("the photo preview") {
                    try await browser.execute("const i = document.getElementById('photo-image'); return !document.getElementById('photo-preview').hidden && i.complete && i.naturalWidth > 0") as? Bool == true
                }

                if engine == .chromium { await browser.screenshot("gate-form") }

                // Ring, and the page follows the call over the realtime socket.
                try await browser.click(css: "#ring")
                try await browser.waitForText("#visit-state", containing: "Chamando")
                try await browser.waitFor("the realtime socket to be live", within: .seconds(15)) {
                    try await browser.execute("return document.body.dataset.connection") as? String == "live"
                }
                let summary = try await browser.visibleText("#visit-summary") ?? ""
                #expect(summary.contains("Entrega Mercado Livre"), "\(summary)")
                #expect(summary.contains("A-101"), "\(summary)")
                if engine == .chromium { await browser.screenshot("gate-ringing") }

                // The server has the visit, its geofence and (once uploaded) the photo.
                let maria = try await RealtimeTests.login(server, "maria")
                let headers = [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)]
                var visit: [String: Any] = [:]
                try await browser.waitFor("the visit with its photo on the server") {
                    // Still ringing, so not yet a pendência (`?status=pending` is unanswered ones).
                    let list = try await server.request("GET", "/v1/visits", headers: headers)
                    guard list.status == 200 else { return false }
                    let items = try list.json()["visits"] as? [[String: Any]] ?? []
                    guard let found = items.first(where: { $0["visitor_name"] as? String == "Entregador Teste" }) else { return false }
                    visit = found
                    return found["photo"] is [String: Any]
                }
                let id = try #require(visit["id"] as? String)
                let detail = try json(try await server.request("GET", "/v1/visits/\(id)", headers: headers))
                #expect(detail["kind"] as? String == "delivery")
                #expect(detail["carrier"] as? String == "Mercado Livre")
                #expect((detail["unit"] as? [String: Any])?["label"] as? String == "A-101")
                if located {
                    let geofence = try #require(detail["geofence"] as? [String: Any])
                    #expect(geofence["status"] as? String == "at_entrance", "\(geofence)")
                }
                let photo = try #require(detail["photo"] as? [String: Any])
                #expect(photo["content_type"] as? String == "image/jpeg")
                let image = try await server.request("GET", "/v1/visits/\(id)/photo", headers: headers)
                #expect(image.status == 200)
                #expect(image.body.starts(with: [0xFF, 0xD8, 0xFF]), "the photo is a JPEG")

                // Maria authorizes; the page shows it without a reload.
                let resolved = try await server.request("POST", "/v1/visits/\(id)/resolve",
                                                        headers: headers + [("Content-Type", "application/json"),
                                                                            ("Idempotency-Key", UUID().uuidString)],
                                                        body: Array(#"{"action":"authorize"}"#.utf8))
                #expect(resolved.status == 200, "\(resolved.text)")
                try await browser.waitForText("#visit-state", containing: "Autorizado — pode entrar", within: .seconds(10))
                if engine == .chromium { await browser.screenshot("gate-authorized") }
                #expect(try await browser.visibleText("#visit-new") != nil, "a new call can be made")
                #expect(try await browser.visibleText("#visit-cancel") == nil, "nothing to cancel any more")
            }
        }
    }

    @Test("Too many calls: the 429 is shown in Portuguese")
    func rateLimitIsShownInPortuguese() async throws {
        try await TestServer.with(["--demo", "--gate-limit", "1"]) { server in
            // The one call this address may make this minute.
            _ = try await RealtimeTests.ring(server)
            try await WebDriver.with { browser in
                try await openGate(browser, server)
                try await ring(browser, unit: "A-102", name: "Rafael")
                let message = try await browser.waitForText("#form-error", containing: "Muitas chamadas")
                await browser.screenshot("gate-rate-limited")
                #expect(message == "Muitas chamadas; aguarde um minuto.")
                #expect(try await browser.visibleText("#view-form") != nil, "the form stays, ready for another try")
            }
        }
    }

    @Test("A unit rung too often from every address: the server's own Portuguese sentence is shown")
    func unitCapShowsTheServersSentence() async throws {
        try await TestServer.with(["--demo", "--unit-ring-limit", "1"]) { server in
            // A-102's one ring of this minute.
            _ = try await RealtimeTests.ring(server, unit: "A-102")
            try await WebDriver.with { browser in
                try await openGate(browser, server)
                try await ring(browser, unit: "A-102", name: "Rafael")
                let message = try await browser.waitForText("#form-error", containing: "Esta unidade")
                #expect(message == "Esta unidade recebeu muitas chamadas agora. Aguarde um minuto e chame de novo.")
                #expect(try await browser.visibleText("#view-form") != nil, "the form stays, ready for another try")
            }
        }
    }

    @Test("An unknown gate token shows a clear error, and a missing unit or name is explained")
    func unknownGateAndMissingFields() async throws {
        try await TestServer.with(["--demo"]) { server in
            try await WebDriver.with { browser in
                try await browser.navigate("http://127.0.0.1:\(server.port)/gate/nao-existe")
                try await browser.waitForText("#fatal-title", containing: "Portão não encontrado")
                let message = try await browser.visibleText("#fatal-message") ?? ""
                #expect(message.contains("QR code"), "\(message)")
                await browser.screenshot("gate-unknown")
                #expect(try await browser.visibleText("#view-form") == nil)

                try await browser.navigate("http://127.0.0.1:\(server.port)/gate/demo-gate")
                try await browser.waitForText("#company", containing: "Residencial Demo")
                try await browser.click(css: "#ring")
                try await browser.waitForText("#form-error", containing: "Escolha a unidade")
                try await browser.click(try await browser.find(xpath: "//select[@id='unit']/option[text()='B-201']"))
                try await browser.click(css: "#ring")
                try await browser.waitForText("#form-error", containing: "Informe seu nome")
            }
        }
    }

    @Test("""
        Nobody answers: the visitor records a recado (Chromium's fake microphone); without an AAC encoder it is stored \
        as a 16 kHz WAV, and Maria's web app plays it for as long as the server says it lasts
        """)
    func unansweredVisitLeavesAVoiceMessage() async throws {
        try await TestServer.with(["--demo"]) { server in
            // A-101 rings for 10 s only (the shortest window the settings allow).
            let maria = try await RealtimeTests.login(server, "maria")
            let headers = [("Authorization", "Bearer \(maria.token)"), ("X-Company-Id", maria.companyID)]
            let gate = try await server.request("GET", "/v1/gates/demo-gate").json()
            let unit = try #require((gate["units"] as? [[String: Any]])?.first { $0["label"] as? String == "A-101" }?["id"] as? String)
            var settings = try #require(try await server.request("GET", "/v1/units/\(unit)/settings", headers: headers).json()["settings"] as? [String: Any])
            settings["ring_step_seconds"] = 5
            settings["ring_window_seconds"] = 10
            let updated = try await server.request("PUT", "/v1/units/\(unit)/settings", headers: headers + [("Content-Type", "application/json")],
                                                   body: Array(try JSONSerialization.data(withJSONObject: settings)))
            try #require(updated.status == 200, "\(updated.text)")

            try await WebDriver.with { browser in
                let base = "http://127.0.0.1:\(server.port)"
                try await browser.navigate("\(base)/gate/demo-gate")
                try await browser.waitFor("the unit list") {
                    try await browser.execute("return document.querySelectorAll('#unit option').length") as? Int == 4
                }
                // Debian's Chromium has no AAC encoder: the gate takes the WAV path there.
                let recordsAAC = try await browser.execute("return MediaRecorder.isTypeSupported('audio/mp4;codecs=mp4a.40.2')") as? Bool ?? false
                try await ring(browser, unit: "A-101", name: "Visitante Sem Resposta")
                try await browser.waitForText("#visit-state", containing: "Chamando")
                try await browser.waitForText("#visit-state", containing: "Ninguém atendeu — deixe um recado", within: .seconds(30))

                try await browser.click(css: "#voice-record")
                try await browser.waitFor("two seconds of recording") {
                    Int(try await browser.visibleText("#voice-timer") ?? "") ?? 0 >= 2
                }
                try await browser.click(css: "#voice-stop")
                try await browser.waitFor("the recording ready to send") { try await browser.visibleText("#voice-send") != nil }
                try await browser.click(css: "#voice-send")
                try await browser.waitForText("#voice-status", containing: "Recado enviado")
                await browser.screenshot("gate-voice-sent")

                let pending = try await server.request("GET", "/v1/visits?status=pending", headers: headers).json()
                let visit = try #require((pending["visits"] as? [[String: Any]])?.first { $0["visitor_name"] as? String == "Visitante Sem Resposta" })
                let visitID = try #require(visit["id"] as? String)
                let voice = try #require(visit["voice_message"] as? [String: Any], "the pendência has its recado")
                #expect(voice["content_type"] as? String == (recordsAAC ? "audio/mp4" : "audio/wav"), "\(voice)")
                // At least the two seconds the timer showed; well under the 58 s auto-stop.
                let durationMs = try #require(voice["duration_ms"] as? Int, "\(voice)")
                #expect((1_500...50_000).contains(durationMs), "\(voice)")
                let stored = try await server.request("GET", "/v1/visits/\(visitID)/voice_message", headers: headers)
                #expect(stored.status == 200)
                #expect(stored.header("Content-Type")?.hasPrefix(recordsAAC ? "audio/mp4" : "audio/wav") == true)
                if !recordsAAC {
                    // 16 kHz mono 16-bit: 32,000 bytes a second after the 44-byte header.
                    let isRIFF = stored.body.starts(with: Array("RIFF".utf8))
                    #expect(isRIFF, "the stored recado starts \(stored.body.prefix(12))")
                    #expect((durationMs * 32..<(durationMs + 1) * 32).contains(stored.body.count - 44), "\(stored.body.count) bytes")
                }

                // Maria's web app plays it: the browser's player decodes it, and it lasts as long as the server says.
                try await ResidentAppDefectTests().loginAsMaria(browser, base: base, waitingFor: visitID)
                let button = "li.visit[data-id='\(visitID)'] button[data-voice]"
                try await browser.waitFor("the Ouvir recado button") { try await browser.visibleText(button) != nil }
                try await browser.click(css: button)
                try await browser.waitFor("the player with the recording decoded") {
                    try await browser.execute("""
                        const a = document.querySelector(arguments[0]);
                        return !!a && !a.error && a.readyState >= 2;
                        """, ["li.visit[data-id='\(visitID)'] audio"]) as? Bool == true
                }
                let played = try await browser.execute("return document.querySelector(arguments[0]).duration",
                                                       ["li.visit[data-id='\(visitID)'] audio"]) as? Double ?? -1
                #expect(abs(played * 1000 - Double(durationMs)) < 100, "the player says \(played) s; the server \(durationMs) ms")
                print("gate recado: \(voice["content_type"] ?? "?"), \(durationMs) ms, \(stored.body.count) bytes; the web app's player: \(played) s")
            }
        }
    }
}
