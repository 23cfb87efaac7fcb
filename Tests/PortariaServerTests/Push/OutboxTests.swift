import Foundation
import PortariaCore
@testable import PortariaServer
import PortariaTestSupport
import Testing

@Suite("Push outbox, receipts and health", .serialized)
struct OutboxTests {
    static let backends: [Backend] = Backend.underTest

    @Test("jobs commit and roll back with the caller's transaction", arguments: backends)
    func transactional(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            try await fixture.register("maria")
            let maria = try await fixture.userID("maria")
            struct Boom: Error {}
            do {
                try await fixture.database.write { db in
                    try PushOutbox.enqueue(db, PushRequest(userID: maria, kind: .visitRing, message: ringMessage(), deadline: Date().addingTimeInterval(20)))
                    throw Boom()
                }
            } catch is Boom {}
            let count = try await fixture.database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM push_jobs", [])?.int("n") }
            #expect(count == 0)
            // Maria's A-101 ring reaches her iPhone as VoIP; a web row without a push subscription gets nothing.
            try await fixture.register("maria", platform: "web", pushToken: "https://push.example/sub/1")
            let jobs = try await fixture.enqueue(PushRequest(userIDs: [maria], kind: .visitRing, message: ringMessage(), deadline: Date().addingTimeInterval(20)))
            #expect(jobs.map(\.platform) == ["ios"])
        }
    }

    @Test("a crashed worker's lease runs out and another claims the job; the stale worker cannot record", arguments: backends)
    func leaseReclaim(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            try await fixture.register("maria")
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .delivery,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(600)))
            let provider = CountingProvider()
            var configuration = testWorkerConfiguration()
            configuration.lease = 30
            let crashed = PushWorker(database: fixture.database, providers: provider.providers, configuration: configuration, instanceID: "crashed")
            let claimed = try await crashed.claim(limit: 10)
            #expect(claimed.count == 1)
            // While the lease holds, nobody else gets it.
            let other = PushWorker(database: fixture.database, providers: provider.providers, configuration: configuration, instanceID: "other")
            #expect(try await other.claim(limit: 10).isEmpty)
            // 31 s later (the crashed instance never came back) it is claimed again.
            let later = PushWorker(database: fixture.database, providers: provider.providers, configuration: configuration,
                                   instanceID: "later", now: { Date().addingTimeInterval(31) })
            let reclaimed = try await later.claim(limit: 10)
            #expect(reclaimed.map(\.push.pushID) == jobs.map(\.pushID))
            #expect(reclaimed.first?.attempt == 2)
            await later.deliver(reclaimed[0])
            // The stale worker wakes up and tries to record: ignored.
            await crashed.deliver(claimed[0])
            let row = try await fixture.database.read { db in try db.queryOne("SELECT * FROM push_jobs WHERE id = ?", .text(jobs[0].pushID)) }
            #expect(try row?.string("status") == "sent")
            let attempts = try await fixture.database.read { db in try db.query("SELECT instance FROM push_attempts", []) }
            #expect(try attempts.compactMap { try $0.string("instance") } == ["later"])
        }
    }

    @Test("PostgreSQL: a job leased by an instance whose connections are all gone is found gone and released; a live neighbour's (seen only through its listener), an unnamed owner's and our own are not (decision 0058)",
          .requires(.postgres))
    func orphanedLeases() async throws {
        try await PushFixture.with(.postgres) { fixture in
            try await fixture.register("maria")
            let maria = try await fixture.userID("maria")
            var jobs: [String] = []
            for _ in 0..<4 {
                jobs += try await fixture.enqueue(PushRequest(userID: maria, kind: .delivery, message: ringMessage(),
                                                              deadline: Date().addingTimeInterval(600))).map(\.pushID)
            }
            // Two more instances on the same database, as `portaria serve` names them; one dies.
            // The live one shows only its listener, as behind a transaction-pooling PgBouncer.
            let live = InstanceName(), dead = InstanceName(), me = InstanceName()
            let url = fixture.auth.storage.url
            let neighbour = try await DatabaseFactory.open(url: url + (url.contains("?") ? "&" : "?") + "application_name=" + live.listenerName)
            let dying = try await DatabaseFactory.open(url: try #require(dead.naming(url)))
            #expect(try await dying.read { db in try db.queryOne("SELECT current_setting('application_name') AS name", [])?.string("name") } == dead.rawValue)
            let at = Date()
            let leaseUntil = at.addingTimeInterval(600)
            let owners = [dead.rawValue, live.rawValue, "3f0c-unnamed-older-instance", me.rawValue]
            for (job, owner) in zip(jobs, owners) {
                _ = try await fixture.database.write { db in
                    try PushOutbox.claim(db, owner: owner, leaseUntil: leaseUntil, at: at, limit: 1, ids: [job])
                }
            }
            // While every instance lives, none is gone and nothing is released.
            #expect(try await fixture.database.read { db in try PushOutbox.instancesGone(db, except: me.rawValue, at: at) }.isEmpty)
            #expect(try await fixture.database.write { db in
                try PushOutbox.releaseLeases(db, ofGone: [live.rawValue], at: at)
            } == 0, "a live instance's jobs are never released, even when named")
            await dying.close()
            // Its backends end as its sockets close (at once, but not synchronously with close()).
            var gone: Set<String> = []
            _ = try await eventually(within: .seconds(10), every: .milliseconds(50)) {
                gone = try await fixture.database.read { db in try PushOutbox.instancesGone(db, except: me.rawValue, at: at) }
                return !gone.isEmpty
            }
            #expect(gone == [dead.rawValue])
            let released = try await fixture.database.write { db in
                try PushOutbox.releaseLeases(db, ofGone: [dead.rawValue, live.rawValue], at: at)
            }
            #expect(released == 1)
            let rows = try await fixture.database.read { db in try db.query("SELECT id, lease_until FROM push_jobs", []) }
            let leases = Dictionary(uniqueKeysWithValues: try rows.map { (try $0.required.string("id"), try $0.date("lease_until")) })
            #expect(leases[jobs[0]] == SQLValue.storedPrecision(at), "the dead instance's job is due now")
            for job in jobs.dropFirst() { #expect(leases[job] == SQLValue.storedPrecision(leaseUntil), "\(job) keeps its lease") }
            // And any worker claims it again (attempt 2).
            let worker = PushWorker(database: fixture.database, providers: CountingProvider().providers,
                                    configuration: testWorkerConfiguration(), instanceID: me.rawValue)
            let reclaimed = try await worker.claim(limit: 10)
            #expect(reclaimed.map(\.push.pushID) == [jobs[0]] && reclaimed.first?.attempt == 2)
            await neighbour.close()
        }
    }

    @Test("an instance is taken for gone only once it stays unseen for the grace period; seen again, it starts over")
    func goneInstancesGrace() {
        var gone = GoneInstances(grace: .seconds(5))
        let start = ContinuousClock.now
        #expect(gone.observe(["a", "b"], at: start).isEmpty)
        #expect(gone.observe(["a", "b"], at: start + .seconds(4)).isEmpty)
        // b reconnects (a database restart it lived through), a does not.
        #expect(gone.observe(["a"], at: start + .seconds(4.5)).isEmpty)
        #expect(gone.observe(["a"], at: start + .seconds(5)) == ["a"])
        // b loses its connections again: its clock starts over.
        #expect(gone.observe(["a", "b"], at: start + .seconds(6)) == ["a"])
        #expect(gone.observe(["a", "b"], at: start + .seconds(11)) == ["a", "b"])
        #expect(gone.observe([], at: start + .seconds(12)).isEmpty && gone.unseenSince.isEmpty)
    }

    @Test("two instances on one database: every job sent exactly once", arguments: backends)
    func twoInstances(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            var users: [String] = []
            for name in ["maria", "joao", "ana", "carlos"] {
                users.append(try await fixture.userID(name))
                try await fixture.register(name)
                try await fixture.register(name, platform: "android", pushToken: "fcm-\(UUID().uuidString)")
            }
            let provider = CountingProvider(delay: .milliseconds(2))
            let second = backend == .postgres ? try await fixture.auth.storage.openAnother() : fixture.database
            var configuration = testWorkerConfiguration()
            configuration.concurrency = 8
            let a = PushWorker(database: fixture.database, providers: provider.providers, configuration: configuration, instanceID: "a")
            let b = PushWorker(database: second, providers: provider.providers, configuration: configuration, instanceID: "b")
            a.start()
            b.start()
            var all: [EnqueuedPush] = []
            for _ in 0..<25 {
                all += try await fixture.enqueue(PushRequest(userIDs: users, kind: .test, message: PushMessage(text: "x"),
                                                             deadline: Date().addingTimeInterval(120)))
            }
            let rows = try await waitForJobs(fixture.database, all.map(\.pushID), timeout: 60)
            await a.stop()
            await b.stop()
            if backend == .postgres { await second.close() }
            #expect(all.count == 200)
            #expect(try rows.values.allSatisfy { try $0.string("status") == "sent" })
            let counts = provider.sent.current
            #expect(counts.count == 200)
            #expect(counts.values.allSatisfy { $0 == 1 }, "no job sent twice")
            let instances = try await fixture.database.read { db in
                try db.query("SELECT instance, COUNT(*) AS n FROM push_attempts GROUP BY instance", [])
            }
            print("two instances (\(backend)): " + (try instances.map { "\(try $0.string("instance") ?? "?")=\(try $0.int("n") ?? 0)" }).joined(separator: " "))
        }
    }

    @Test("a retry wakes its worker when it falls due, however long the poll (decision 0056)", arguments: backends)
    func retryWakesTheWorker(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            try await fixture.register("maria")
            // Unavailable once, then accepted.
            let provider = CountingProvider { push in
                push.attempt == 1 ? PushResult(outcome: .retry, httpStatus: 503, reason: "ServiceUnavailable") : PushResult(outcome: .accepted, httpStatus: 200)
            }
            var configuration = testWorkerConfiguration()
            configuration.pollInterval = .seconds(600)
            let worker = PushWorker(database: fixture.database, providers: provider.providers, configuration: configuration)
            worker.start()
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .delivery,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(120)))
            worker.wake()
            // The retry is due after about 50 ms; only its own wake-up can beat the 10-minute poll.
            let rows = try await waitForJobs(fixture.database, jobs.map(\.pushID), timeout: 20)
            await worker.stop()
            #expect(try rows.values.allSatisfy { try $0.string("status") == "sent" })
            #expect(provider.sent.current[jobs[0].pushID] == 2)
        }
    }

    @Test("stop() cancels the retry wake-ups still sleeping: none outlives the worker", arguments: backends)
    func stopCancelsRetryWakes(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            try await fixture.register("maria")
            // Unavailable, come back in an hour: the retry's wake-up sleeps that long.
            let provider = CountingProvider { _ in PushResult(outcome: .retry, httpStatus: 503, reason: "ServiceUnavailable", retryAfter: 3600) }
            var configuration = testWorkerConfiguration()
            configuration.retry = PushRetryPolicy(base: 0.05, cap: 1, maxAttempts: 5)
            let worker = PushWorker(database: fixture.database, providers: provider.providers, configuration: configuration)
            worker.start()
            let jobs = try await fixture.enqueue(PushRequest(userID: try await fixture.userID("maria"), kind: .delivery,
                                                             message: ringMessage(), deadline: Date().addingTimeInterval(7200)))
            worker.wake()
            _ = try await waitForJobs(fixture.database, jobs.map(\.pushID), in: ["pending"], timeout: 20)
            // Recorded; its wake-up is registered right after the recording commits.
            _ = await eventually(within: .seconds(20), every: .milliseconds(10)) { worker.pendingRetryWakes > 0 }
            #expect(worker.pendingRetryWakes == 1)
            await worker.stop()
            #expect(worker.pendingRetryWakes == 0, "a wake-up sleeping an hour must not outlive stop()")
        }
    }

    @Test("receipts: the device's user only, idempotent; unacked pushes count against the device", arguments: backends)
    func receipts(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            let device = try await fixture.register("maria")
            let maria = try await fixture.userID("maria")
            let jobs = try await fixture.enqueue(PushRequest(userID: maria, kind: .test, message: PushMessage(), deadline: Date().addingTimeInterval(60)))
            let worker = PushWorker(database: fixture.database, providers: CountingProvider().providers, configuration: testWorkerConfiguration())
            for job in try await worker.claim(limit: 10) { await worker.deliver(job) }
            let demo = try await fixture.companyID("Residencial Demo")

            // Accepted by the provider, never acknowledged: after the grace period, failing.
            var receipts = PushReceipts(database: fixture.database)
            receipts.now = { Date().addingTimeInterval(600) }
            let before = try await receipts.health(companyID: demo)
            #expect(before.devices.first?.status == "failing")
            #expect(before.devices.first?.unackedPushes == 1)

            let path = "/v1/push/\(jobs[0].pushID)/ack"
            #expect(await fixture.client.call("POST", path, token: try await fixture.login("joao")).status == 404)
            let first = await fixture.client.call("POST", path, token: try await fixture.login("maria"))
            #expect(first.status == 200)
            let second = await fixture.client.call("POST", path, token: try await fixture.login("maria"))
            #expect(second.status == 200)
            #expect(first.body["acked_at"] == second.body["acked_at"])
            #expect(await fixture.client.call("POST", "/v1/push/\(UUID().uuidString)/ack", token: try await fixture.login("maria")).status == 404)
            #expect(await fixture.client.call("POST", path).status == 401)

            let after = try await receipts.health(companyID: demo)
            let entry = try #require(after.devices.first { $0.deviceID == device.id })
            #expect(entry.status == "healthy")
            #expect(entry.consecutiveFailures == 0)
            #expect(entry.lastAckAt != nil)
        }
    }

    @Test("push health is company-scoped, failing first, with risk flags", arguments: backends)
    func health(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            let demo = try await fixture.companyID("Residencial Demo")
            try await fixture.register("joao", platform: "android", pushToken: "fcm-joao",
                                       capabilities: .init(notificationsEnabled: false, fullScreenIntentAllowed: false,
                                                           ignoringBatteryOptimizations: false, manufacturer: "Xiaomi", osVersion: "14"))
            let ana = try await fixture.register("ana")
            try await fixture.register("carlos", platform: "android", pushToken: "fcm-carlos")  // Condomínio Azul only
            try await fixture.database.write { db in
                try db.execute("UPDATE devices SET consecutive_failures = 2, last_error = 'Unregistered' WHERE id = ?", .text(ana.id))
                try db.execute("UPDATE devices SET token_refreshed_at = ? WHERE push_token = 'fcm-joao'", .date(Date().addingTimeInterval(-40 * 86_400)))
            }
            let admin = try await fixture.login("admin")
            let response = await fixture.client.call("GET", "/v1/admin/push_health", token: admin)
            #expect(response.status == 200)
            guard case .array(let devices)? = response.body["devices"] else { Issue.record("no devices: \(response.body)"); return }
            #expect(devices.count == 2, "carlos is in another company")
            #expect(devices.first?["user"]?["username"]?.stringValue == "ana")
            #expect(devices.first?["status"]?.stringValue == "failing")
            #expect(devices.first?["last_provider_error"]?.stringValue == "Unregistered")
            let joao = try #require(devices.first { $0["user"]?["username"]?.stringValue == "joao" })
            guard case .array(let flags)? = joao["risk_flags"] else { Issue.record("no flags"); return }
            #expect(Set(flags.compactMap(\.stringValue)) == ["notifications_disabled", "full_screen_intent_revoked",
                                                             "battery_optimization", "token_stale"])
            #expect(joao["token_age_days"]?.intValue == 40)
            #expect(response.body["summary"]?["failing"]?.intValue == 1)
            // Residents may not see it.
            #expect(await fixture.client.call("GET", "/v1/admin/push_health", token: try await fixture.login("maria"), company: demo).status == 403)
        }
    }

    @Test("a browser on an Android phone whose maker stops background apps is flagged for battery like the Android app", arguments: backends)
    func browserOnAndroidBatteryFlag(backend: Backend) async throws {
        try await PushFixture.with(backend) { fixture in
            // As the web app registers on a Xiaomi (`platform` web, maker and "Android …" in the capabilities).
            try await fixture.register("joao", platform: "android", pushToken: "fcm-joao-web",
                                       capabilities: .init(notificationsEnabled: true, ignoringBatteryOptimizations: false,
                                                           manufacturer: "xiaomi", osVersion: "Android 13"))
            try await fixture.register("ana", platform: "android", pushToken: "fcm-ana-web",
                                       capabilities: .init(notificationsEnabled: true, ignoringBatteryOptimizations: false,
                                                           manufacturer: "xiaomi", osVersion: "Linux"))
            try await fixture.database.write { db in
                try db.execute("UPDATE devices SET platform = 'web', push_token = NULL WHERE push_token IN ('fcm-joao-web', 'fcm-ana-web')")
            }
            let response = await fixture.client.call("GET", "/v1/admin/push_health", token: try await fixture.login("admin"))
            guard case .array(let devices)? = response.body["devices"] else { Issue.record("no devices: \(response.body)"); return }
            let flags = { (username: String) -> Set<String> in
                guard case .array(let list)? = devices.first(where: { $0["user"]?["username"]?.stringValue == username })?["risk_flags"] else { return [] }
                return Set(list.compactMap(\.stringValue))
            }
            #expect(flags("joao") == ["battery_optimization"])
            #expect(flags("ana").isEmpty, "a desktop browser has no maker's power saver")
        }
    }

    @Test("retry policy: exponential, jittered, capped, never before Retry-After")
    func retryPolicy() {
        let policy = PushRetryPolicy(base: 1, cap: 60, maxAttempts: 8, jitter: 0.5)
        for attempt in 1...10 {
            let full = min(60, pow(2, Double(attempt - 1)))
            let delay = policy.delay(afterAttempt: attempt, retryAfter: nil)
            #expect(delay >= full * 0.5 && delay <= full)
        }
        #expect(policy.delay(afterAttempt: 1, retryAfter: 60) == 60)
    }

    @Test("static files: /admin/ serves the page; traversal is impossible")
    func staticFiles() async throws {
        let client = RouteClient()
        StaticFiles(root: Repository.root + "/Web").register(on: client.router, section: "admin")
        for name in ["..", "...", ".env", "..%2F..%2FPackage.swift", "a/b", "%2e%2e", "index.html%00"] {
            #expect(!StaticFiles.isSafeName(name.removingPercentEncoding ?? name), "\(name)")
        }
        #expect(await client.call("GET", "/admin/..%2F..%2FPackage.swift").status == 404)
        #expect(await client.call("GET", "/admin/%2e%2e").status == 404)
        #expect(await client.call("GET", "/admin/missing.js").status == 404)
        #expect(await client.call("GET", "/admin").status == 301)
        #expect(StaticFiles.isSafeName("index.html") && StaticFiles.isSafeName("app.js"))
    }
}
