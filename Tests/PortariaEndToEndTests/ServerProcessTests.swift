import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PortariaCore
import Testing

/// Starts the real `portaria` binary (`PORTARIA_BIN`, exported by `make test`) on
/// loopback and talks HTTP to it.
@Suite struct ServerProcessTests {
    static let binary = ProcessInfo.processInfo.environment["PORTARIA_BIN"]

    @Test(.enabled(if: binary != nil, "PORTARIA_BIN names the built portaria (make test sets it)"),
          .timeLimit(.minutes(1)))
    func servesHealthzAndTheContract() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portaria-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(Self.binary))
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0",
                             "--database", "sqlite://" + directory.appendingPathComponent("e2e.db").path]
        process.currentDirectoryURL = directory
        let stderr = Pipe()
        process.standardError = stderr
        let port = Locked<Int?>(nil)
        let buffer = Locked("")
        stderr.fileHandleForReading.readabilityHandler = { handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            buffer.withLock { $0 += text }
            // The server logs one JSON object per line; "listening" carries the bound port.
            for line in text.split(separator: "\n") where line.contains("\"listening\"") {
                if let value = try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)),
                   case .number(let number)? = value["port"] {
                    port.withLock { $0 = Int(number) }
                }
            }
        }
        try process.run()
        defer {
            stderr.fileHandleForReading.readabilityHandler = nil
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }

        var bound: Int?
        for _ in 0..<200 where bound == nil {
            bound = port.current
            if bound == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let listening = try #require(bound, "no 'listening' line; stderr: \(buffer.current)")

        let (healthBody, healthResponse) = try await URLSession.shared.data(
            from: URL(string: "http://127.0.0.1:\(listening)/healthz")!)
        #expect((healthResponse as? HTTPURLResponse)?.statusCode == 200)
        let health = try JSONDecoder().decode(JSONValue.self, from: healthBody)
        #expect(health["status"] == .string("ok"))

        let (contract, contractResponse) = try await URLSession.shared.data(
            from: URL(string: "http://127.0.0.1:\(listening)/v1/openapi.yaml")!)
        #expect((contractResponse as? HTTPURLResponse)?.statusCode == 200)
        #expect(String(decoding: contract, as: UTF8.self).hasPrefix("openapi: 3.1"))

        // SIGTERM is the graceful stop (docs/ops.md).
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
