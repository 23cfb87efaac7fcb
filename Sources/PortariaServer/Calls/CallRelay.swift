import Foundation
import PortariaCore

/// The `calls` and `call_relay` tables: who owns each call across instances, and the
/// messages too large for a notification.
struct CallRelayStore: Sendable {
    let database: any SQLDatabase

    /// A call as the `calls` table knows it.
    struct Call: Sendable, Equatable {
        var visitID: String
        var companyID: String
        var owner: String
        var resident: CallPeer

        func isParticipant(_ peer: CallPeer) -> Bool { peer == .visitor(visitID: visitID) || peer == resident }
    }

    /// Claims the call of `visitID` for `instance` unless another instance did first;
    /// returns the call as recorded (the first claim wins).
    func claim(visitID: String, companyID: String, resident: CallPeer, instance: String, at: Date) async throws -> Call? {
        guard case .resident(let userID, let deviceID) = resident else { return nil }
        return try await database.write { db in
            try db.execute("""
                INSERT INTO calls (visit_id, company_id, owner, resident_user_id, resident_device_id, created_at)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (visit_id) DO NOTHING
                """, .text(visitID), .text(companyID), .text(instance), .text(userID), .text(deviceID), .date(at))
            return try db.queryOne("SELECT * FROM calls WHERE visit_id = ?", .text(visitID)).flatMap(Self.call)
        }
    }

    /// The calls of `companyID` that `peer` takes part in and another instance owns.
    func calls(of peer: CallPeer, companyID: String, notOwnedBy instance: String) async throws -> [Call] {
        try await database.read { db in
            let rows: [SQLRow]
            switch peer {
            case .visitor(let visitID):
                rows = try db.query("SELECT * FROM calls WHERE visit_id = ? AND company_id = ? AND owner <> ?",
                                    .text(visitID), .text(companyID), .text(instance))
            case .resident(let userID, let deviceID):
                rows = try db.query("""
                    SELECT * FROM calls WHERE resident_user_id = ? AND resident_device_id = ? AND company_id = ? AND owner <> ?
                    """, .text(userID), .text(deviceID), .text(companyID), .text(instance))
            }
            return try rows.compactMap(Self.call)
        }
    }

    func call(visitID: String) async throws -> Call? {
        try await database.read { db in try db.queryOne("SELECT * FROM calls WHERE visit_id = ?", .text(visitID)).flatMap(Self.call) }
    }

    func ended(visitID: String, owner: String) async throws {
        _ = try await database.write { db in
            try db.execute("DELETE FROM calls WHERE visit_id = ? AND owner = ?", .text(visitID), .text(owner))
        }
    }

    /// Sends `message` to every instance when the transaction commits; one too large for
    /// a notification is parked in `call_relay` and the notification names its row.
    func send(_ message: CallRelayMessage, at: Date) async throws {
        let text = message.jsonText
        _ = try await database.write { db in
            if text.utf8.count <= CallRelayMessage.inlineLimit {
                try db.notifyAtCommit(.calls, payload: text)
                return
            }
            guard let id = try db.queryOne("INSERT INTO call_relay (body, created_at) VALUES (?, ?) RETURNING id",
                                           .text(text), .date(at))?.int("id") else {
                throw StorageError.unavailable("call_relay: no id returned")
            }
            try db.notifyAtCommit(.calls, payload: message.reference(id).jsonText)
        }
    }

    /// The whole message behind a reference; nil when the row is gone (swept).
    func body(_ id: Int64) async throws -> CallRelayMessage? {
        try await database.read { db in
            try db.queryOne("SELECT body FROM call_relay WHERE id = ?", .integer(id))?.string("body")
        }.flatMap(CallRelayMessage.parse)
    }

    /// Parked messages are read within moments by every instance; calls end within 15
    /// minutes (`max_duration`), so rows older than that were left by a crashed owner.
    func sweep(now: Date) async throws {
        _ = try await database.write { db in
            try db.execute("DELETE FROM call_relay WHERE created_at < ?", .date(now.addingTimeInterval(-120)))
            try db.execute("DELETE FROM calls WHERE created_at < ?", .date(now.addingTimeInterval(-20 * 60)))
        }
    }

    static func call(_ row: SQLRow) throws -> Call? {
        guard let visitID = try row.string("visit_id"), let companyID = try row.string("company_id"),
              let owner = try row.string("owner"), let userID = try row.string("resident_user_id"),
              let deviceID = try row.string("resident_device_id") else { return nil }
        return Call(visitID: visitID, companyID: companyID, owner: owner, resident: .resident(userID: userID, deviceID: deviceID))
    }
}
