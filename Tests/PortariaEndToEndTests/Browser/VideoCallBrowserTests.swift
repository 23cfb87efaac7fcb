import Foundation
import PortariaTestSupport
import Testing

/// The video call end to end: two headless Chromium instances (each with Chromium's fake
/// camera and microphone) against the real `portaria serve --demo` — the visitor's gate
/// page and Maria's web app — with signaling over `/v1/realtime`. Media flows over loopback
/// host candidates, which the server forwards to the visitor only with
/// `--calls-allow-direct` (decision 0066); without it and without TURN, both pages say video
/// is unavailable and the decision goes on.
@Suite("Video call between the gate page and the resident app in Chromium", .serialized,
       .requires(.chromium))
struct VideoCallBrowserTests {
    /// True once the `<video id>` shows decoded frames of the other side.
    static let remotePlaying = """
        const v = document.getElementById(arguments[0]);
        return !!v && !!v.srcObject && v.videoWidth > 0 && v.readyState >= 2;
        """

    /// True when `#call-local` sits over the remote video as a mirrored corner preview.
    static let cornerPreview = """
        const style = getComputedStyle(document.getElementById('call-local'));
        return style.position === 'absolute' && style.transform === 'matrix(-1, 0, 0, 1, 0, 0)';
        """

    /// Maria logs in, the visitor rings A-101 as "Visitante Vídeo", and Maria taps Atender;
    /// returns the visit id once she did.
    static func ringAndAnswer(origin: String, gate: WebDriver, app: WebDriver) async throws -> String {
        // Maria's app first, so its socket (with this browser's device id) is live.
        try await app.navigate("\(origin)/app/")
        try await app.type(try await app.find(css: "#username"), "maria")
        try await app.type(try await app.find(css: "#password"), "demo1234")
        try await app.click(css: "#login")
        try await app.waitFor("the company choice") { try await app.visibleText("#company") != nil }
        try await app.click(try await app.find(xpath: "//select[@id='company']/option[text()='Residencial Demo']"))
        try await app.click(css: "#login")
        try await app.waitForText("#title", containing: "Residencial Demo")
        try await app.waitFor("the app's realtime socket") {
            try await app.execute("return document.body.dataset.connection") as? String == "live"
        }

        // The visitor rings A-101 from the gate, 340 m north of it.
        try await gate.navigate("\(origin)/gate/demo-gate")
        try await GateBrowserTests().placeBrowser(gate, origin: origin, lat: GateBrowserTests.gate.lat + 340 / 111_320,
                                                  lon: GateBrowserTests.gate.lon, accuracy: 12)
        try await gate.click(css: "#location-button")
        try await gate.waitForText("#location-status", containing: "precisão de 12 m")
        try await gate.waitFor("the unit list") {
            try await gate.execute("return document.querySelectorAll('#unit option').length") as? Int == 4
        }
        try await gate.click(try await gate.find(xpath: "//select[@id='unit']/option[text()='A-101']"))
        try await gate.type(try await gate.find(css: "#name"), "Visitante Vídeo")
        try await gate.click(css: "#ring")
        try await gate.waitForText("#visit-state", containing: "Chamando")
        try await gate.waitFor("the gate's realtime socket") {
            try await gate.execute("return document.body.dataset.connection") as? String == "live"
        }

        // Maria sees it ringing and taps Atender.
        var visitID = ""
        try await app.waitFor("the ringing visit with its Atender button") {
            visitID = try await app.execute("""
                const item = Array.from(document.querySelectorAll('li.visit'))
                  .find((li) => li.querySelector('.name')?.textContent === arguments[0]);
                return item && item.querySelector('button[data-action=answer]') ? item.dataset.id : '';
                """, ["Visitante Vídeo"]) as? String ?? ""
            return !visitID.isEmpty
        }
        try await app.click(css: "li.visit[data-id='\(visitID)'] button[data-action=answer]")
        return visitID
    }

    @Test("Without TURN and without --calls-allow-direct: Maria answers, both pages say video is unavailable without opening a camera, and she still decides from the call panel")
    func videoUnavailableWithoutRelay() async throws {
        try await TestServer.with(["--demo"]) { server in
            let origin = "http://127.0.0.1:\(server.port)"
            try await WebDriver.with { gate in
                try await WebDriver.with { app in
                    _ = try await Self.ringAndAnswer(origin: origin, gate: gate, app: app)
                    try await gate.waitForText("#visit-state", containing: "Atendido")
                    try await gate.waitFor("the gate page's call section to say unavailable") {
                        try await gate.execute("return document.getElementById('call').dataset.state") as? String == "unavailable"
                    }
                    try await gate.waitForText("#call-status", containing: "Vídeo indisponível")
                    try await app.waitFor("the app's call panel to say unavailable") {
                        try await app.execute("return document.getElementById('call').dataset.state") as? String == "unavailable"
                    }
                    try await app.waitForText("#call-status", containing: "Vídeo indisponível")
                    for page in [gate, app] {
                        #expect(try await page.execute("return document.getElementById('call-local').srcObject === null") as? Bool == true,
                                "a camera was opened for a call that cannot connect")
                    }
                    await gate.screenshot("call-unavailable-gate")
                    await app.screenshot("call-unavailable-app")
                    try await app.click(css: "#call-actions button[data-action=authorize]")
                    try await gate.waitForText("#visit-state", containing: "Autorizado — pode entrar", within: .seconds(10))
                }
            }
        }
    }

    @Test("The visitor rings A-101, Maria answers in the app, both see each other, then she authorizes and the call ends")
    func visitorAndResidentSeeEachOther() async throws {
        try await TestServer.with(["--demo", "--calls-allow-direct"]) { server in
            let origin = "http://127.0.0.1:\(server.port)"
            try await WebDriver.with { gate in
                try await WebDriver.with { app in
                    let visitID = try await Self.ringAndAnswer(origin: origin, gate: gate, app: app)
                    try await gate.waitForText("#visit-state", containing: "Atendido")

                    // Both sides end up playing the other's (fake) camera.
                    try await gate.waitFor("the resident's video on the gate page", within: .seconds(25), every: .milliseconds(250)) {
                        try await gate.execute(Self.remotePlaying, ["call-remote"]) as? Bool == true
                    }
                    try await app.waitFor("the visitor's video in the app", within: .seconds(25), every: .milliseconds(250)) {
                        try await app.execute(Self.remotePlaying, ["call-remote"]) as? Bool == true
                    }
                    try await app.waitFor("the app's call to be live") {
                        try await app.execute("return document.getElementById('call').dataset.state") as? String == "live"
                    }
                    #expect(try await gate.execute("return document.getElementById('call-local').srcObject !== null") as? Bool == true,
                            "the visitor sees their own preview")
                    // Both pages lay the videos out with the one shared stylesheet
                    // (Web/shared/call.css): the own camera is a mirrored corner preview.
                    for page in [gate, app] {
                        #expect(try await page.execute(Self.cornerPreview) as? Bool == true, "the own camera is the corner preview")
                    }
                    await gate.screenshot("call-gate")
                    await app.screenshot("call-app")
                    // The spec's call screen: the visitor's video fills the screen; over it the
                    // name, the unit and the geofence badge, which a screen reader hears too.
                    let screen = try await app.execute("""
                        const r = document.getElementById('call-remote').getBoundingClientRect();
                        const badge = document.getElementById('call-badge');
                        const hidden = [...badge.querySelectorAll('[aria-hidden=true]')].map((e) => e.textContent).join('');
                        return { full: Math.round(r.width) === window.innerWidth && Math.round(r.height) === window.innerHeight,
                                 who: document.getElementById('call-who').textContent, badge: badge.textContent,
                                 status: badge.dataset.status, heard: badge.textContent.replace(hidden, '').trim(),
                                 colour: getComputedStyle(badge).backgroundColor,
                                 authorize: getComputedStyle(document.querySelector('#call-actions button[data-action=authorize]')).backgroundColor };
                        """) as? [String: Any] ?? [:]
                    #expect(screen["full"] as? Bool == true, "the visitor's video does not fill the screen: \(screen)")
                    #expect(screen["who"] as? String == "Visitante Vídeo · A-101", "\(screen)")
                    #expect((screen["badge"] as? String ?? "").hasSuffix("⚠ A 340m da portaria"), "\(screen)")
                    #expect(screen["status"] as? String == "away", "\(screen)")
                    #expect(screen["heard"] as? String == "Localização do visitante: A 340m da portaria", "\(screen)")
                    #expect(screen["colour"] as? String == "rgb(138, 75, 0)", "the away badge is not amber: \(screen)")
                    #expect(screen["authorize"] as? String == "rgb(10, 107, 45)", "Autorizar is not green: \(screen)")
                    try await app.cdp("Page.setBypassCSP", ["enabled": true])
                    let problems = try await AccessibilityBrowserTests().violations(app, axe: try AccessibilityBrowserTests.axeSource(), page: "call")
                    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
                    // Mudo turns Maria's microphone off, and on again.
                    try await app.click(css: "#call-mute")
                    #expect(try await app.execute("""
                        const s = document.getElementById('call-local').srcObject;
                        return document.getElementById('call-mute').getAttribute('aria-pressed') === 'true'
                          && s.getAudioTracks().length > 0 && s.getAudioTracks().every((t) => !t.enabled);
                        """) as? Bool == true, "Mudo did not silence the microphone")
                    try await app.click(css: "#call-mute")
                    #expect(try await app.execute("return document.getElementById('call-local').srcObject.getAudioTracks().every((t) => t.enabled)") as? Bool == true)

                    // During the call Maria authorizes inside the call, without leaving it.
                    #expect(try await app.execute("return [...document.querySelectorAll('#call-actions button')].map(b => b.textContent)")
                            as? [String] == ["Autorizar", "Negar"])
                    try await app.click(css: "#call-actions button[data-action=authorize]")
                    try await gate.waitForText("#visit-state", containing: "Autorizado — pode entrar", within: .seconds(10))
                    try await app.waitForText("li.visit[data-id='\(visitID)'] .message", containing: "Visita autorizada")

                    // The call is over on both sides: state ended, camera and microphone released.
                    let ended = """
                        const section = document.getElementById('call');
                        return section.dataset.state === 'ended' && document.getElementById('call-local').srcObject === null
                          && document.getElementById('call-remote').srcObject === null;
                        """
                    try await gate.waitFor("the call to end on the gate page", within: .seconds(10)) {
                        try await gate.execute(ended) as? Bool == true
                    }
                    try await app.waitFor("the call to end in the app", within: .seconds(10)) {
                        try await app.execute(ended) as? Bool == true
                    }
                    await gate.screenshot("call-gate-authorized")
                }
            }
        }
    }
}
