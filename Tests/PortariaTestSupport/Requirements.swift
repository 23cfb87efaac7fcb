import Foundation
import Testing

// What a test needs from the machine (a PostgreSQL cluster, a browser, coturn, the venv of
// scripts/bootstrap…), in one place. A developer's machine without a tool skips the tests
// that need it; a strict run — CI (`CI=1`, which `.ci/run` exports) or `STRICT=1` — fails
// them instead, so a suite cannot pass by skipping what CI is meant to run.

/// How this test run treats a missing tool.
package enum TestRun {
    /// True under `CI` or `STRICT` (set to anything but empty, `0` or `false`).
    package static let isStrict: Bool = {
        let environment = ProcessInfo.processInfo.environment
        return ["CI", "STRICT"].contains { name in
            guard let value = environment[name]?.lowercased() else { return false }
            return !value.isEmpty && value != "0" && value != "false"
        }
    }()
}

/// One thing from the machine that some tests cannot run without.
package struct Requirement: Sendable, CustomStringConvertible {
    /// What is missing, as the skip or the failure says it.
    package let name: String
    /// How to get it.
    package let remedy: String
    private let check: @Sendable () -> Bool

    package init(_ name: String, remedy: String, isMet check: @escaping @Sendable () -> Bool) {
        self.name = name
        self.remedy = remedy
        self.check = check
    }

    package var isMet: Bool { check() }
    package var description: String { "\(name) (\(remedy))" }

    /// An executable file at `path`.
    package static func executable(_ name: String, at path: @escaping @Sendable () -> String?, remedy: String) -> Requirement {
        Requirement(name, remedy: remedy) { path().map { FileManager.default.isExecutableFile(atPath: $0) } ?? false }
    }

    package static let postgres = Requirement("PostgreSQL (PORTARIA_TEST_POSTGRES_URL)",
                                              remedy: "run under scripts/with-postgres, as make test does") { TestPostgres.url != nil }
    package static let portaria = executable("the portaria binary", at: { PortariaBinary.path },
                                             remedy: "swift build, or set PORTARIA_BIN")
    package static let chromium = Requirement("chromium and chromedriver",
                                              remedy: "scripts/bootstrap installs them; or set PORTARIA_CHROMIUM / PORTARIA_CHROMEDRIVER") {
        BrowserBinaries.chromium != nil && BrowserBinaries.chromedriver != nil
    }
    package static let webkit = Requirement("WebKitWebDriver, MiniBrowser and Xvfb",
                                            remedy: "Debian: webkit2gtk-driver and xvfb; scripts/bootstrap installs them") {
        BrowserEngine.webkit.installed
    }
    package static let venv = executable(".venv (the fake push servers' Python)", at: { Repository.python },
                                         remedy: "scripts/bootstrap creates it")
    package static let schemathesis = executable("schemathesis", at: { Repository.root + "/.venv/bin/schemathesis" },
                                                 remedy: "scripts/bootstrap installs it into .venv")

    /// The unmet ones among `requirements`.
    package static func missing(_ requirements: [Requirement]) -> [Requirement] {
        requirements.filter { !$0.isMet }
    }
}

/// What a strict run throws for a test whose requirement is missing: the test fails with it.
package struct MissingRequirement: Error, CustomStringConvertible {
    package let missing: [Requirement]
    package var description: String {
        "missing \(missing.map(\.description).joined(separator: "; ")): a strict run (CI or STRICT=1) fails instead of skipping"
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only when every requirement is met. Otherwise it is skipped — or, in a
    /// strict run, fails (the condition throws, and Swift Testing records that as an issue
    /// of the test without running it).
    package static func requires(_ requirements: Requirement..., sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        let comment = Comment(rawValue: "needs " + requirements.map(\.description).joined(separator: ", "))
        return .enabled(comment, sourceLocation: sourceLocation) {
            let missing = Requirement.missing(requirements)
            guard !missing.isEmpty else { return true }
            if TestRun.isStrict { throw MissingRequirement(missing: missing) }
            return false
        }
    }
}

/// Parameterised cases drawn from `all`, keeping only those whose requirement is met —
/// except in a strict run, which keeps every case, so a case whose tool is missing runs
/// and fails rather than silently dropping out of the list.
/// A dropped case prints one `cases skipped:` line naming where the list is made, which
/// `make test` counts (scripts/skipped-tests).
package func casesAvailable<Case>(_ all: [Case], fileID: String = #fileID, line: Int = #line,
                                  requirement: (Case) -> Requirement?) -> [Case] {
    guard !TestRun.isStrict else { return all }
    return all.filter { item in
        guard let requirement = requirement(item), !requirement.isMet else { return true }
        print("cases skipped: \(item) at \(fileID):\(line) needs \(requirement)")
        return false
    }
}
