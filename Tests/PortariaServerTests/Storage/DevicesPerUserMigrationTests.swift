import Foundation
@testable import PortariaServer
import Testing

/// Migration 7 on a database that already holds devices, push jobs and attempts (as a
/// deployed server's would): nothing is lost, references still hold, and the installation
/// id becomes unique per user.
@Suite("Migration 7: devices per user")
struct DevicesPerUserMigrationTests {
    @Test("existing devices, push jobs and attempts survive; installation ids become per user", arguments: VisitsFixture.backends)
    func migratesExistingData(backend: Backend) async throws {
        try await StorageFixture.with(backend) { fixture in
            let database = fixture.database
            let before = Schema.migrations.filter { $0.version < 7 }
            try await Migrator(migrations: before).migrate(database)
            let at = SQLValue.date(Date(timeIntervalSince1970: 1_800_000_000))
            try await database.write { db in
                for user in ["u1", "u2"] {
                    try db.execute("INSERT INTO users (id, username, name, created_at) VALUES (?, ?, ?, ?)", .text(user), .text(user), .text(user), at)
                }
                try db.execute("""
                    INSERT INTO devices (id, user_id, installation_id, platform, push_token, created_at, updated_at, token_refreshed_at, consecutive_failures)
                    VALUES ('d1', 'u1', 'install-a', 'android', 'tok-1', ?, ?, ?, 2)
                    """, at, at, at)
                try db.execute("""
                    INSERT INTO push_jobs (id, device_id, user_id, kind, platform, token_kind, token, message, next_attempt_at, deadline_at, created_at)
                    VALUES ('p1', 'd1', 'u1', 'test', 'android', 'push', 'tok-1', '{}', ?, ?, ?)
                    """, at, at, at)
                try db.execute("""
                    INSERT INTO push_attempts (id, push_id, device_id, attempt, at, provider, outcome, instance)
                    VALUES ('a1', 'p1', 'd1', 1, ?, 'fcm', 'accepted', 'test')
                    """, at)
            }
            // The old schema refused a second user's row for the same installation id.
            await expectStorageError(.uniqueViolation) {
                try await database.write { db in
                    try db.execute("""
                        INSERT INTO devices (id, user_id, installation_id, platform, push_token, created_at, updated_at, token_refreshed_at)
                        VALUES ('d2', 'u2', 'install-a', 'android', 'tok-2', ?, ?, ?)
                        """, at, at, at)
                }
            }

            #expect(try await Migrator().migrate(database).contains(7))
            let kept = try await database.read { db in
                (try db.queryOne("SELECT consecutive_failures FROM devices WHERE id = 'd1'")?.int("consecutive_failures"),
                 try db.queryOne("SELECT device_id FROM push_jobs WHERE id = 'p1'")?.string("device_id"),
                 try db.queryOne("SELECT push_id FROM push_attempts WHERE id = 'a1'")?.string("push_id"))
            }
            #expect(kept.0 == 2 && kept.1 == "d1" && kept.2 == "p1")

            try await database.write { db in
                try db.execute("""
                    INSERT INTO devices (id, user_id, installation_id, platform, push_token, created_at, updated_at, token_refreshed_at)
                    VALUES ('d2', 'u2', 'install-a', 'android', 'tok-2', ?, ?, ?)
                    """, at, at, at)
            }
            await expectStorageError(.uniqueViolation) {
                try await database.write { db in
                    try db.execute("""
                        INSERT INTO devices (id, user_id, installation_id, platform, push_token, created_at, updated_at, token_refreshed_at)
                        VALUES ('d3', 'u2', 'install-a', 'android', 'tok-3', ?, ?, ?)
                        """, at, at, at)
                }
            }
            // Tokens are still unique across rows, and the references still cascade.
            await expectStorageError(.uniqueViolation) {
                try await database.write { db in
                    try db.execute("""
                        INSERT INTO devices (id, user_id, installation_id, platform, push_token, created_at, updated_at, token_refreshed_at)
                        VALUES ('d4', 'u2', 'install-b', 'android', 'tok-1', ?, ?, ?)
                        """, at, at, at)
                }
            }
            await expectStorageError(.foreignKeyViolation) {
                try await database.write { db in
                    try db.execute("""
                        INSERT INTO push_jobs (id, device_id, user_id, kind, platform, token_kind, token, message, next_attempt_at, deadline_at, created_at)
                        VALUES ('p2', 'no-such-device', 'u1', 'test', 'android', 'push', 'tok-1', '{}', ?, ?, ?)
                        """, at, at, at)
                }
            }
            try await database.write { db in try db.execute("DELETE FROM devices WHERE id = 'd1'") }
            let left = try await database.read { db in
                try db.queryOne("SELECT (SELECT COUNT(*) FROM push_jobs) + (SELECT COUNT(*) FROM push_attempts) AS n")?.int("n")
            }
            #expect(left == 0)
        }
    }
}
