import Foundation

/// Secrets read from files (`--password-file`, `--turn-secret-file`,
/// `--secrets-key-file`) rather than the command line, where every user of the machine
/// can read them with `ps`.
public enum SecretFile {
    /// The file's first line without its line ending. Throws `UsageError` naming `option`
    /// when the file cannot be read or is empty.
    public static func read(_ path: String, option: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("\(option): cannot read \(path)")
        }
        guard data.count <= 64 * 1024, let text = String(data: data, encoding: .utf8) else {
            throw UsageError("\(option): \(path) is not a short UTF-8 text file")
        }
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let value = line.hasSuffix("\r") ? String(line.dropLast()) : line
        guard !value.isEmpty else { throw UsageError("\(option): \(path) is empty") }
        return value
    }

    /// The raw bytes of a key file (for binary keys), with the same errors.
    public static func bytes(_ path: String, option: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("\(option): cannot read \(path)")
        }
        guard !data.isEmpty, data.count <= 64 * 1024 else { throw UsageError("\(option): \(path) is empty or too large") }
        return Array(data)
    }

    /// Whether group or others may read the file (worth a warning for a secret).
    public static func isShared(_ path: String) -> Bool {
        guard let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber else { return false }
        return mode.intValue & 0o077 != 0
    }
}
