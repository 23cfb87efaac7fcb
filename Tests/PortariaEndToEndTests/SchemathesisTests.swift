import Foundation
import PortariaTestSupport
import Testing

/// schemathesis (PyPI, installed into .venv by scripts/bootstrap) generates requests from
/// the served `docs/openapi.yaml` — valid, invalid and edge-case — against the real
/// binary, in all four phases (examples, coverage, fuzzing, and the stateful phase that
/// chains operations along the links it infers). No input may produce a 5xx; every status,
/// content type, declared header and response body must match the document; a request
/// the schema forbids must be refused with a 4xx; a deleted resource must stay gone and a
/// created one must be readable.
@Suite("OpenAPI fuzzing")
struct SchemathesisTests {
    static let root = Repository.root
    static let tool = root + "/.venv/bin/schemathesis"
    /// What every response is checked for. Left out: `positive_data_acceptance` (the server
    /// refuses some schema-valid values the document does not constrain, such as a phone
    /// that is not a phone) and the authorization heuristics, which the end-to-end
    /// authorization matrix covers exactly (AuthorizationMatrixTests).
    static let checks = [
        "not_a_server_error", "status_code_conformance", "content_type_conformance",
        "response_headers_conformance", "response_schema_conformance", "negative_data_rejection",
        "use_after_free", "ensure_resource_availability",
    ].joined(separator: ",")

    /// Whether the run's summary shows a stateful phase that ran scenarios (a phase with
    /// nothing to chain is reported as skipped).
    static func ranStatefulScenarios(_ output: String) -> Bool {
        let lines = output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let phase = lines.firstIndex(where: { $0.contains("Stateful (in") && !$0.contains("Skipped") }) else { return false }
        return lines[phase...].prefix(6).contains { line in
            line.hasPrefix("Scenarios:") && (Int(line.dropFirst("Scenarios:".count).trimmingCharacters(in: .whitespaces)) ?? 0) > 0
        }
    }

    @Test("generated requests never get a 5xx; every status, content type, declared header and body matches the document (stateful phase included)",
          .requires(.schemathesis), .timeLimit(.minutes(5)))
    func noServerErrors() async throws {
        try await TestServer.with(["--demo", "--gate-limit", "1000000", "--unit-ring-limit", "1000000", "--gate-ring-limit", "1000000", "--login-limit", "1000000"]) { server in
            let login = try await server.postJSON("/v1/auth/login", #"{"username":"admin","password":"demo1234"}"#)
            let token = try #require(try login.json()["jwt_token"] as? String)
            let base = "http://127.0.0.1:\(server.port)"
            // Rung before the first run, whose generated requests may change the demo's state.
            let visitorToken = try await HostileUploadTests.ring(server)
            let result = try await runPortariaTool(Self.tool, [
                "run", base + "/v1/openapi.yaml", "--url", base, "-H", "Authorization: Bearer \(token)",
                "--checks", Self.checks, "--phases", "examples,coverage,fuzzing,stateful", "--max-examples", "15",
                // The media uploads take a visitor token: the second run below covers them.
                "--exclude-path-regex", "realtime$|logout|visit/(photo|voice_message)$", "--seed", "7246",
            ])
            #expect(result.status == 0, "schemathesis found problems:\n\(result.output.suffix(6000))")
            #expect(Self.ranStatefulScenarios(result.output), "the stateful phase did not run:\n\(result.output.suffix(3000))")

            // Raw media uploads with a real visitor token: generated bodies of every declared
            // media type (and wrong ones) reach the sniffers; each answer must be documented.
            let uploads = try await runPortariaTool(Self.tool, [
                "run", base + "/v1/openapi.yaml", "--url", base, "-H", "Authorization: Bearer \(visitorToken)",
                "--checks", Self.checks, "--max-examples", "40",
                "--include-path-regex", "^/v1/visitor/visit/(photo|voice_message)$", "--seed", "7246",
            ])
            #expect(uploads.status == 0, "schemathesis found problems in the uploads:\n\(uploads.output.suffix(6000))")
            await server.expectHealthy()
        }
    }
}

/// Runs a helper program to completion, capturing its output (off the cooperative pool).
func runPortariaTool(_ path: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    try await offload {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
