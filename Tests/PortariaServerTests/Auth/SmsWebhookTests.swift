import Foundation
import PortariaCore
import Testing
@testable import PortariaServer

/// The webhook SMS sender against a real local HTTP server (our own listener on port 0),
/// through libcurl over a real socket.
@Suite("SMS webhook sender")
struct SmsWebhookTests {
    final class Gateway: Sendable {
        let received = Locked<[(headers: [String: String], body: JSONValue)]>([])
        let status: Int
        let server: HTTPServer

        init(status: Int) throws {
            self.status = status
            let router = Router()
            let received = received
            router.post("/sms") { request in
                let body = try request.decode(JSONValue.self)
                received.withLock { $0.append((request.headers, body)) }
                return HTTPResponse(status: status)
            }
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            server = HTTPServer(router: router, configuration: configuration)
            try server.start()
        }

        var url: String { "http://127.0.0.1:\(server.port)/sms" }
    }

    @Test func postsJSONToTheGateway() async throws {
        let gateway = try Gateway(status: 202)
        let sender = WebhookSmsSender(url: gateway.url, client: OutboundHTTPClient())
        try await sender.send(to: "+5511999990001", message: "Portaria: seu código de acesso é 123456.")
        let received = gateway.received.current
        #expect(received.count == 1)
        #expect(received.first?.headers["content-type"] == "application/json")
        #expect(received.first?.body["to"] == .string("+5511999990001"))
        #expect(received.first?.body["message"]?.stringValue?.contains("123456") == true)
        await gateway.server.shutdown()
    }

    @Test func aGatewayErrorIsAnError() async throws {
        let gateway = try Gateway(status: 503)
        let sender = WebhookSmsSender(url: gateway.url, client: OutboundHTTPClient())
        await #expect(throws: OutboundHTTPError.self) {
            try await sender.send(to: "+5511999990001", message: "x")
        }
        await gateway.server.shutdown()
    }

    @Test func anUnreachableGatewayIsAnError() async throws {
        let sender = WebhookSmsSender(url: "http://127.0.0.1:1/sms", client: OutboundHTTPClient())
        await #expect(throws: OutboundHTTPError.self) {
            try await sender.send(to: "+5511999990001", message: "x")
        }
    }
}
