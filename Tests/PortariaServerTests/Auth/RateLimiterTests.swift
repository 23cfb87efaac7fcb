import Foundation
@testable import PortariaServer
import Testing

@Suite("Per-address bucket keys")
struct AddressKeyTests {
    @Test("IPv4 is kept; IPv4-mapped IPv6 counts as its IPv4 address", arguments: [
        ("203.0.113.7", "203.0.113.7"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("::FFFF:203.0.113.7", "203.0.113.7"),
        ("::ffff:cb00:7107", "203.0.113.7"),
        ("[::ffff:203.0.113.7]", "203.0.113.7"),
    ])
    func ipv4(address: String, key: String) {
        #expect(AddressKey.bucket(address) == key)
    }

    @Test("IPv6 counts by its /64: every address of one prefix shares a bucket")
    func ipv6Prefix() {
        let key = AddressKey.bucket("2001:db8:1:2::1")
        #expect(key == "2001:db8:1:2::/64")
        for other in ["2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:0db8:0001:0002:0:0:0:abcd", "[2001:db8:1:2::99]",
                      "2001:db8:1:2::1%eth0", "2001:DB8:1:2::5"] {
            #expect(AddressKey.bucket(other) == key, "\(other)")
        }
        #expect(AddressKey.bucket("2001:db8:1:3::1") != key)
        #expect(AddressKey.bucket("::1") == "::/64")
    }

    @Test("what is not an address is kept as it is", arguments: ["", "bench", "unix", "1.2.3", "2001:db8::1::2"])
    func notAnAddress(text: String) {
        #expect(AddressKey.bucket(text) == text)
    }
}

@Suite("Rate limiter")
struct RateLimiterTests {
    static func count(_ database: any SQLDatabase, _ bucket: String) async throws -> Int64? {
        try await database.read { db in try db.queryOne("SELECT count FROM rate_limits WHERE bucket = ?", .text(bucket))?.int("count") }
    }

    @Test("admit counts up to the limit, then refuses without writing", arguments: VisitsFixture.backends)
    func admitRefusesWithoutWriting(backend: Backend) async throws {
        try await StorageFixture.with(backend) { fixture in
            try await Migrator().migrate(fixture.database)
            let limiter = RateLimiter(database: fixture.database)
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            for attempt in 1...3 {
                let decision = try await limiter.admit("b", max: 3, window: 60, now: now)
                #expect(decision.allowed, "attempt \(attempt)")
            }
            for _ in 0..<5 {
                let decision = try await limiter.admit("b", max: 3, window: 60, now: now.addingTimeInterval(10))
                #expect(!decision.allowed)
                #expect(decision.window.retryAfter == 50)
            }
            #expect(try await Self.count(fixture.database, "b") == 3)
            // A new window starts over.
            #expect(try await limiter.admit("b", max: 3, window: 60, now: now.addingTimeInterval(61)).allowed)
            #expect(try await Self.count(fixture.database, "b") == 1)
        }
    }

    @Test("a hit with an amount counts it at once, and a new window starts at that amount", arguments: VisitsFixture.backends)
    func hitWithAnAmount(backend: Backend) async throws {
        try await StorageFixture.with(backend) { fixture in
            try await Migrator().migrate(fixture.database)
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let first = try await fixture.database.write { db in try RateLimiter.hit(db, "kib", window: 60, now: now, amount: 2048) }
            #expect(first.count == 2048)
            let second = try await fixture.database.write { db in
                try RateLimiter.hit(db, "kib", window: 60, now: now.addingTimeInterval(5), amount: 1000)
            }
            #expect(second.count == 3048)
            #expect(second.retryAfter == 55)
            let later = try await fixture.database.write { db in
                try RateLimiter.hit(db, "kib", window: 60, now: now.addingTimeInterval(61), amount: 7)
            }
            #expect(later.count == 7)
        }
    }

    @Test("prune deletes ended windows and keeps live ones", arguments: VisitsFixture.backends)
    func prune(backend: Backend) async throws {
        try await StorageFixture.with(backend) { fixture in
            try await Migrator().migrate(fixture.database)
            let limiter = RateLimiter(database: fixture.database)
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            try await limiter.hit("minute", window: 60, now: start)
            try await limiter.hit("day", window: 86_400, now: start)
            // A row from before expires_at existed.
            try await fixture.database.write { db in
                try db.execute("INSERT INTO rate_limits (bucket, window_start, count) VALUES ('legacy', ?, 4)",
                               .date(start.addingTimeInterval(-3 * 86_400)))
            }
            let deleted = try await fixture.database.write { db in try RateLimiter.prune(db, now: start.addingTimeInterval(120)) }
            #expect(deleted == 2)
            #expect(try await Self.count(fixture.database, "minute") == nil)
            #expect(try await Self.count(fixture.database, "legacy") == nil)
            #expect(try await Self.count(fixture.database, "day") == 1)
        }
    }
}
