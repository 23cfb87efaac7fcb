/// The order a new connection tries a name's addresses in.
extension HTTP2Client {
    /// Addresses that have not failed lately first, in the resolver's order but with the
    /// two families taking turns (RFC 8305 §4: the first address's family leads, so a
    /// broken IPv6 path costs one attempt delay, not one per IPv6 address); then those that
    /// have, the longest ago first.
    func inTryingOrder(_ addresses: [ResolvedAddress]) -> [ResolvedAddress] {
        let lately = ContinuousClock.now.advanced(by: .seconds(-600))
        let failedAt = addresses.map { failedAddresses[$0.description].flatMap { $0 > lately ? $0 : nil } }
        let fresh = Self.familiesTakingTurns(zip(addresses, failedAt).filter { $0.1 == nil }.map(\.0))
        let failed = zip(addresses, failedAt).compactMap { pair in pair.1.map { (pair.0, $0) } }.sorted { $0.1 < $1.1 }.map(\.0)
        return fresh + failed
    }

    static func familiesTakingTurns(_ addresses: [ResolvedAddress]) -> [ResolvedAddress] {
        guard let first = addresses.first else { return [] }
        var leading = addresses.filter { $0.isIPv6 == first.isIPv6 }[...]
        var other = addresses.filter { $0.isIPv6 != first.isIPv6 }[...]
        var ordered: [ResolvedAddress] = []
        while let next = leading.popFirst() {
            ordered.append(next)
            if let turn = other.popFirst() { ordered.append(turn) }
        }
        return ordered + other
    }
}
