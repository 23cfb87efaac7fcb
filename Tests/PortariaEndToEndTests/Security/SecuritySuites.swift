import Foundation
@testable import PortariaCore
import PortariaWebSocket
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Abuse resistance, over real sockets against the real binary: each test is one attack
// and the answer it must get. docs/reliability.md ("Security") lists them.

/// The end-to-end attack suites, one test at a time: each starts one or more servers,
/// and running them side by side on top of the rest of the suite slows server starts
/// past the harness's 20 s on a shared 2-core machine.
@Suite("Security: each attack over real sockets gets its refusal", .serialized)
struct SecuritySuites {}

/// Reads a stopped server's SQLite file with Python's sqlite3 module (a second process
/// must not open the file while the server holds it).
enum SQLiteProbe {
    static func rows(_ databasePath: String, _ sql: String) async throws -> [[String]] {
        let script = """
            import json, sqlite3, sys
            db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
            print(json.dumps([[None if v is None else str(v) for v in row] for row in db.execute(sys.argv[2])]))
            """
        let probe = try CapturedProcess.start("/usr/bin/env", ["python3", "-c", script, databasePath, sql], label: "probe")
        defer { probe.remove() }
        guard await waitForExit(probe.process, within: .seconds(20)), probe.process.terminationStatus == 0 else {
            throw HarnessError("sqlite probe failed: \(probe.stderr)")
        }
        let output = Data(probe.stdout.utf8)
        let decoded = try JSONSerialization.jsonObject(with: output) as? [[Any]] ?? []
        return decoded.map { $0.map { ($0 as? String) ?? "NULL" } }
    }
}

extension TestServer {
    /// The SQLite file the harness gave this server.
    var databasePath: String { directory.appendingPathComponent("portaria.db").path }

    /// SIGTERM and wait for a clean exit, keeping the directory (and its database) for
    /// inspection; `discard()` removes it afterwards.
    func stopKeepingFiles() async -> Bool {
        if process.isRunning { signal(SIGTERM) }
        return await waitForExit(process, within: .seconds(15)) && process.terminationStatus == 0
    }

    func discard() { try? FileManager.default.removeItem(at: directory) }

    func get(_ path: String, bearer: String? = nil, company: String? = nil) async throws -> RawResponse {
        var headers: [(String, String)] = []
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        if let company { headers.append(("X-Company-Id", company)) }
        return try await request("GET", path, headers: headers)
    }

    func post(_ path: String, json: String? = nil, bytes: [UInt8]? = nil, bearer: String? = nil, company: String? = nil,
              idempotencyKey: String? = nil, contentType: String? = nil) async throws -> RawResponse {
        var headers: [(String, String)] = []
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        if let company { headers.append(("X-Company-Id", company)) }
        if let idempotencyKey { headers.append(("Idempotency-Key", idempotencyKey)) }
        if json != nil { headers.append(("Content-Type", "application/json")) }
        if let contentType { headers.append(("Content-Type", contentType)) }
        return try await request("POST", path, headers: headers, body: bytes ?? Array((json ?? "").utf8))
    }
}
