/// Due times of an ``EventLoop``'s handlers, bucketed by tick: a tick hands out only the
/// handlers whose time has come, so a loop holding fifty thousand idle sockets does work
/// for the few that are due (a ping, a close timeout) instead of visiting every socket.
///
/// Entries are never removed early: a handler whose plans changed (a socket that closed,
/// a ping answered) gets a tick it does not need and checks its own clock. That keeps
/// scheduling O(1) and a tick O(entries due).
struct TimerWheel {
    /// Who to tick: the descriptor, and which handler held it when the entry was made (a
    /// descriptor number is reused by the next accepted socket).
    struct Entry: Equatable {
        let descriptor: Int32
        let handler: ObjectIdentifier
    }

    let slotNanoseconds: UInt64
    /// Every slot up to and including this one has been handed out.
    private(set) var processed: UInt64
    private var slots: [UInt64: [Entry]] = [:]
    /// Entries waiting (diagnostics, tests).
    private(set) var count = 0

    init(slotNanoseconds: UInt64, now: UInt64) {
        precondition(slotNanoseconds > 0)
        self.slotNanoseconds = slotNanoseconds
        processed = now / slotNanoseconds
    }

    /// Hands `entry` out at the first tick at or after `due` (never in the slot already
    /// handed out: a due time in the past fires at the next tick).
    mutating func schedule(_ entry: Entry, at due: UInt64) {
        let (rounded, overflow) = due.addingReportingOverflow(slotNanoseconds - 1)
        let slot = max(processed + 1, overflow ? UInt64.max / slotNanoseconds : rounded / slotNanoseconds)
        slots[slot, default: []].append(entry)
        count += 1
    }

    /// Removes and returns the entries due at or before `now`, earliest slot first.
    mutating func expire(now: UInt64) -> [Entry] {
        let current = now / slotNanoseconds
        guard current > processed else { return [] }
        var due: [Entry] = []
        if current - processed > UInt64(slots.count) {
            // Long gap (a stalled loop): fewer slots held than slots passed.
            for slot in slots.keys.filter({ $0 <= current }).sorted() { due += slots.removeValue(forKey: slot)! }
        } else {
            for slot in (processed + 1)...current {
                if let entries = slots.removeValue(forKey: slot) { due += entries }
            }
        }
        processed = current
        count -= due.count
        return due
    }

    /// When the next tick is due: the end of the slot after the last one handed out.
    var nextTick: UInt64 { (processed + 1) &* slotNanoseconds }
}
