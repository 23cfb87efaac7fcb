import Foundation
import Testing

/// `Web/` as the server serves it: routes, content types, headers, and every way out of
/// the folder refused. Plain HTTP, no browser.
@Suite("Static pages (Web/)")
struct StaticFilesTests {
    @Test("The gate page is served for any token, with its assets, a strict CSP and no-referrer")
    func gatePageAndHeaders() async throws {
        try await TestServer.with(["--demo"]) { server in
            let page = try await server.request("GET", "/gate/demo-gate")
            #expect(page.status == 200)
            #expect(page.header("content-type") == "text/html; charset=utf-8")
            #expect(page.text.contains("<html lang=\"pt-BR\">"))
            let csp = page.header("content-security-policy") ?? ""
            #expect(csp.contains("default-src 'none'"), "\(csp)")
            #expect(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "\(csp)")
            #expect(csp.contains("frame-ancestors 'none'"), "\(csp)")
            #expect(page.header("referrer-policy") == "no-referrer")
            #expect(page.header("x-content-type-options") == "nosniff")
            #expect(page.header("cache-control") == "no-cache")

            // Any token gets the same page (the page itself asks the API about the token).
            #expect(try await server.request("GET", "/gate/some-other-token").status == 200)

            for (path, type) in [("/gate/assets/gate.js", "text/javascript; charset=utf-8"),
                                 ("/gate/assets/gate.css", "text/css; charset=utf-8")] {
                let asset = try await server.request("GET", path)
                #expect(asset.status == 200, "\(path)")
                #expect(asset.header("content-type") == type, "\(path)")
            }
            // GET only.
            #expect(try await server.request("POST", "/gate/demo-gate").status == 405)
            #expect(try await server.request("DELETE", "/gate/assets/gate.js").status == 405)
        }
    }

    @Test("Traversal, encoded slashes, dot-files, unknown types and symlinks out of the folder are 404")
    func noWayOut() async throws {
        let root = try makeTemporaryDirectory("web")
        defer { try? FileManager.default.removeItem(at: root) }
        let outside = try makeTemporaryDirectory("outside")
        defer { try? FileManager.default.removeItem(at: outside) }
        let manager = FileManager.default
        for folder in ["gate/assets", "app/lib"] {
            try manager.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try Data("<!doctype html><title>gate</title>".utf8).write(to: root.appendingPathComponent("gate/index.html"))
        try Data("export {};".utf8).write(to: root.appendingPathComponent("gate/assets/ok.js"))
        try Data("<!doctype html><title>app</title>".utf8).write(to: root.appendingPathComponent("app/index.html"))
        try Data("body{}".utf8).write(to: root.appendingPathComponent("app/lib/app.css"))
        try Data("secret".utf8).write(to: root.appendingPathComponent("gate/assets/.env.js"))
        try Data("binary".utf8).write(to: root.appendingPathComponent("gate/assets/tool.sh"))
        try Data("secret".utf8).write(to: outside.appendingPathComponent("secret.js"))
        try manager.createSymbolicLink(atPath: root.appendingPathComponent("gate/assets/link.js").path,
                                       withDestinationPath: outside.appendingPathComponent("secret.js").path)
        try manager.createSymbolicLink(atPath: root.appendingPathComponent("app/out").path, withDestinationPath: outside.path)

        try await TestServer.with(["--web-dir", root.path]) { server in
            #expect(try await server.request("GET", "/gate/assets/ok.js").status == 200)
            #expect(try await server.request("GET", "/app/").text.contains("<title>app</title>"))
            #expect(try await server.request("GET", "/app/lib/app.css").header("content-type") == "text/css; charset=utf-8")
            let bare = try await server.request("GET", "/app")
            #expect(bare.status == 301 && bare.header("location") == "/app/")

            for path in ["/gate/assets/..%2f..%2fapp%2findex.html", "/gate/assets/%2e%2e", "/gate/assets/..",
                         "/gate/assets/.env.js", "/gate/assets/tool.sh", "/gate/assets/link.js", "/gate/assets/missing.js",
                         "/gate/assets/%252e%252e%252fsecret.js",
                         "/app/out/secret.js", "/app/..%2f..%2fetc%2fpasswd", "/app/lib/..%5capp.css", "/admin/"] {
                let response = try await server.request("GET", path)
                #expect(response.status == 404, "\(path) answered \(response.status)")
                #expect(!response.text.contains("secret"), "\(path) leaked the file")
            }
            // libmicrohttpd ends the decoded path at a NUL, so this is ok.js itself, nothing more.
            let truncated = try await server.request("GET", "/gate/assets/ok.js%00.js")
            #expect(truncated.status == 404 || truncated.text == "export {};")
        }
    }

    @Test("Web/shared/tokens.css is what scripts/make-tokens generates from design/tokens.json, and is served")
    func designTokensAreFresh() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("scripts/make-tokens").path, "--check"]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        // Not waitUntilExit(): on Linux it spins a run loop on this cooperative thread.
        #expect(await waitForExit(process, within: .seconds(30)))
        let message = String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(message)")
        try await TestServer.with(["--demo"]) { server in
            let css = try await server.request("GET", "/shared/tokens.css")
            #expect(css.status == 200 && css.header("content-type") == "text/css; charset=utf-8")
            #expect(css.text.contains("--authorize: #0a6b2d;"))
        }
    }
}
