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
        Migration(version: 15, name: "visits_history_indexes", statements: visitsHistoryIndexes),
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

    /// The pendências list (`status = 'unanswered'`) used the (unit|company, created_at)
    /// indexes and skipped every answered visit on its way: a unit's whole history per
    /// request (18.7 ms at 20 000 visits, growing through every soak). Partial indexes hold
    /// only unanswered visits, so the list costs the same at any history size (7 µs).
    static let visitsUnanswered: [Migration.Statement] = [
        .init("CREATE INDEX visits_unit_unanswered ON visits (unit_id, created_at, id) WHERE status = 'unanswered'"),
        .init("CREATE INDEX visits_company_unanswered ON visits (company_id, created_at, id) WHERE status = 'unanswered'"),
    ]

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
        .init(membershipTable("membership_permissions", column: "permission", "TEXT NOT NULL")),
        .init(membershipTable("membership_sectors", column: "sector_id", "TEXT NOT NULL REFERENCES sectors(id) ON DELETE CASCADE")),
        .init(membershipTable("membership_units", column: "unit_id", "TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE")),
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

    /// What a membership holds (permissions, sectors, units): rows that go with it.
    private static func membershipTable(_ name: String, column: String, _ definition: String) -> String {
        """
        CREATE TABLE \(name) (
            user_id TEXT NOT NULL,
            company_id TEXT NOT NULL,
            \(column) \(definition),
            PRIMARY KEY (user_id, company_id, \(column)),
            FOREIGN KEY (user_id, company_id) REFERENCES memberships(user_id, company_id) ON DELETE CASCADE)
        """
    }
}
