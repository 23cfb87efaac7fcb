import Foundation
import PortariaCore
import PortariaTestSupport
import Testing

/// `portaria admin set-password` ends the user's sessions from another process; a live
/// realtime socket of such a session must not receive one more visit (decision 0071).
@Suite("Realtime: a password set elsewhere closes live sockets before the next event", .serialized)
struct RealtimeSessionEndTests {
    typealias R = RealtimeTests
    typealias Security = SecuritySuites.AccountAbuseTests

    /// Signs Maria in with a socket, sets her password from another process, then rings
    /// her unit: the socket is closed (1008) without carrying the new visitor's name.
    static func expectSocketEnds(_ server: TestServer, databaseURL: String) async throws {
        let maria = try await R.login(server, "maria")
        let socket = try await R.subscribe(server, maria)
        let passwordFile = try Security.writeSecret("outra-senha-da-maria")
        defer { try? FileManager.default.removeItem(at: passwordFile.deletingLastPathComponent()) }
        let changed = try await runPortaria(["admin", "set-password", "--user", "maria", "--password-file", passwordFile.path,
                                             "--database", databaseURL])
        try #require(changed.status == 0, "\(changed.stderr)")
        _ = try await R.ring(server)
        var frames: [JSONValue] = []
        var closed: UInt16?
        reading: while true {
            switch await socket.read(timeout: .seconds(30)) {
            case .frame(let frame): frames.append(frame)
            case .closed(let code): closed = code; break reading
            case .timedOut: break reading
            }
        }
        #expect(!frames.contains { $0["type"]?.stringValue == "visit.created" },
                "the socket of a session ended by set-password received the next visit: \(frames)")
        #expect(closed == 1008, "the socket was not closed with 1008 (\(String(describing: closed)))")
    }

    @Test("SQLite: set-password in another process, then a ring: the old socket is closed before the visit reaches it")
    func sqlite() async throws {
        try await TestServer.with(["--demo"]) { server in
            try await Self.expectSocketEnds(server, databaseURL: "sqlite://" + server.directory.appendingPathComponent("portaria.db").path)
        }
    }

    @Test("PostgreSQL: set-password in another process, then a ring: the old socket is closed before the visit reaches it",
          .requires(.postgres))
    func postgres() async throws {
        let database = try #require(try TestPostgres.createDatabase())
        defer { database.drop() }
        let server = try await TestServer.start(["--demo", "--database", database.url])
        do {
            try await SessionCacheTests.waitForListeners(database.url, count: 1)
            try await Self.expectSocketEnds(server, databaseURL: database.url)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
