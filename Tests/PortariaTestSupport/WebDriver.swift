import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

// A small W3C WebDriver client for the browser tests: it starts Debian's `chromedriver`
// on a free loopback port, opens one headless Chromium session (fake camera and
// microphone, no network but loopback) and speaks the protocol's JSON over HTTP/1.1 on
// the harness's raw loopback connections (FoundationNetworking rejects chromedriver's
// header lines, which have no space after the colon: "Failed writing header"). `close()` always ends the session and kills chromedriver and any Chromium
// of this session's profile, by process id.

/// Where Chromium and chromedriver are (`PORTARIA_CHROMIUM`, `PORTARIA_CHROMEDRIVER`, else PATH).
package enum BrowserBinaries {
    package static func find(_ names: [String], environment key: String) -> String? {
        if let path = ProcessInfo.processInfo.environment[key], !path.isEmpty {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            + ["/usr/bin", "/usr/lib/chromium"]
        for directory in directories {
            for name in names where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                return "\(directory)/\(name)"
            }
        }
        return nil
    }

    package static let chromium = find(["chromium", "chromium-browser", "google-chrome"], environment: "PORTARIA_CHROMIUM")
    package static let chromedriver = find(["chromedriver"], environment: "PORTARIA_CHROMEDRIVER")

    /// True when both are installed; otherwise prints why the browser tests are skipped.
    package static let available: Bool = {
        var missing: [String] = []
        if chromium == nil { missing.append("chromium") }
        if chromedriver == nil { missing.append("chromedriver (Debian: chromium-driver)") }
        if !missing.isEmpty {
            print("Browser tests skipped: \(missing.joined(separator: " and ")) not found on PATH "
                  + "(scripts/bootstrap installs them; or set PORTARIA_CHROMIUM / PORTARIA_CHROMEDRIVER).")
        }
        return missing.isEmpty
    }()
}

package struct WebDriverError: Error, CustomStringConvertible {
    package var error: String
    package var message: String
    package var description: String { "WebDriver \(error): \(message)" }
}

/// One WebDriver server process (chromedriver, or WebKitWebDriver under its own Xvfb) with
/// one browser session.
package final class WebDriver: @unchecked Sendable {
    package let engine: BrowserEngine
    package let driver: Process
    package let port: UInt16
    package let sessionID: String
    package let profile: URL
    /// The X server a WebKit session draws on (nil for headless Chromium).
    let display: Process?

    init(engine: BrowserEngine = .chromium, driver: Process, port: UInt16, sessionID: String, profile: URL, display: Process? = nil) {
        self.engine = engine
        self.driver = driver
        self.port = port
        self.sessionID = sessionID
        self.profile = profile
        self.display = display
    }

    /// The port from "ChromeDriver was started successfully on port 36973."
    static func announcedPort(in output: String) -> UInt16? {
        guard let range = output.range(of: "started successfully on port ") else { return nil }
        return UInt16(output[range.upperBound...].prefix { $0.isNumber })
    }

    /// Starts `engine`'s driver and a session sized like a cheap phone.
    package static func start(_ engine: BrowserEngine) async throws -> WebDriver {
        switch engine {
        case .chromium: return try await start()
        case .webkit: return try await startWebKit()
        }
    }

    /// Starts chromedriver and a headless Chromium session sized like a cheap phone.
    package static func start() async throws -> WebDriver {
        guard let chromedriver = BrowserBinaries.chromedriver, let chromium = BrowserBinaries.chromium else {
            throw HarnessError("chromium or chromedriver is not installed")
        }
        let profile = try makeTemporaryDirectory("chromium")

        var lastError: Error = HarnessError("chromedriver did not start")
        for _ in 0..<3 {
            // `--port=0`: chromedriver binds a port the kernel picks and prints it, so no
            // other test can take it between our choosing and its binding.
            let stdoutPath = profile.appendingPathComponent("chromedriver.stdout").path
            _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: chromedriver)
            process.arguments = ["--port=0", "--allowed-ips=127.0.0.1", "--log-level=WARNING",
                                 "--log-path=\(profile.appendingPathComponent("chromedriver.log").path)"]
            process.standardOutput = FileHandle(forWritingAtPath: stdoutPath) ?? FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            var port: UInt16 = 0
            var problem = "no answer"
            let ready = await eventually(within: .seconds(15), every: .milliseconds(50)) {
                guard process.isRunning else { return true }
                if port == 0 {
                    guard let announced = Self.announcedPort(in: (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "") else {
                        problem = "no port announced on stdout"
                        return false
                    }
                    port = announced
                }
                do {
                    let value = try await Self.send(port: port, "GET", "/status", nil, timeout: .seconds(2))
                    guard let object = value as? [String: Any] else {
                        problem = "unexpected /status: \(String(describing: value))"
                        return false
                    }
                    return object["ready"] as? Bool == true
                } catch {
                    problem = "\(error)"
                    return false
                }
            }
            guard ready, process.isRunning else {
                Self.terminate(process)
                lastError = HarnessError("chromedriver did not become ready on port \(port) (\(problem))")
                continue
            }
            do {
                let sessionID = try await Self.newSession(port: port, chromium: chromium, profile: profile)
                return WebDriver(driver: process, port: port, sessionID: sessionID, profile: profile)
            } catch {
                lastError = error
                Self.terminate(process)
                Self.killBrowsers(profile: profile)
            }
        }
        try? FileManager.default.removeItem(at: profile)
        throw lastError
    }

    private static func newSession(port: UInt16, chromium: String, profile: URL) async throws -> String {
        let arguments = [
            "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
            "--user-data-dir=\(profile.appendingPathComponent("profile").path)",
            "--window-size=412,915", "--lang=pt-BR",
            // Camera and microphone: Chromium's synthetic devices, permission granted.
            "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            // Nothing leaves the machine: every non-loopback host resolves to nothing and
            // any connection would go to a dead proxy; Chromium's own background traffic is off.
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "--proxy-server=http://127.0.0.1:9",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--no-pings",
            "--disable-default-apps", "--disable-extensions", "--no-first-run", "--no-default-browser-check",
            "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
            "--metrics-recording-only", "--password-store=basic", "--use-mock-keychain",
        ]
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "pageLoadStrategy": "normal",
                    "goog:chromeOptions": ["binary": chromium, "args": arguments],
                    "goog:loggingPrefs": ["browser": "ALL"],
                    "timeouts": ["implicit": 0, "pageLoad": 30000, "script": 30000],
                ] as [String: Any],
            ],
        ]
        let value = try await send(port: port, "POST", "/session", capabilities, timeout: .seconds(60))
        guard let object = value as? [String: Any], let id = object["sessionId"] as? String else {
            throw HarnessError("no sessionId in the new-session answer: \(String(describing: value))")
        }
        return id
    }

    /// One WebDriver request on a fresh loopback connection; returns the answer's `value`.
    /// The timeout only detects a driver that hangs: with eight browser tests sharing two
    /// cores, a WebKit command once went unanswered for 30 s.
    static func send(port: UInt16, _ method: String, _ path: String, _ body: Any?,
                             timeout: Duration = .seconds(90)) async throws -> Any? {
        var payload: [UInt8] = []
        if let body {
            payload = Array(try JSONSerialization.data(withJSONObject: body))
        } else if method == "POST" {
            payload = Array("{}".utf8)
        }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if !payload.isEmpty || method == "POST" {
            head += "Content-Type: application/json; charset=utf-8\r\nContent-Length: \(payload.count)\r\n"
        }
        let bytes = Array((head + "\r\n").utf8) + payload
        let shown = describe(body)
        let response = try await offload { () -> RawResponse in
            let connection = try RawConnection(port: port)
            defer { connection.close() }
            try connection.send(bytes)
            // A driver that never answers names the command it left hanging (the bare
            // socket timeout says only that something did).
            let response: RawResponse?
            do {
                response = try connection.readResponse(timeout: timeout)
            } catch let error as HarnessError {
                throw HarnessError("\(method) \(path) \(shown): \(error.description)")
            }
            guard let response else {
                throw HarnessError("the WebDriver server closed the connection on \(method) \(path)")
            }
            return response
        }
        let object = response.body.isEmpty ? nil
            : try? JSONSerialization.jsonObject(with: Data(response.body), options: [.fragmentsAllowed])
        let value = (object as? [String: Any])?["value"]
        if response.status != 200 {
            let details = value as? [String: Any]
            throw WebDriverError(error: details?["error"] as? String ?? "HTTP \(response.status)",
                                 message: details?["message"] as? String ?? String(response.text.prefix(500)))
        }
        return value is NSNull ? nil : value
    }

    /// A command's body, short enough for an error message (scripts cut to their start).
    static func describe(_ body: Any?) -> String {
        guard let body, let data = try? JSONSerialization.data(withJSONObject: body) else { return "" }
        return String(decoding: data.prefix(160), as: UTF8.self)
    }

    // MARK: Commands

    @discardableResult
    package func command(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Any? {
        try await Self.send(port: port, method, "/session/\(sessionID)\(path)", body)
    }

    package func navigate(_ url: String) async throws {
        try await command("POST", "/url", ["url": url])
    }

    /// Runs a synchronous script (`return …;`) in the page and returns its value.
    @discardableResult
    package func execute(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await command("POST", "/execute/sync", ["script": script, "args": arguments])
    }

    /// Runs an asynchronous script in the page: the script calls its last argument
    /// (`arguments[arguments.length - 1]`) with the value to return.
    @discardableResult
    package func executeAsync(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await command("POST", "/execute/async", ["script": script, "args": arguments])
    }

    /// A Chrome DevTools Protocol command through chromedriver's vendor endpoint (Chromium only).
    @discardableResult
    package func cdp(_ name: String, _ parameters: [String: Any] = [:]) async throws -> Any? {
        guard engine == .chromium else { throw HarnessError("\(name): the DevTools protocol is Chromium's, not \(engine)'s") }
        return try await command("POST", "/goog/cdp/execute", ["cmd": name, "params": parameters])
    }

    package static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    package func find(css selector: String) async throws -> String {
        try await find(using: "css selector", selector)
    }

    package func find(xpath: String) async throws -> String {
        try await find(using: "xpath", xpath)
    }

    private func find(using strategy: String, _ selector: String) async throws -> String {
        let value = try await command("POST", "/element", ["using": strategy, "value": selector])
        guard let object = value as? [String: Any], let id = object[Self.elementKey] as? String else {
            throw HarnessError("no element for \(selector): \(String(describing: value))")
        }
        return id
    }

    package func click(_ element: String) async throws {
        try await command("POST", "/element/\(element)/click")
    }

    package func type(_ element: String, _ text: String) async throws {
        try await command("POST", "/element/\(element)/value", ["text": text])
    }

    package func text(_ element: String) async throws -> String {
        (try await command("GET", "/element/\(element)/text") as? String) ?? ""
    }

    /// Waits for an element to exist, be displayed, be enabled and be still, then clicks it
    /// (a real pointer click). Still: the resident app refuses a tap on a list item that has
    /// just moved under the finger (`data-settles-at`, decision 0057), as a person would
    /// not tap what they have not seen yet. A list that moves between the wait and the
    /// click gets the tap refused (`data-tap-refused`): then it waits and taps again, as a
    /// person who read "A lista acabou de mudar" would.
    package func click(css selector: String, within timeout: Duration = .seconds(10)) async throws {
        for tap in 1...3 {
            try await waitFor("a visible, still \(selector)", within: timeout) {
                try await self.execute("""
                    const e = document.querySelector(arguments[0]);
                    if (!e || e.offsetParent === null || e.disabled) return false;
                    const moved = e.closest('[data-settles-at]');
                    if (moved) delete moved.dataset.tapRefused;
                    return !moved || performance.now() >= Number(moved.dataset.settlesAt);
                    """, [selector]) as? Bool == true
            }
            // The page may redraw between finding and clicking: find it again then.
            for attempt in 1...3 {
                do {
                    try await click(try await find(css: selector))
                    break
                } catch let error as WebDriverError where error.error == "stale element reference" && attempt < 3 {
                    continue
                }
            }
            let refused = try await execute("""
                const e = document.querySelector(arguments[0]);
                const item = e && e.closest('[data-settles-at]');
                return !!item && item.dataset.tapRefused === '1';
                """, [selector]) as? Bool == true
            if !refused || tap == 3 { return }
        }
    }

    /// The trimmed text of the first element matching `selector`, or nil when there is none or it is hidden.
    package func visibleText(_ selector: String) async throws -> String? {
        try await execute("""
            const e = document.querySelector(arguments[0]);
            if (!e || e.closest('[hidden]')) return null;
            return e.textContent.trim();
            """, [selector]) as? String
    }

    /// Polls `condition` until it holds; throws with `what` (and the page's state) at the deadline.
    package func waitFor(_ what: String, within timeout: Duration = .seconds(15), every interval: Duration = .milliseconds(100),
                 _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        var lastError: Error?
        while true {
            do {
                if try await condition() { return }
            } catch {
                lastError = error
            }
            if ContinuousClock.now >= deadline {
                let page = (try? await execute("return document.querySelector('main')?.innerText ?? ''") as? String) ?? ""
                throw HarnessError("timed out after \(timeout) waiting for \(what)"
                                   + (lastError.map { " (last error: \($0))" } ?? "")
                                   + "\n--- page ---\n\(page.prefix(1500))\n--- console ---\n\(await consoleLog())")
            }
            try await Task.sleep(for: interval)
        }
    }

    /// Waits until the element's visible text contains `expected`; returns the text.
    @discardableResult
    package func waitForText(_ selector: String, containing expected: String, within timeout: Duration = .seconds(15)) async throws -> String {
        var seen = ""
        try await waitFor("\(selector) to show “\(expected)”", within: timeout) {
            seen = try await self.visibleText(selector) ?? ""
            return seen.contains(expected)
        }
        return seen
    }

    /// Saves a PNG of the viewport as `name.png` in `PORTARIA_SCREENSHOT_DIR`, when set
    /// (to look at the page as a phone shows it; tests never depend on it).
    package func screenshot(_ name: String) async {
        guard let directory = ProcessInfo.processInfo.environment["PORTARIA_SCREENSHOT_DIR"], !directory.isEmpty,
              let encoded = try? await command("GET", "/screenshot") as? String,
              let data = Data(base64Encoded: encoded) else { return }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? data.write(to: URL(fileURLWithPath: directory).appendingPathComponent("\(name).png"))
    }

    /// The browser console so far (for failure messages; Chromium keeps it, WebKit does not).
    package func consoleLog() async -> String {
        guard engine == .chromium, let entries = try? await command("POST", "/se/log", ["type": "browser"]) as? [[String: Any]] else { return "" }
        return entries.map { "\($0["level"] ?? "") \($0["message"] ?? "")" }.joined(separator: "\n")
    }

    // MARK: Teardown

    /// Ends the session and stops chromedriver and every Chromium process of this profile.
    package func close() async {
        _ = try? await command("DELETE", "")
        // MiniBrowser and its web processes are the driver's descendants: found before the
        // driver goes (its children are then reparented), killed by pid.
        let descendants = engine == .webkit ? Self.descendants(of: driver.processIdentifier) : []
        Self.terminate(driver)
        for pid in descendants { kill(pid, SIGKILL) }
        if engine == .chromium { Self.killBrowsers(profile: profile) }
        if let display { Self.terminate(display) }
        try? FileManager.default.removeItem(at: profile)
    }

    package static func terminate(_ process: Process) {
        defer { reap(process) }
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Chromium processes started with this session's profile folder (found through
    /// /proc, killed by pid): what is left if chromedriver died before quitting it.
    package static func killBrowsers(profile: URL) {
        let marker = "--user-data-dir=\(profile.appendingPathComponent("profile").path)"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return }
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(),
                  let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.contains(marker) { kill(pid, SIGKILL) }
        }
    }

    /// Runs `body` with a fresh browser of `engine` and always closes it.
    package static func with(_ engine: BrowserEngine = .chromium, _ body: (WebDriver) async throws -> Void) async throws {
        let browser = try await start(engine)
        do {
            try await body(browser)
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }
}
