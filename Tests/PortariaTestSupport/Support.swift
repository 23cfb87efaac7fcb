import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PortariaWebSocket

// Test support shared by the server and end-to-end test targets: blocking work off the
// cooperative pool, polling with deadlines, raw HTTP over loopback, temporary directories.
// One copy of each, so a fix (like closing a socket exactly once) lands everywhere.

/// Runs blocking work on a Dispatch thread.
package func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        // A serial queue of its own: on Linux the global concurrent pool has one thread per
        // core and blocking calls there would stall each other (and the code under test).
        DispatchQueue(label: "portaria.tests.offload").async { continuation.resume(with: Result { try body() }) }
    }
}

package struct HarnessError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

package func makeTemporaryDirectory(_ label: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-e2e-\(label)-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// Polls until `process` has exited; false if it is still running at the deadline.
package func waitForExit(_ process: Process, within timeout: Duration) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while process.isRunning {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}

/// Polls `condition` until it holds or the deadline passes.
package func eventually(within timeout: Duration, every interval: Duration = .milliseconds(20),
                _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

