import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Shutdown must never resume a connection after `MHD_stop_daemon` freed it: a handler
/// that outlives the grace period is awaited, and one that outlives even that finds the
/// daemon marked stopped and leaves the connection alone.
@Suite("HTTP server shutdown", .serialized)
struct ShutdownTests {
    /// GET `path` on 127.0.0.1:`port`; the status, or nil when the connection closed first.
    static func get(port: UInt16, _ path: String) async throws -> Int? {
        try await offload {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(descriptor) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw TimedOut() }
            let head = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
            _ = head.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            while poll(&poller, 1, 10_000) > 0 {
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                received += chunk[..<count]
            }
            let line = String(decoding: received.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
            return line.count >= 2 ? Int(line[1]) : nil
        }
    }

    static func server(handlerTime: Duration) throws -> HTTPServer {
        let router = Router()
        router.get("/slow") { _ in
            try? await Task.sleep(for: handlerTime)
            return .json(["done": true])
        }
        var http = HTTPServerConfiguration()
        http.port = 0
        http.threadPoolSize = 2
        let server = HTTPServer(router: router, configuration: http, log: Log(minimumLevel: .error))
        try server.start()
        return server
    }

    @Test("a handler that outlives the grace period is awaited: its client gets the answer, then the daemon stops")
    func handlerOutlivingTheGraceIsAwaited() async throws {
        let server = try Self.server(handlerTime: .milliseconds(800))
        let port = server.port
        let answer = Task { try await Self.get(port: port, "/slow") }
        try await waitUntil { server.handlers.current.running == 1 }
        let stopping = ContinuousClock.now
        await server.shutdown(gracePeriod: .milliseconds(100))
        #expect(ContinuousClock.now - stopping >= .milliseconds(500), "shutdown did not wait for the running handler")
        #expect(try await answer.value == 200)
        #expect(server.handlers.current.running == 0)
    }

    @Test("a handler that outlives both graces: its client is answered 503, the daemon stops without a suspended connection, and the late handler leaves the freed connection alone")
    func lateHandlerDoesNotResume() async throws {
        let finished = Locked(false)
        let router = Router()
        router.get("/slow") { _ in
            try? await Task.sleep(for: .milliseconds(1200))
            defer { finished.withLock { $0 = true } }
            return .json(["done": true])
        }
        var http = HTTPServerConfiguration()
        http.port = 0
        http.threadPoolSize = 2
        let server = HTTPServer(router: router, configuration: http, log: Log(minimumLevel: .error))
        try server.start()
        let port = server.port
        let answer = Task { try await Self.get(port: port, "/slow") }
        try await waitUntil { server.handlers.current.running == 1 }
        // libmicrohttpd aborts the process when stopped with a suspended connection.
        await server.shutdown(gracePeriod: .milliseconds(100), handlerGrace: .milliseconds(100))
        #expect(server.handlers.current.daemonStopped && server.handlers.current.running == 0)
        #expect(try await answer.value == 503)
        // The handler finishes afterwards; it must not resume anything (this process would crash).
        try await waitUntil { finished.current }
    }
}
