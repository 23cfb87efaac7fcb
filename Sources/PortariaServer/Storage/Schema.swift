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
    ]
}
