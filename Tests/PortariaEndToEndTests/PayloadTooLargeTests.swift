import Foundation
import PortariaCore
import PortariaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A client that writes its whole body before reading (Python urllib, many mobile HTTP
/// stacks) must receive the 413, not a connection reset: the server reads and discards an
/// oversized body up to a bound, then answers. Over real loopback sockets whose send
/// buffer is small, so every send waits for the server to read: a server that answered
/// and closed with the body unread would fail the client's send.
@Suite("413 readable by clients that send first", .serialized)
struct PayloadTooLargeTests {
    static let head = "POST /v1/bench/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    static let piece = [UInt8](repeating: 0x20, count: 64 * 1024)

    /// Sends `head` and then `pieces` (no reading in between), then reads one response.
    static func sendThenRead(_ server: TestServer, head: String, pieces: [[UInt8]]) async throws -> RawResponse {
        let connection = try await server.connect()
        defer { connection.close() }
        return try await offload {
            connection.limitSendBuffer(to: 16 * 1024)
            try connection.send(head)
            for piece in pieces { try connection.send(piece) }
            guard let response = try connection.readResponse(timeout: .seconds(10)) else {
                throw HarnessError("the connection closed without an answer after the body")
            }
            return response
        }
    }

    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        Array(String(format: "%x\r\n", bytes.count).utf8) + bytes + [13, 10]
    }

    @Test("Content-Length: a 2 MiB body written before reading gets a complete 413 envelope")
    func contentLengthBody() async throws {
        try await TestServer.with(["--enable-bench-routes"]) { server in
            for _ in 0..<3 {
                let response = try await Self.sendThenRead(
                    server, head: Self.head + "Content-Length: \(2 << 20)\r\n\r\n",
                    pieces: Array(repeating: Self.piece, count: 32))
                #expect(response.status == 413)
                let error = try response.errorEnvelope()
                #expect(error.code == .payloadTooLarge)
                #expect(error.message.contains("1048576"))
                #expect(response.header("x-request-id") != nil)
            }
            await server.expectHealthy()
        }
    }

    @Test("chunked: a 2 MiB body written before reading gets a complete 413 envelope")
    func chunkedBody() async throws {
        try await TestServer.with(["--enable-bench-routes"]) { server in
            for _ in 0..<3 {
                let response = try await Self.sendThenRead(
                    server, head: Self.head + "Transfer-Encoding: chunked\r\n\r\n",
                    pieces: Array(repeating: Self.chunk(Self.piece), count: 32) + [Array("0\r\n\r\n".utf8)])
                #expect(response.status == 413)
                #expect(try response.errorEnvelope().code == .payloadTooLarge)
            }
            await server.expectHealthy()
        }
    }

    @Test("an endless chunked body is still cut off, and the server's memory does not grow with it")
    func endlessBodyIsCutOff() async throws {
        try await TestServer.with(["--enable-bench-routes"]) { server in
            let pid = server.process.processIdentifier
            let before = try #require(Self.residentKilobytes(of: pid))
            let connection = try await server.connect()
            let sentBeforeCutOff = try await offload { () -> Int? in
                connection.limitSendBuffer(to: 16 * 1024)
                try connection.send(Self.head + "Transfer-Encoding: chunked\r\n\r\n")
                let piece = Self.chunk(Self.piece)
                var sent = 0
                while sent < 256 << 20 {
                    do { try connection.send(piece) } catch { return sent }
                    sent += piece.count
                }
                return nil
            }
            connection.abort()
            let sent = try #require(sentBeforeCutOff, "the server read 256 MiB of an endless body")
            // The drain allowance is 4 MiB (4 × the 1 MiB limit); kernel buffers add a few more.
            #expect(sent < 32 << 20, "cut off only after \(sent) bytes")
            let after = try #require(Self.residentKilobytes(of: pid))
            #expect(after - before < 16 * 1024, "RSS grew from \(before) kB to \(after) kB")
            await server.expectHealthy()
        }
    }

    /// VmRSS of a process, in kB.
    static func residentKilobytes(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }
}
