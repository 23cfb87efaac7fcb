import Testing
@testable import PortariaServer

@Suite("Body budget per address")
struct BodyBudgetShareTests {
    @Test("an address alone may hold half the budget; the bytes it asks beyond are refused and nothing changes")
    func aloneHalf() {
        var budget = BodyBudget(capacity: 1000)
        do { let result = budget.claim(400, for: "a"); #expect(result) }
        do { let result = budget.claim(100, for: "a"); #expect(result) }
        do { let result = budget.claim(1, for: "a"); #expect(!result) }
        #expect(budget.total == 500)
        #expect(budget.holding("a") == 500)
    }

    @Test("while the heaviest address is refused, a light one is admitted until the budget is spent")
    func heaviestRefusedFirst() {
        var budget = BodyBudget(capacity: 1000)
        do { let result = budget.claim(400, for: "a"); #expect(result) }
        do { let result = budget.claim(200, for: "b"); #expect(result) }
        // a holds 400 and only 400 is free: a refused, b (200) and a newcomer admitted.
        do { let result = budget.claim(10, for: "a"); #expect(!result) }
        do { let result = budget.claim(50, for: "b"); #expect(result) }
        do { let result = budget.claim(150, for: "c"); #expect(result) }
        #expect(budget.total == 800)
        // 200 free: b (250) is now the one refused; a newcomer still gets up to 100…
        do { let result = budget.claim(1, for: "b"); #expect(!result) }
        do { let result = budget.claim(100, for: "d"); #expect(result) }
        // …and with 100 free, one asking 60 would hold more than the 40 left.
        do { let result = budget.claim(60, for: "e"); #expect(!result) }
    }

    @Test("released bytes come back to the address and the total; a release never goes below zero")
    func release() {
        var budget = BodyBudget(capacity: 1000)
        do { let result = budget.claim(300, for: "a"); #expect(result) }
        budget.release(100, for: "a")
        #expect(budget.holding("a") == 200)
        budget.release(500, for: "a")
        budget.release(5, for: "nobody")
        #expect(budget.total == 0)
        #expect(budget.held.isEmpty)
    }

    @Test("claims that would overflow are refused")
    func overflow() {
        var budget = BodyBudget(capacity: Int.max)
        do { let result = budget.claim(10, for: "a"); #expect(result) }
        do { let result = budget.claim(Int.max, for: "b"); #expect(!result) }
        #expect(budget.total == 10)
    }
}

@Suite("Request head and body deadlines")
struct RequestDeadlinesTests {
    static let policy = DeadlinePolicy(head: .seconds(10), bodyGrace: .seconds(10), bodyBytesPerSecond: 100)

    @Test("a head is due a fixed time after the connection opened, whatever arrives meanwhile")
    func headDeadline() {
        var deadlines = RequestDeadlines(policy: Self.policy)
        let start = ContinuousClock.now
        _ = deadlines.opened(descriptor: 7, at: start)
        do { let result = deadlines.takeOverdue(at: start + .seconds(10)).isEmpty; #expect(result) }
        let late = deadlines.takeOverdue(at: start + .seconds(11))
        #expect(late.map(\.descriptor) == [7])
        #expect(late.map(\.reason) == [.head])
        do { let result = deadlines.takeOverdue(at: start + .seconds(20)).isEmpty; #expect(result, "a connection is shut down once") }
    }

    @Test("a body earns one second per bytesPerSecond received after its grace; a slower one is overdue")
    func bodyRate() {
        var deadlines = RequestDeadlines(policy: Self.policy)
        let start = ContinuousClock.now
        let id = deadlines.opened(descriptor: 3, at: start)
        deadlines.headReceived(id, expectsBody: true, at: start)
        do { let result = deadlines.bodyReceived(id, count: 500, at: start + .seconds(12)); #expect(result) }   // due at 15 s
        do { let result = deadlines.takeOverdue(at: start + .seconds(14)).isEmpty; #expect(result) }
        do { let result = deadlines.bodyReceived(id, count: 1, at: start + .seconds(16)); #expect(!result) }
        do { let result = deadlines.takeOverdue(at: start + .seconds(16)).map(\.reason); #expect(result == [.body]) }
    }

    @Test("a running handler owes nothing; after the answer the next head is due; an upgraded socket never again")
    func phases() {
        var deadlines = RequestDeadlines(policy: Self.policy)
        let start = ContinuousClock.now
        let kept = deadlines.opened(descriptor: 1, at: start)
        let upgraded = deadlines.opened(descriptor: 2, at: start)
        deadlines.headReceived(kept, expectsBody: false, at: start)
        deadlines.headReceived(upgraded, expectsBody: false, at: start)
        deadlines.upgraded(upgraded)
        do { let result = deadlines.takeOverdue(at: start + .seconds(60)).isEmpty; #expect(result) }
        deadlines.answered(kept, at: start + .seconds(60))
        deadlines.answered(upgraded, at: start + .seconds(60))
        do { let result = deadlines.takeOverdue(at: start + .seconds(71)).map(\.descriptor); #expect(result == [1]) }
    }

    @Test("a closed connection is forgotten: its descriptor is never returned")
    func closedForgotten() {
        var deadlines = RequestDeadlines(policy: Self.policy)
        let start = ContinuousClock.now
        let id = deadlines.opened(descriptor: 9, at: start)
        deadlines.closed(id)
        do { let result = deadlines.takeOverdue(at: start + .seconds(60)).isEmpty; #expect(result) }
        #expect(deadlines.connections.isEmpty)
    }
}
