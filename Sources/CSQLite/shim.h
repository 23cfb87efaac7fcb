#ifndef PORTARIA_CSQLITE_SHIM_H
#define PORTARIA_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot
   import; bind calls go through these wrappers so SQLite copies the bytes. */
static inline int portaria_sqlite3_bind_text(sqlite3_stmt *s, int i, const char *v, int n) {
    return sqlite3_bind_text(s, i, v, n, SQLITE_TRANSIENT);
}
static inline int portaria_sqlite3_bind_blob(sqlite3_stmt *s, int i, const void *v, int n) {
    return sqlite3_bind_blob(s, i, v, n, SQLITE_TRANSIENT);
}
/* Extended result codes are macro expressions Swift does not import. */
static const int portaria_sqlite_constraint_unique = SQLITE_CONSTRAINT_UNIQUE;
static const int portaria_sqlite_constraint_primarykey = SQLITE_CONSTRAINT_PRIMARYKEY;
static const int portaria_sqlite_constraint_foreignkey = SQLITE_CONSTRAINT_FOREIGNKEY;
static const int portaria_sqlite_constraint_check = SQLITE_CONSTRAINT_CHECK;
static const int portaria_sqlite_constraint_notnull = SQLITE_CONSTRAINT_NOTNULL;

/* sqlite3_config is variadic. */
static inline int portaria_sqlite3_config_multithread(void) {
    return sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
}
#endif
