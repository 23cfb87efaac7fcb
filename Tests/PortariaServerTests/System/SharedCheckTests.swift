import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

/// `/healthz`'s database check is shared by the requests that arrive while it runs.
@Suite("Health check shared by concurrent probes")
struct SharedCheckTests {
    /// A check that waits until the test opens it, counting its runs.
    final class GatedCheck: Sendable {
        let runs = Locked(0)
        let healthy = Locked(true)
        let open = Locked(false)

        func callAsFunction() async -> Bool {
            runs.withLock { $0 += 1 }
            _ = await eventually(within: .seconds(30), every: .milliseconds(5)) { open.current }
            return healthy.current
        }
    }

    @Test("fifty probes during one running check share it: one query, fifty answers")
    func probesShareTheRunningCheck() async {
        let gated = GatedCheck()
        let check = SharedCheck { await gated() }
        let answers = Locked<[Bool]>([])
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { let answer = await check.run(); answers.withLock { $0.append(answer) } } }
            // Every probe arrives while the first check still waits, and waits for its answer.
            #expect(await eventually { check.waiters == 50 }, "the probes did not gather behind the running check")
            gated.open.withLock { $0 = true }
        }
        #expect(answers.current == Array(repeating: true, count: 50))
        #expect(gated.runs.current == 1, "one database query served every probe that arrived while it ran")
    }

    @Test("a probe after the check ended runs a new one and sees what holds now")
    func laterProbeRunsANewCheck() async {
        let gated = GatedCheck()
        gated.open.withLock { $0 = true }
        let check = SharedCheck { await gated() }
        #expect(await check.run())
        gated.healthy.withLock { $0 = false }
        #expect(await check.run() == false, "the database went away: the next probe says so")
        #expect(gated.runs.current == 2)
    }

    @Test("a check that does not answer within its timeout answers unhealthy to its waiters, and the next probe starts a fresh one")
    func stuckCheckTimesOut() async {
        let gated = GatedCheck()
        let check = SharedCheck(timeout: .milliseconds(200)) { await gated() }
        #expect(await check.run() == false, "a check stuck on the database is not an answer")
        gated.open.withLock { $0 = true }
        #expect(await check.run(), "the next probe runs its own check")
        #expect(gated.runs.current == 2)
    }
}
