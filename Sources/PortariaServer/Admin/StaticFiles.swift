import Foundation
import PortariaCore

/// Serves the static pages under `Web/` (`/admin/` → `Web/admin/index.html`).
///
/// Only single path segments of letters, digits, `-`, `_` and `.` (not leading) are served,
/// so `..`, encoded slashes and dot-files cannot reach outside the folder.
struct StaticFiles {
    let root: String

    static let types = ["html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
                        "css": "text/css; charset=utf-8", "svg": "image/svg+xml", "png": "image/png",
                        "json": "application/json", "ico": "image/x-icon"]

    /// `Web/` next to the working directory or the executable's checkout.
    static func defaultRoot() -> String {
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [FileManager.default.currentDirectoryPath + "/Web",
                          executable.appendingPathComponent("../../../Web").standardized.path,
                          executable.appendingPathComponent("../../Web").standardized.path,
                          "/usr/share/portaria/Web"]
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/admin/index.html") } ?? candidates[0]
    }

    static func isSafeName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 100 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-_.".unicodeScalars.contains($0) }
            && !name.contains("..")
    }

    func register(on router: Router, section: String) {
        let root = root
        let serve: @Sendable (String) throws -> HTTPResponse = { name in
            guard Self.isSafeName(name) else { throw HTTPError.notFound() }
            let path = "\(root)/\(section)/\(name)"
            guard let data = FileManager.default.contents(atPath: path) else { throw HTTPError.notFound() }
            let type = Self.types[(name as NSString).pathExtension.lowercased()] ?? "application/octet-stream"
            return HTTPResponse(status: 200, headers: [
                ("Content-Type", type), ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"),
                // The admin page talks only to this origin and loads nothing from elsewhere.
                ("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"),
                ("Referrer-Policy", "no-referrer"),
            ], body: Array(data))
        }
        // The router sees `/admin` and `/admin/` as one route; relative URLs in the page
        // need the slash, so the bare form is redirected.
        router.get("/\(section)") { request in
            guard request.path.hasSuffix("/") else { return HTTPResponse(status: 301, headers: [("Location", "/\(section)/")]) }
            return try serve("index.html")
        }
        router.get("/\(section)/{file}") { request in try serve(try request.parameter("file")) }
    }
}
