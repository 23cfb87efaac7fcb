import Foundation
import PortariaCore
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

/// The two kinds of recorded media.
public enum MediaKind: String, Sendable {
    case photo
    case voiceMessage = "voice_message"
}

/// A stored photo or voice message as its `visit_media` row records it.
struct StoredMedia: Sendable {
    var id: String
    var visitID: VisitID
    var kind: MediaKind
    var contentType: String
    var byteSize: Int
    /// Voice messages only.
    var durationMs: Int?
    /// Relative to the data directory (`MediaStore.write`).
    var path: String
}

/// The `visit_media` rows: which file is a visit's photo or voice message.
extension MediaStore {
    /// The file of a visit's photo or voice message; nil when it has none.
    static func storedPath(_ db: any SQLConnection, visitID: VisitID, kind: MediaKind) throws -> String? {
        try db.queryOne("SELECT path FROM visit_media WHERE visit_id = ? AND kind = ?", .id(visitID), .text(kind.rawValue))?.string("path")
    }

    /// Records `media` as its visit's photo or voice message, in place of any earlier one
    /// (whose file the caller removes after the commit).
    static func record(_ db: any SQLConnection, _ media: StoredMedia, at now: Date) throws {
        try db.execute("DELETE FROM visit_media WHERE visit_id = ? AND kind = ?", .id(media.visitID), .text(media.kind.rawValue))
        try db.execute("""
            INSERT INTO visit_media (id, visit_id, kind, content_type, byte_size, duration_ms, path, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, .text(media.id), .id(media.visitID), .text(media.kind.rawValue), .text(media.contentType),
                 .integer(Int64(media.byteSize)), media.durationMs.map { .integer(Int64($0)) } ?? .null,
                 .text(media.path), .date(now))
    }

    /// Bytes of media a company's visitors stored in the 24 h before `now`.
    static func bytesToday(_ db: any SQLConnection, companyID: String, now: Date) throws -> Int {
        Int(try db.queryOne("""
            SELECT COALESCE(SUM(m.byte_size), 0) AS bytes FROM visit_media m JOIN visits v ON v.id = m.visit_id
            WHERE v.company_id = ? AND m.created_at > ?
            """, .text(companyID), .date(now.addingTimeInterval(-86_400)))?.int("bytes") ?? 0)
    }

    /// A visit's photo or voice message with what decides who may see it.
    static func file(_ db: any SQLConnection, visitID: VisitID, kind: MediaKind) throws
        -> (contentType: String, path: String, companyID: String, unitID: UnitID)? {
        guard let row = try db.queryOne("""
            SELECT m.content_type, m.path, v.company_id, v.unit_id FROM visit_media m JOIN visits v ON v.id = m.visit_id
            WHERE m.visit_id = ? AND m.kind = ?
            """, .id(visitID), .text(kind.rawValue)), let path = try row.string("path") else { return nil }
        return (try row.string("content_type") ?? "application/octet-stream", path,
                try row.required.string("company_id"), try row.required.id("unit_id"))
    }
}

