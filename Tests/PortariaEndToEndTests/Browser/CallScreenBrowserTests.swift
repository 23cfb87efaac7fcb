import Foundation
import PortariaTestSupport
import Testing

/// The resident's call screen without video, in Chromium and in WebKit (the iPhone's
/// engine), against the real `portaria serve --demo`. The visitor rings through the API
/// (as the gate page does, with a position 340 m from the gate: MiniBrowser has no
/// position to give), so both engines see the same visit and the same badge; only Maria's
/// app is a browser. Video needs a relay (decision 0066) and a browser with WebRTC
/// (Debian's WebKitGTK has none), so here the screen is always "Vídeo indisponível" —
/// and still the spec's call screen, from which she decides.
@Suite("The resident's call screen without video in Chromium and WebKit", .serialized,
       .requires(.chromium))
struct CallScreenBrowserTests {
    let app = ResidentAppBrowserTests()

    /// 340 m north of the demo gate, 12 m accuracy.
    static let away = (lat: GateBrowserTests.gate.lat + 340 / 111_320, lon: GateBrowserTests.gate.lon, accuracy: 12.0)

    /// What the call screen shows: the name line, the badge (its text, status, colour and
    /// what a screen reader hears), the buttons on screen in order, and the camera.
    static let screen = """
        const section = document.getElementById('call');
        const badge = document.getElementById('call-badge');
        const hidden = [...badge.querySelectorAll('[aria-hidden=true]')].map((e) => e.textContent).join('');
        const shown = (e) => !e.hidden && !e.closest('[hidden]') && e.getBoundingClientRect().width > 0;
        const authorize = document.querySelector('#call-actions button[data-action=authorize]');
        const deny = document.querySelector('#call-actions button[data-action=deny]');
        return { state: section.dataset.state, visible: shown(section),
                 described: section.getAttribute('aria-describedby') || '',
                 who: document.getElementById('call-who').textContent,
                 badge: badge.textContent, status: badge.dataset.status, badgeShown: shown(badge),
                 heard: badge.textContent.replace(hidden, '').trim(),
                 colour: getComputedStyle(badge).backgroundColor,
                 buttons: [...section.querySelectorAll('button')].filter(shown).map((b) => b.textContent),
                 authorize: authorize ? getComputedStyle(authorize).backgroundColor : '',
                 primary: !!authorize && !!deny && parseFloat(getComputedStyle(authorize).fontSize) > parseFloat(getComputedStyle(deny).fontSize),
                 camera: document.getElementById('call-local').srcObject !== null };
        """

    /// Maria logs in, the visitor rings A-101 from 340 m away, and she taps Atender;
    /// returns the visit id and the visitor token.
    func ringAndAnswer(_ server: TestServer, _ browser: WebDriver, base: String, name: String) async throws -> (id: String, token: String) {
        try await ResidentAppDefectTests().loginAsMaria(browser, base: base, waitingFor: nil)
        try await browser.waitFor("the app's realtime socket") {
            try await browser.execute("return document.body.dataset.connection") as? String == "live"
        }
        let visit = try await app.ringWithToken(server, name: name, location: Self.away)
        let answer = "li.visit[data-id='\(visit.id)'] button[data-action=answer]"
        try await browser.waitFor("the ringing visit with its Atender button") {
            try await browser.execute("return !!document.querySelector(arguments[0])", [answer]) as? Bool == true
        }
        try await browser.click(css: answer)
        return visit
    }

    /// Waits until the visitor's own view of the visit (`GET /v1/visitor/visit`, what the
    /// gate page follows) says it was resolved with `action`.
    func visitorSees(_ server: TestServer, token: String, _ action: String) async throws {
        var seen = ""
        let resolved = await eventually(within: .seconds(15), every: .milliseconds(200)) {
            let visit = try? await server.request("GET", "/v1/visitor/visit", headers: [("Authorization", "Bearer \(token)")]).json()
            seen = (visit?["resolution"] as? [String: Any])?["action"] as? String ?? ""
            return seen == action
        }
        #expect(resolved, "the visitor's view says '\(seen)', not '\(action)'")
    }

    @Test("The visitor rings A-101 from 340 m away; Maria answers, the call screen shows name · unit and the amber badge a screen reader hears, no video without a relay, Autorizar green and first; her Autorizar there resolves the visit",
          arguments: BrowserEngine.underTest)
    func callScreenWithoutVideo(engine: BrowserEngine) async throws {
        try await TestServer.with(["--demo"]) { server in
            try await WebDriver.with(engine) { browser in
                let visit = try await ringAndAnswer(server, browser, base: "http://\(engine.loopbackHost):\(server.port)",
                                                    name: "Visitante Longe")
                try await browser.waitFor("the call screen to say video is unavailable") {
                    try await browser.execute("return document.getElementById('call').dataset.state") as? String == "unavailable"
                }
                try await browser.waitForText("#call-status", containing: "Vídeo indisponível")
                let screen = try await browser.execute(Self.screen) as? [String: Any] ?? [:]
                #expect(screen["visible"] as? Bool == true, "\(screen)")
                #expect(screen["who"] as? String == "Visitante Longe · A-101", "\(screen)")
                #expect(screen["badgeShown"] as? Bool == true, "\(screen)")
                #expect((screen["badge"] as? String ?? "").hasSuffix("⚠ A 340m da portaria"), "\(screen)")
                #expect(screen["status"] as? String == "away", "\(screen)")
                #expect(screen["heard"] as? String == "Localização do visitante: A 340m da portaria", "\(screen)")
                #expect((screen["described"] as? String ?? "").split(separator: " ").contains("call-badge"),
                        "the call's description leaves the badge out: \(screen)")
                #expect(screen["colour"] as? String == "rgb(138, 75, 0)", "the away badge is not amber: \(screen)")
                // No video: nothing to mute or hang up, the decision first, and a way out.
                #expect(screen["buttons"] as? [String] == ["Autorizar", "Negar", "Fechar"], "\(screen)")
                #expect(screen["authorize"] as? String == "rgb(10, 107, 45)", "Autorizar is not green: \(screen)")
                #expect(screen["primary"] as? Bool == true, "Autorizar is not the primary button: \(screen)")
                #expect(screen["camera"] as? Bool == false, "a camera was opened for a call without video: \(screen)")
                await browser.screenshot("call-screen-no-video-\(engine)")
                if engine == .chromium {
                    // axe is injected over WebDriver (Chromium's CSP bypass lets it run).
                    try await browser.cdp("Page.setBypassCSP", ["enabled": true])
                    let problems = try await AccessibilityBrowserTests().violations(browser, axe: try AccessibilityBrowserTests.axeSource(),
                                                                                    page: "call without video")
                    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
                }

                try await browser.click(css: "#call-actions button[data-action=authorize]")
                try await visitorSees(server, token: visit.token, "authorize")
                try await browser.waitFor("the visit's item to say it was authorized") {
                    (try await browser.execute("return document.querySelector(arguments[0])?.textContent || ''",
                                               ["li.visit[data-id='\(visit.id)'] .message"]) as? String ?? "").contains("Visita autorizada")
                }
            }
        }
    }

    @Test("A browser without WebRTC shows the call screen as unavailable even when the server has a relay: no camera opens, and Maria still decides there",
          arguments: BrowserEngine.underTest)
    func browserWithoutWebRTC(engine: BrowserEngine) async throws {
        // A relay is configured (nothing listens there: no connection is ever tried), so
        // the server says video can connect; only the browser cannot.
        try await TestServer.with(["--demo", "--turn-url", "turn:127.0.0.1:3478", "--turn-secret", "call-screen-test"]) { server in
            try await WebDriver.with(engine) { browser in
                if engine == .chromium {
                    // Chromium has WebRTC: the page gets a browser without it.
                    try await browser.cdp("Page.addScriptToEvaluateOnNewDocument", ["source": """
                        delete window.RTCPeerConnection; delete window.webkitRTCPeerConnection;
                        """])
                }
                let visit = try await ringAndAnswer(server, browser, base: "http://\(engine.loopbackHost):\(server.port)",
                                                    name: "Visitante Sem Vídeo")
                try #require(try await browser.execute("return typeof window.RTCPeerConnection") as? String == "undefined",
                             "this browser has WebRTC: the test needs one without it")
                try await browser.waitFor("the call screen to say video is unavailable in this browser") {
                    try await browser.execute("return document.getElementById('call').dataset.state") as? String == "unavailable"
                }
                try await browser.waitForText("#call-status", containing: "Vídeo indisponível neste navegador")
                let screen = try await browser.execute(Self.screen) as? [String: Any] ?? [:]
                #expect(screen["who"] as? String == "Visitante Sem Vídeo · A-101", "\(screen)")
                #expect(screen["heard"] as? String == "Localização do visitante: A 340m da portaria", "\(screen)")
                #expect(screen["buttons"] as? [String] == ["Autorizar", "Negar", "Fechar"], "\(screen)")
                #expect(screen["camera"] as? Bool == false, "a camera was opened for a call without video: \(screen)")

                try await browser.click(css: "#call-actions button[data-action=deny]")
                try await visitorSees(server, token: visit.token, "deny")
            }
        }
    }
}
