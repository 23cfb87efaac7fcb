import Foundation
import PortariaCore
import Testing

/// The route catalogue is what the server registers and the client sends to; a filled-in
/// path must reach the route it names with the value it was given, whatever characters
/// the value holds.
@Suite("Route catalogue")
struct RouteCatalogueTests {
    @Test("each route is listed once, with a distinct method and template")
    func routesAreDistinct() {
        let keys = APIRoutes.all.map(\.description)
        #expect(Set(keys).count == keys.count, "duplicates: \(keys.filter { key in keys.filter { $0 == key }.count > 1 })")
        for entry in APIRoutes.all {
            #expect(entry.template.hasPrefix("/v1/"), "\(entry) is not under /v1")
            #expect(!entry.template.hasSuffix("/"), "\(entry) ends with a slash")
        }
    }

    @Test("a parameter value becomes one percent-encoded segment", arguments: [
        ("abc-123", "/v1/visits/abc-123"),
        ("a/b", "/v1/visits/a%2Fb"),
        ("a b", "/v1/visits/a%20b"),
        ("João", "/v1/visits/Jo%C3%A3o"),
        ("100%", "/v1/visits/100%25"),
        ("a?b#c", "/v1/visits/a%3Fb%23c"),
        ("..", "/v1/visits/%2E%2E"),
        ("x.y~z_w", "/v1/visits/x%2Ey~z_w"),
    ])
    func encodesSegments(_ value: String, _ path: String) throws {
        let endpoint = APIRoutes.visit(id: value)
        #expect(endpoint.path == path)
        #expect(try endpoint.checkedPath() == path)
        // Decoding the segment gives the value back.
        let segment = try #require(path.split(separator: "/").last)
        #expect(segment.removingPercentEncoding == value)
    }

    @Test("every typed function fills its own route's template")
    func functionsFillTheirRoutes() {
        let filled: [(String, String, String)] = [
            (APIRoutes.gate(token: "g").path, APIRoutes.gate.description, "/v1/gates/g"),
            (APIRoutes.createVisit(gateToken: "g").path, APIRoutes.createVisit.description, "/v1/gates/g/visits"),
            (APIRoutes.visit(id: "v").path, APIRoutes.visit.description, "/v1/visits/v"),
            (APIRoutes.visitPhoto(id: "v").path, APIRoutes.visitPhoto.description, "/v1/visits/v/photo"),
            (APIRoutes.visitVoiceMessage(id: "v").path, APIRoutes.visitVoiceMessage.description, "/v1/visits/v/voice_message"),
            (APIRoutes.resolveVisit(id: "v").path, APIRoutes.resolveVisit.description, "/v1/visits/v/resolve"),
            (APIRoutes.answerCall(id: "v").path, APIRoutes.answerCall.description, "/v1/visits/v/answer"),
            (APIRoutes.declineCall(id: "v").path, APIRoutes.declineCall.description, "/v1/visits/v/decline"),
            (APIRoutes.unitSettings(unitID: "u").path, APIRoutes.unitSettings.description, "/v1/units/u/settings"),
            (APIRoutes.updateUnitSettings(unitID: "u").path, APIRoutes.updateUnitSettings.description, "/v1/units/u/settings"),
            (APIRoutes.deleteDevice(id: "d").path, APIRoutes.deleteDevice.description, "/v1/devices/d"),
            (APIRoutes.pushAck(pushID: "p").path, APIRoutes.pushAck.description, "/v1/push/p/ack"),
        ]
        for (path, route, expected) in filled {
            #expect(path == expected, "\(route)")
        }
        // Every route with parameters has one of the functions above.
        let parameterized = Set(APIRoutes.all.filter { $0.template.contains("{") }.map(\.description))
        #expect(parameterized == Set(filled.map(\.1)))
        #expect(APIRoutes.updateUnitSettings(unitID: "u").method == .put)
    }

    @Test("an empty parameter is refused before it can name another route")
    func emptyParameter() {
        // "/v1/visits/" would be the list, "/v1/devices/" the device list.
        #expect(throws: RouteError.emptyParameter(route: "GET /v1/visits/{id}", name: "id")) {
            try APIRoutes.visit(id: "").checkedPath()
        }
        #expect(throws: RouteError.self) { try APIRoutes.deleteDevice(id: "").checkedPath() }
        #expect(throws: RouteError.self) { try APIRoutes.pushAck(pushID: "").checkedPath() }
    }

    @Test("a route without parameters is its own endpoint")
    func staticEndpoint() throws {
        #expect(try APIRoutes.login.endpoint.checkedPath() == "/v1/auth/login")
        #expect(APIRoutes.login.endpoint.method == .post)
        #expect(APIRoutes.login.entry.request == "LoginRequest")
        #expect(APIRoutes.login.entry.response == "LoginResponse")
    }
}
