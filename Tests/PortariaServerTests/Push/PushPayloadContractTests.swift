import Foundation
@testable import PortariaCore
@testable import PortariaServer
import Testing

/// What the server renders for APNs and FCM is what `PortariaCore.PushPayload` (the apps'
/// decoder) reads: the same fields out of both shapes.
@Suite("Push payloads: server renderers against the apps' decoder")
struct PushPayloadContractTests {
    struct Providers {
        let pki: TestPKI
        let apns: APNsProvider
        let fcm: FCMProvider

        /// Both providers on a test PKI, pointed at a port nobody answers (they only render).
        /// `now` fixes the clock that FCM's `ttl` and APNs' token are computed from.
        static func make(bundleID: String = "b", now: @escaping @Sendable () -> Date = { Date() }) async throws -> Providers {
            let pki = try await TestPKI.make()
            let apns = try APNsProvider(configuration: APNsConfiguration(keyFile: pki.apnsKey, keyID: "K", teamID: "T", bundleID: bundleID,
                                                                         endpoint: "https://127.0.0.1:9", caFile: pki.caFile), now: now)
            let keyPEM = try String(contentsOfFile: pki.fcmKey, encoding: .utf8)
            let account: JSONValue = .object([
                "type": "service_account", "project_id": "p", "private_key_id": "0123456789abcdef",
                "private_key": .string(keyPEM), "client_email": "push@p.iam.gserviceaccount.com",
                "token_uri": "https://127.0.0.1:9/token",
            ])
            let accountFile = pki.directory + "/service-account.json"
            try Data(account.jsonText.utf8).write(to: URL(fileURLWithPath: accountFile))
            let fcm = try FCMProvider(serviceAccountFile: accountFile, endpoint: "https://127.0.0.1:9", caFile: pki.caFile, now: now)
            return Providers(pki: pki, apns: apns, fcm: fcm)
        }

        func decodeBoth(_ push: OutgoingPush) throws -> (apns: PushPayload, fcm: PushPayload) {
            let apnsPayload = try PushPayload.decode(json: Data(apns.render(push).payload))
            let data = try #require(fcm.render(push)["message"]?["data"])
            return (apnsPayload, try PushPayload.decode(data))
        }

        func stop() {
            apns.shutdown()
            fcm.shutdown()
            pki.remove()
        }
    }

    static let deadline = Timestamp.parse("2026-11-29T17:33:00Z")!

    @Test("visit ring: name, unit, kind, geofence and deadline reach the app from both providers")
    func ring() async throws {
        let providers = try await Providers.make()
        defer { providers.stop() }
        let push = OutgoingPush(pushID: "p-1", kind: .visitRing, platform: "ios", tokenKind: .voip, token: hexToken(),
                                message: PushMessage(visitID: "v-1", callerName: "Pedro", unitLabel: "A-101", visitKind: .visit,
                                                     geofence: GeofenceResult(status: .away, distanceM: 340)),
                                deadline: Self.deadline)
        let expected = PushPayload.ring(RingPush(pushID: "p-1", visitID: "v-1", callerName: "Pedro", unitLabel: "A-101", kind: .visit,
                                                 geofence: GeofenceResult(status: .away, distanceM: 340), expiresAt: Self.deadline))
        let (apns, fcm) = try providers.decodeBoth(push)
        #expect(apns == expected)
        #expect(fcm == expected)
    }

    @Test("ring cancelled carries its reason; delivery its carrier; test its text")
    func others() async throws {
        let providers = try await Providers.make()
        defer { providers.stop() }
        let cancel = OutgoingPush(pushID: "p-2", kind: .ringCancelled, platform: "ios", tokenKind: .push, token: hexToken(),
                                  message: PushMessage(visitID: "v-1", reason: .answeredElsewhere), deadline: Self.deadline)
        let (apnsCancel, fcmCancel) = try providers.decodeBoth(cancel)
        let expectedCancel = PushPayload.ringCancelled(RingCancelledPush(pushID: "p-2", visitID: "v-1", reason: .answeredElsewhere))
        #expect(apnsCancel == expectedCancel)
        #expect(fcmCancel == expectedCancel)

        let delivery = OutgoingPush(pushID: "p-3", kind: .delivery, platform: "ios", tokenKind: .push, token: hexToken(),
                                    message: PushMessage(visitID: "v-2", callerName: "João", unitLabel: "A-101", visitKind: .delivery,
                                                         carrier: "Loggi", geofence: GeofenceResult(status: .atEntrance, distanceM: 3)),
                                    deadline: Self.deadline)
        let (apnsDelivery, fcmDelivery) = try providers.decodeBoth(delivery)
        // APNs alerts carry what the notification shows; FCM data messages also the
        // deadline and geofence (the Android app builds the notification itself).
        #expect(apnsDelivery == .delivery(DeliveryPush(pushID: "p-3", visitID: "v-2", callerName: "João", unitLabel: "A-101", carrier: "Loggi")))
        #expect(fcmDelivery == .delivery(DeliveryPush(pushID: "p-3", visitID: "v-2", callerName: "João", unitLabel: "A-101", carrier: "Loggi",
                                                      expiresAt: Self.deadline, geofence: GeofenceResult(status: .atEntrance, distanceM: 3))))

        let test = OutgoingPush(pushID: "p-4", kind: .test, platform: "android", tokenKind: .push, token: hexToken(),
                                message: PushMessage(text: "oi"), deadline: Self.deadline)
        let (apnsTest, fcmTest) = try providers.decodeBoth(test)
        #expect(apnsTest == .test(pushID: "p-4", text: nil))   // APNs shows the text in aps.alert
        #expect(fcmTest == .test(pushID: "p-4", text: "oi"))
    }

    @Test("a decided delivery reaches the app with the same fields from both providers; an iPhone without VoIP token decodes its alert ring as a ring")
    func resolutionsAndAlertRing() async throws {
        let providers = try await Providers.make()
        defer { providers.stop() }
        let at = try #require(Timestamp.parse("2026-11-30T17:32:00Z"))
        for (kind, resolution, text) in [
            (PushKind.deliveryResolved, VisitResolution(action: .deny, by: PersonRef(id: "u-1", name: "João Souza"), at: at, via: .notification),
             "João negou às 14:32"),
            (PushKind.automaticResolution, VisitResolution(action: .leaveAtConcierge, by: .automatic, at: at, via: .auto),
             "Deixado na portaria automaticamente às 14:32"),
        ] {
            let push = OutgoingPush(pushID: "p-9", kind: kind, platform: "ios", tokenKind: .push, token: hexToken(),
                                    message: PushMessage(visitID: "v-9", unitLabel: "A-101", visitKind: .delivery, resolution: resolution,
                                                         timeZone: "America/Sao_Paulo"),
                                    deadline: Self.deadline)
            let expected = PushPayload.deliveryResolved(DeliveryResolvedPush(
                pushID: "p-9", visitID: "v-9", unitLabel: "A-101", action: resolution.action,
                resolvedByName: resolution.via == .auto ? nil : resolution.by.name, resolvedAt: at, via: resolution.via, text: text))
            let (apns, fcm) = try providers.decodeBoth(push)
            #expect(apns == expected)
            #expect(fcm == expected)
            #expect(providers.apns.render(push).collapseID == "v-9")
        }
        let alertRing = OutgoingPush(pushID: "p-1", kind: .visitRing, platform: "ios", tokenKind: .push, token: hexToken(),
                                     message: PushMessage(visitID: "v-1", callerName: "Pedro", unitLabel: "A-101", visitKind: .visit,
                                                          geofence: GeofenceResult(status: .away, distanceM: 340)),
                                     deadline: Self.deadline)
        let expected = PushPayload.ring(RingPush(pushID: "p-1", visitID: "v-1", callerName: "Pedro", unitLabel: "A-101", kind: .visit,
                                                 geofence: GeofenceResult(status: .away, distanceM: 340), expiresAt: Self.deadline))
        #expect(try providers.decodeBoth(alertRing).apns == expected)
        #expect(providers.apns.render(alertRing).pushType == "alert")
        // A VoIP ring never carries a collapse id (PushKit ignores it; each ring is a call).
        var voip = alertRing
        voip.tokenKind = .voip
        #expect(providers.apns.render(voip).collapseID == nil)
        #expect(providers.apns.render(voip).pushType == "voip")
    }

    @Test("the server's push kinds map onto the app's payload types")
    func kindsCovered() {
        let mapped: [PushKind: PushPayloadType] = [.visitRing: .visitRing, .ringCancelled: .ringCancelled, .delivery: .delivery,
                                                   .deliveryResolved: .deliveryResolved, .automaticResolution: .deliveryResolved, .test: .test]
        #expect(Set(mapped.keys) == Set(PushKind.allCases))
        #expect(Set(mapped.values) == Set(PushPayloadType.allCases))
    }
}
