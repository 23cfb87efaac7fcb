import Foundation
import Testing
@testable import PortariaServer

/// `SessionCache`'s rules without a server: what may be served, what may be stored, and
/// what an invalidation or a lost listener removes (the end-to-end tests drive the wiring).
@Suite("Session cache rules")
struct SessionCacheUnitTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func facts(user: String = "u1", expiresIn: TimeInterval = 3600) -> CallerFacts {
        CallerFacts(user: try! UserRecord(SQLRow(columns: AccountStore.userColumnNames,
                                                 values: [.text(user), .text(user), .text(user), .null, .null, 0, 0, 0])),
                    companies: ["c1"], membership: nil, sessionExpiresAt: now.addingTimeInterval(expiresIn))
    }

    func key(_ session: String = "s1", company: String? = nil) -> SessionCache.Key { .init(sessionID: session, company: company) }

    @Test("a stored answer is served to the same session and user, not to another subject, after its session ends or its lifetime")
    func servesOnlyWhatIsStillTrue() async {
        let cache = SessionCache(capacity: 10, lifetime: 60, armed: true)
        let (miss, ticket) = await cache.lookup(key(), userID: "u1", now: now)
        #expect(miss == nil)
        cache.store(facts(expiresIn: 30), for: key(), ticket: try! #require(ticket), now: now)
        #expect(await cache.lookup(key(), userID: "u1", now: now).facts?.user.id == "u1")
        #expect(await cache.lookup(key(company: "c1"), userID: "u1", now: now).facts == nil, "another X-Company-Id is another entry")
        #expect(await cache.lookup(key(), userID: "u2", now: now).facts == nil)
        cache.store(facts(expiresIn: 30), for: key(), ticket: await cache.lookup(key(), userID: "u1", now: now).ticket!, now: now)
        #expect(await cache.lookup(key(), userID: "u1", now: now.addingTimeInterval(30)).facts == nil, "the session ended")
        cache.store(facts(), for: key(), ticket: await cache.lookup(key(), userID: "u1", now: now).ticket!, now: now)
        #expect(await cache.lookup(key(), userID: "u1", now: now.addingTimeInterval(60)).facts == nil, "the lifetime passed")
    }

    @Test("a read that started before an invalidation is not stored after it")
    func fillRacingAnInvalidationIsDropped() async {
        let cache = SessionCache(capacity: 10, lifetime: 60, armed: true)
        for invalidate in [{ cache.forget(session: "s1") }, { cache.forget(user: "u9") }, { cache.forgetAll() }] {
            let ticket = try! #require(await cache.lookup(key(), userID: "u1", now: now).ticket)
            invalidate()
            cache.store(facts(), for: key(), ticket: ticket, now: now)
            #expect(await cache.lookup(key(), userID: "u1", now: now).facts == nil)
        }
    }

    @Test("forgetting a session or a user removes exactly their entries; notifications name them")
    func invalidationsAreTargeted() async {
        let cache = SessionCache(capacity: 10, lifetime: 60, armed: true)
        func fill(_ session: String, _ user: String) async {
            cache.store(facts(user: user), for: key(session), ticket: await cache.lookup(key(session), userID: user, now: now).ticket!, now: now)
        }
        await fill("s1", "u1"); await fill("s2", "u1"); await fill("s3", "u2")
        cache.apply(notification: AuthChange.session("s1").payload)
        #expect(cache.count == 2)
        cache.apply(notification: AuthChange.user("u1").payload)
        #expect(cache.count == 1)
        #expect(await cache.lookup(key("s3"), userID: "u2", now: now).facts != nil)
        cache.apply(notification: "something else")
        #expect(cache.count == 0, "an unknown payload forgets everything")
    }

    @Test("off while invalidations cannot arrive: nothing served, nothing stored, everything dropped")
    func disarmedServesNothing() async {
        let cache = SessionCache(capacity: 10, lifetime: 60, armed: false)
        #expect(await cache.lookup(key(), userID: "u1", now: now).ticket == nil)
        cache.setArmed(true)
        let ticket = try! #require(await cache.lookup(key(), userID: "u1", now: now).ticket)
        cache.store(facts(), for: key(), ticket: ticket, now: now)
        #expect(cache.count == 1)
        cache.setArmed(false)
        #expect(cache.count == 0)
        #expect(await cache.lookup(key(), userID: "u1", now: now).facts == nil)
    }

    @Test("bounded: at capacity the cache starts over")
    func bounded() async {
        let cache = SessionCache(capacity: 3, lifetime: 60, armed: true)
        for index in 0..<7 {
            let session = "s\(index)"
            cache.store(facts(), for: key(session), ticket: await cache.lookup(key(session), userID: "u1", now: now).ticket!, now: now)
            #expect(cache.count <= 3)
        }
    }

    @Test("a barrier that cannot vouch for the notifications makes every lookup a read")
    func failedBarrierBypasses() async {
        let cache = SessionCache(capacity: 10, lifetime: 60, armed: true)
        cache.store(facts(), for: key(), ticket: await cache.lookup(key(), userID: "u1", now: now).ticket!, now: now)
        cache.waitForNotifications { false }
        let (facts, ticket) = await cache.lookup(key(), userID: "u1", now: now)
        #expect(facts == nil && ticket == nil)
    }

    @Test("AuthChange payloads round-trip, ids with colons included")
    func payloads() {
        for change in [AuthChange.session("a:b"), .user("u-1"), .session("")] {
            #expect(AuthChange(payload: change.payload) == change)
        }
        #expect(AuthChange(payload: "x:1") == nil)
    }
}
