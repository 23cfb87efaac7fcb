import Foundation
import PortariaCore
import PortariaServer

/// `portaria admin push-bench`: pushes/s through one provider connection (bench/push
/// points it at the local fake APNs/FCM). Prints figures; asserts nothing.
enum PushBench {
    static func run(configuration: ServerConfiguration, provider name: String, count: Int, concurrency: Int) async throws -> Int32 {
        let log = Log(minimumLevel: .error)
        let providers = try Application.pushProviders(configuration, log: log)
        defer { providers.shutdown() }
        let provider: any PushProvider = name == "apns" ? providers.providers.apns : providers.providers.fcm
        guard provider.name == name else { throw UsageError("push-bench --provider \(name): no credentials configured for it") }
        let platform = name == "apns" ? "ios" : "android"
        let token = name == "apns" ? String(repeating: "ab", count: 32) : "bench-fcm-token"
        func makePush(_ index: Int) -> OutgoingPush {
            OutgoingPush(pushID: UUIDText.random(), kind: name == "apns" ? .visitRing : .visitRing, platform: platform,
                         tokenKind: name == "apns" ? .voip : .push, token: token,
                         message: PushMessage(visitID: UUIDText.random(), callerName: "Visitante \(index)", unitLabel: "A-101",
                                              visitKind: .visit, geofence: GeofenceResult(status: .atEntrance, distanceM: 10)),
                         deadline: Date().addingTimeInterval(60))
        }
        // Warm-up: TLS handshake, provider token / OAuth token.
        for index in 0..<min(50, count) { _ = await provider.send(makePush(index)) }

        let clock = ContinuousClock()
        let started = clock.now
        let outcomes = await withTaskGroup(of: (PushResult, Double).self) { group -> [(PushResult, Double)] in
            var results: [(PushResult, Double)] = []
            results.reserveCapacity(count)
            var next = 0
            func add() {
                let item = makePush(next)
                next += 1
                group.addTask {
                    let begin = clock.now
                    let result = await provider.send(item)
                    let elapsed = begin.duration(to: clock.now)
                    return (result, Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                }
            }
            while next < min(concurrency, count) { add() }
            while let result = await group.next() {
                results.append(result)
                if next < count { add() }
            }
            return results
        }
        let elapsed = started.duration(to: clock.now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let latencies = outcomes.map(\.1).sorted()
        func percentile(_ p: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        let accepted = outcomes.filter { $0.0.outcome == .accepted }.count
        var connections = 0
        if let apns = provider as? APNsProvider { connections = apns.client.connectionsOpened.current }
        if let fcm = provider as? FCMProvider { connections = fcm.client.connectionsOpened.current }
        print(String(format: "%@: %d pushes (%d accepted) in %.2f s = %.0f pushes/s; %d in flight; latency p50 %.1f ms p99 %.1f ms; TCP connections opened %d (incl. warm-up)",
                     name, count, accepted, seconds, Double(count) / seconds, concurrency, percentile(0.5), percentile(0.99), connections))
        var failures: [String: Int] = [:]
        for (result, _) in outcomes where result.outcome != .accepted { failures["\(result.outcome.rawValue) \(result.reason ?? "") \(result.detail ?? "")", default: 0] += 1 }
        for (reason, n) in failures.sorted(by: { $0.value > $1.value }).prefix(5) { print("  not accepted: \(n) × \(reason)") }
        return accepted == count ? 0 : 1
    }
}
