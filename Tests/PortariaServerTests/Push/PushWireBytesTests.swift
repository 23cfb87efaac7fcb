import Foundation
@testable import PortariaCore
@testable import PortariaServer
import Testing

/// The exact bytes APNs and FCM get for each kind of push. Phones in the field decode
/// these bodies (`PushPayload`, the Android app, the service worker): a change of key,
/// spelling, number format or nesting is a change of the wire contract, so each body is
/// pinned here byte for byte.
@Suite("Push wire bytes: APNs and FCM bodies pinned byte for byte")
struct PushWireBytesTests {
    static let deadline = Timestamp.parse("2026-11-29T17:33:00Z")!
    /// FCM's `ttl` is what is left of the deadline: 90 s at this instant.
    static let now = Timestamp.parse("2026-11-29T17:31:30Z")!

    /// The contract tests' providers, on this suite's fixed clock and the app's bundle id.
    typealias Providers = PushPayloadContractTests.Providers

    static func providers() async throws -> Providers {
        try await Providers.make(bundleID: "br.portaria.app", now: { PushWireBytesTests.now })
    }

    static func push(_ kind: PushKind, tokenKind: OutgoingPush.TokenKind = .push, _ message: PushMessage) -> OutgoingPush {
        OutgoingPush(pushID: "p-1", kind: kind, platform: "ios", tokenKind: tokenKind, token: "tok", message: message,
                     deadline: deadline, attempt: 1, ackToken: "ack-1")
    }

    static let ringMessage = PushMessage(visitID: "v-1", callerName: "Pedro \"Pé\" Souza", unitLabel: "A-101", visitKind: .visit,
                                         carrier: nil, geofence: GeofenceResult(status: .away, distanceM: 340))
    static let deliveryMessage = PushMessage(visitID: "v-2", callerName: "João", unitLabel: "B-12", visitKind: .delivery,
                                             carrier: "Loggi", geofence: GeofenceResult(status: .atEntrance, distanceM: 3))

    @Test("a ring: the VoIP push, the alert ring and the FCM data message keep their bytes")
    func ring() async throws {
        let providers = try await Self.providers()
        defer { providers.stop() }
        #expect(providers.apnsWire(Self.push(.visitRing, tokenKind: .voip, Self.ringMessage)) == #"""
            voip br.portaria.app.voip 10 1795973580 - {"ack_token":"ack-1","caller_name":"Pedro \"Pé\" Souza","expires_at":"2026-11-29T17:33:00Z","geofence":{"distance_m":340,"status":"away"},"kind":"visit","push_id":"p-1","type":"visit.ring","unit_label":"A-101","visit_id":"v-1"}
            """#)
        #expect(providers.apnsWire(Self.push(.visitRing, Self.ringMessage)) == #"""
            alert br.portaria.app 10 1795973580 v-1 {"ack_token":"ack-1","aps":{"alert":{"body":"Visita para A-101 · ⚠ A 340m da portaria","title":"Pedro \"Pé\" Souza está na portaria"},"category":"VISIT","interruption-level":"time-sensitive","mutable-content":1,"sound":"default"},"caller_name":"Pedro \"Pé\" Souza","expires_at":"2026-11-29T17:33:00Z","geofence":{"distance_m":340,"status":"away"},"kind":"visit","push_id":"p-1","type":"visit.ring","unit_label":"A-101","visit_id":"v-1"}
            """#)
        #expect(providers.fcmWire(Self.push(.visitRing, Self.ringMessage)) == #"""
            {"message":{"android":{"priority":"HIGH","ttl":"90s"},"data":{"ack_token":"ack-1","caller_name":"Pedro \"Pé\" Souza","expires_at":"2026-11-29T17:33:00Z","geofence_distance_m":"340","geofence_status":"away","kind":"visit","push_id":"p-1","type":"visit.ring","unit_label":"A-101","visit_id":"v-1"},"token":"tok"}}
            """#)
        // Nothing but the visit: every default the apps rely on is spelled out.
        let bare = PushMessage(visitID: "v-3")
        #expect(providers.apnsWire(Self.push(.visitRing, tokenKind: .voip, bare)) == #"""
            voip br.portaria.app.voip 10 1795973580 - {"ack_token":"ack-1","caller_name":"Visitante","expires_at":"2026-11-29T17:33:00Z","geofence":{"status":"unknown"},"kind":"visit","push_id":"p-1","type":"visit.ring","unit_label":"","visit_id":"v-3"}
            """#)
        #expect(providers.fcmWire(Self.push(.visitRing, bare)) == #"""
            {"message":{"android":{"priority":"HIGH","ttl":"90s"},"data":{"ack_token":"ack-1","caller_name":"Visitante","expires_at":"2026-11-29T17:33:00Z","geofence_status":"unknown","kind":"visit","push_id":"p-1","type":"visit.ring","unit_label":"","visit_id":"v-3"},"token":"tok"}}
            """#)
    }

    @Test("a ring cancellation keeps its bytes on APNs and FCM")
    func ringCancelled() async throws {
        let providers = try await Self.providers()
        defer { providers.stop() }
        let message = PushMessage(visitID: "v-1", unitLabel: "A-101", visitKind: .visit, reason: .answeredElsewhere)
        #expect(providers.apnsWire(Self.push(.ringCancelled, message)) == #"""
            background br.portaria.app 5 1795973580 - {"ack_token":"ack-1","aps":{"content-available":1},"push_id":"p-1","reason":"answered_elsewhere","type":"visit.ring_cancelled","visit_id":"v-1"}
            """#)
        #expect(providers.fcmWire(Self.push(.ringCancelled, message)) == #"""
            {"message":{"android":{"priority":"HIGH","ttl":"90s"},"data":{"ack_token":"ack-1","push_id":"p-1","reason":"answered_elsewhere","type":"visit.ring_cancelled","visit_id":"v-1"},"token":"tok"}}
            """#)
        let bare = PushMessage(visitID: "v-1")
        #expect(providers.apnsWire(Self.push(.ringCancelled, bare)) == #"""
            background br.portaria.app 5 1795973580 - {"ack_token":"ack-1","aps":{"content-available":1},"push_id":"p-1","reason":"resolved","type":"visit.ring_cancelled","visit_id":"v-1"}
            """#)
    }

    @Test("a delivery, its resolution notice and an automatic resolution keep their bytes on APNs and FCM")
    func delivery() async throws {
        let providers = try await Self.providers()
        defer { providers.stop() }
        #expect(providers.apnsWire(Self.push(.delivery, Self.deliveryMessage)) == #"""
            alert br.portaria.app 10 1795973580 v-2 {"ack_token":"ack-1","aps":{"alert":{"body":"Loggi — João está na portaria","title":"Entrega para B-12"},"category":"DELIVERY","interruption-level":"time-sensitive","mutable-content":1,"sound":"default"},"caller_name":"João","carrier":"Loggi","push_id":"p-1","type":"delivery","unit_label":"B-12","visit_id":"v-2"}
            """#)
        #expect(providers.fcmWire(Self.push(.delivery, Self.deliveryMessage)) == #"""
            {"message":{"android":{"collapse_key":"v-2","priority":"HIGH","ttl":"90s"},"data":{"ack_token":"ack-1","caller_name":"João","carrier":"Loggi","expires_at":"2026-11-29T17:33:00Z","geofence_distance_m":"3","geofence_status":"at_entrance","kind":"delivery","push_id":"p-1","type":"delivery","unit_label":"B-12","visit_id":"v-2"},"token":"tok"}}
            """#)
        let at = try #require(Timestamp.parse("2026-11-30T17:32:00Z"))
        let decided = PushMessage(visitID: "v-2", unitLabel: "B-12", visitKind: .delivery,
                                  resolution: VisitResolution(action: .authorize, by: PersonRef(id: "u-1", name: "Maria"), at: at, via: .app),
                                  timeZone: "America/Sao_Paulo")
        #expect(providers.apnsWire(Self.push(.deliveryResolved, decided)) == #"""
            alert br.portaria.app 10 1795973580 v-2 {"ack_token":"ack-1","action":"authorize","aps":{"alert":{"body":"Maria autorizou às 14:32","title":"Entrega para B-12"},"interruption-level":"passive","mutable-content":1},"push_id":"p-1","resolved_at":"2026-11-30T17:32:00Z","resolved_by_name":"Maria","text":"Maria autorizou às 14:32","type":"delivery.resolved","unit_label":"B-12","via":"app","visit_id":"v-2"}
            """#)
        #expect(providers.fcmWire(Self.push(.deliveryResolved, decided)) == #"""
            {"message":{"android":{"collapse_key":"v-2","priority":"HIGH","ttl":"90s"},"data":{"ack_token":"ack-1","action":"authorize","push_id":"p-1","resolved_at":"2026-11-30T17:32:00Z","resolved_by_name":"Maria","text":"Maria autorizou às 14:32","type":"delivery.resolved","unit_label":"B-12","via":"app","visit_id":"v-2"},"token":"tok"}}
            """#)
        let automatic = PushMessage(visitID: "v-2", unitLabel: "B-12", visitKind: .delivery,
                                    resolution: VisitResolution(action: .leaveAtConcierge, by: .automatic, at: at, via: .auto),
                                    timeZone: "America/Sao_Paulo")
        #expect(providers.apnsWire(Self.push(.automaticResolution, automatic)) == #"""
            alert br.portaria.app 10 1795973580 v-2 {"ack_token":"ack-1","action":"leave_at_concierge","aps":{"alert":{"body":"Deixado na portaria automaticamente às 14:32","title":"Entrega para B-12"},"interruption-level":"active","mutable-content":1},"push_id":"p-1","resolved_at":"2026-11-30T17:32:00Z","text":"Deixado na portaria automaticamente às 14:32","type":"delivery.resolved","unit_label":"B-12","via":"auto","visit_id":"v-2"}
            """#)
        #expect(providers.fcmWire(Self.push(.automaticResolution, automatic)) == #"""
            {"message":{"android":{"collapse_key":"v-2","priority":"HIGH","ttl":"90s"},"data":{"ack_token":"ack-1","action":"leave_at_concierge","push_id":"p-1","resolved_at":"2026-11-30T17:32:00Z","text":"Deixado na portaria automaticamente às 14:32","type":"delivery.resolved","unit_label":"B-12","via":"auto","visit_id":"v-2"},"token":"tok"}}
            """#)
        let test = PushMessage(text: "oi")
        #expect(providers.apnsWire(Self.push(.test, test)) == #"""
            alert br.portaria.app 10 1795973580 - {"ack_token":"ack-1","aps":{"alert":{"body":"oi","title":"Portaria: teste de notificação"},"mutable-content":1,"sound":"default"},"push_id":"p-1","type":"test"}
            """#)
        #expect(providers.fcmWire(Self.push(.test, test)) == #"""
            {"message":{"android":{"priority":"HIGH","ttl":"90s"},"data":{"ack_token":"ack-1","push_id":"p-1","text":"oi","type":"test"},"token":"tok"}}
            """#)
    }
}

extension PushPayloadContractTests.Providers {
    /// `push-type topic priority expiration collapse-id` and the body, as APNs gets them.
    func apnsWire(_ push: OutgoingPush) -> String {
        let rendered = apns.render(push)
        return "\(rendered.pushType) \(rendered.topic) \(rendered.priority) \(rendered.expiration) \(rendered.collapseID ?? "-") "
            + String(decoding: rendered.payload, as: UTF8.self)
    }

    func fcmWire(_ push: OutgoingPush) -> String { fcm.render(push).jsonText }
}
