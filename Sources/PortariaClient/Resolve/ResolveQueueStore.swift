import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One decision the user tapped, from the tap until the server's terminal answer.
///
/// Made at tap time and written to disk before the first byte is sent: whatever happens
/// next (no network, a 503, the app killed), the decision and its `Idempotency-Key`
/// survive, and re-sending it can never decide twice.
public struct QueuedResolution: Codable, Sendable, Equatable, Identifiable {
    public var id: String { idempotencyKey }
    /// Made on the device at tap time; sent unchanged on every attempt.
    public let idempotencyKey: String
    public let visitID: String
    public let action: ResolutionAction
    public let via: ResolutionChannel
    /// The company the visit belongs to (`X-Company-Id` of every attempt), whatever the
    /// app has selected by the time it is sent.
    public let companyID: String?
    /// Whose decision this is: never sent with another user's session.
    public let userID: String
    public let tappedAt: Date
    public var attempts: Int
    public var nextAttemptAt: Date
    /// Why the last attempt did not land (shown while queued).
    public var lastProblem: ClientText.QueueReason?
    /// A short technical note for logs (never shown to the user).
    public var lastDetail: String?

    public init(idempotencyKey: String, visitID: String, action: ResolutionAction, via: ResolutionChannel,
                companyID: String?, userID: String, tappedAt: Date) {
        self.idempotencyKey = idempotencyKey
        self.visitID = visitID
        self.action = action
        self.via = via
        self.companyID = companyID
        self.userID = userID
        self.tappedAt = tappedAt
        attempts = 0
        nextAttemptAt = tappedAt
    }

    enum CodingKeys: String, CodingKey {
        case idempotencyKey = "idempotency_key", visitID = "visit_id", action, via, companyID = "company_id"
        case userID = "user_id", tappedAt = "tapped_at", attempts, nextAttemptAt = "next_attempt_at"
        case lastProblem = "last_problem", lastDetail = "last_detail"
    }
}

/// Where queued decisions live between tap and answer.
public protocol ResolveQueueStore: Sendable {
    /// Returns only once `item` is durable (it survives a power cut from here on).
    func save(_ item: QueuedResolution) throws
    func remove(idempotencyKey: String) throws
    /// Everything queued, oldest tap first.
    func all() throws -> [QueuedResolution]
}

/// For tests and previews.
public final class InMemoryResolveQueueStore: ResolveQueueStore {
    private let items = Locked<[String: QueuedResolution]>([:])
    public init() {}
    public func save(_ item: QueuedResolution) throws { items.withLock { $0[item.idempotencyKey] = item } }
    public func remove(idempotencyKey: String) throws { _ = items.withLock { $0.removeValue(forKey: idempotencyKey) } }
    public func all() throws -> [QueuedResolution] {
        items.withLock { Array($0.values) }.sorted { ($0.tappedAt, $0.idempotencyKey) < ($1.tappedAt, $1.idempotencyKey) }
    }
}

/// Why the file store failed (a full disk, a read-only directory).
public struct ResolveQueueStoreError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ operation: String, _ path: String, errno number: Int32) {
        description = "\(operation) \(path): \(String(cString: strerror(number)))"
    }
    init(_ description: String) { self.description = description }
}

/// One JSON file per decision in a directory the owner alone can read (`0700`/`0600`).
///
/// A write is: a new temporary file in the same directory, `fsync`, `rename` over the
/// final name (atomic: a reader sees the old file or the new one, never half of one),
/// then `fsync` of the directory so the rename itself survives a power cut. A crash at
/// any point leaves either no file (the tap is not yet accepted: the caller has not been
/// told it is queued) or a complete one. Left-over temporary files are removed on load.
public final class FileResolveQueueStore: ResolveQueueStore {
    public let directory: String
    private let lock = Locked(())

    public init(directory: String) throws {
        self.directory = directory
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
    }

    /// Keys become file names: only what a UUID (or a similar token) is made of.
    static func isSafeKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.count <= 128 && key.utf8.allSatisfy {
            ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 95
        }
    }

    private func path(for key: String) -> String { directory + "/" + key + ".json" }

    public func save(_ item: QueuedResolution) throws {
        guard Self.isSafeKey(item.idempotencyKey) else { throw ResolveQueueStoreError("unsafe idempotency key") }
        let data = try JSONCoding.encoder().encode(item)
        try lock.withLock { _ in
            let final = path(for: item.idempotencyKey)
            let temporary = directory + "/." + item.idempotencyKey + ".tmp-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw ResolveQueueStoreError("open", temporary, errno: errno) }
            var closed = false
            defer {
                if !closed { _ = close(descriptor) }
            }
            do {
                try data.withUnsafeBytes { buffer in
                    var offset = 0
                    while offset < buffer.count {
                        let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                        if written < 0 {
                            if errno == EINTR { continue }
                            throw ResolveQueueStoreError("write", temporary, errno: errno)
                        }
                        offset += written
                    }
                }
                guard fsync(descriptor) == 0 else { throw ResolveQueueStoreError("fsync", temporary, errno: errno) }
                closed = true
                guard close(descriptor) == 0 else { throw ResolveQueueStoreError("close", temporary, errno: errno) }
                guard rename(temporary, final) == 0 else { throw ResolveQueueStoreError("rename", final, errno: errno) }
            } catch {
                _ = unlink(temporary)
                throw error
            }
            try syncDirectory()
        }
    }

    public func remove(idempotencyKey: String) throws {
        guard Self.isSafeKey(idempotencyKey) else { return }
        try lock.withLock { _ in
            if unlink(path(for: idempotencyKey)) != 0 && errno != ENOENT {
                throw ResolveQueueStoreError("unlink", path(for: idempotencyKey), errno: errno)
            }
            try syncDirectory()
        }
    }

    public func all() throws -> [QueuedResolution] {
        try lock.withLock { _ in
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            var items: [QueuedResolution] = []
            for name in names {
                if name.hasPrefix("."), name.contains(".tmp-") {
                    // A write that never reached its rename: it was never acknowledged as queued.
                    _ = unlink(directory + "/" + name)
                    continue
                }
                guard name.hasSuffix(".json"),
                      let data = FileManager.default.contents(atPath: directory + "/" + name),
                      let item = try? JSONCoding.decoder().decode(QueuedResolution.self, from: data) else { continue }
                items.append(item)
            }
            return items.sorted { ($0.tappedAt, $0.idempotencyKey) < ($1.tappedAt, $1.idempotencyKey) }
        }
    }

    /// Makes the directory's entries (a rename, an unlink) durable.
    private func syncDirectory() throws {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ResolveQueueStoreError("open", directory, errno: errno) }
        defer { _ = close(descriptor) }
        guard fsync(descriptor) == 0 else { throw ResolveQueueStoreError("fsync", directory, errno: errno) }
    }
}
