import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

/// Three lists of the API's routes must not drift apart: the catalogue (`APIRoutes`, what
/// clients send to), the router the server assembles, and `docs/openapi.yaml` (what
/// clients outside this repository generate from). The `/v1/bench/…` routes are left out
/// of the comparison: they exist only with `--enable-bench-routes` and are not the API.
@Suite("Route catalogue, server and OpenAPI document agree")
struct RouteCatalogueRegistrationTests {
    static let catalogue = Set(APIRoutes.all.map(\.description))

    static func isBench(_ route: String) -> Bool { route.split(separator: " ").last?.hasPrefix("/v1/bench/") == true }

    /// `METHOD /path` for every operation under `paths:`, read by the document's own
    /// layout (paths at 2 spaces, methods at 4).
    static func documented() throws -> Set<String> {
        let text = try String(contentsOfFile: Repository.root + "/docs/openapi.yaml", encoding: .utf8)
        var found: Set<String> = []
        var path: String?
        var inPaths = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty { inPaths = line == "paths:"; path = nil; continue }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), !line.hasPrefix("   "), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let key = line.dropFirst(4).dropLast()
                if ["get", "post", "put", "delete", "patch"].contains(key) { found.insert("\(key.uppercased()) \(path)") }
            }
        }
        return found
    }

    @Test("the server registers exactly the catalogue's routes under /v1")
    func serverRegistersTheCatalogue() async throws {
        let path = NSTemporaryDirectory() + "routes-\(UUID().uuidString).db"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.databaseURL = "sqlite://" + path
        configuration.dataDirectory = NSTemporaryDirectory() + "routes-data-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
        let application = try await Application(configuration: configuration, log: Log(minimumLevel: .error))
        let registered = application.server.router.registered
        await application.shutdown()

        let api = Set(registered.filter { $0.split(separator: " ").last?.hasPrefix("/v1/") == true })
        #expect(api.subtracting(Self.catalogue).isEmpty, "registered but not in APIRoutes: \(api.subtracting(Self.catalogue).sorted())")
        #expect(Self.catalogue.subtracting(api).isEmpty, "in APIRoutes but not registered: \(Self.catalogue.subtracting(api).sorted())")
        // The plain-string routes are the ones the catalogue names as not the API.
        let others = Set(registered.filter { !api.contains($0) }.compactMap { $0.split(separator: " ").last.map(String.init) })
        for other in others {
            #expect(["/healthz", "/readyz"].contains(other) || !other.hasPrefix("/v1"), "\(other)")
        }
        #expect(others.isSuperset(of: ["/healthz", "/readyz"]))
    }

    @Test("docs/openapi.yaml documents exactly the catalogue's routes")
    func documentMatchesTheCatalogue() throws {
        let documented = try Self.documented().filter { $0.split(separator: " ").last?.hasPrefix("/v1/") == true && !Self.isBench($0) }
        #expect(documented.count > 20, "the document's paths were not found")
        #expect(documented.subtracting(Self.catalogue).isEmpty, "documented but not in APIRoutes: \(documented.subtracting(Self.catalogue).sorted())")
        #expect(Self.catalogue.subtracting(documented).isEmpty, "in APIRoutes but not documented: \(Self.catalogue.subtracting(documented).sorted())")
    }

    @Test("a filled-in path reaches its route with the value it was given", arguments: [
        "plain-id", "a b", "João", "100%", "..", "a?b", "a+b",
    ])
    func filledPathsRoute(_ value: String) throws {
        let router = Router()
        for entry in APIRoutes.all {
            router.add(entry.method.rawValue, entry.template) { _ in .text("") }
        }
        let endpoints: [(path: String, route: String, parameter: String)] = [
            (APIRoutes.gate(token: value).path, APIRoutes.gate.template, "gate_token"),
            (APIRoutes.visit(id: value).path, APIRoutes.visit.template, "id"),
            (APIRoutes.resolveVisit(id: value).path, APIRoutes.resolveVisit.template, "id"),
            (APIRoutes.deleteDevice(id: value).path, APIRoutes.deleteDevice.template, "id"),
            (APIRoutes.pushAck(pushID: value).path, APIRoutes.pushAck.template, "push_id"),
        ]
        let methods = [APIRoutes.gate.method, APIRoutes.visit.method, APIRoutes.resolveVisit.method,
                       APIRoutes.deleteDevice.method, APIRoutes.pushAck.method]
        for (endpoint, method) in zip(endpoints, methods) {
            guard case .found(let route, let parameters, _) = router.match(method: method.rawValue, path: endpoint.path) else {
                Issue.record("\(method.rawValue) \(endpoint.path) matched nothing")
                continue
            }
            #expect(route == endpoint.route)
            #expect(parameters == [endpoint.parameter: value])
        }
    }
}
