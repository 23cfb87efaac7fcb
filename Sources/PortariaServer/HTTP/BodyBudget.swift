/// The request-body memory all connections share (`--max-buffered-body-mb`), counted per
/// client address as the bytes arrive (decision 0060).
///
/// One rule decides every claim: **after the claim, no address holds more than the budget
/// has left free.** An address alone on the server may so take half the budget; as others
/// fill it, the heaviest address is the first whose new bytes are refused, while an address
/// that holds little is admitted until the budget is truly spent. A claim is counted only
/// for bytes that arrived, never for a declared `Content-Length`: a client that announces
/// 1 MiB and sends one byte holds one byte.
///
/// A pure value: the server keeps it in a lock (`HTTPServer.bodyBudget`), because
/// libmicrohttpd's threads claim and release from C callbacks.
struct BodyBudget: Sendable {
    /// Bytes all bodies may hold at once.
    let capacity: Int
    /// Bytes held now, over all addresses.
    private(set) var total = 0
    /// Bytes held now per address key (`AddressKey.bucket`); addresses holding nothing are absent.
    private(set) var held: [String: Int] = [:]

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// Claims `count` more bytes for `address`; false (and nothing changes) when that would
    /// leave the address holding more than what stays free, or overflow.
    mutating func claim(_ count: Int, for address: String) -> Bool {
        guard count > 0 else { return count == 0 }
        let holding = held[address, default: 0]
        let (newTotal, totalOverflow) = total.addingReportingOverflow(count)
        let (newHolding, holdingOverflow) = holding.addingReportingOverflow(count)
        guard !totalOverflow, !holdingOverflow, newTotal <= capacity,
              newHolding <= capacity - newTotal else { return false }
        total = newTotal
        held[address] = newHolding
        return true
    }

    /// Gives back `count` bytes `address` claimed earlier (never more than it holds).
    mutating func release(_ count: Int, for address: String) {
        guard count > 0, let holding = held[address] else { return }
        let returned = min(count, holding)
        total -= returned
        if holding == returned { held.removeValue(forKey: address) } else { held[address] = holding - returned }
    }

    /// What `address` holds now.
    func holding(_ address: String) -> Int { held[address, default: 0] }
}
