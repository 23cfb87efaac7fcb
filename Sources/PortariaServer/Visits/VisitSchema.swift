/// Migration 3: visits, their timeline, media, the ring scheduler's jobs, idempotency
/// keys and the event log. See docs/decisions/0004-visits-idempotency-events-scheduler.md.
extension Schema {
    static let visits: [Migration.Statement] = [
        // A visit snapshots the unit's rule and ring mode when it starts, so a settings
        // change mid-ring does not change a ring already in progress.
        .init("""
            CREATE TABLE visits (
                id TEXT PRIMARY KEY,
                company_id TEXT NOT NULL REFERENCES companies(id),
                unit_id TEXT NOT NULL REFERENCES units(id),
                gate_id TEXT REFERENCES gates(id),
                kind TEXT NOT NULL CHECK (kind IN ('visit', 'delivery')),
                visitor_name TEXT NOT NULL,
                carrier TEXT,
                status TEXT NOT NULL
                    CHECK (status IN ('ringing', 'answered', 'unanswered', 'resolved', 'cancelled', 'expired')),
                location_lat DOUBLE PRECISION,
                location_lon DOUBLE PRECISION,
                location_accuracy_m DOUBLE PRECISION,
                geofence_status TEXT NOT NULL CHECK (geofence_status IN ('at_entrance', 'away', 'unknown')),
                geofence_distance_m INTEGER,
                delivery_rule TEXT NOT NULL,
                ring_mode TEXT NOT NULL,
                answered_by TEXT REFERENCES users(id),
                answered_by_name TEXT,
                answered_at BIGINT,
                ring_deadline BIGINT,
                visitor_token_hash TEXT NOT NULL UNIQUE,
                expires_at BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL)
            """),
        .init("CREATE INDEX visits_company_created ON visits (company_id, created_at, id)"),
        .init("CREATE INDEX visits_unit_created ON visits (unit_id, created_at, id)"),
        .init("CREATE INDEX visits_expires ON visits (expires_at)"),
        // One row per resolved visit: the primary key makes a second resolution
        // impossible even if application logic were wrong.
        .init("""
            CREATE TABLE visit_resolutions (
                visit_id TEXT PRIMARY KEY REFERENCES visits(id) ON DELETE CASCADE,
                action TEXT NOT NULL CHECK (action IN ('authorize', 'deny', 'leave_at_concierge')),
                user_id TEXT,
                user_name TEXT NOT NULL,
                via TEXT NOT NULL,
                created_at BIGINT NOT NULL)
            """),
        .table(autoincrementing: "id") { id in """
            CREATE TABLE visit_attempts (
                \(id),
                visit_id TEXT NOT NULL REFERENCES visits(id) ON DELETE CASCADE,
                kind TEXT NOT NULL,
                user_id TEXT,
                user_name TEXT,
                device_id TEXT,
                channel TEXT,
                step INTEGER,
                detail TEXT,
                created_at BIGINT NOT NULL)
            """ },
        .init("CREATE INDEX visit_attempts_visit ON visit_attempts (visit_id, id)"),
        // Photo and voice message metadata; the bytes live under --data-dir.
        .init("""
            CREATE TABLE visit_media (
                id TEXT PRIMARY KEY,
                visit_id TEXT NOT NULL REFERENCES visits(id) ON DELETE CASCADE,
                kind TEXT NOT NULL CHECK (kind IN ('photo', 'voice_message')),
                content_type TEXT NOT NULL,
                byte_size INTEGER NOT NULL,
                duration_ms INTEGER,
                path TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                UNIQUE (visit_id, kind))
            """),
        .init("CREATE INDEX visit_media_created ON visit_media (created_at)"),
        // The ring scheduler's durable state: one row per visit still ringing. A step is
        // claimed (row lock, SKIP LOCKED on PostgreSQL), performed and moved forward in
        // one transaction, so a crash repeats a step at most up to the commit — never
        // half of it — and two instances never perform the same step.
        .init("""
            CREATE TABLE ring_jobs (
                visit_id TEXT PRIMARY KEY REFERENCES visits(id) ON DELETE CASCADE,
                company_id TEXT NOT NULL,
                steps TEXT NOT NULL,
                next_step INTEGER NOT NULL,
                step_ms BIGINT NOT NULL,
                due_at BIGINT NOT NULL,
                window_ends_at BIGINT NOT NULL,
                created_at BIGINT NOT NULL)
            """),
        .init("CREATE INDEX ring_jobs_due ON ring_jobs (due_at)"),
        // Idempotency keys, scoped per user. `status` NULL is the in-flight marker,
        // owned by `owner` until `locked_until`; a crashed holder's marker can be taken
        // over after that. Kept at least 24 h (the retention job removes them after 48 h).
        .init("""
            CREATE TABLE idempotency_keys (
                user_id TEXT NOT NULL,
                idempotency_key TEXT NOT NULL,
                request_hash TEXT NOT NULL,
                owner TEXT NOT NULL,
                locked_until BIGINT NOT NULL,
                status INTEGER,
                body TEXT,
                created_at BIGINT NOT NULL,
                completed_at BIGINT,
                PRIMARY KEY (user_id, idempotency_key))
            """),
        .init("CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)"),
        // The event log: written in the same transaction as every visit change. The
        // in-process event bus, the realtime replay (`?since=seq`) and the push layer
        // read it.
        .table(autoincrementing: "seq") { seq in """
            CREATE TABLE events (
                \(seq),
                company_id TEXT NOT NULL,
                visit_id TEXT,
                unit_id TEXT,
                type TEXT NOT NULL,
                data TEXT NOT NULL,
                created_at BIGINT NOT NULL)
            """ },
        .init("CREATE INDEX events_company_seq ON events (company_id, seq)"),
        .init("CREATE INDEX events_visit ON events (visit_id, seq)"),
    ]

    /// Migration 15: the background queries on visits read what is still open, not the
    /// building's history. The scheduler expires unresolved visits past their 24 h several
    /// times a second: through `visits_expires` it walked every visit that ever expired
    /// (all of them, after the first day); the partial index holds only the visits still
    /// ringing, answered or unanswered. The retention sweep blanks the coordinates of
    /// visits older than the retention days: only visits that still carry a location are
    /// in `visits_with_location`, so each sweep reads those instead of every visit.
    static let visitsHistoryIndexes: [Migration.Statement] = [
        .init("""
            CREATE INDEX visits_open_expires ON visits (expires_at)
            WHERE status IN ('ringing', 'answered', 'unanswered')
            """),
        .init("DROP INDEX visits_expires"),
        .init("""
            CREATE INDEX visits_with_location ON visits (created_at)
            WHERE location_lat IS NOT NULL OR location_lon IS NOT NULL OR location_accuracy_m IS NOT NULL
            """),
    ]
}
