import Foundation
import PortariaCore

/// Structured logging: one JSON object per line on standard error.
///
/// Fields are given explicitly at each call so that nothing sensitive (tokens, codes,
/// passwords, bodies) is ever logged by accident through string interpolation of a
/// whole request.
public struct Log: Sendable {
    public enum Level: String, Sendable { case debug, info, warning, error }

    public static let shared = Log()

    private let sink = Locked(Sink())
    public let minimumLevel: Level

    /// Standard error, and the lines held back while the server starts (`hold()`).
    private struct Sink {
        let handle = FileHandle.standardError
        var held: [(level: Level, message: String, line: Data)]?
    }

    public init(minimumLevel: Level = ProcessInfo.processInfo.environment["PORTARIA_LOG_LEVEL"]
                    .flatMap(Level.init(rawValue:)) ?? .info) {
        self.minimumLevel = minimumLevel
    }

    public func debug(_ message: String, _ fields: [String: JSONValue] = [:]) { write(.debug, message, fields) }
    public func info(_ message: String, _ fields: [String: JSONValue] = [:]) { write(.info, message, fields) }
    public func warning(_ message: String, _ fields: [String: JSONValue] = [:]) { write(.warning, message, fields) }
    public func error(_ message: String, _ fields: [String: JSONValue] = [:]) { write(.error, message, fields) }

    private func rank(_ level: Level) -> Int {
        switch level { case .debug: 0; case .info: 1; case .warning: 2; case .error: 3 }
    }

    public func write(_ level: Level, _ message: String, _ fields: [String: JSONValue]) {
        guard rank(level) >= rank(minimumLevel) else { return }
        var object = fields
        object["ts"] = .string(Timestamp.format(Date()))
        object["level"] = .string(level.rawValue)
        object["msg"] = .string(message)
        let line = Data((JSONValue.object(object).jsonText + "\n").utf8)
        sink.withLock { sink in
            if sink.held != nil { sink.held!.append((level, message, line)) } else { sink.handle.write(line) }
        }
    }

    /// Holds every line back until `release`: what a starting server logs comes after the
    /// banner a person reads first (`portaria serve --demo`).
    public func hold() {
        sink.withLock { if $0.held == nil { $0.held = [] } }
    }

    /// Stops holding. Writes `preamble(warnings)` first, as is (plain text), then the held
    /// lines in order, except the warnings, which become one line `summary` with the
    /// messages in its `warnings` field (nil `summary`: each stays its own line).
    public func release(foldingWarningsInto summary: String?, preamble: ([String]) -> String = { _ in "" }) {
        let held = sink.withLock { sink -> [(level: Level, message: String, line: Data)] in
            defer { sink.held = nil }
            return sink.held ?? []
        }
        let warnings = held.filter { $0.level == .warning }.map(\.message)
        let text = preamble(warnings)
        sink.withLock { sink in
            if !text.isEmpty { sink.handle.write(Data(text.utf8)) }
            for entry in held where summary == nil || entry.level != .warning { sink.handle.write(entry.line) }
        }
        if let summary, !warnings.isEmpty {
            write(.warning, summary, ["warnings": .array(warnings.map(JSONValue.string))])
        }
    }
}
