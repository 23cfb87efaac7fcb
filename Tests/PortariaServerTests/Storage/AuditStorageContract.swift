import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

/// The audit trail's storage behaviour, part of the storage contract (both backends).
enum AuditStorageContract {
    static let checks: [ContractCheck] = [
        ContractCheck("the audit trail lists a company's rows and its members' person-level rows, newest first, by cursor and time",
                      companyTrail),
        ContractCheck("an audit row written in a transaction that rolls back is gone with it", rolledBack),
        ContractCheck("erasing a person keeps the audit facts under one pseudonym and removes the personal data", erasure),
        ContractCheck("audit retention deletes rows older than the cutoff only", prune),
    ]

    struct People {
        let demo: String
        let other: String
        let maria: String
        let carlos: String
    }

    static func people(_ database: any SQLDatabase) async throws -> People {
        try await Migrator().migrate(database)
        let directory = Directory(database: database)
        let demo = try await directory.createCompany(name: "Demo", gateLat: nil, gateLon: nil)
        let other = try await directory.createCompany(name: "Other", gateLat: nil, gateLon: nil)
        let maria = try await directory.createUser(username: "maria", name: "Maria Souza", phone: "+5511999990001", password: nil)
        let carlos = try await directory.createUser(username: "carlos", name: "Carlos Reis", phone: nil, password: nil)
        try await directory.addMember(user: maria, company: demo)
        try await directory.addMember(user: carlos, company: other)
        return People(demo: demo, other: other, maria: maria, carlos: carlos)
    }

    static func append(_ database: any SQLDatabase, _ entries: [AuditEntry]) async throws {
        try await database.write { db in for entry in entries { try AuditLog.append(db, entry) } }
    }

    static func companyTrail(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        let p = try await people(database)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        try await append(database, [
            AuditEntry(companyID: p.demo, actorUserID: p.maria, actorRole: "resident", action: "visit.resolve",
                       objectType: "visit", objectID: "v1", address: "10.0.0.1", detail: ["action": .string("authorize")], at: t0),
            AuditEntry(actorUserID: p.maria, actorRole: "user", action: "auth.login", at: t0.addingTimeInterval(1)),
            AuditEntry(companyID: p.other, actorUserID: p.carlos, actorRole: "resident", action: "visit.resolve",
                       objectType: "visit", objectID: "v2", at: t0.addingTimeInterval(2)),
            AuditEntry(actorUserID: p.carlos, actorRole: "user", action: "auth.login", at: t0.addingTimeInterval(3)),
            AuditEntry(actorUserID: nil, actorRole: "anonymous", action: "auth.login_failed", subjectUserID: p.maria,
                       at: t0.addingTimeInterval(4)),
        ])
        let demo = try await database.read { db in try AuditLog.list(db, companyID: p.demo, since: nil, until: nil, before: nil, limit: 10) }
        #expect(demo.map(\.entry.action) == ["auth.login_failed", "auth.login", "visit.resolve"])
        #expect(demo.last?.entry.detail["action"] == .string("authorize"))
        #expect(demo.last?.entry.address == "10.0.0.1")
        #expect(demo.last?.entry.at == t0)
        let firstPage = try await database.read { db in try AuditLog.list(db, companyID: p.demo, since: nil, until: nil, before: nil, limit: 2) }
        let secondPage = try await database.read { db in
            try AuditLog.list(db, companyID: p.demo, since: nil, until: nil, before: firstPage.last!.id, limit: 2)
        }
        #expect((firstPage + secondPage).map(\.id) == demo.map(\.id))
        let window = try await database.read { db in
            try AuditLog.list(db, companyID: p.demo, since: t0.addingTimeInterval(1), until: t0.addingTimeInterval(4), before: nil, limit: 10)
        }
        #expect(window.map(\.entry.action) == ["auth.login"])
        let everything = try await database.read { db in try AuditLog.list(db, companyID: nil, since: nil, until: nil, before: nil, limit: 10) }
        #expect(everything.count == 5)
    }

    static func rolledBack(_ fixture: StorageFixture) async throws {
        struct Refused: Error {}
        let database = fixture.database
        try await Migrator().migrate(database)
        await #expect(throws: Refused.self) {
            try await database.write { db in
                try AuditLog.append(db, AuditEntry(actorUserID: nil, actorRole: "cli", action: "admin.grant", at: Date()))
                throw Refused()
            }
        }
        let rows = try await database.read { db in try AuditLog.list(db, companyID: nil, since: nil, until: nil, before: nil, limit: 10) }
        #expect(rows.isEmpty)
    }

    static func erasure(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        let p = try await people(database)
        try await append(database, [
            AuditEntry(companyID: p.demo, actorUserID: p.maria, actorRole: "resident", action: "visit.resolve",
                       objectType: "visit", objectID: "v1", device: "phone-1", address: "10.0.0.1", at: Date()),
            AuditEntry(actorUserID: nil, actorRole: "anonymous", action: "auth.login_failed", subjectUserID: p.maria, at: Date()),
            AuditEntry(actorUserID: p.carlos, actorRole: "user", action: "auth.login", at: Date()),
            AuditEntry(companyID: p.demo, actorUserID: nil, actorRole: "cli", action: "admin.set_ring_order",
                       detail: ["users": .array([.string(p.carlos), .string(p.maria)])], at: Date()),
        ])
        let before = try await PersonalData.export(database, userID: p.maria)
        #expect(before["user"]?["name"] == .string("Maria Souza"))
        #expect(before["user"]?["password_hash"] == nil)
        let erased = try #require(try await PersonalData.erase(database, userID: p.maria))
        #expect(erased.auditRowsPseudonymized == 3)
        let rows = try await database.read { db in try AuditLog.list(db, companyID: nil, since: nil, until: nil, before: nil, limit: 10) }
        #expect(!rows.contains { $0.entry.actorUserID == p.maria || $0.entry.subjectUserID == p.maria })
        let decision = try #require(rows.first { $0.entry.action == "visit.resolve" })
        #expect(decision.entry.actorUserID == erased.pseudonym)
        #expect(decision.entry.device == nil && decision.entry.address == nil)
        #expect(decision.entry.objectID == "v1")
        #expect(rows.first { $0.entry.action == "auth.login_failed" }?.entry.subjectUserID == erased.pseudonym)
        #expect(rows.first { $0.entry.action == "auth.login" }?.entry.actorUserID == p.carlos)
        #expect(rows.first { $0.entry.action == "admin.set_ring_order" }?.entry.detail["users"]
                == .array([.string(p.carlos), .string(erased.pseudonym)]))
        let after = try await PersonalData.export(database, userID: p.maria)
        #expect(after["user"]?["phone"] == .null)
        #expect(after["user"]?["name"] != .string("Maria Souza"))
        #expect(after["memberships"] == .array([]))
        #expect(try await PersonalData.erase(database, userID: "no-such-user") == nil)
    }

    static func prune(_ fixture: StorageFixture) async throws {
        let database = fixture.database
        try await Migrator().migrate(database)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        try await append(database, (0..<5).map { day in
            AuditEntry(actorUserID: nil, actorRole: "cli", action: "admin.grant", at: now.addingTimeInterval(-Double(day) * 86_400))
        })
        let deleted = try await database.write { db in try AuditLog.prune(db, before: now.addingTimeInterval(-2.5 * 86_400), batch: 1000) }
        #expect(deleted == 2)
        let left = try await database.read { db in try AuditLog.list(db, companyID: nil, since: nil, until: nil, before: nil, limit: 10) }
        #expect(left.count == 3)
    }
}
