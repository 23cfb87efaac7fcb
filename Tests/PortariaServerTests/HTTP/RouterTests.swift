import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

@Suite("Router")
struct RouterTests {
    /// A handler that answers with its own name, so a test can tell which one matched.
    private func named(_ name: String) -> HTTPHandler {
        { _ in .text(name) }
    }

    private func answer(_ router: Router, _ method: String, _ path: String) async throws -> String? {
        guard case .found(_, _, let handler) = router.match(method: method, path: path) else { return nil }
        let response = try await handler(HTTPRequest(method: method, path: path))
        return String(decoding: response.body, as: UTF8.self)
    }

    private func parameters(_ router: Router, _ method: String, _ path: String) -> [String: String]? {
        guard case .found(_, let parameters, _) = router.match(method: method, path: path) else { return nil }
        return parameters
    }

    private func makeRouter() -> Router {
        let router = Router()
        router.get("/v1/visits/pending", named("pending"))
        router.get("/v1/visits/{id}", named("visit"))
        router.post("/v1/visits/{id}/resolve", named("resolve"))
        router.get("/a/{x}/c", named("param-then-c"))
        router.get("/a/b/d", named("static-b-d"))
        router.get("/v1/devices", named("list-devices"))
        router.post("/v1/devices", named("register-device"))
        router.delete("/v1/devices/{id}", named("delete-device"))
        router.get("/healthz", named("health"))
        return router
    }

    @Test("a static segment wins over a parameter at the same position")
    func staticBeatsParameter() async throws {
        let router = makeRouter()
        #expect(try await answer(router, "GET", "/v1/visits/pending") == "pending")
        #expect(try await answer(router, "GET", "/v1/visits/pend") == "visit")
        #expect(parameters(router, "GET", "/v1/visits/pending") == [:])
        #expect(parameters(router, "GET", "/v1/visits/123") == ["id": "123"])
        if case .found(let route, _, _) = router.match(method: "GET", path: "/v1/visits/123") {
            #expect(route == "/v1/visits/{id}")
        } else {
            Issue.record("no match")
        }
    }

    @Test("when the static branch dead-ends, the parameter branch is tried")
    func backtracks() async throws {
        let router = makeRouter()
        #expect(try await answer(router, "GET", "/a/b/c") == "param-then-c")
        #expect(parameters(router, "GET", "/a/b/c") == ["x": "b"])
        #expect(try await answer(router, "GET", "/a/b/d") == "static-b-d")
        #expect(try await answer(router, "GET", "/a/z/d") == nil)
    }

    @Test("parameters are percent-decoded", arguments: [
        ("/v1/visits/abc%20def/resolve", "abc def"),
        ("/v1/visits/a%2Fb/resolve", "a/b"),
        ("/v1/visits/Jo%C3%A3o/resolve", "João"),
        ("/v1/visits/%F0%9F%98%80/resolve", "😀"),
        ("/v1/visits/100%25/resolve", "100%"),
        ("/v1/visits/plus+sign/resolve", "plus+sign"),
    ])
    func percentDecoding(_ path: String, _ expected: String) {
        #expect(parameters(makeRouter(), "POST", path) == ["id": expected])
    }

    @Test("a malformed escape or an empty parameter matches nothing", arguments: [
        "/v1/visits/%zz/resolve", "/v1/visits/%E0%A4/resolve", "/v1/visits/%/resolve",
    ])
    func badEscapes(_ path: String) {
        guard case .notFound = makeRouter().match(method: "POST", path: path) else {
            Issue.record("\(path) should not match")
            return
        }
    }

    @Test("unknown paths are 404; known paths under another method are 405 with the allowed methods")
    func notFoundVersusMethodNotAllowed() {
        let router = makeRouter()
        for path in ["/", "/v1", "/v1/visits", "/v1/unknown", "/healthz/extra", "/v1/visits/1/resolve/more"] {
            guard case .notFound = router.match(method: "GET", path: path) else {
                Issue.record("\(path) should be 404")
                continue
            }
        }
        guard case .methodNotAllowed(let allowed) = router.match(method: "PUT", path: "/v1/devices") else {
            Issue.record("PUT /v1/devices should be 405")
            return
        }
        #expect(allowed == ["GET", "POST"])
        guard case .methodNotAllowed(let onParameter) = router.match(method: "GET", path: "/v1/visits/9/resolve") else {
            Issue.record("GET …/resolve should be 405")
            return
        }
        #expect(onParameter == ["POST"])
    }

    @Test("HEAD is served by the GET handler; HEAD without GET is 405")
    func headFallsBackToGet() async throws {
        let router = makeRouter()
        #expect(try await answer(router, "HEAD", "/healthz") == "health")
        #expect(try await answer(router, "HEAD", "/v1/visits/7") == "visit")
        guard case .methodNotAllowed(let allowed) = router.match(method: "HEAD", path: "/v1/visits/7/resolve") else {
            Issue.record("HEAD on a POST-only route should be 405")
            return
        }
        #expect(allowed == ["POST"])
    }

    @Test("methods are case-sensitive, as HTTP says")
    func methodCase() {
        guard case .methodNotAllowed = makeRouter().match(method: "get", path: "/healthz") else {
            Issue.record("lowercase get must not match GET")
            return
        }
    }

    @Test("the server turns matches into envelopes: 404, 405 with Allow, handler errors")
    func serverResponses() async throws {
        let router = makeRouter()
        router.get("/boom") { _ in throw CancellationError() }
        router.get("/teapot") { _ in throw HTTPError(status: 418, code: ErrorCode("TEAPOT"), message: "short and stout") }
        let server = HTTPServer(router: router, log: Log(minimumLevel: .error))

        let (notFound, _) = await server.respond(to: HTTPRequest(method: "GET", path: "/nope"))
        #expect(notFound.status == 404)
        #expect(try envelope(notFound).code == .notFound)

        let (notAllowed, _) = await server.respond(to: HTTPRequest(method: "DELETE", path: "/v1/devices"))
        #expect(notAllowed.status == 405)
        #expect(notAllowed.header("Allow") == "GET, POST")
        #expect(try envelope(notAllowed).code == .methodNotAllowed)

        let (failed, _) = await server.respond(to: HTTPRequest(method: "GET", path: "/boom"))
        #expect(failed.status == 500)
        #expect(try envelope(failed).code == .internalError)
        #expect(try envelope(failed).message == "internal error", "internal details must not leak")

        let (teapot, route) = await server.respond(to: HTTPRequest(method: "GET", path: "/teapot"))
        #expect(teapot.status == 418 && route == "/teapot")
        #expect(try envelope(teapot).message == "short and stout")
    }
}

/// Decodes an error envelope from a response, checking its media type.
func envelope(_ response: HTTPResponse) throws -> ErrorBody {
    #expect(response.header("Content-Type") == "application/json")
    return try JSONCoding.decoder().decode(ErrorEnvelope.self, from: Data(response.body)).error
}
