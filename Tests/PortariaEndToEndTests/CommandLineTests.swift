import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `portaria` as an operator meets it: mistakes print one readable line and exit non-zero.
@Suite("Command line")
struct CommandLineTests {
    /// No Swift runtime crash report or backtrace, just a message.
    private func expectNoCrashOutput(_ result: CommandResult, sourceLocation: SourceLocation = #_sourceLocation) {
        for marker in ["Fatal error", "Backtrace", "Thread 0", "Program crashed", "Stack dump", "swift-backtrace", "0x0000"] {
            #expect(!result.stderr.contains(marker), "stderr: \(result.stderr.prefix(500))", sourceLocation: sourceLocation)
        }
        #expect(!result.signaled, "terminated by a signal", sourceLocation: sourceLocation)
    }

    @Test("an unknown option exits 64 with one line on stderr", arguments: [
        ["serve", "--bogus"], ["serve", "--bogus=1"], ["migrate", "--port", "1"], ["frobnicate"],
        ["serve", "--port", "99999"], ["serve", "--port"], ["serve", "extra-positional"],
    ])
    func usageErrors(_ arguments: [String]) async throws {
        let result = try await runPortaria(arguments)
        #expect(result.status == 64, "\(arguments) → \(result.status): \(result.stderr)")
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("portaria: "))
        #expect(result.stdout.isEmpty)
        expectNoCrashOutput(result)
    }

    @Test("help prints the usage and exits 0")
    func help() async throws {
        let result = try await runPortaria(["help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("usage: portaria"))
        #expect(result.stdout.contains("--database"))
    }

    @Test("an unsupported database URL exits non-zero with one line", arguments: ["mysql://x", "sqlite:", "file:///tmp/x.db"])
    func unsupportedDatabase(_ url: String) async throws {
        let result = try await runPortaria(["serve", "--port", "0", "--database", url])
        #expect(result.status != 0)
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("--database"))
        expectNoCrashOutput(result)
    }

    @Test("an unreachable PostgreSQL exits non-zero (after its ~5 s of retries, not hanging) with one readable line",
          arguments: ["serve", "migrate"])
    func unreachablePostgres(_ command: String) async throws {
        var arguments = [command, "--database", "postgres://postgres@127.0.0.1:1/x"]
        if command == "serve" { arguments += ["--port", "0"] }
        // "Gives up" versus "hangs", not a benchmark: it exits by itself with its one line;
        // the deadline only ends a process that would otherwise never stop.
        let result = try await runPortaria(arguments, timeout: .seconds(120))
        #expect(!result.signaled, "still retrying when the test's deadline killed it, after \(result.elapsed)")
        #expect(result.status != 0)
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("database unavailable"), "\(result.stderr)")
        expectNoCrashOutput(result)
    }

    @Test("SQLite in a missing directory exits non-zero with one line")
    func sqliteMissingDirectory() async throws {
        let result = try await runPortaria(["migrate", "--database", "sqlite:///nonexistent-\(UUID().uuidString)/p.db"])
        #expect(result.status != 0)
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("does not exist"))
        expectNoCrashOutput(result)
    }

    @Test("migrate applies the schema once, then says it is up to date")
    func migrateTwice() async throws {
        let directory = try makeTemporaryDirectory("migrate")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = "sqlite://" + directory.appendingPathComponent("p.db").path
        let first = try await runPortaria(["migrate", "--database", url])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("applied migrations"), "\(first.stdout)")
        let second = try await runPortaria(["migrate", "--database", url])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("up to date"), "\(second.stdout)")
        #expect(!second.stdout.contains("applied migrations"))
    }

    @Test("the environment supplies options (PORTARIA_DATABASE); the command line wins")
    func environmentOptions() async throws {
        let directory = try makeTemporaryDirectory("env")
        defer { try? FileManager.default.removeItem(at: directory) }
        let fromEnvironment = try await runPortaria(["migrate"], environment: ["PORTARIA_DATABASE": "mysql://nope"])
        #expect(fromEnvironment.status != 0)
        #expect(fromEnvironment.stderr.contains("mysql://nope"))
        let url = "sqlite://" + directory.appendingPathComponent("p.db").path
        let overridden = try await runPortaria(["migrate", "--database", url], environment: ["PORTARIA_DATABASE": "mysql://nope"])
        #expect(overridden.status == 0, "\(overridden.stderr)")
    }

    @Test("a port already in use exits non-zero with one line")
    func portInUse() async throws {
        // Hold a listening socket on a kernel-chosen port.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound)
        let port = UInt16(bigEndian: address.sin_port)

        let directory = try makeTemporaryDirectory("port")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await runPortaria(["serve", "--host", "127.0.0.1", "--port", String(port),
                                            "--database", "sqlite://" + directory.appendingPathComponent("p.db").path],
                                           timeout: .seconds(10))
        #expect(result.status != 0)
        #expect(result.stderr.split(separator: "\n").filter { !$0.hasPrefix("{") }.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("port \(port) is already in use"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("p.db").path),
                "the refused server created its database before finding the port busy")
        expectNoCrashOutput(result)
    }

    /// A first server, for the tests that try to start a second one beside it.
    private func withRunningServer(_ body: (TestServer) async throws -> Void) async throws {
        try await TestServer.with(["--demo"]) { server in try await body(server) }
    }

    @Test("a second portaria on the same port is refused; connections all reach the first (no SO_REUSEPORT)")
    func secondServerSamePort() async throws {
        try await withRunningServer { first in
            let directory = try makeTemporaryDirectory("second")
            defer { try? FileManager.default.removeItem(at: directory) }
            let result = try await runPortaria(["serve", "--host", "127.0.0.1", "--port", String(first.port),
                                                "--database", "sqlite://" + directory.appendingPathComponent("b.db").path,
                                                "--data-dir", directory.appendingPathComponent("data").path],
                                               timeout: .seconds(15))
            #expect(result.status != 0, "a second server started on port \(first.port): \(result.stderr)")
            #expect(result.stderr.contains("port \(first.port) is already in use"), "\(result.stderr)")
            expectNoCrashOutput(result)
            // With SO_REUSEPORT the kernel spread connections over both processes; the
            // demo gate exists only in the first server's database.
            for _ in 0..<20 {
                #expect(try await first.request("GET", "/v1/gates/demo-gate").status == 200)
            }
        }
    }

    @Test("a second portaria on the same SQLite file is refused with one clear line")
    func secondServerSameDatabase() async throws {
        try await withRunningServer { first in
            let database = first.directory.appendingPathComponent("portaria.db").path
            let other = try makeTemporaryDirectory("samefile")
            defer { try? FileManager.default.removeItem(at: other) }
            let result = try await runPortaria(["serve", "--host", "127.0.0.1", "--port", "0",
                                                "--database", "sqlite://" + database,
                                                "--data-dir", other.appendingPathComponent("data").path],
                                               timeout: .seconds(15))
            #expect(result.status != 0, "a second server shares \(database): \(result.stderr)")
            #expect(result.stderr.contains("already used by another portaria server"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").filter { !$0.hasPrefix("{") }.count == 1, "\(result.stderr)")
            expectNoCrashOutput(result)
            #expect(try await first.request("GET", "/healthz").status == 200)
        }
        // Once the first server has stopped, the file is free again (the lock dies with it).
    }

    @Test("the database, its -wal/-shm and the data directory are owner-only, whatever the umask")
    func filesAreOwnerOnly() async throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        try await TestServer.with(["--demo"]) { server in
            // A photo makes the media directories exist too.
            let gate = try await server.request("GET", "/v1/gates/demo-gate")
            #expect(gate.status == 200)
            func mode(_ path: String) -> mode_t? {
                var status = stat()
                return stat(path, &status) == 0 ? status.st_mode & 0o777 : nil
            }
            let database = server.directory.appendingPathComponent("portaria.db").path
            for path in [database, database + "-wal", database + "-shm"] {
                #expect(mode(path) == 0o600, "\(path): \(String(mode(path) ?? 0, radix: 8))")
            }
            let data = server.directory.appendingPathComponent("data").path
            #expect(mode(data) == 0o700, "\(data): \(String(mode(data) ?? 0, radix: 8))")
        }
    }

    @Test("migrate and admin create the database (and admin the data directory and its secrets key) owner-only, whatever the umask")
    func commandsCreateFilesOwnerOnly() async throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let directory = try makeTemporaryDirectory("owner-only")
        defer { try? FileManager.default.removeItem(at: directory) }
        func mode(_ path: String) -> mode_t? {
            var status = stat()
            return stat(path, &status) == 0 ? status.st_mode & 0o777 : nil
        }
        func expectOwnerOnly(_ database: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(mode(database) == 0o600, "\(database): \(String(mode(database) ?? 0, radix: 8))", sourceLocation: sourceLocation)
            // SQLite gives -wal and -shm the database file's mode; they may be gone after a clean close.
            for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: database + suffix) {
                #expect(mode(database + suffix) == 0o600, "\(database + suffix)", sourceLocation: sourceLocation)
            }
        }
        let migrated = directory.appendingPathComponent("migrated.db").path
        let migrate = try await runPortaria(["migrate", "--database", "sqlite://" + migrated])
        #expect(migrate.status == 0, "\(migrate.stderr)")
        expectOwnerOnly(migrated)

        let administered = directory.appendingPathComponent("admin.db").path
        let created = try await runPortaria(["admin", "create-company", "--name", "Edifício Modo", "--database", "sqlite://" + administered])
        #expect(created.status == 0, "\(created.stderr)")
        expectOwnerOnly(administered)

        let data = directory.appendingPathComponent("admin-data").path
        let rotated = try await runPortaria(["admin", "rotate-jwt-key", "--database", "sqlite://" + administered, "--data-dir", data])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        #expect(mode(data) == 0o700, "\(data): \(String(mode(data) ?? 0, radix: 8))")
        #expect(mode(data + "/secrets.key") == 0o600, "secrets.key: \(String(mode(data + "/secrets.key") ?? 0, radix: 8))")
        expectOwnerOnly(administered)
    }

    @Test("serve --demo greets a person: the three URLs with the real port, the demo users and phones, the password, one development-mode block, no request lines")
    func demoBanner() async throws {
        let server = try await TestServer.start(["--demo"], environment: ["PORTARIA_REQUEST_LOG": "debug"])
        defer { Task { [server] in await server.stop() } }
        for path in ["/gate/demo-gate", "/app/", "/admin/"] {
            #expect(try await server.request("GET", path).status == 200, "\(path)")
        }
        let log = server.log
        let banner = String(log[..<(log.range(of: "\n{")?.lowerBound ?? log.endIndex)])
        let base = "http://127.0.0.1:\(server.port)"
        for text in ["\(base)/gate/demo-gate", "\(base)/app/", "\(base)/admin/", "demo1234",
                     "maria", "joao", "ana", "portaria", "admin", "carlos",
                     "+5511999990001", "+5511999990002", "+5511999990003", "+5521999990006"] {
            #expect(banner.contains(text), "the banner lacks \(text):\n\(banner)")
        }
        let lines = log.split(separator: "\n").filter { $0.hasPrefix("{") }
        let warnings = lines.filter { $0.contains(#""level":"warning""#) }
        #expect(warnings.count == 1, "startup warnings in one block:\n\(warnings.joined(separator: "\n"))")
        #expect(warnings.first?.contains("development mode") == true)
        #expect(banner.contains("Development mode"))
        #expect(!lines.contains { $0.contains(#""msg":"request""#) }, "request lines at the default level")
    }

    @Test("without --home, state lives under $HOME/.portaria, or $XDG_STATE_HOME/portaria when that is set")
    func stateFollowsTheEnvironment() async throws {
        try await TestServer.with(["--demo"]) { server in
            let home = try makeTemporaryDirectory("client-home")
            let state = try makeTemporaryDirectory("client-state")
            defer {
                try? FileManager.default.removeItem(at: home)
                try? FileManager.default.removeItem(at: state)
            }
            let login = ["client", "login", "--url", server.baseURL.absoluteString, "--username", "maria",
                         "--password", "demo1234", "--company", "Residencial Demo"]
            let inHome = try await runPortaria(login, environment: ["HOME": home.path])
            #expect(inHome.status == 0, "\(inHome.stderr)")
            #expect(FileManager.default.fileExists(atPath: home.appendingPathComponent(".portaria/session.json").path))
            let companies = try await runPortaria(["client", "companies"], environment: ["HOME": home.path])
            #expect(companies.status == 0, "the next command finds the session in $HOME: \(companies.stderr)")

            let inState = try await runPortaria(login, environment: ["HOME": home.path, "XDG_STATE_HOME": state.path])
            #expect(inState.status == 0, "\(inState.stderr)")
            #expect(FileManager.default.fileExists(atPath: state.appendingPathComponent("portaria/session.json").path))
        }
    }
}
