import Foundation
import PortariaTestSupport
import Testing

/// Logging into the resident app as Brazilians do, in headless Chromium against the real
/// `portaria serve --demo`, and in WebKit: the phone typed with its area code only.
@Suite("Resident web app login in Chromium and WebKit", .serialized, .requires(.chromium))
struct ResidentAppLoginTests {
    @Test("SMS login with “(11) 99999-0001”: the app shows +55 11 99999-0001 before sending, the code goes there and Maria gets in",
          arguments: BrowserEngine.underTest)
    func nationalPhoneNumber(engine: BrowserEngine) async throws {
        try await TestServer.with(["--demo"]) { server in
            try await WebDriver.with(engine) { browser in
                try await browser.navigate("http://\(engine.loopbackHost):\(server.port)/app/")
                try await browser.click(css: "#login-mode")
                try await browser.waitFor("the phone field") { try await browser.visibleText("#phone") != nil }
                try await browser.type(try await browser.find(css: "#phone"), "(11) 99999-0001")
                // Before anything is sent, the number the SMS will go to.
                let preview = try await browser.waitForText("#phone-preview", containing: "+55")
                #expect(preview == "O código será enviado para +55 11 99999-0001.", "\(preview)")
                try await browser.click(css: "#login")
                try await browser.waitForText("#code-sent", containing: "Enviamos um código por SMS para")
                let code = try await SecuritySuites.OTPAbuseTests.loggedCode(server, phone: "+5511999990001")
                try await browser.type(try await browser.find(css: "#code"), code)
                try await browser.click(css: "#login")
                try await browser.waitFor("the company choice") { try await browser.visibleText("#company") != nil }
                try await browser.click(try await browser.find(xpath: "//select[@id='company']/option[text()='Residencial Demo']"))
                try await browser.click(css: "#login")
                try await browser.waitForText("#title", containing: "Residencial Demo")
            }
        }
    }
}
