import Foundation
@testable import PortariaCore
@testable import PortariaServer
import Testing

@Suite("Device registry", .serialized)
struct DeviceRegistryTests {
    static let backends: [Backend] = Backend.underTest

    @Test("register, renew, move a token, list and delete", arguments: backends)
    func lifecycle(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            let demo = try await fixture.companyID("Residencial Demo")
            let maria = try await fixture.login("maria")
            let joao = try await fixture.login("joao")
            let push1 = hexToken(), voip1 = hexToken()
            let body = #"{"installation_id":"inst-maria-1","platform":"ios","push_token":"\#(push1)","voip_token":"\#(voip1)","app_version":"1.2.0","device_name":"iPhone da Maria","locale":"pt-BR","capabilities":{"notifications_enabled":true,"os_version":"18.1"}}"#
            let created = await fixture.client.call("POST", "/v1/devices", token: maria, company: demo, json: body)
            #expect(created.status == 201)
            #expect(created.body["push_token_status"]?.stringValue == "active")
            #expect(created.body["voip_token_status"]?.stringValue == "active")
            #expect(created.body["push_token"] == nil, "tokens are not echoed")
            let deviceID = try #require(created.body["id"]?.stringValue)

            // Token renewal: same installation, new token → same device, 200.
            let push2 = hexToken()
            let renewed = await fixture.client.call("POST", "/v1/devices", token: maria, company: demo,
                                                    json: body.replacingOccurrences(of: push1, with: push2))
            #expect(renewed.status == 200)
            #expect(renewed.body["id"]?.stringValue == deviceID)
            let stored = try #require(try await DeviceStore(database: fixture.database).device(id: deviceID))
            #expect(stored.pushToken == push2)

            // João's new install reports Maria's VoIP token (a phone handed over): it leaves Maria's device.
            let moved = await fixture.client.call("POST", "/v1/devices", token: joao, json:
                #"{"installation_id":"inst-joao-1","platform":"ios","push_token":"\#(hexToken())","voip_token":"\#(voip1)"}"#)
            #expect(moved.status == 201)
            let afterMove = try #require(try await DeviceStore(database: fixture.database).device(id: deviceID))
            #expect(afterMove.voipToken == nil)
            #expect(afterMove.voipTokenStatus == "moved")

            // Each user lists only their own devices.
            let mariaList = await fixture.client.call("GET", "/v1/devices", token: maria, company: demo)
            guard case .array(let devices)? = mariaList.body["devices"] else { Issue.record("no devices array"); return }
            #expect(devices.count == 1)
            #expect(devices.first?["id"]?.stringValue == deviceID)

            // Another user's device answers 404, like a missing one; the owner deletes it.
            #expect(await fixture.client.call("DELETE", "/v1/devices/\(deviceID)", token: joao).status == 404)
            #expect(await fixture.client.call("DELETE", "/v1/devices/\(UUID().uuidString)", token: maria, company: demo).status == 404)
            #expect(await fixture.client.call("DELETE", "/v1/devices/\(deviceID)", token: maria, company: demo).status == 204)
            #expect(await fixture.client.call("DELETE", "/v1/devices/\(deviceID)", token: maria, company: demo).status == 404)
        }
    }

    @Test("an iOS renewal without voip_token keeps the VoIP token and its status: the iPhone still rings", arguments: backends)
    func renewalKeepsVoIPToken(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            let demo = try await fixture.companyID("Residencial Demo")
            let maria = try await fixture.login("maria")
            let voip = hexToken()
            let created = await fixture.client.call("POST", "/v1/devices", token: maria, company: demo, json:
                #"{"installation_id":"inst-keep","platform":"ios","push_token":"\#(hexToken())","voip_token":"\#(voip)"}"#)
            #expect(created.status == 201)
            let deviceID = try #require(created.body["id"]?.stringValue)
            // The alert token renewed alone (no voip_token member at all).
            let renewed = await fixture.client.call("POST", "/v1/devices", token: maria, company: demo, json:
                #"{"installation_id":"inst-keep","platform":"ios","push_token":"\#(hexToken())"}"#)
            #expect(renewed.status == 200)
            #expect(renewed.body["voip_token_status"]?.stringValue == "active")
            #expect(try await DeviceStore(database: fixture.database).device(id: deviceID)?.voipToken == voip)
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .visitRing,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(20)))
            #expect(jobs.map(\.tokenKind) == [.voip], "the ring still goes to PushKit")

            // A token APNs declared dead stays dead: keeping it does not revive it.
            try await fixture.database.write { db in
                _ = try db.execute("UPDATE devices SET voip_token_status = 'unregistered' WHERE id = ?", .text(deviceID))
            }
            let again = await fixture.client.call("POST", "/v1/devices", token: maria, company: demo, json:
                #"{"installation_id":"inst-keep","platform":"ios","push_token":"\#(hexToken())"}"#)
            #expect(again.body["voip_token_status"]?.stringValue == "unregistered")
            // A new VoIP token from PushKit replaces it and is active.
            let fresh = await fixture.client.call("POST", "/v1/devices", token: maria, company: demo, json:
                #"{"installation_id":"inst-keep","platform":"ios","push_token":"\#(hexToken())","voip_token":"\#(hexToken())"}"#)
            #expect(fresh.body["voip_token_status"]?.stringValue == "active")
        }
    }

    @Test("the same install logged in by another user gets a row of its own; the old row stops ringing", arguments: [Backend.sqlite])
    func installationChangesUser(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            let demo = try await fixture.companyID("Residencial Demo")
            let body = #"{"installation_id":"shared-tablet","platform":"android","push_token":"fcm-token-1"}"#
            let first = await fixture.client.call("POST", "/v1/devices", token: try await fixture.login("maria"), company: demo, json: body)
            let second = await fixture.client.call("POST", "/v1/devices", token: try await fixture.login("joao"), json: body)
            #expect(first.status == 201 && second.status == 201)
            #expect(first.body["id"] != second.body["id"])
            // The token went with the phone: Maria's row keeps its history but rings no more.
            let marias = try await DeviceStore(database: fixture.database).devices(userID: try await fixture.userID("maria"))
            #expect(marias.map(\.pushTokenStatus) == ["moved"])
            let joaos = try await DeviceStore(database: fixture.database).devices(userID: try await fixture.userID("joao"))
            #expect(joaos.map(\.pushTokenStatus) == ["active"])
        }
    }

    @Test("strict validation names the field", arguments: [
        (#"{"installation_id":"i1","platform":"blackberry","push_token":"x"}"#, "platform"),
        (#"{"installation_id":"i1","platform":"ios","push_token":"not-hex"}"#, "push_token"),
        // Fullwidth Ａ–Ｆ and ０–９ are hex digits to `Character.isHexDigit`, not to APNs.
        (#"{"installation_id":"i1","platform":"ios","push_token":"\#(String(repeating: "ａ", count: 22))"}"#, "push_token"),
        (#"{"installation_id":"i1","platform":"android","push_token":"tok","voip_token":"aa"}"#, "voip_token"),
        (#"{"installation_id":"","platform":"android","push_token":"tok"}"#, "installation_id"),
        (#"{"installation_id":"i 1","platform":"android","push_token":"tok"}"#, "installation_id"),
        (#"{"installation_id":"i1","platform":"android"}"#, "push_token"),
        (#"{"installation_id":"i1","platform":"android","push_token":"tok","colour":"red"}"#, "colour"),
        (#"{"installation_id":"i1","platform":"android","push_token":"tok","capabilities":{"notifications_enabled":"yes"}}"#, "capabilities.notifications_enabled"),
        (#"{"installation_id":"i1","platform":"android","push_token":"tok","capabilities":{"root":true}}"#, "capabilities.root"),
        (#"{"installation_id":"i1","platform":"android","push_token":"tok","locale":"pt BR"}"#, "locale"),
        (#"{"installation_id":"i1","platform":"android","push_token":"tok with space"}"#, "push_token"),
    ])
    func validation(body: String, field: String) async throws {
        try await PushFixture.with(.sqlite) { fixture in
            let demo = try await fixture.companyID("Residencial Demo")
            let response = await fixture.client.call("POST", "/v1/devices", token: try await fixture.login("maria"), company: demo, json: body)
            #expect(response.status == 400)
            #expect(response.body["error"]?["code"]?.stringValue == "INVALID_REQUEST")
            #expect(response.body["error"]?["field"]?.stringValue == field, "\(response.body)")
            let count = try await fixture.database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM devices", [])?.int("n") }
            #expect(count == 0)
        }
    }

    @Test("permission devices.manage is required; no token is 401")
    func permissions() async throws {
        try await PushFixture.with(.sqlite) { fixture in
            let body = #"{"installation_id":"i1","platform":"android","push_token":"tok"}"#
            #expect(await fixture.client.call("POST", "/v1/devices", json: body).status == 401)
            let operatorToken = try await fixture.login("portaria")
            #expect(await fixture.client.call("POST", "/v1/devices", token: operatorToken, json: body).status == 403)
        }
    }
}
