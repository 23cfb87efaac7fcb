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

/// A child process whose stdout and stderr go to files in a directory of its own, which
/// is also its working directory: a pipe that nobody drains would block the child once
/// its buffer fills, and a file can be read after the child is gone.
package struct CapturedProcess: @unchecked Sendable {
    package let process: Process
    package let directory: URL

    /// Starts `executable arguments…` with stdin closed (`environment` nil: this process's).
    package static func start(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                              label: String) throws -> CapturedProcess {
        let directory = try makeTemporaryDirectory(label)
        let outPath = directory.appendingPathComponent("stdout").path
        let errPath = directory.appendingPathComponent("stderr").path
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return CapturedProcess(process: process, directory: directory)
    }

    package var stdout: String { (try? String(contentsOf: directory.appendingPathComponent("stdout"), encoding: .utf8)) ?? "" }
    package var stderr: String { (try? String(contentsOf: directory.appendingPathComponent("stderr"), encoding: .utf8)) ?? "" }

    /// Removes the directory with what the process wrote.
    package func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// Polls until `process` has exited; false if it is still running at the deadline.
package func waitForExit(_ process: Process, within timeout: Duration) async -> Bool {
    guard await eventually(within: timeout, every: .milliseconds(10), { !process.isRunning }) else { return false }
    reap(process)
    return true
}

/// Lets Foundation forget a process that has exited. On Linux `Process.run()` creates a
/// run-loop source that retains the process, and only `waitUntilExit()` drops it: a process
/// that was merely polled until `isRunning` turned false leaks with its arguments,
/// environment and pipes (LeakSanitizer found dozens per suite run). Once it has exited,
/// `waitUntilExit()` returns at once without spinning a run loop.
package func reap(_ process: Process) {
    if !process.isRunning { process.waitUntilExit() }
}

/// Polls `condition` until it holds or the deadline passes; true if it held. The one
/// polling loop of the tests: a deadline generous enough for a loaded machine stands in
/// for "never", and a condition that holds returns at once — no fixed sleep stands in
/// for an event. Runs on the caller's actor, so the condition may read its state.
nonisolated(nonsending)
package func eventually(within timeout: Duration = .seconds(20), every interval: Duration = .milliseconds(20),
                        _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// `eventually`, throwing when the deadline passes with `condition` still false.
nonisolated(nonsending)
package func waitUntil(_ what: @autoclosure () -> String = "the condition", within timeout: Duration = .seconds(20),
                       every interval: Duration = .milliseconds(20), fileID: String = #fileID, line: Int = #line,
                       _ condition: () async throws -> Bool) async throws {
    guard try await eventually(within: timeout, every: interval, condition) else {
        throw HarnessError("\(what()) (\(fileID):\(line)) did not hold within \(timeout)")
    }
}

/// A TCP socket bound to 127.0.0.1 on a port the kernel picks, listening when asked (a
/// server that never answers), or not (a port nobody serves). Closed when the value goes.
package struct LoopbackPort: ~Copyable {
    package let socket: OwnedDescriptor
    package let port: UInt16

    package init(listening: Bool) throws {
        guard let bound = OwnedDescriptor.socket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue)) else {
            throw HarnessError("socket: \(String(cString: strerror(errno)))")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let descriptor = bound.rawValue
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                Glibc.bind(descriptor, pointer, length) == 0 && (!listening || Glibc.listen(descriptor, 16) == 0)
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard ok else { throw HarnessError("bind/listen on 127.0.0.1: \(String(cString: strerror(errno)))") }
        port = UInt16(bigEndian: address.sin_port)
        socket = bound
    }
}
