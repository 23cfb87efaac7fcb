#if canImport(Glibc)
@testable import PortariaWebSocket
import Testing

/// The event loop's due-time buckets, alone: what a tick hands out and when.
@Suite("Timer wheel")
struct TimerWheelTests {
    let second: UInt64 = 1_000_000_000
    func entry(_ number: Int32) -> TimerWheel.Entry { .init(descriptor: number, handler: ObjectIdentifier(TimerWheelTests.self)) }

    @Test("an entry is handed out at the first tick at or after its time, not before")
    func entriesFireWhenDue() {
        var wheel = TimerWheel(slotNanoseconds: second, now: 100 * second)
        wheel.schedule(entry(1), at: 103 * second + 1)
        wheel.schedule(entry(2), at: 102 * second)
        let at101 = wheel.expire(now: 101 * second)
        let at102 = wheel.expire(now: 102 * second)
        let justAfter103 = wheel.expire(now: 103 * second + 1)
        let at104 = wheel.expire(now: 104 * second)
        #expect(at101.isEmpty)
        #expect(at102 == [entry(2)])
        #expect(justAfter103.isEmpty)
        #expect(at104 == [entry(1)])
        #expect(wheel.count == 0)
    }

    @Test("a time already past fires at the next tick; a long stall hands out everything due, earliest first")
    func pastAndStalled() {
        var wheel = TimerWheel(slotNanoseconds: second, now: 100 * second)
        wheel.schedule(entry(1), at: 10 * second)
        let next = wheel.expire(now: 101 * second)
        #expect(next == [entry(1)])
        wheel.schedule(entry(3), at: 5_000 * second)
        wheel.schedule(entry(2), at: 2_000 * second)
        wheel.schedule(entry(4), at: 90_000 * second)
        let stalled = wheel.expire(now: 10_000 * second)
        #expect(stalled == [entry(2), entry(3)])
        #expect(wheel.count == 1)
        #expect(wheel.nextTick == 10_001 * second)
    }
}
#endif
