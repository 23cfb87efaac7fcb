import Foundation

/// A command-line option of docs/contract.md §5. Every option also reads an environment variable:
/// `--apns-endpoint` ↔ `PORTARIA_APNS_ENDPOINT`. The command line wins.
public struct OptionSpec: Sendable {
    public let name: String
    public let takesValue: Bool
    public let help: String
    public let hidden: Bool

    public init(_ name: String, takesValue: Bool = true, help: String, hidden: Bool = false) {
        self.name = name
        self.takesValue = takesValue
        self.help = help
        self.hidden = hidden
    }

    public var environmentName: String {
        "PORTARIA_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }
}

/// A usage mistake: printed as one line, exit code 64 (EX_USAGE).
public struct UsageError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Parsed options: values by option name, flags present or not.
public struct ParsedOptions: Sendable {
    public var values: [String: String] = [:]
    public var positional: [String] = []
    /// Options given on the command line (not from the environment): a secret there is
    /// readable by every user of the machine through `ps`.
    public var fromCommandLine: Set<String> = []

    public func value(_ name: String) -> String? { values[name] }
    public func flag(_ name: String) -> Bool {
        guard let value = values[name] else { return false }
        return !["0", "false", "no", "off", ""].contains(value.lowercased())
    }

    public func integer(_ name: String, default defaultValue: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = values[name] else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("--\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
        }
        return number
    }

    /// Reads `arguments` against `specs`, falling back to the environment.
    public static func parse(_ arguments: [String], specs: [OptionSpec],
                             environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ParsedOptions {
        var parsed = ParsedOptions()
        let byName = Dictionary(uniqueKeysWithValues: specs.map { ($0.name, $0) })
        for spec in specs {
            if let value = environment[spec.environmentName] { parsed.values[spec.name] = value }
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else {
                parsed.positional.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let spec = byName[name] else {
                throw UsageError("unknown option --\(name) (try --help)")
            }
            parsed.fromCommandLine.insert(name)
            if spec.takesValue {
                if let inlineValue {
                    parsed.values[name] = inlineValue
                } else {
                    guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                        throw UsageError("--\(name) needs a value")
                    }
                    parsed.values[name] = arguments[index]
                    index += 1
                }
            } else {
                if let inlineValue { parsed.values[name] = inlineValue } else { parsed.values[name] = "1" }
            }
        }
        return parsed
    }

    public static func usage(_ specs: [OptionSpec]) -> String {
        specs.filter { !$0.hidden }.map { spec in
            let left = "  --\(spec.name)\(spec.takesValue ? " VALUE" : "")"
            return left.padding(toLength: max(left.count + 2, 34), withPad: " ", startingAt: 0)
                + spec.help + "  [\(spec.environmentName)]"
        }.joined(separator: "\n")
    }
}
