import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Photo and voice-message files under `--data-dir/media/<company>/<visit>/`. Paths in
/// the database are relative to the data directory, so the directory can move.
struct MediaStore: Sendable {
    let root: String
    /// Logs where a fault of the media directory (full disk or quota) starts and ends.
    var faults: StorageFaultWatch?

    init(root: String, faults: StorageFaultWatch? = nil) {
        self.root = root
        self.faults = faults
    }

    /// Writes durably (temporary file, fsync, rename) and returns the relative path. A
    /// full disk or quota throws `StorageError.full` (answered 507, retried by clients).
    func write(_ bytes: [UInt8], companyID: String, visitID: String, mediaID: String, ext: String) throws -> String {
        guard let faults else { return try writeFile(bytes, companyID: companyID, visitID: visitID, mediaID: mediaID, ext: ext) }
        return try faults.watchingNow(write: true) {
            try writeFile(bytes, companyID: companyID, visitID: visitID, mediaID: mediaID, ext: ext)
        }
    }

    /// The error a failed file operation throws: `.full` when no room was left.
    private static func failure(_ code: Int32) -> StorageError {
        if code == ENOSPC || code == EDQUOT { return .full("media directory: \(String(cString: strerror(code)))") }
        return .failed("cannot write media file (errno \(code))")
    }

    private func writeFile(_ bytes: [UInt8], companyID: String, visitID: String, mediaID: String, ext: String) throws -> String {
        let relative = "media/\(safe(companyID))/\(safe(visitID))/\(safe(mediaID)).\(ext)"
        let url = URL(fileURLWithPath: root).appendingPathComponent(relative)
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code
            if let code, code == Int(ENOSPC) || code == Int(EDQUOT) { throw Self.failure(Int32(code)) }
            throw error
        }
        let temporary = url.path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw Self.failure(errno) }
        var written = 0
        var failure: Int32 = 0
        let ok = bytes.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let result = Glibc.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if result <= 0 {
                    failure = result < 0 ? errno : ENOSPC
                    return false
                }
                written += result
            }
            guard fsync(descriptor) == 0 else {
                failure = errno
                return false
            }
            return true
        }
        close(descriptor)
        guard ok, rename(temporary, url.path) == 0 else {
            if ok { failure = errno }
            unlink(temporary)
            throw Self.failure(failure)
        }
        return relative
    }

    func read(_ relative: String) -> [UInt8]? {
        guard !relative.contains("..") else { return nil }
        return FileManager.default.contents(atPath: URL(fileURLWithPath: root).appendingPathComponent(relative).path).map(Array.init)
    }

    func remove(_ relative: String) {
        guard !relative.contains("..") else { return }
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: root).appendingPathComponent(relative).path)
    }

    /// Ids are ours (UUIDs), but a path is never built from anything unchecked.
    private func safe(_ component: String) -> String {
        String(component.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) || $0 == "-" }.map(Character.init))
    }
}
