import Foundation
import PortariaCore
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real binary when its database or disk fails under it: every answer is a "try
/// again" (503/507 with `Retry-After` and a stable code), never a 500; `/readyz` says the
/// instance cannot serve; the operator reads one line when the fault starts and one when
/// it ends; nothing answered 201 is lost, and service returns without a restart.
@Suite("Storage faults end to end", .serialized)
struct StorageFaultTests {
    /// A gate POST for A-101 (demo data); returns the answer.
    static func ring(_ server: TestServer, unit: String, index: Int) async throws -> RawResponse {
        try await server.postJSON("/v1/gates/demo-gate/visits",
                                  #"{"unit_id":"\#(unit)","kind":"delivery","visitor_name":"Entregador \#(index)","carrier":"iFood"}"#)
    }

    static func unitA101(_ server: TestServer) async throws -> String {
        let gate = try await server.request("GET", "/v1/gates/demo-gate")
        let units = try #require(try gate.json()["units"] as? [[String: Any]])
        return try #require(units.first { $0["label"] as? String == "A-101" }?["id"] as? String)
    }

    static func visitID(_ response: RawResponse) throws -> String {
        try #require((try response.json()["visit"] as? [String: Any])?["id"] as? String)
    }

    /// Every visit answered 201 is still there: Maria (A-101) reads each one.
    static func expectAllKept(_ server: TestServer, _ visits: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let session = try await RealtimeTests.login(server, "maria")
        for visit in visits {
            let response = try await server.request("GET", "/v1/visits/\(visit)",
                                                    headers: [("Authorization", "Bearer \(session.token)"), ("X-Company-Id", session.companyID)])
            #expect(response.status == 200, "visit \(visit) answered 201 is gone: \(response.status)", sourceLocation: sourceLocation)
        }
    }

    /// Asserts a fault answer: `status`, the stable `code`, and `Retry-After` in the header
    /// and the envelope.
    static func expectFault(_ response: RawResponse, status: Int, code: ErrorCode,
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, sourceLocation: sourceLocation)
        let error = try response.errorEnvelope(sourceLocation: sourceLocation)
        #expect(error.code == code, sourceLocation: sourceLocation)
        let retryAfter = response.header("retry-after").flatMap(Int.init)
        #expect(retryAfter.map { $0 >= 1 } == true, "Retry-After: \(response.header("retry-after") ?? "none")",
                sourceLocation: sourceLocation)
    }

    static func readiness(_ server: TestServer) async throws -> (status: Int, checks: [String: String]) {
        let response = try await server.request("GET", "/readyz")
        let body = try response.json()
        return (response.status, body["checks"] as? [String: String] ?? [:])
    }

    static func lines(_ log: String, containing fragment: String) -> Int {
        log.split(separator: "\n").filter { $0.contains(fragment) }.count
    }

    // MARK: SQLite on a full disk

    /// A tmpfs of `megabytes` mounted on a fresh directory (the test runs as root, as CI
    /// does); nil, after recording why, when this machine cannot mount one.
    static func mountSmallDisk(megabytes: Int) throws -> URL {
        let directory = try makeTemporaryDirectory("full-disk")
        let mounted = mount("tmpfs", directory.path, "tmpfs", 0, "size=\(megabytes)m,mode=0700")
        guard mounted == 0 else {
            throw HarnessError("mount -t tmpfs failed (\(String(cString: strerror(errno)))): the full-disk test needs root, as CI runs")
        }
        return directory
    }

    /// Writes zeros into `path` until the file system refuses (ENOSPC).
    static func fill(_ path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw HarnessError("open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var small = [UInt8](repeating: 0, count: 512)
        while chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        // The last partial blocks too.
        while small.withUnsafeMutableBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        guard errno == ENOSPC else { throw HarnessError("filling \(path) stopped with \(String(cString: strerror(errno)))") }
    }

    @Test("SQLite on a full disk answers 507 INSUFFICIENT_STORAGE with Retry-After, never 500, and recovers when space returns")
    func sqliteDiskFull() async throws {
        let disk = try Self.mountSmallDisk(megabytes: 16)
        defer {
            umount2(disk.path, Int32(MNT_DETACH))
            try? FileManager.default.removeItem(at: disk)
        }
        let server = try await TestServer.start([
            "--demo", "--gate-limit", "100000", "--unit-ring-limit", "100000", "--gate-ring-limit", "100000",
            "--database", "sqlite://" + disk.appendingPathComponent("portaria.db").path,
            "--data-dir", disk.appendingPathComponent("data").path,
        ])
        defer { Task { [server] in await server.stop() } }
        let unit = try await Self.unitA101(server)
        var accepted: [String] = []
        for index in 0..<3 {
            let response = try await Self.ring(server, unit: unit, index: index)
            try #require(response.status == 201)
            accepted.append(try Self.visitID(response))
        }
        #expect(try await Self.readiness(server).status == 200)

        let filler = disk.appendingPathComponent("filler").path
        try Self.fill(filler)
        // The WAL may still have room for a few commits; then every write finds none.
        var full = 0
        var statuses: [Int: Int] = [:]
        var index = 3
        while full < 12 && index < 2000 {
            let response = try await Self.ring(server, unit: unit, index: index)
            statuses[response.status, default: 0] += 1
            switch response.status {
            case 201: accepted.append(try Self.visitID(response))
            case 507:
                try Self.expectFault(response, status: 507, code: .insufficientStorage)
                full += 1
            default:
                Issue.record("a gate POST on a full disk answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
                full += 1
            }
            index += 1
        }
        #expect(full >= 12, "no 507 after \(index) gate POSTs on a full disk: \(statuses)")
        #expect(statuses[500] == nil)
        let notReady = try await Self.readiness(server)
        #expect(notReady.status == 503)
        #expect(notReady.checks["writes"] == "storage_full", "\(notReady.checks)")

        try FileManager.default.removeItem(atPath: filler)
        var recovered = false
        for attempt in 0..<200 where !recovered {
            let response = try await Self.ring(server, unit: unit, index: 10_000 + attempt)
            #expect(response.status == 201 || response.status == 507, "\(response.status)")
            if response.status == 201 {
                accepted.append(try Self.visitID(response))
                recovered = true
            } else {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        #expect(recovered, "gate POSTs still fail after space came back")
        try await Self.ringUntilLogged(server, unit: unit, "database recovered", count: 1, from: 20_000, accepted: &accepted)
        #expect(try await Self.readiness(server).status == 200)
        try await Self.expectAllKept(server, accepted)
        let log = server.log
        #expect(Self.lines(log, containing: "database is full") == 1, "one line when the fault starts:\n\(log.suffix(3000))")
        #expect(Self.lines(log, containing: "database recovered") == 1, "one line when it ends:\n\(log.suffix(3000))")
        #expect(Self.lines(log, containing: "handler failed") == 0)
    }

    @Test("a full media directory answers a visitor's photo 507 INSUFFICIENT_STORAGE; the same photo is taken once space returns")
    func mediaDirectoryFull() async throws {
        let disk = try Self.mountSmallDisk(megabytes: 1)
        defer {
            umount2(disk.path, Int32(MNT_DETACH))
            try? FileManager.default.removeItem(at: disk)
        }
        // The database has room; only the media directory is full.
        let server = try await TestServer.start(["--demo", "--data-dir", disk.appendingPathComponent("data").path])
        defer { Task { [server] in await server.stop() } }
        let (visit, visitorToken) = try await RealtimeTests.ring(server)
        let filler = disk.appendingPathComponent("filler").path
        try Self.fill(filler)
        let jpeg = Array(try Data(contentsOf: HostileUploadTests.root.appendingPathComponent("fuzz/corpus/media-photo/valid.jpg")))
        func upload() async throws -> RawResponse {
            try await server.request("POST", "/v1/visitor/visit/photo",
                                     headers: [("Authorization", "Bearer \(visitorToken)"), ("Content-Type", "image/jpeg")], body: jpeg)
        }
        for _ in 0..<3 { try Self.expectFault(try await upload(), status: 507, code: .insufficientStorage) }
        try FileManager.default.removeItem(atPath: filler)
        let stored = try await upload()
        #expect(stored.status == 200, "\(stored.status) \(stored.text)")
        let session = try await RealtimeTests.login(server, "maria")
        let read = try await server.request("GET", "/v1/visits/\(visit)",
                                            headers: [("Authorization", "Bearer \(session.token)"), ("X-Company-Id", session.companyID)])
        #expect(read.status == 200)
        let log = server.log
        #expect(Self.lines(log, containing: "media directory is full") == 1, "\(log.suffix(3000))")
        #expect(Self.lines(log, containing: "media directory recovered") == 1, "\(log.suffix(3000))")
        #expect(Self.lines(log, containing: "handler failed") == 0)
    }

    // MARK: PostgreSQL refusing connections, then read-only

    @Test("PostgreSQL unreachable, then read-only: 503 DATABASE_UNAVAILABLE with Retry-After, /readyz 503 (also for a missing migration), recovery without restart",
          .requires(.postgres))
    func postgresUnavailable() async throws {
        let database = try #require(try TestPostgres.createDatabase())
        defer { database.drop() }
        let name = database.name
        let server = try await TestServer.start(["--demo", "--gate-limit", "100000", "--unit-ring-limit", "100000", "--gate-ring-limit", "100000", "--database", database.url])
        defer {
            try? TestPostgres.run("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS true")
            Task { [server] in await server.stop() }
        }
        let unit = try await Self.unitA101(server)
        var accepted: [String] = []
        let first = try await Self.ring(server, unit: unit, index: 0)
        try #require(first.status == 201)
        accepted.append(try Self.visitID(first))
        #expect(try await Self.readiness(server).status == 200)
        let terminate = """
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()
            """

        // 1. The database refuses every connection (as while it restarts or is down).
        try TestPostgres.run("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS false")
        try TestPostgres.run(terminate)
        for index in 1...5 {
            let response = try await Self.ring(server, unit: unit, index: index)
            try Self.expectFault(response, status: 503, code: .databaseUnavailable)
        }
        let down = try await Self.readiness(server)
        #expect(down.status == 503)
        #expect(down.checks["database"] == "unreachable", "\(down.checks)")
        #expect(try await server.request("GET", "/healthz").status == 503)

        try TestPostgres.run("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS true")
        accepted.append(try await Self.ringUntilAccepted(server, unit: unit, from: 100))
        #expect(await eventually(within: .seconds(30), every: .milliseconds(100)) {
            (try? await Self.readiness(server).status) == 200
        }, "/readyz stays 503 after the database came back")
        // The recovery line comes with the first success after a quiet moment.
        try await Self.ringUntilLogged(server, unit: unit, "database recovered", count: 1, from: 150, accepted: &accepted)

        // 2. The database accepts connections but refuses writes (a standby, a failover).
        try TestPostgres.run("ALTER DATABASE \(name) SET default_transaction_read_only = on")
        try TestPostgres.run(terminate)
        for index in 200..<205 {
            let response = try await Self.ring(server, unit: unit, index: index)
            try Self.expectFault(response, status: 503, code: .databaseUnavailable)
        }
        let readOnly = try await Self.readiness(server)
        #expect(readOnly.status == 503)
        #expect(readOnly.checks["writes"] == "read_only", "\(readOnly.checks)")
        try TestPostgres.run("ALTER DATABASE \(name) RESET default_transaction_read_only")
        try TestPostgres.run(terminate)
        accepted.append(try await Self.ringUntilAccepted(server, unit: unit, from: 300))
        #expect(await eventually(within: .seconds(30), every: .milliseconds(100)) {
            (try? await Self.readiness(server).status) == 200
        })
        try await Self.ringUntilLogged(server, unit: unit, "database recovered", count: 2, from: 350, accepted: &accepted)

        // 3. A schema behind this binary (a migration missing): not ready, and says so.
        let removed = try TestPostgres.query(database.url,
            "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations) RETURNING version || ',' || name || ',' || applied_at")
        let behind = try await Self.readiness(server)
        #expect(behind.status == 503)
        #expect(behind.checks["migrations"] == "pending", "\(behind.checks)")
        let parts = removed.split(separator: ",", maxSplits: 2).map(String.init)
        try #require(parts.count == 3)
        _ = try TestPostgres.query(database.url,
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (\(parts[0]), '\(parts[1])', \(parts[2])) RETURNING version")
        #expect(try await Self.readiness(server).status == 200)

        try await Self.expectAllKept(server, accepted)
        let log = server.log
        #expect(Self.lines(log, containing: "database is unavailable") == 2, "one line per fault:\n\(log.split(separator: "\n").filter { $0.contains("database") }.joined(separator: "\n"))")
        #expect(Self.lines(log, containing: "database recovered") == 2, "one line per recovery:\n\(log.suffix(4000))")
        #expect(Self.lines(log, containing: "handler failed") == 0, "\(log.suffix(4000))")
    }

    /// Rings (accepted visits kept in `accepted`) until the log has `count` lines with
    /// `fragment`: a fault's end is logged with the first success after a quiet moment.
    static func ringUntilLogged(_ server: TestServer, unit: String, _ fragment: String, count: Int, from index: Int,
                                accepted: inout [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var next = index
        let logged = try await eventually(within: .seconds(60), every: .milliseconds(200)) {
            if lines(server.log, containing: fragment) >= count { return true }
            let response = try await ring(server, unit: unit, index: next)
            next += 1
            #expect(response.status == 201, "\(response.status)", sourceLocation: sourceLocation)
            if response.status == 201 { accepted.append(try visitID(response)) }
            return false
        }
        if !logged { Issue.record("no \(count) \"\(fragment)\" lines in the log", sourceLocation: sourceLocation) }
    }

    /// Rings until a gate POST is accepted (each failure a 503 that says retry).
    static func ringUntilAccepted(_ server: TestServer, unit: String, from index: Int,
                                  sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        var next = index
        var accepted: String?
        _ = try await eventually(within: .seconds(30), every: .milliseconds(100)) {
            let response = try await ring(server, unit: unit, index: next)
            next += 1
            if response.status == 201 { accepted = try visitID(response) } else {
                #expect(response.status == 503, "\(response.status)", sourceLocation: sourceLocation)
            }
            return accepted != nil
        }
        guard let accepted else { throw HarnessError("the server did not accept a gate POST again after the database came back") }
        return accepted
    }
}
