import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The second browser engine of the browser tests: WebKit, the engine of every browser on
// an iPhone, through Debian's `webkit2gtk-driver` (WebKitWebDriver driving MiniBrowser),
// drawn on a private Xvfb display (MiniBrowser has no headless mode of its own). A test
// takes the engine as its argument (`BrowserEngine.underTest`) and runs the same steps in
// both; only what has no WebKit counterpart (the DevTools protocol) is Chromium's alone.

/// A browser engine the browser tests can drive.
package enum BrowserEngine: String, Sendable, CustomStringConvertible, CaseIterable {
    case chromium
    case webkit

    package var description: String { rawValue }

    /// The host a test page is opened at. WebKitGTK treats only `localhost` (not
    /// 127.0.0.1) as a secure context, and the app needs one (`crypto.randomUUID`, camera).
    package var loopbackHost: String { self == .webkit ? "localhost" : "127.0.0.1" }

    /// Whether this engine's driver and browser (and, for WebKit, Xvfb) are installed.
    package var installed: Bool {
        switch self {
        case .chromium: return BrowserBinaries.chromium != nil && BrowserBinaries.chromedriver != nil
        case .webkit: return WebKitBinaries.driver != nil && WebKitBinaries.browser != nil && WebKitBinaries.xvfb != nil
        }
    }

    /// The engines a test runs in: both wherever they are installed. A strict run (CI)
    /// always lists WebKit, so a machine without it fails instead of skipping it
    /// (`casesAvailable`, Requirements.swift).
    package static var underTest: [BrowserEngine] {
        casesAvailable(BrowserEngine.allCases) { $0 == .webkit ? .webkit : nil }
    }
}

/// Where WebKitWebDriver, MiniBrowser and Xvfb are (`PORTARIA_WEBKIT_DRIVER`,
/// `PORTARIA_WEBKIT_BROWSER`, else PATH and Debian's paths).
package enum WebKitBinaries {
    package static let driver = BrowserBinaries.find(["WebKitWebDriver"], environment: "PORTARIA_WEBKIT_DRIVER")
    package static let browser: String? = {
        if let path = ProcessInfo.processInfo.environment["PORTARIA_WEBKIT_BROWSER"], !path.isEmpty {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        for candidate in ["/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser", "/usr/lib/aarch64-linux-gnu/webkit2gtk-4.1/MiniBrowser",
                          "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.0/MiniBrowser", "/usr/lib/aarch64-linux-gnu/webkit2gtk-4.0/MiniBrowser"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        return nil
    }()
    package static let xvfb = BrowserBinaries.find(["Xvfb"], environment: "PORTARIA_XVFB")
}

extension WebDriver {
    /// A port nobody listens on now (the kernel's pick, released for the driver to bind).
    static func unusedLoopbackPort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        defer { Glibc.close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw HarnessError("bind: \(String(cString: strerror(errno)))") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Starts Xvfb on a display it picks itself (`-displayfd`), so parallel runs never collide.
    static func startDisplay(in folder: URL) async throws -> (Process, Int) {
        guard let xvfb = WebKitBinaries.xvfb else { throw HarnessError("Xvfb is not installed (Debian: xvfb)") }
        let output = folder.appendingPathComponent("xvfb.display").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: xvfb)
        process.arguments = ["-displayfd", "1", "-screen", "0", "1024x1024x24", "-nolisten", "tcp"]
        process.standardOutput = FileHandle(forWritingAtPath: output) ?? FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var display: Int?
        _ = await eventually(within: .seconds(15), every: .milliseconds(50)) {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            display = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            return display != nil || !process.isRunning
        }
        guard let display, process.isRunning else {
            terminate(process)
            throw HarnessError("Xvfb did not announce a display")
        }
        return (process, display)
    }

    /// Starts Xvfb, WebKitWebDriver and a MiniBrowser session sized like a cheap phone.
    static func startWebKit() async throws -> WebDriver {
        guard let driverPath = WebKitBinaries.driver, let browser = WebKitBinaries.browser else {
            throw HarnessError("WebKit is not installed: WebKitWebDriver and MiniBrowser come with Debian's webkit2gtk-driver")
        }
        let folder = try makeTemporaryDirectory("webkit")
        let (display, number) = try await startDisplay(in: folder)
        var lastError: Error = HarnessError("WebKitWebDriver did not start")
        for _ in 0..<3 {
            let port = try unusedLoopbackPort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: driverPath)
            process.arguments = ["--port=\(port)", "--host=127.0.0.1"]
            var environment = ProcessInfo.processInfo.environment
            environment["DISPLAY"] = ":\(number)"
            environment["LANG"] = "pt_BR.UTF-8"
            // The browser's own folders (cache, IndexedDB) live in this run's folder.
            environment["HOME"] = folder.path
            environment["XDG_CACHE_HOME"] = folder.appendingPathComponent("cache").path
            environment["XDG_DATA_HOME"] = folder.appendingPathComponent("data").path
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let ready = await eventually(within: .seconds(15), every: .milliseconds(100)) {
                guard process.isRunning else { return true }
                return (try? await send(port: port, "GET", "/status", nil, timeout: .seconds(2))) != nil
            }
            guard ready, process.isRunning else {
                terminate(process)
                lastError = HarnessError("WebKitWebDriver did not become ready on port \(port)")
                continue
            }
            let capabilities: [String: Any] = ["capabilities": ["alwaysMatch": [
                "browserName": "MiniBrowser",
                "pageLoadStrategy": "normal",
                // Camera and microphone: WebKit's mock capture devices (the fake camera's counterpart).
                "webkitgtk:browserOptions": ["binary": browser, "args": [
                    "--automation", "--enable-media-stream=true", "--enable-mock-capture-devices=true",
                    "--enable-webrtc=true", "--enable-media-capabilities=true",
                ]] as [String: Any],
                "timeouts": ["implicit": 0, "pageLoad": 30000, "script": 30000],
            ] as [String: Any]]]
            do {
                let value = try await send(port: port, "POST", "/session", capabilities, timeout: .seconds(90))
                guard let object = value as? [String: Any], let id = object["sessionId"] as? String else {
                    throw HarnessError("no sessionId in the new-session answer: \(String(describing: value))")
                }
                let session = WebDriver(engine: .webkit, driver: process, port: port, sessionID: id, profile: folder, display: display)
                _ = try? await session.command("POST", "/window/rect", ["width": 412, "height": 915])
                return session
            } catch {
                lastError = error
                let children = descendants(of: process.processIdentifier)
                terminate(process)
                for pid in children { kill(pid, SIGKILL) }
            }
        }
        terminate(display)
        try? FileManager.default.removeItem(at: folder)
        throw lastError
    }

    /// Every process below `root` (children, grandchildren …), from /proc.
    static func descendants(of root: Int32) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var parents: [Int32: Int32] = [:]
        for entry in entries {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            // "pid (name) state ppid …": the name may hold spaces, so read after its ")".
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = Int32(fields[1]) { parents[pid] = parent }
        }
        var found: [Int32] = []
        var frontier: Set<Int32> = [root]
        while !frontier.isEmpty {
            let next = parents.filter { frontier.contains($0.value) }.map(\.key)
            found += next
            frontier = Set(next)
        }
        return found
    }
}
