import Foundation
@testable import PortariaClient
import PortariaCore
import Testing

/// Requests come from the route catalogue: an identifier is one percent-encoded path
/// segment whatever it holds, an empty one sends nothing, and the transport sends the
/// encoded path as it is.
@Suite("Requests built from the route catalogue")
struct RequestBuildingTests {
    @Test("an identifier with reserved characters stays one segment of the path it names")
    func identifiersAreEncoded() async throws {
        let http = ScriptedHTTP()
        http.then({ _ in Fixtures.json(200, Fixtures.visit(id: "a/b c")) },
                  { _ in ClientHTTPResponse(status: 204) },
                  { _ in Fixtures.json(200, Fixtures.visit(id: "v-1")) })
        let api = ResidentAPI(http: http)
        _ = try await api.visit("a/b c")
        try await api.deleteDevice("../me")
        _ = try await api.visit("v-1")
        #expect(http.requests.map { "\($0.method) \($0.path)" } == [
            "GET /v1/visits/a%2Fb%20c", "DELETE /v1/devices/%2E%2E%2Fme", "GET /v1/visits/v-1",
        ])
    }

    @Test("an empty identifier is refused before anything is sent")
    func emptyIdentifier() async {
        let http = ScriptedHTTP()
        await #expect(throws: RouteError.self) { try await ResidentAPI(http: http).deleteDevice("") }
        await #expect(throws: RouteError.self) { try await ResidentAPI(http: http).visit("") }
        #expect(http.requests.isEmpty, "sent \(http.requests.map(\.path))")
    }

    @Test("a JSON body goes with its content type; explicit headers win")
    func jsonBody() throws {
        let request = try ClientHTTPRequest(APIRoutes.resolveVisit(id: "v-1"), json: ResolveVisitRequest(action: .authorize, via: .app),
                                            headers: ["Idempotency-Key": "k-1"])
        #expect(request.method == "POST" && request.path == "/v1/visits/v-1/resolve")
        #expect(request.headers == ["Idempotency-Key": "k-1", "Content-Type": "application/json"])
        let sent = try JSONCoding.decoder().decode(ResolveVisitRequest.self, from: request.body ?? Data())
        #expect(sent.action == .authorize)
    }

    @Test("the transport takes only well-formed encoded paths", arguments: [
        ("/v1/visits/a%2Fb", true), ("/v1/me", true), ("/v1/visits/Jo%C3%A3o", true),
        ("/v1/visits/a b", false), ("/v1/visits/100%", false), ("/v1/visits/%zz", false), ("v1/me", false),
        ("/v1/visits/João", false),
    ])
    func pathCheck(_ path: String, _ accepted: Bool) {
        #expect(URLSessionTransport.isPercentEncodedPath(path) == accepted)
    }

    @Test("a malformed path is a transport error, never a trap")
    func malformedPathIsRefused() async {
        let transport = URLSessionTransport(timeout: 1)
        await #expect(throws: TransportError.self) {
            _ = try await transport.send(ClientHTTPRequest(method: "GET", path: "/v1/visits/100%"), to: URL(string: "http://127.0.0.1:9")!)
        }
    }

    @Test("answers decode by the route's response type: bytes as they came, 204 as no body")
    func decoding() throws {
        let bytes = Data([0xFF, 0xD8, 0xFF, 0x00])
        #expect(try APIClient.decode(data: bytes, status: 200, as: Data.self) == bytes)
        #expect(try APIClient.decode(data: Data(), status: 204, as: NoBody.self) == NoBody())
        #expect(throws: APIClientError.self) {
            try APIClient.decode(data: Data(#"{"error":{"code":"NOT_FOUND","message":"visit not found"}}"#.utf8), status: 404, as: Visit.self)
        }
    }
}
