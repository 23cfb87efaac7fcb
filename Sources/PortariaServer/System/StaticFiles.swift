import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PortariaCore

/// Serves the static pages under `Web/` (docs/architecture.md, "Targets and layers"): plain files, GET (and HEAD) only.
///
/// - `/gate/{gate_token}` → `Web/gate/index.html` (the page reads the token from its own
///   URL), `/gate/assets/{file}` → `Web/gate/assets/{file}`;
/// - `/app/` and `/admin/` → their `index.html`, `/{section}/{file}` and
///   `/{section}/{folder}/{file}` → the file.
///
/// Safety: every path segment must be a plain name (letters, digits, `-`, `_`, inner
/// dots; no `..`, no leading dot, nothing an encoded slash could decode to), the file's
/// real path (symlinks resolved) must stay inside the section's real folder, only
/// regular files with a known extension are served, each with a fixed content type.
/// Pages get a strict Content-Security-Policy: scripts, styles and connections to this
/// origin only, no inline script, no framing, no referrer (the gate token is in the URL).
///
/// One `registerAll(on:)` call serves every section.
struct StaticFiles: Sendable {
    let root: String

    /// Sections of `Web/` served when their folder exists. `shared` holds the modules the
    /// others import (the API client, the video call); it has no page of its own.
    static let sections = ["gate", "app", "admin", "shared"]

    /// File types served; anything else answers 404.
    static let types = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon", "json": "application/json",
        "webmanifest": "application/manifest+json", "txt": "text/plain; charset=utf-8",
    ]

    /// Largest file served (the pages are small; a big file here is a mistake).
    static let maxFileSize = 2 << 20

    static let contentSecurityPolicy = [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        // Camera snapshots are shown from blob: URLs; the live preview is a MediaStream.
        "img-src 'self' blob: data:",
        "media-src 'self' blob: mediastream:",
        // 'self' covers ws:/wss: of this origin (CSP level 3).
        "connect-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ].joined(separator: "; ")

    /// `Web/` next to the working directory, or next to the executable's checkout
    /// (`.build/<config>/portaria` → `../../Web`), as `SystemRoutes.defaultOpenAPIPath`.
    static func defaultRoot() -> String {
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
            .deletingLastPathComponent()
        let candidates = [
            FileManager.default.currentDirectoryPath + "/Web",
            executable.appendingPathComponent("../../../Web").standardized.path,
            executable.appendingPathComponent("../../Web").standardized.path,
            "/usr/share/portaria/Web",
        ]
        return candidates.first { candidate in
            sections.contains { FileManager.default.fileExists(atPath: "\(candidate)/\($0)/index.html") }
        } ?? candidates[0]
    }

    /// A plain file or folder name: ASCII letters, digits, `-`, `_` and dots that neither
    /// lead nor pair up. Rejects `.`, `..`, dot-files, and every character a decoded `%2F`,
    /// `%5C` or `%00` could become.
    static func isSafeName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 100, !name.hasPrefix("."), !name.contains("..") else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F || byte == 0x2E
        }
    }

    /// Registers every section whose folder exists under the root.
    func registerAll(on router: Router) {
        for section in Self.sections where FileManager.default.fileExists(atPath: "\(root)/\(section)") {
            register(on: router, section: section)
        }
    }

    func register(on router: Router, section: String) {
        let files = self
        if section == "gate" {
            // The QR code on the gate: one page for every token.
            router.get("/gate/{gate_token}") { _ in try files.serve(section: "gate", ["index.html"]) }
            router.get("/gate/assets/{file}") { request in
                try files.serve(section: "gate", ["assets", try request.parameter("file")])
            }
            return
        }
        // `/app` and `/app/` are one route to the router; relative URLs in the page need
        // the slash, so the bare form is redirected.
        router.get("/\(section)") { request in
            guard request.path.hasSuffix("/") else {
                return HTTPResponse(status: 301, headers: [("Location", "/\(section)/"), ("Cache-Control", "no-cache")])
            }
            return try files.serve(section: section, ["index.html"])
        }
        router.get("/\(section)/{first}") { request in try files.serve(section: section, [try request.parameter("first")]) }
        router.get("/\(section)/{first}/{second}") { request in
            try files.serve(section: section, [try request.parameter("first"), try request.parameter("second")])
        }
    }

    /// The file at `section/segments…`, or 404 for anything unsafe, missing or unknown.
    func serve(section: String, _ segments: [String]) throws -> HTTPResponse {
        guard segments.allSatisfy(Self.isSafeName), let name = segments.last,
              let type = Self.types[(name as NSString).pathExtension.lowercased()] else {
            throw HTTPError.notFound()
        }
        let sectionPath = "\(root)/\(section)"
        guard let base = Self.realPath(sectionPath),
              let resolved = Self.realPath(([sectionPath] + segments).joined(separator: "/")),
              resolved.hasPrefix(base + "/") else {
            throw HTTPError.notFound()
        }
        var info = stat()
        guard stat(resolved, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) <= Self.maxFileSize,
              let data = FileManager.default.contents(atPath: resolved) else {
            throw HTTPError.notFound()
        }
        var headers: [(String, String)] = [
            ("Content-Type", type),
            // No build step, no hashed names: revalidate every time (the files are small).
            ("Cache-Control", "no-cache"),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
            ("Cross-Origin-Opener-Policy", "same-origin"),
        ]
        if type.hasPrefix("text/html") {
            headers.append(("Content-Security-Policy", Self.contentSecurityPolicy))
            headers.append(("X-Frame-Options", "DENY"))
            // The gate page asks for the camera, the microphone and the location; nothing
            // embedded may.
            headers.append(("Permissions-Policy", "camera=(self), microphone=(self), geolocation=(self), payment=()"))
        }
        return HTTPResponse(status: 200, headers: headers, body: Array(data))
    }

    static func realPath(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
