import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Makes one `portaria serve` the only server of an SQLite file, for as long as it runs.
///
/// SQLite itself would let two servers share the file, and each would be wrong in its
/// own way: the in-flight marker of idempotent resolves lives in the process
/// (decision 0004), realtime sequence numbers are handed out per process, and the push
/// worker would deliver every job twice. Several instances need PostgreSQL.
///
/// The lock is `flock(2)` on the database file itself, held on a descriptor that stays
/// open until the database is closed. On Linux `flock` locks and SQLite's POSIX record
/// locks are independent, and this descriptor is only closed after SQLite closed its own
/// (closing any descriptor of a file drops *that process's* POSIX locks on it, which is
/// why it must not be closed earlier). The kernel releases the lock when the process
/// dies, so a `kill -9` leaves nothing to clean up.
///
/// Opening the file here also creates a new database owner-only (0600); SQLite gives its
/// `-wal` and `-shm` files the database file's mode.
final class DatabaseFileLock: @unchecked Sendable {
    // Unchecked: `descriptor` is written in `init` and by `unlock()`, which the owner calls
    // once, at shutdown, after every other use of the database ended.
    private var descriptor: Int32

    /// Locks `path`, creating it (empty, 0600) if needed; tightens a looser existing mode.
    init(path: String) throws {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StorageError.unavailable("sqlite: cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let number = errno
            close(descriptor)
            if number == EWOULDBLOCK {
                throw StorageError.unavailable(
                    "sqlite: \(path) is already used by another portaria server (one server per SQLite file; use PostgreSQL for several instances)")
            }
            throw StorageError.unavailable("sqlite: cannot lock \(path): \(String(cString: strerror(number)))")
        }
        self.descriptor = descriptor
        Self.restrictMode(of: descriptor)
        for suffix in ["-wal", "-shm", "-journal"] {
            // Companion files left with looser modes (another umask, another tool) are tightened too.
            chmod(path + suffix, 0o600)
        }
    }

    deinit { unlock() }

    /// Releases the lock. Call after the database's own connections are closed.
    func unlock() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    private static func restrictMode(of descriptor: Int32) {
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & 0o077 != 0 else { return }
        _ = fchmod(descriptor, status.st_mode & 0o700)
    }
}

/// The data directory (photos, voice messages): created owner-only, tightened if looser.
enum PrivateDirectory {
    static func prepare(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw StorageError.unavailable("cannot create the data directory \(path): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & 0o077 != 0 { chmod(path, 0o700) }
    }
}
