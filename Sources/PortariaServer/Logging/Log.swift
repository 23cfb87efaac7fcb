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

    private let sink = Locked(FileHandle.standardError)
    public let minimumLevel: Level

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
        sink.withLock { $0.write(line) }
    }
}
