import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `portaria admin backup --to FILE` on SQLite: an online, consistent copy of a database
/// a server may be using, into a new file only its owner can read (it holds personal data
/// and the wrapped secrets). PostgreSQL is backed up with `pg_dump` (docs/ops.md).
public enum SQLiteBackup {
    /// Copies the database at `source` into `destination`, which must not exist yet.
    public static func copy(from source: String, to destination: String) throws {
        guard FileManager.default.fileExists(atPath: source) else {
            throw StorageError.unavailable("sqlite \(source): no such database")
        }
        // Created here, owner-only and exclusively: never over an existing file, and never
        // readable by others even for a moment.
        let descriptor = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StorageError.failed("backup: cannot create \(destination): \(String(cString: strerror(errno)))")
        }
        close(descriptor)
        do {
            let from = try SQLiteConnection(path: source, readOnly: true)
            let to = try SQLiteConnection(path: destination, readOnly: false)
            try from.backup(into: to)
            // A backup is one self-contained file: no -wal beside it when it is copied away.
            try to.run("PRAGMA journal_mode = DELETE")
        } catch {
            unlink(destination)
            throw error
        }
    }
}
