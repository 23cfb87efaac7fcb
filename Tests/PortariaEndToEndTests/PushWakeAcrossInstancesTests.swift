import Foundation
import PortariaCore
import PortariaTestSupport
import Testing

/// Push workers on PostgreSQL are woken by NOTIFY `portaria_push` when any instance
/// enqueues, not by their poll (decision 0056).
@Suite("Push wake-up across instances", .serialized)
struct PushWakeAcrossInstancesTests {
    typealias P = PushReceiptEndToEndTests

    @Test("a ring accepted by A, which delivers no pushes, is sent by B at once although B polls only every 10 minutes",
          .requires(.postgres),
          .requires(.venv))
    func ringSentByAnotherInstance() async throws {
        let providers = try await P.Providers.start()
        defer { providers.stop() }
        try await TwoInstances.with(a: ["--no-push-worker"] + providers.arguments,
                                    b: ["--push-poll-seconds", "600"] + providers.arguments) { a, b in
            let maria = try await ClientDeviceEndToEndTests.Direct.login(a, "maria")
            let registered = try await maria.send("POST", "/v1/devices", json: #"{"installation_id":"wake-iphone","platform":"ios","push_token":"\#(String(repeating: "ab", count: 32))","voip_token":"\#(String(repeating: "cd", count: 32))"}"#)
            #expect(registered.status == 201, "\(String(decoding: registered.body, as: UTF8.self))")
            // B's worker looked once when it started and next polls in 10 minutes: only the
            // notification of A's commit can make it send within the bound below.
            let started = ContinuousClock.now
            let visitID = try await ClientQueueEndToEndTests.arrive(a, kind: "visit", name: "Pedro")
            let rung = await eventually(within: .seconds(20)) { providers.ringPayloads(visitID).apns != nil }
            #expect(rung, "APNs saw \(providers.apns.records().count) requests")
            if rung { print("push wake across instances: \(ContinuousClock.now - started) from gate POST on A to the ring at the APNs fake, sent by B") }
        }
    }
}
