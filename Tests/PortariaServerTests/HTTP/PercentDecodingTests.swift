import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// A request target is percent-decoded once: libmicrohttpd hands the path over with its
/// escapes, the router splits it at `/` and decodes each segment, and the query arguments
/// are decoded by the server. Decoding twice would let `%2F` split a value and `%25`
/// start a second escape.
@Suite("Percent-decoding of paths and queries, once")
struct PercentDecodingTests {
    private static func withServer(_ body: (UInt16) async throws -> Void) async throws {
        let router = Router()
        router.get("/things/{id}") { request in
            .text("id=\(try request.parameter("id")) q=\(request.query["q"] ?? "-")")
        }
        router.get("/things/{id}/parts") { request in .text("parts of \(try request.parameter("id"))") }
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threadPoolSize = 2
        let server = HTTPServer(router: router, configuration: configuration, log: Log(minimumLevel: .error))
        try server.start()
        do { try await body(server.port) } catch {
            await server.shutdown(gracePeriod: .seconds(5))
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(5))
    }

    private static func get(_ target: String, port: UInt16) async throws -> RawResponse {
        try await offload {
            let connection = try RawConnection(port: port)
            defer { connection.close() }
            try connection.send("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            guard let response = try connection.readResponse(timeout: .seconds(10)) else { throw HarnessError("no answer to \(target)") }
            return response
        }
    }

    @Test("an encoded slash stays inside its segment; an encoded percent is a percent", arguments: [
        ("/things/a%2Fparts", 200, "id=a/parts q=-"),
        ("/things/a%2fb", 200, "id=a/b q=-"),
        ("/things/%2564emo", 200, "id=%64emo q=-"),
        ("/things/100%25", 200, "id=100% q=-"),
        ("/things/%64emo", 200, "id=demo q=-"),
        ("/things/Jo%C3%A3o", 200, "id=João q=-"),
        ("/things/a/parts", 200, "parts of a"),
    ])
    func pathSegments(target: String, status: Int, text: String) async throws {
        try await Self.withServer { port in
            let response = try await Self.get(target, port: port)
            #expect(response.status == status, "\(target)")
            #expect(response.text == text, "\(target)")
        }
    }

    @Test("a malformed escape in a path segment is a 404, never a guess", arguments: ["/things/%zz", "/things/%4", "/things/%"])
    func malformedPathEscapes(target: String) async throws {
        try await Self.withServer { port in
            let response = try await Self.get(target, port: port)
            #expect(response.status == 404, "\(target)")
        }
    }

    @Test("query arguments are decoded once; malformed escapes stay as written", arguments: [
        ("?q=pend%69ng", "pending"),
        ("?q=100%25", "100%"),
        ("?q=%2541", "%41"),
        ("?q=a%2Fb", "a/b"),
        ("?q=%zz%4", "%zz%4"),
        ("?q=Jo%C3%A3o", "João"),
        ("?%71=named", "named"),
        ("?q=a+b", "a b"),
    ])
    func queryArguments(query: String, value: String) async throws {
        try await Self.withServer { port in
            let response = try await Self.get("/things/x\(query)", port: port)
            #expect(response.status == 200)
            #expect(response.text == "id=x q=\(value)", "\(query)")
        }
    }

    @Test("the lenient decoder keeps what is not an escape and never reads past the end")
    func lenientDecoder() {
        #expect(PercentDecoding.decodeLeniently("plain") == "plain")
        #expect(PercentDecoding.decodeLeniently("%41%42") == "AB")
        #expect(PercentDecoding.decodeLeniently("%") == "%")
        #expect(PercentDecoding.decodeLeniently("a%4") == "a%4")
        #expect(PercentDecoding.decodeLeniently("%%41") == "%A")
        #expect(PercentDecoding.decodeLeniently("%FF") == "\u{FFFD}")
    }
}
