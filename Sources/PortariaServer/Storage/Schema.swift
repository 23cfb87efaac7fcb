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
        // 4 is the push layer's (devices, push jobs).
        Migration(version: 5, name: "realtime", statements: realtime),
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
}
