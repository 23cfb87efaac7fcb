import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// Who keeps a running `HTTPServer` alive. libmicrohttpd's threads call back into the
/// server until `shutdown()` has stopped them, so the daemon holds a reference until then.
/// Before it did, the last release of a server whose owner had let go could happen on a
/// libmicrohttpd thread (a finished request releasing its context), and `deinit` called
/// `MHD_stop_daemon` there: a thread cannot join itself, so libmicrohttpd aborted the whole
/// test process with "Failed to join a thread" (found by the AddressSanitizer run, when a
/// test that timed out skipped its `shutdown()` with a request in flight).
@Suite("HTTP server lifetime")
struct HTTPServerLifetimeTests {
    /// Holds requests inside their handler until the test opens it.
    final class Latch: Sendable {
        private struct State {
            var isOpen = false
            var waiting: [CheckedContinuation<Void, Never>] = []
        }
        private let state = Locked(State())

        var hasWaiter: Bool { !state.current.waiting.isEmpty }

        func wait() async {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.isOpen { return true }
                    state.waiting.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }

        func open() {
            let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.isOpen = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    private static func startServer(_ router: Router) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threadPoolSize = 2
        let server = HTTPServer(router: router, configuration: configuration, log: Log(minimumLevel: .error))
        try server.start()
        return server
    }

    private static func get(_ path: String, port: UInt16) async throws -> RawResponse? {
        try await offload {
            let connection = try RawConnection(port: port)
            try connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return try connection.readResponse(timeout: .seconds(10))
        }
    }

    @Test("a started server is kept by its daemon until shutdown(), and freed after it")
    func keptUntilShutdown() async throws {
        let router = Router()
        router.get("/ping") { _ in .text("pong") }
        weak var weakServer: HTTPServer?
        let port: UInt16
        do {
            let server = try Self.startServer(router)
            port = server.port
            weakServer = server
        }
        #expect(weakServer != nil, "the running daemon must keep its server alive")
        let response = try await Self.get("/ping", port: port)
        #expect(response?.status == 200 && response?.text == "pong")

        await weakServer?.shutdown(gracePeriod: .seconds(5))
        // Nothing holds it after the stop (in-flight contexts are released by then or soon).
        #expect(await eventually(within: .seconds(5)) { weakServer == nil }, "a stopped server must be freed")
    }

    @Test("a request in flight when the owner lets go is answered, and the server keeps serving")
    func ownerLetsGoDuringARequest() async throws {
        let latch = Latch()
        defer { latch.open() }
        let router = Router()
        router.get("/held") { _ in
            await latch.wait()
            return .text("released")
        }
        router.get("/ping") { _ in .text("pong") }
        var owner: HTTPServer? = try Self.startServer(router)
        let port = try #require(owner?.port)
        weak let weakServer = owner
        let connection = try RawConnection(port: port)
        try connection.send("GET /held HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(await eventually(within: .seconds(10)) { latch.hasWaiter }, "the request never reached its handler")

        // The owner lets go while the handler runs; finishing the request then releases its
        // context on a libmicrohttpd thread. That release must not be the server's last.
        owner = nil
        latch.open()
        let held = try await offload { try connection.readResponse(timeout: .seconds(10)) }
        #expect(held?.status == 200 && held?.text == "released")
        connection.close()

        let ping = try await Self.get("/ping", port: port)
        #expect(ping?.status == 200 && ping?.text == "pong", "the server must keep serving")
        #expect(weakServer != nil)

        await weakServer?.shutdown(gracePeriod: .seconds(5))
        #expect(await eventually(within: .seconds(5)) { weakServer == nil }, "a stopped server must be freed")
    }
}
