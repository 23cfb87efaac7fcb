import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Photo and voice-message files under `--data-dir/media/<company>/<visit>/`. Paths in
/// the database are relative to the data directory, so the directory can move.
struct MediaStore: Sendable {
    let root: String

    /// Writes durably (temporary file, fsync, rename) and returns the relative path.
    func write(_ bytes: [UInt8], companyID: String, visitID: String, mediaID: String, ext: String) throws -> String {
        let relative = "media/\(safe(companyID))/\(safe(visitID))/\(safe(mediaID)).\(ext)"
        let url = URL(fileURLWithPath: root).appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let temporary = url.path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw StorageError.failed("cannot write media file (errno \(errno))") }
        var written = 0
        let ok = bytes.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let result = Glibc.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if result <= 0 { return false }
                written += result
            }
            return fsync(descriptor) == 0
        }
        close(descriptor)
        guard ok, rename(temporary, url.path) == 0 else {
            unlink(temporary)
            throw StorageError.failed("cannot write media file (errno \(errno))")
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
