import Foundation

/// The checkout these tests belong to (…/Tests/PortariaTestSupport/PortariaBinary.swift →
/// the package root): docs, Web, scripts and `.venv` are found from here.
package enum Repository {
    package static let root: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The venv `scripts/bootstrap` creates (fake push servers, schemathesis, axe-core).
    package static var python: String { root + "/.venv/bin/python3" }
}

/// Where the binary under test is: `PORTARIA_BIN`, else `.build/debug/portaria` of this package.
package enum PortariaBinary {
    package static let path: String = {
        if let path = ProcessInfo.processInfo.environment["PORTARIA_BIN"], !path.isEmpty { return path }
        return Repository.root + "/.build/debug/portaria"
    }()

    package static var isBuilt: Bool { FileManager.default.isExecutableFile(atPath: path) }

    package static func require() throws -> String {
        guard isBuilt else {
            throw HarnessError("no portaria binary at \(path): run `swift build` first (or set PORTARIA_BIN)")
        }
        return path
    }

    /// The environment for a child: ours without any PORTARIA_* setting (so a developer's
    /// exported `PORTARIA_DATABASE` cannot leak into a test), plus `extra`.
    package static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PORTARIA_") }
        environment.merge(extra) { $1 }
        return environment
    }
}
