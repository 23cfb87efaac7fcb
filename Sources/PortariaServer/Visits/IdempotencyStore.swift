import Foundation
import PortariaCore

/// The idempotency contract of docs/contract.md §2 for visit actions.
///
/// PostgreSQL (several instances): two transactions per new key: the first commits an
/// in-flight marker (so a duplicate arriving meanwhile, on any instance, is told
/// `409 REQUEST_IN_PROGRESS` — or 422 if its body differs — instead of waiting or acting
/// twice); the second performs the action *and* stores the answer in the same commit,
/// before the answer leaves. A crash between the two leaves a marker that expires after
/// `lease`; a crash after the second leaves a stored answer that the retry replays.
///
/// SQLite (one instance by design, decision 0002): the in-flight marker lives in this
/// process instead (`inFlight`, with the request hash, so the 409/422 answers are the
/// same) and the key row is inserted in the action's own transaction: one commit — one
/// fsync under synchronous=FULL — per resolve instead of two. A crash loses the marker
/// with the process, which is what `releaseOrphansAfterRestart` did to stored markers.
struct IdempotencyStore: Sendable {
    let database: any SQLDatabase
    /// How long an in-flight marker blocks retries when its holder died.
    var lease: TimeInterval = 10
    /// SQLite only: (user, key) → request hash of the requests running in this process.
    /// A class, so every copy of the store shares it.
    let inFlight = Locked<[String: String]>([:])
    /// Keys are kept at least 24 h; the retention job removes them after this.
    static let retention: TimeInterval = 48 * 3600

    /// What the work closure answers: stored and replayed as is.
    struct Answer: Sendable {
        var status: Int
        var body: [UInt8]
        var events: [EventRecord] = []
    }

    /// What `run` answers: the work's answer, or the one stored by the first request with
    /// this key (`replayed`, no events: they were published the first time).
    struct Outcome: Sendable {
        var status: Int
        var body: [UInt8]
        var replayed: Bool
        var events: [EventRecord]
    }

    enum Begin: Sendable {
        case proceed(owner: String)
        case replay(status: Int, body: String)
    }

    /// Validates an `Idempotency-Key` value: required, 1–255 printable characters.
    static func validKey(_ key: String?) throws -> String {
        guard let key, !key.isEmpty else { throw IdempotencyError.keyRequired }
        guard key.count <= 255, key.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7f }) else {
            throw IdempotencyError.keyInvalid
        }
        return key
    }

    /// SHA-256 of what makes two requests "the same": method, path and the canonical body.
    static func requestHash(method: String, path: String, canonicalBody: String) -> String {
        Crypto.tokenHash("\(method) \(path)\n\(canonicalBody)")
    }

    /// Runs `work` at most once per (user, key); replays the stored answer otherwise.
    /// `work` runs inside the write transaction that also stores its answer. Errors it
    /// throws are not stored (the marker is released, a retry runs again).
    func run(userID: String, key: String, requestHash: String, now: Date,
             beforeWork: (@Sendable () async -> Void)? = nil,
             work: @escaping @Sendable (any SQLConnection) throws -> Answer) async throws -> Outcome {
        if database.dialect.hasSingleWriter {
            return try await runInOneTransaction(userID: userID, key: key, requestHash: requestHash, now: now,
                                                 beforeWork: beforeWork, work: work)
        }
        let lease = lease
        let begin: Begin = try await database.write { db in
            try Self.begin(db, userID: userID, key: key, requestHash: requestHash, now: now, lease: lease)
        }
        switch begin {
        case .replay(let status, let body):
            return Self.replayed(status: status, body: body)
        case .proceed(let owner):
            do {
                if let beforeWork { await beforeWork() }
                let answer = try await database.write { db -> Answer in
                    let answer = try work(db)
                    let stored = try db.execute("""
                        UPDATE idempotency_keys SET status = ?, body = ?, completed_at = ?
                        WHERE user_id = ? AND idempotency_key = ? AND owner = ? AND status IS NULL
                        """, .integer(Int64(answer.status)), .text(String(decoding: answer.body, as: UTF8.self)),
                             .date(now), .text(userID), .text(key), .text(owner))
                    // Our marker expired and another request took the key over: roll back.
                    guard stored == 1 else { throw IdempotencyError.inProgress }
                    return answer
                }
                return Outcome(status: answer.status, body: answer.body, replayed: false, events: answer.events)
            } catch {
                _ = try? await database.write { db in
                    try db.execute("DELETE FROM idempotency_keys WHERE user_id = ? AND idempotency_key = ? AND owner = ? AND status IS NULL",
                                   .text(userID), .text(key), .text(owner))
                }
                throw error
            }
        }
    }

    /// The single-instance path (SQLite): marker in memory, key row and answer stored in
    /// the action's transaction. Same answers as `run`'s two-transaction path.
    private func runInOneTransaction(userID: String, key: String, requestHash: String, now: Date,
                                     beforeWork: (@Sendable () async -> Void)?,
                                     work: @escaping @Sendable (any SQLConnection) throws -> Answer) async throws -> Outcome {
        let slot = "\(userID)\u{0}\(key)"
        try inFlight.withLock { running in
            if let held = running[slot] {
                // As `begin` on a committed marker: a different body is 422 first, else 409.
                guard held == requestHash else { throw IdempotencyError.mismatch }
                throw IdempotencyError.inProgress
            }
            running[slot] = requestHash
        }
        defer { inFlight.withLock { _ = $0.removeValue(forKey: slot) } }
        if let beforeWork { await beforeWork() }
        let lease = lease
        let outcome = try await database.write { db -> Result<Answer, Replay> in
            switch try Self.begin(db, userID: userID, key: key, requestHash: requestHash, now: now, lease: lease) {
            case .replay(let status, let body):
                return .failure(Replay(status: status, body: body))
            case .proceed(let owner):
                let answer = try work(db)
                try db.execute("""
                    UPDATE idempotency_keys SET status = ?, body = ?, completed_at = ?
                    WHERE user_id = ? AND idempotency_key = ? AND owner = ?
                    """, .integer(Int64(answer.status)), .text(String(decoding: answer.body, as: UTF8.self)),
                         .date(now), .text(userID), .text(key), .text(owner))
                return .success(answer)
            }
        }
        switch outcome {
        case .success(let answer):
            return Outcome(status: answer.status, body: answer.body, replayed: false, events: answer.events)
        case .failure(let replay):
            return Self.replayed(status: replay.status, body: replay.body)
        }
    }

    /// A stored answer found by `begin`, carried out of the transaction.
    private struct Replay: Error, Sendable {
        var status: Int
        var body: String
    }

    static func replayed(status: Int, body: String) -> Outcome {
        Outcome(status: status, body: Array(body.utf8), replayed: true, events: [])
    }

    static func begin(_ db: any SQLConnection, userID: String, key: String, requestHash: String,
                      now: Date, lease: TimeInterval) throws -> Begin {
        let owner = UUID().uuidString.lowercased()
        let inserted = try db.execute("""
            INSERT INTO idempotency_keys (user_id, idempotency_key, request_hash, owner, locked_until, created_at)
            VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, idempotency_key) DO NOTHING
            """, .text(userID), .text(key), .text(requestHash), .text(owner),
                 .date(now.addingTimeInterval(lease)), .date(now))
        if inserted == 1 { return .proceed(owner: owner) }
        guard let row = try db.queryOne("""
            SELECT request_hash, locked_until, status, body FROM idempotency_keys
            WHERE user_id = ? AND idempotency_key = ?
            """ + db.dialect.forUpdate, .text(userID), .text(key)) else {
            throw StorageError.conflict("idempotency key vanished while being read")
        }
        guard try row.required.string("request_hash") == requestHash else { throw IdempotencyError.mismatch }
        if let status = try row.int("status") {
            return .replay(status: Int(status), body: try row.string("body") ?? "")
        }
        if let until = try row.date("locked_until"), until > now { throw IdempotencyError.inProgress }
        // The holder died (crash, timeout) without finishing: take the key over.
        try db.execute("UPDATE idempotency_keys SET owner = ?, locked_until = ? WHERE user_id = ? AND idempotency_key = ?",
                       .text(owner), .date(now.addingTimeInterval(lease)), .text(userID), .text(key))
        return .proceed(owner: owner)
    }


    /// SQLite serves one instance only: after a restart every in-flight marker belongs to
    /// a request that died with the previous process, so they are released at once.
    /// (On PostgreSQL other instances may be alive; markers expire after the lease.)
    func releaseOrphansAfterRestart() async throws -> Int {
        guard !database.dialect.isSharedByInstances else { return 0 }
        return try await database.write { db in try db.execute("DELETE FROM idempotency_keys WHERE status IS NULL", []) }
    }
}

/// The refusals of the idempotency contract (docs/contract.md §2).
enum IdempotencyError: RenderableError {
    case keyRequired
    case keyInvalid
    /// The key was used with a different request.
    case mismatch
    /// A request with this key is still running (here or on another instance).
    case inProgress

    var status: Int {
        switch self {
        case .keyRequired, .keyInvalid: return 400
        case .mismatch: return 422
        case .inProgress: return 409
        }
    }

    var code: ErrorCode {
        switch self {
        case .keyRequired: return .idempotencyKeyRequired
        case .keyInvalid: return .invalidRequest
        case .mismatch: return .idempotencyKeyMismatch
        case .inProgress: return .requestInProgress
        }
    }

    var message: String {
        switch self {
        case .keyRequired: return "the Idempotency-Key header is required for this action"
        case .keyInvalid: return "Idempotency-Key must be 1 to 255 printable characters"
        case .mismatch: return "this Idempotency-Key was used with a different request"
        case .inProgress: return "a request with this Idempotency-Key is still being processed; retry shortly"
        }
    }

    var details: [String: JSONValue] { self == .inProgress ? [:] : ["field": "Idempotency-Key"] }

    var headers: [(String, String)] { self == .inProgress ? [("Retry-After", "1")] : [] }
}
