/// Devices, the push outbox and its attempts (migrations 4, 7 and 10). SQLite cannot alter
/// a constraint, so migrations 7 and 10 rebuild these tables: each table's definition is
/// written once here and spelled for each rebuild by its name and the tables it references.
extension Schema {
    /// Devices and their tokens, the push outbox and every delivery attempt.
    static let push: [Migration.Statement] = [
        // Token statuses: active | unregistered (the provider refused it) | moved (another
        // installation registered it) | missing. Tokens of an inactive status are kept for the
        // admin panel but never pushed to.
        .init(devicesTable("devices", installationID: "TEXT NOT NULL UNIQUE")),
        .init(deviceIndexes[0]),
        // A token identifies one app install: it may sit on one device row only.
        .init(deviceIndexes[1]),
        .init(deviceIndexes[2]),
        // The outbox: one row per (push, device), written in the transaction of the event.
        // The id is the push_id the payload carries and the app acknowledges.
        .init(pushJobsTable("push_jobs", devices: "devices", kinds: firstPushKinds)),
    ] + pushJobsIndexes.map { .init($0) } + [
        .init(pushAttemptsTable("push_attempts", jobs: "push_jobs")),
        .init(pushAttemptsIndex),
    ]

    /// `installation_id` is chosen by the app, so it is unique per user, not across users:
    /// someone registering another user's installation id gets a row of their own instead
    /// of taking the other user's device. PostgreSQL drops the constraint; SQLite cannot,
    /// so it rebuilds `devices` and the two tables that hang off it (copy, drop children
    /// first so no cascade fires, rename — SQLite rewrites the references — and re-index).
    static let devicesPerUser: [Migration.Statement] = {
        let sqliteOnly: [String] = [
            devicesTable("devices_v7", installationID: "TEXT NOT NULL"),
            "INSERT INTO devices_v7 SELECT * FROM devices",
            pushJobsTable("push_jobs_v7", devices: "devices_v7", kinds: firstPushKinds),
            "INSERT INTO push_jobs_v7 SELECT * FROM push_jobs",
            pushAttemptsTable("push_attempts_v7", jobs: "push_jobs_v7"),
            "INSERT INTO push_attempts_v7 SELECT * FROM push_attempts",
            "DROP TABLE push_attempts",
            "DROP TABLE push_jobs",
            "DROP TABLE devices",
            "ALTER TABLE devices_v7 RENAME TO devices",
            "ALTER TABLE push_jobs_v7 RENAME TO push_jobs",
            "ALTER TABLE push_attempts_v7 RENAME TO push_attempts",
        ] + deviceIndexes + pushJobsIndexes + [pushAttemptsIndex]
        return sqliteOnly.map { Migration.Statement($0, postgres: "SELECT 1") } + [
            .init("SELECT 1", postgres: "ALTER TABLE devices DROP CONSTRAINT IF EXISTS devices_installation_id_key"),
            .init("CREATE UNIQUE INDEX devices_user_installation ON devices (user_id, installation_id)"),
        ]
    }()

    /// Two push kinds for decided deliveries (`delivery_resolved`, `automatic_resolution`):
    /// the CHECK on `push_jobs.kind` is widened. PostgreSQL swaps the constraint; SQLite
    /// cannot alter one, so it rebuilds `push_jobs` and `push_attempts`, which hangs off it
    /// (dropping `push_jobs` alone would cascade into the attempts). `SELECT *` is
    /// deliberate: a column added by an earlier migration makes the copy fail loudly
    /// instead of being dropped in silence.
    static let pushResolutionKinds: [Migration.Statement] = {
        let kinds = "'visit_ring', 'ring_cancelled', 'delivery', 'delivery_resolved', 'automatic_resolution', 'test'"
        let sqliteOnly: [String] = [
            // `ack_token_hashes` came with migration 9.
            pushJobsTable("push_jobs_v10", devices: "devices", kinds: kinds, ackTokenHashes: true),
            "INSERT INTO push_jobs_v10 SELECT * FROM push_jobs",
            pushAttemptsTable("push_attempts_v10", jobs: "push_jobs_v10"),
            "INSERT INTO push_attempts_v10 SELECT * FROM push_attempts",
            "DROP TABLE push_attempts",
            "DROP TABLE push_jobs",
            "ALTER TABLE push_jobs_v10 RENAME TO push_jobs",
            "ALTER TABLE push_attempts_v10 RENAME TO push_attempts",
        ] + pushJobsIndexes + [pushAttemptsIndex]
        return sqliteOnly.map { Migration.Statement($0, postgres: "SELECT 1") } + [
            .init("SELECT 1", postgres: "ALTER TABLE push_jobs DROP CONSTRAINT IF EXISTS push_jobs_kind_check"),
            .init("SELECT 1", postgres: "ALTER TABLE push_jobs ADD CONSTRAINT push_jobs_kind_check CHECK (kind IN (\(kinds)))"),
        ]
    }()

    /// The push kinds of migrations 4 to 9.
    private static let firstPushKinds = "'visit_ring', 'ring_cancelled', 'delivery', 'test'"

    private static let deviceIndexes = [
        "CREATE INDEX devices_user ON devices (user_id)",
        "CREATE UNIQUE INDEX devices_push_token ON devices (push_token)",
        "CREATE UNIQUE INDEX devices_voip_token ON devices (voip_token)",
    ]

    private static let pushJobsIndexes = [
        "CREATE INDEX push_jobs_due ON push_jobs (status, next_attempt_at)",
        "CREATE INDEX push_jobs_device ON push_jobs (device_id, status)",
        "CREATE INDEX push_jobs_visit ON push_jobs (visit_id)",
    ]

    private static let pushAttemptsIndex = "CREATE INDEX push_attempts_push ON push_attempts (push_id)"

    private static func devicesTable(_ name: String, installationID: String) -> String {
        """
        CREATE TABLE \(name) (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            installation_id \(installationID),
            platform TEXT NOT NULL CHECK (platform IN ('ios', 'android', 'web')),
            push_token TEXT,
            push_token_status TEXT NOT NULL DEFAULT 'active',
            voip_token TEXT,
            voip_token_status TEXT,
            app_version TEXT,
            device_name TEXT,
            locale TEXT,
            notifications_enabled INTEGER,
            full_screen_intent_allowed INTEGER,
            ignoring_battery_optimizations INTEGER,
            manufacturer TEXT,
            os_version TEXT,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            token_refreshed_at BIGINT NOT NULL,
            last_push_at BIGINT,
            last_ack_at BIGINT,
            last_success_at BIGINT,
            consecutive_failures INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            last_error_at BIGINT)
        """
    }

    private static func pushJobsTable(_ name: String, devices: String, kinds: String, ackTokenHashes: Bool = false) -> String {
        """
        CREATE TABLE \(name) (
            id TEXT PRIMARY KEY,
            device_id TEXT NOT NULL REFERENCES \(devices)(id) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN (\(kinds))),
            platform TEXT NOT NULL,
            token_kind TEXT NOT NULL CHECK (token_kind IN ('push', 'voip')),
            token TEXT NOT NULL,
            visit_id TEXT,
            message TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'expired', 'cancelled')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at BIGINT NOT NULL,
            deadline_at BIGINT NOT NULL,
            lease_owner TEXT,
            lease_until BIGINT,
            created_at BIGINT NOT NULL,
            sent_at BIGINT,
            acked_at BIGINT,
            provider_id TEXT,
            last_error TEXT\(ackTokenHashes ? ",\n    ack_token_hashes TEXT" : ""))
        """
    }

    private static func pushAttemptsTable(_ name: String, jobs: String) -> String {
        """
        CREATE TABLE \(name) (
            id TEXT PRIMARY KEY,
            push_id TEXT NOT NULL REFERENCES \(jobs)(id) ON DELETE CASCADE,
            device_id TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            at BIGINT NOT NULL,
            provider TEXT NOT NULL,
            outcome TEXT NOT NULL,
            http_status INTEGER,
            reason TEXT,
            duration_ms INTEGER,
            instance TEXT NOT NULL)
        """
    }
}
