import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#endif

/// Where the key that wraps the database's secrets is kept, and the key itself.
///
/// `--secrets-key-file F` names it; without it the key lives in the data directory
/// (`<data-dir>/secrets.key`), made at the first start of a database that holds no wrapped
/// secret yet. The database never holds a secret the key does not wrap, so a copy of the
/// database (a backup, a dump) without the key file mints nothing (decision 0065).
public struct SecretsKeyFile: Sendable {
    /// The file name inside the data directory.
    public static let defaultName = "secrets.key"

    public let path: String
    /// Named by `--secrets-key-file` (it must exist) rather than the data directory's default.
    public let explicit: Bool
    /// The key read from `path`; nil when the default file does not exist yet.
    public let existing: SecretsKey?

    /// Reads `--secrets-key-file` if given, else `<dataDirectory>/secrets.key` if it exists.
    public init(keyFile: String?, dataDirectory: String) throws {
        if let keyFile {
            path = keyFile
            explicit = true
            existing = try SecretsKey.load(path: keyFile)
        } else {
            path = (dataDirectory as NSString).appendingPathComponent(Self.defaultName)
            explicit = false
            existing = FileManager.default.fileExists(atPath: path) ? try SecretsKey.load(path: path) : nil
        }
    }

    /// Writes a new key at `path`: created owner-only with `O_EXCL` (never over another
    /// key, never readable by others for a moment), synced with its directory before any
    /// secret is wrapped with it, so a crash cannot leave wrapped secrets without their key.
    func create(_ key: SecretsKey) throws {
        let text = Data(key.bytes).base64EncodedString() + "\n"
        // `admin` may run before any `serve` made the data directory.
        if !explicit { try PrivateDirectory.prepare((path as NSString).deletingLastPathComponent) }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SecretsError("cannot create the secrets key file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let written = text.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, text.utf8.count) }
        guard written == text.utf8.count, fsync(descriptor) == 0 else {
            unlink(path)
            throw SecretsError("cannot write the secrets key file \(path): \(String(cString: strerror(errno)))")
        }
        let directory = open((path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent,
                             O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }

    /// The one line a server (or `admin`) started on a database whose secrets another key
    /// wrapped says when its key file is missing.
    var missingMessage: String {
        "the database's secrets are wrapped, but there is no key file at \(path): copy the secrets key file of the server that made this database there, or pass --secrets-key-file (PORTARIA_SECRETS_KEY_FILE); a database without its key file does not start"
    }
}
