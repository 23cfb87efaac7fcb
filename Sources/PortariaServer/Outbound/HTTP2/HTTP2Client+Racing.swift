import Foundation

/// Connects racing one another (RFC 8305): a connect unanswered for `attemptDelay` gets
/// the next address started beside it, and the first of them to connect is kept. Loop
/// thread only.
extension HTTP2Client {
    /// The first connect of an origin to succeed is its connection: the others racing it
    /// are closed, and those that had been raced (unanswered for `attemptDelay`) count as
    /// failed, so the next connection tries them last. False, and `winner` closed, when the
    /// origin has a connection past its connect already (then nothing raced it).
    func won(_ winner: HTTP2Connection) -> Bool {
        let origin = winner.origin
        if let current = connections[origin], current !== winner, current.state != .connecting {
            winner.close()
            racing.removeAll { $0 === winner }
            return false
        }
        let now = ContinuousClock.now
        let losers = racing.filter { $0.origin == origin && $0 !== winner }
            + [connections[origin]].compactMap { $0 }.filter { $0 !== winner }
        racing.removeAll { $0.origin == origin }
        for loser in losers {
            if loser.racedNext { failedAddresses[loser.address.description] = now }
            loser.close()
        }
        connections[origin] = winner
        return true
    }

    /// After the origin's latest connect failed: the most recent earlier one still racing
    /// becomes the connection being waited for. False when none is left.
    func resumeRacing(_ origin: Origin) -> Bool {
        guard connections[origin] == nil, let index = racing.lastIndex(where: { $0.origin == origin }) else { return false }
        connections[origin] = racing.remove(at: index)
        return true
    }

    /// A connect unanswered for `attemptDelay`, with addresses left: the next one starts
    /// beside it. The walk goes on from the new connect; the old one only races it.
    func raceSlowConnects(_ now: ContinuousClock.Instant) {
        for connection in Array(connections.values) where connection.state == .connecting && !connection.untried.isEmpty {
            guard !connection.racedNext, connection.stepStartedAt.duration(to: now) >= attemptDelay else { continue }
            connection.racedNext = true
            racing.append(connection)
            connections[connection.origin] = nil
            open(connection.origin, .success(Array(connection.untried)), walking: true)
        }
    }
}
