import Dispatch
import Foundation
@testable import PortariaServer
import Testing

@Suite("Connection pool: waiting for a connection")
struct ConnectionPoolTests {
    final class Connection {}

    @Test("work that finds every connection busy past the wait limit fails as unavailable (answered 503); the pool serves again after")
    func waitLimit() async throws {
        let pool = ConnectionPool(connections: [Connection()], label: "test.pool", waitLimit: .milliseconds(50))
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Task { try await pool.withConnection { _ in started.signal(); release.wait() } }
        // Until the holder has the only connection.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { started.wait(); done.resume() }
        }
        var failure: StorageError?
        do {
            try await pool.withConnection { _ in }
        } catch let error as StorageError {
            failure = error
        }
        release.signal()
        try await holder.value
        guard let failure, case .unavailable = failure else {
            Issue.record("expected StorageError.unavailable while the only connection is held, got \(String(describing: failure))")
            return
        }
        #expect(StorageFaultAnswer.answer(for: failure)?.status == 503)
        try await pool.withConnection { _ in }
    }
}
