/// Portaria's schema, one migration per change, never edited once released.
public enum Schema {
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "service_state", statements: [
            // Small key/value facts about this database (instance id, signing key ids, …).
            .init("""
                CREATE TABLE service_state (
                    key TEXT PRIMARY KEY,
                    value TEXT NOT NULL,
                    updated_at BIGINT NOT NULL)
                """),
        ]),
        Migration(version: 2, name: "accounts", statements: accounts),
        Migration(version: 3, name: "visits", statements: visits),
        Migration(version: 4, name: "devices_and_push", statements: push),
        Migration(version: 5, name: "realtime", statements: realtime),
        Migration(version: 6, name: "rate_limit_expiry", statements: [
            // Windows have different lengths (a minute for the gate, a day for OTP sends):
            // each row says when it ends, so the retention sweep can delete ended ones.
            .init("ALTER TABLE rate_limits ADD COLUMN expires_at BIGINT"),
            .init("CREATE INDEX rate_limits_expiry ON rate_limits (expires_at)"),
        ]),
        Migration(version: 7, name: "devices_per_user", statements: devicesPerUser),
        Migration(version: 8, name: "visits_unanswered_indexes", statements: visitsUnanswered),
        Migration(version: 9, name: "push_ack_capability", statements: [
            // The SHA-256 (hex, space-separated, newest last) of every `ack_token` this job's
            // payloads carried: one per attempt, so whichever attempt reached the phone can
            // acknowledge it without a session. The tokens themselves are never stored
            // (decision 0016).
            .init("ALTER TABLE push_jobs ADD COLUMN ack_token_hashes TEXT"),
        ]),
        Migration(version: 10, name: "push_resolution_kinds", statements: pushResolutionKinds),
        Migration(version: 11, name: "calls_across_instances", statements: callsAcrossInstances),
        Migration(version: 12, name: "push_jobs_by_age", statements: [
            // The retention sweep deletes finished jobs by age (decision 0055); without this
            // it would scan the whole outbox every hour.
            .init("CREATE INDEX push_jobs_created ON push_jobs (created_at)"),
        ]),
        Migration(version: 13, name: "auth_tables_by_expiry", statements: [
            // The retention sweep deletes ended sessions and expired SMS codes and tokens by
            // expiry (decision 0055): without these it would scan each table every hour.
            .init("CREATE INDEX sessions_expires ON sessions (expires_at)"),
            .init("CREATE INDEX otp_codes_expires ON otp_codes (expires_at)"),
            .init("CREATE INDEX otp_tokens_expires ON otp_tokens (expires_at)"),
        ]),
        Migration(version: 14, name: "audit_log", statements: auditLog),
        Migration(version: 15, name: "visits_with_location", statements: visitsWithLocation),
    ]

    /// The audit trail (decision 0091): append-only facts of who decided, answered, logged
    /// in or changed what. No foreign keys: a row outlives the visit, device or account it
    /// names (LGPD erasure replaces the person's id with a pseudonym, the fact stays).
    static let auditLog: [Migration.Statement] = [
        .table(autoincrementing: "id") { id in """
            CREATE TABLE audit_log (
                \(id),
                at BIGINT NOT NULL,
                company_id TEXT,
                actor_user_id TEXT,
                actor_role TEXT NOT NULL,
                action TEXT NOT NULL,
                object_type TEXT,
                object_id TEXT,
                subject_user_id TEXT,
                device TEXT,
                address TEXT,
                detail TEXT NOT NULL DEFAULT '{}')
            """ },
        .init("CREATE INDEX audit_log_company ON audit_log (company_id, id)"),
        .init("CREATE INDEX audit_log_actor ON audit_log (actor_user_id)"),
        .init("CREATE INDEX audit_log_subject ON audit_log (subject_user_id)"),
        .init("CREATE INDEX audit_log_at ON audit_log (at)"),
    ]

    /// Video calls across instances on PostgreSQL (decision 0056): which instance owns
    /// each call in progress (the first to claim it), and the signalling messages too large
    /// for a NOTIFY payload. Unused on SQLite (one instance), created anyway so both
    /// dialects keep one schema.
    static let callsAcrossInstances: [Migration.Statement] = [
        .init("""
            CREATE TABLE calls (
                visit_id TEXT PRIMARY KEY REFERENCES visits(id) ON DELETE CASCADE,
                company_id TEXT NOT NULL,
                owner TEXT NOT NULL,
                resident_user_id TEXT NOT NULL,
                resident_device_id TEXT NOT NULL,
                created_at BIGINT NOT NULL)
            """),
        .init("CREATE INDEX calls_resident ON calls (resident_user_id)"),
        .init("CREATE TABLE call_relay (id INTEGER PRIMARY KEY, body TEXT NOT NULL, created_at BIGINT NOT NULL)",
              postgres: "CREATE TABLE call_relay (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL, created_at BIGINT NOT NULL)"),
        .init("CREATE INDEX call_relay_created ON call_relay (created_at)"),
    ]

    /// Two push kinds for decided deliveries (`delivery_resolved`, `automatic_resolution`):
    /// the CHECK on `push_jobs.kind` is widened. PostgreSQL swaps the constraint; SQLite
    /// cannot alter one, so it rebuilds `push_jobs` and `push_attempts`, which hangs off it
    /// (dropping `push_jobs` alone would cascade into the attempts). `SELECT *` is
    /// deliberate: a column added by an earlier migration makes the copy fail loudly
    /// instead of being dropped in silence.
    static let pushResolutionKinds: [Migration.Statement] = {
        let kinds = "'visit_ring', 'ring_cancelled', 'delivery', 'delivery_resolved', 'automatic_resolution', 'test'"
        let sqliteOnly: [String] = [
            """
            CREATE TABLE push_jobs_v10 (
                id TEXT PRIMARY KEY,
                device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
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
                last_error TEXT,
                ack_token_hashes TEXT)
            """,
            "INSERT INTO push_jobs_v10 SELECT * FROM push_jobs",
            """
            CREATE TABLE push_attempts_v10 (
                id TEXT PRIMARY KEY,
                push_id TEXT NOT NULL REFERENCES push_jobs_v10(id) ON DELETE CASCADE,
                device_id TEXT NOT NULL,
                attempt INTEGER NOT NULL,
                at BIGINT NOT NULL,
                provider TEXT NOT NULL,
                outcome TEXT NOT NULL,
                http_status INTEGER,
                reason TEXT,
                duration_ms INTEGER,
                instance TEXT NOT NULL)
            """,
            "INSERT INTO push_attempts_v10 SELECT * FROM push_attempts",
            "DROP TABLE push_attempts",
            "DROP TABLE push_jobs",
            "ALTER TABLE push_jobs_v10 RENAME TO push_jobs",
            "ALTER TABLE push_attempts_v10 RENAME TO push_attempts",
            "CREATE INDEX push_jobs_due ON push_jobs (status, next_attempt_at)",
            "CREATE INDEX push_jobs_device ON push_jobs (device_id, status)",
            "CREATE INDEX push_jobs_visit ON push_jobs (visit_id)",
            "CREATE INDEX push_attempts_push ON push_attempts (push_id)",
        ]
        return sqliteOnly.map { Migration.Statement($0, postgres: "SELECT 1") } + [
            .init("SELECT 1", postgres: "ALTER TABLE push_jobs DROP CONSTRAINT IF EXISTS push_jobs_kind_check"),
            .init("SELECT 1", postgres: "ALTER TABLE push_jobs ADD CONSTRAINT push_jobs_kind_check CHECK (kind IN (\(kinds)))"),
        ]
    }()

    /// The pendências list (`status = 'unanswered'`) used the (unit|company, created_at)
    /// indexes and skipped every answered visit on its way: a unit's whole history per
    /// request (18.7 ms at 20 000 visits, growing through every soak). Partial indexes hold
    /// only unanswered visits, so the list costs the same at any history size (7 µs).
    static let visitsUnanswered: [Migration.Statement] = [
        .init("CREATE INDEX visits_unit_unanswered ON visits (unit_id, created_at, id) WHERE status = 'unanswered'"),
        .init("CREATE INDEX visits_company_unanswered ON visits (company_id, created_at, id) WHERE status = 'unanswered'"),
    ]

    /// `installation_id` is chosen by the app, so it is unique per user, not across users:
    /// someone registering another user's installation id gets a row of their own instead
    /// of taking the other user's device. PostgreSQL drops the constraint; SQLite cannot,
    /// so it rebuilds `devices` and the two tables that hang off it (copy, drop children
    /// first so no cascade fires, rename — SQLite rewrites the references — and re-index).
    static let devicesPerUser: [Migration.Statement] = {
        let noop = "SELECT 1"
        let sqliteOnly: [String] = [
            """
            CREATE TABLE devices_v7 (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                installation_id TEXT NOT NULL,
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
            """,
            "INSERT INTO devices_v7 SELECT * FROM devices",
            """
            CREATE TABLE push_jobs_v7 (
                id TEXT PRIMARY KEY,
                device_id TEXT NOT NULL REFERENCES devices_v7(id) ON DELETE CASCADE,
                user_id TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('visit_ring', 'ring_cancelled', 'delivery', 'test')),
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
                last_error TEXT)
            """,
            "INSERT INTO push_jobs_v7 SELECT * FROM push_jobs",
            """
            CREATE TABLE push_attempts_v7 (
                id TEXT PRIMARY KEY,
                push_id TEXT NOT NULL REFERENCES push_jobs_v7(id) ON DELETE CASCADE,
                device_id TEXT NOT NULL,
                attempt INTEGER NOT NULL,
                at BIGINT NOT NULL,
                provider TEXT NOT NULL,
                outcome TEXT NOT NULL,
                http_status INTEGER,
                reason TEXT,
                duration_ms INTEGER,
                instance TEXT NOT NULL)
            """,
            "INSERT INTO push_attempts_v7 SELECT * FROM push_attempts",
            "DROP TABLE push_attempts",
            "DROP TABLE push_jobs",
            "DROP TABLE devices",
            "ALTER TABLE devices_v7 RENAME TO devices",
            "ALTER TABLE push_jobs_v7 RENAME TO push_jobs",
            "ALTER TABLE push_attempts_v7 RENAME TO push_attempts",
            "CREATE INDEX devices_user ON devices (user_id)",
            "CREATE UNIQUE INDEX devices_push_token ON devices (push_token)",
            "CREATE UNIQUE INDEX devices_voip_token ON devices (voip_token)",
            "CREATE INDEX push_jobs_due ON push_jobs (status, next_attempt_at)",
            "CREATE INDEX push_jobs_device ON push_jobs (device_id, status)",
            "CREATE INDEX push_jobs_visit ON push_jobs (visit_id)",
            "CREATE INDEX push_attempts_push ON push_attempts (push_id)",
        ]
        return sqliteOnly.map { Migration.Statement($0, postgres: noop) } + [
            .init("SELECT 1", postgres: "ALTER TABLE devices DROP CONSTRAINT IF EXISTS devices_installation_id_key"),
            .init("CREATE UNIQUE INDEX devices_user_installation ON devices (user_id, installation_id)"),
        ]
    }()

    /// One-time tickets that let a browser open `/v1/realtime` without putting a
    /// long-lived token in a URL.
    static let realtime: [Migration.Statement] = [
        .init("""
            CREATE TABLE realtime_tickets (
                token_hash TEXT PRIMARY KEY,
                user_id TEXT,
                session_id TEXT,
                company_id TEXT NOT NULL,
                visit_id TEXT,
                expires_at BIGINT NOT NULL,
                used_at BIGINT)
            """),
        .init("CREATE INDEX realtime_tickets_expiry ON realtime_tickets (expires_at)"),
    ]

    /// Companies (condominiums), their units, sectors and gates; users and what they are
    /// in each company; sessions, OTP codes and rate-limit windows.
    static let accounts: [Migration.Statement] = [
        .init("""
            CREATE TABLE companies (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                gate_lat DOUBLE PRECISION,
                gate_lon DOUBLE PRECISION,
                gate_radius_m DOUBLE PRECISION NOT NULL DEFAULT 50,
                timezone TEXT NOT NULL DEFAULT 'America/Sao_Paulo',
                created_at BIGINT NOT NULL)
            """),
        .init("""
            CREATE TABLE units (
                id TEXT PRIMARY KEY,
                company_id TEXT NOT NULL REFERENCES companies(id),
                label TEXT NOT NULL,
                delivery_rule TEXT NOT NULL DEFAULT 'ask'
                    CHECK (delivery_rule IN ('ask', 'ask_then_concierge', 'leave_at_concierge')),
                ring_mode TEXT NOT NULL DEFAULT 'sequential' CHECK (ring_mode IN ('sequential', 'simultaneous')),
                ring_step_seconds INTEGER NOT NULL DEFAULT 20,
                ring_window_seconds INTEGER NOT NULL DEFAULT 60,
                created_at BIGINT NOT NULL,
                UNIQUE (company_id, label))
            """),
        .init("""
            CREATE TABLE users (
                id TEXT PRIMARY KEY,
                username TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                phone TEXT UNIQUE,
                password_hash TEXT,
                master INTEGER NOT NULL DEFAULT 0,
                driver INTEGER NOT NULL DEFAULT 0,
                disabled INTEGER NOT NULL DEFAULT 0,
                created_at BIGINT NOT NULL)
            """),
        .init("""
            CREATE TABLE sectors (
                id TEXT PRIMARY KEY,
                company_id TEXT NOT NULL REFERENCES companies(id),
                name TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                UNIQUE (company_id, name))
            """),
        .init("""
            CREATE TABLE sector_permissions (
                sector_id TEXT NOT NULL REFERENCES sectors(id) ON DELETE CASCADE,
                permission TEXT NOT NULL,
                PRIMARY KEY (sector_id, permission))
            """),
        .init("""
            CREATE TABLE memberships (
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                company_id TEXT NOT NULL REFERENCES companies(id),
                created_at BIGINT NOT NULL,
                PRIMARY KEY (user_id, company_id))
            """),
        .init("CREATE INDEX memberships_company ON memberships (company_id)"),
        .init("""
            CREATE TABLE membership_permissions (
                user_id TEXT NOT NULL,
                company_id TEXT NOT NULL,
                permission TEXT NOT NULL,
                PRIMARY KEY (user_id, company_id, permission),
                FOREIGN KEY (user_id, company_id) REFERENCES memberships(user_id, company_id) ON DELETE CASCADE)
            """),
        .init("""
            CREATE TABLE membership_sectors (
                user_id TEXT NOT NULL,
                company_id TEXT NOT NULL,
                sector_id TEXT NOT NULL REFERENCES sectors(id) ON DELETE CASCADE,
                PRIMARY KEY (user_id, company_id, sector_id),
                FOREIGN KEY (user_id, company_id) REFERENCES memberships(user_id, company_id) ON DELETE CASCADE)
            """),
        .init("""
            CREATE TABLE membership_units (
                user_id TEXT NOT NULL,
                company_id TEXT NOT NULL,
                unit_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE,
                PRIMARY KEY (user_id, company_id, unit_id),
                FOREIGN KEY (user_id, company_id) REFERENCES memberships(user_id, company_id) ON DELETE CASCADE)
            """),
        .init("CREATE INDEX membership_units_unit ON membership_units (unit_id)"),
        .init("""
            CREATE TABLE unit_ring_order (
                unit_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE,
                position INTEGER NOT NULL,
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                PRIMARY KEY (unit_id, position),
                UNIQUE (unit_id, user_id))
            """),
        .init("""
            CREATE TABLE gates (
                id TEXT PRIMARY KEY,
                company_id TEXT NOT NULL REFERENCES companies(id),
                token TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                created_at BIGINT NOT NULL)
            """),
        .init("""
            CREATE TABLE signing_keys (
                id TEXT PRIMARY KEY,
                secret TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                retired_at BIGINT)
            """),
        // A session is a refresh-token family (RFC 9700 §4.14.2): rotation keeps the
        // family, reuse of a spent token revokes it.
        .init("""
            CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                revoked_at BIGINT,
                revoked_reason TEXT)
            """),
        .init("CREATE INDEX sessions_user ON sessions (user_id)"),
        .init("""
            CREATE TABLE refresh_tokens (
                token_hash TEXT PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                created_at BIGINT NOT NULL,
                spent_at BIGINT)
            """),
        .init("CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id)"),
        .init("""
            CREATE TABLE otp_codes (
                id TEXT PRIMARY KEY,
                phone TEXT NOT NULL,
                code_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                consumed_at BIGINT)
            """),
        .init("CREATE INDEX otp_codes_phone ON otp_codes (phone, created_at)"),
        .init("""
            CREATE TABLE otp_tokens (
                token_hash TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                expires_at BIGINT NOT NULL,
                used_at BIGINT)
            """),
        // Fixed-window counters shared by every instance (login failures, OTP sends, …).
        .init("""
            CREATE TABLE rate_limits (
                bucket TEXT PRIMARY KEY,
                window_start BIGINT NOT NULL,
                count INTEGER NOT NULL)
            """),
    ]

    /// Devices and their tokens, the push outbox and every delivery attempt.
    static let push: [Migration.Statement] = [
        // Token statuses: active | unregistered (the provider refused it) | moved (another
        // installation registered it) | missing. Tokens of an inactive status are kept for the
        // admin panel but never pushed to.
        .init("""
            CREATE TABLE devices (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                installation_id TEXT NOT NULL UNIQUE,
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
            """),
        .init("CREATE INDEX devices_user ON devices (user_id)"),
        // A token identifies one app install: it may sit on one device row only.
        .init("CREATE UNIQUE INDEX devices_push_token ON devices (push_token)"),
        .init("CREATE UNIQUE INDEX devices_voip_token ON devices (voip_token)"),
        // The outbox: one row per (push, device), written in the transaction of the event.
        // The id is the push_id the payload carries and the app acknowledges.
        .init("""
            CREATE TABLE push_jobs (
                id TEXT PRIMARY KEY,
                device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
                user_id TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('visit_ring', 'ring_cancelled', 'delivery', 'test')),
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
                last_error TEXT)
            """),
        .init("CREATE INDEX push_jobs_due ON push_jobs (status, next_attempt_at)"),
        .init("CREATE INDEX push_jobs_device ON push_jobs (device_id, status)"),
        .init("CREATE INDEX push_jobs_visit ON push_jobs (visit_id)"),
        .init("""
            CREATE TABLE push_attempts (
                id TEXT PRIMARY KEY,
                push_id TEXT NOT NULL REFERENCES push_jobs(id) ON DELETE CASCADE,
                device_id TEXT NOT NULL,
                attempt INTEGER NOT NULL,
                at BIGINT NOT NULL,
                provider TEXT NOT NULL,
                outcome TEXT NOT NULL,
                http_status INTEGER,
                reason TEXT,
                duration_ms INTEGER,
                instance TEXT NOT NULL)
            """),
        .init("CREATE INDEX push_attempts_push ON push_attempts (push_id)"),
    ]
}
