/* store-sqlite.c: the SQLite backend of the store (store-backend.h): hull.db opened, set up (WAL,
 * synchronous=NORMAL, foreign keys, a busy timeout) and migrated; the statement helpers, SQLite's
 * results as errno, transactions, and the ops table. Its resources are in store-sqlite-objects.c,
 * store-sqlite-events.c and store-sqlite-keys.c; what they share is store-sqlite-internal.h. */
#include "store-sqlite-internal.h"
#include "store-skill-backend.h"
#include "store-webhook-backend.h"
#include "store-work-backend.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the schema: migrations[i] brings user_version i to i + 1, in one transaction ---- */

static const char *const migrations[] = {
        /* 1: agents (every version a row; latest marks the newest), environments, sessions, the
         * events of each session (seq per session), conversations, API keys. */
        "CREATE TABLE agents (id TEXT NOT NULL, version INTEGER NOT NULL, latest INTEGER NOT NULL,"
        " created_ms INTEGER NOT NULL, archived INTEGER NOT NULL, body TEXT NOT NULL,"
        " PRIMARY KEY (id, version));"
        "CREATE INDEX agents_list ON agents (latest, created_ms, id);"
        "CREATE TABLE environments (id TEXT NOT NULL PRIMARY KEY, created_ms INTEGER NOT NULL,"
        " archived INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX environments_list ON environments (created_ms, id);"
        "CREATE TABLE sessions (id TEXT NOT NULL PRIMARY KEY, created_ms INTEGER NOT NULL,"
        " archived INTEGER NOT NULL, status TEXT NOT NULL, agent_id TEXT NOT NULL,"
        " agent_version INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX sessions_list ON sessions (created_ms, id);"
        "CREATE INDEX sessions_status ON sessions (status);"
        "CREATE TABLE events (session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,"
        " seq INTEGER NOT NULL, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL, processed_ms INTEGER,"
        " body TEXT NOT NULL, PRIMARY KEY (session_id, seq));"
        "CREATE TABLE conversations (session_id TEXT NOT NULL PRIMARY KEY"
        " REFERENCES sessions (id) ON DELETE CASCADE, body TEXT NOT NULL);"
        "CREATE TABLE api_keys (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL UNIQUE,"
        " created_at TEXT NOT NULL, hint TEXT NOT NULL);",
        /* 2: the sandboxes each session opened (their audit logs are named by the fingerprint),
         * and the AG-UI threads' sessions. */
        "CREATE TABLE session_sandboxes (session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,"
        " fingerprint TEXT NOT NULL, opened_at TEXT NOT NULL, PRIMARY KEY (session_id, fingerprint));"
        "CREATE TABLE agui_threads (thread_id TEXT NOT NULL PRIMARY KEY,"
        " session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE);",
        /* 3: hull's named environments (hull env): every version a row; latest marks the newest. */
        "CREATE TABLE env_specs (name TEXT NOT NULL, version INTEGER NOT NULL, latest INTEGER NOT NULL,"
        " created_ms INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (name, version));",
        /* 4: vaults and their credentials (the secrets sealed, with the id of the key that sealed
         * them; one active credential per MCP server URL in a vault). */
        "CREATE TABLE vaults (id TEXT NOT NULL PRIMARY KEY, created_ms INTEGER NOT NULL,"
        " archived INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX vaults_list ON vaults (created_ms, id);"
        "CREATE TABLE vault_credentials (id TEXT NOT NULL PRIMARY KEY,"
        " vault_id TEXT NOT NULL REFERENCES vaults (id) ON DELETE CASCADE, created_ms INTEGER NOT NULL,"
        " archived INTEGER NOT NULL, url TEXT NOT NULL, body TEXT NOT NULL, key_id TEXT NOT NULL,"
        " sealed TEXT NOT NULL);"
        "CREATE INDEX vault_credentials_list ON vault_credentials (vault_id, created_ms, id);"
        "CREATE UNIQUE INDEX vault_credentials_url ON vault_credentials (vault_id, url) WHERE archived = 0;",
        /* 5: skills and their versions, each version's
         * files a zip as base64 text. */
        "CREATE TABLE skills (id TEXT NOT NULL PRIMARY KEY, created_ms INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX skills_list ON skills (created_ms, id);"
        "CREATE TABLE skill_versions (skill_id TEXT NOT NULL REFERENCES skills (id), version INTEGER NOT NULL,"
        " created_ms INTEGER NOT NULL, body TEXT NOT NULL, zip TEXT NOT NULL, PRIMARY KEY (skill_id, version));",
        /* 6: memory stores, their memories (the head of each: unique path in its store) and every
         * version of each memory (seq per store: the audit trail's order). */
        "CREATE TABLE memory_stores (id TEXT NOT NULL PRIMARY KEY, created_ms INTEGER NOT NULL,"
        " archived INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX memory_stores_list ON memory_stores (created_ms, id);"
        "CREATE TABLE memories (id TEXT NOT NULL PRIMARY KEY,"
        " store_id TEXT NOT NULL REFERENCES memory_stores (id) ON DELETE CASCADE, path TEXT NOT NULL,"
        " version_id TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (store_id, path));"
        "CREATE TABLE memory_versions (store_id TEXT NOT NULL REFERENCES memory_stores (id) ON DELETE CASCADE,"
        " seq INTEGER NOT NULL, id TEXT NOT NULL UNIQUE, memory_id TEXT NOT NULL, session_id TEXT,"
        " operation TEXT NOT NULL, created_ms INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (store_id, seq));"
        "CREATE INDEX memory_versions_memory ON memory_versions (memory_id);",
        /* 7: files (/v1/files); blob_chunks holds the bytes of blobs on PostgreSQL only (SQLite
         * keeps them as files beside hull.db) but is in both, so hull db copy sees one schema. */
        "CREATE TABLE files (id TEXT NOT NULL PRIMARY KEY, created_ms INTEGER NOT NULL, sha256 TEXT NOT NULL,"
        " size INTEGER NOT NULL, scope_id TEXT NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX files_list ON files (created_ms, id);"
        "CREATE INDEX files_sha256 ON files (sha256);"
        "CREATE TABLE blob_chunks (sha256 TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,"
        " PRIMARY KEY (sha256, seq));",
        /* 8: scheduled deployments (claimed_ms: the last scheduled run claimed, so none is made
         * twice) and their runs (append-only). */
        "CREATE TABLE deployments (id TEXT NOT NULL PRIMARY KEY, created_ms INTEGER NOT NULL,"
        " archived INTEGER NOT NULL, status TEXT NOT NULL, agent_id TEXT NOT NULL, claimed_ms INTEGER NOT NULL,"
        " body TEXT NOT NULL);"
        "CREATE INDEX deployments_list ON deployments (created_ms, id);"
        "CREATE TABLE deployment_runs (id TEXT NOT NULL PRIMARY KEY, deployment_id TEXT NOT NULL,"
        " created_ms INTEGER NOT NULL, trigger_type TEXT NOT NULL, has_error INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX deployment_runs_list ON deployment_runs (created_ms, id);"
        "CREATE INDEX deployment_runs_deployment ON deployment_runs (deployment_id, created_ms);",
        /* 9: the nodes sharing a database and their leases on sessions' turns: PostgreSQL's only
         * (hull serve --node-id is refused on SQLite); the tables keep the numbers alike */
        "CREATE TABLE nodes (id TEXT NOT NULL PRIMARY KEY, instance TEXT NOT NULL, advertise TEXT NOT NULL,"
        " capacity INTEGER NOT NULL, tiers TEXT NOT NULL, started_at TEXT NOT NULL, heartbeat_at TEXT NOT NULL,"
        " running INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE session_leases (session_id TEXT NOT NULL PRIMARY KEY REFERENCES sessions (id)"
        " ON DELETE CASCADE, node_id TEXT NOT NULL, expires_at TEXT NOT NULL);",
        /* 10: outbound webhooks (their secrets sealed) and the outbox of their deliveries */
        "CREATE TABLE webhooks (id TEXT NOT NULL PRIMARY KEY, created_ms INTEGER NOT NULL, types TEXT NOT NULL,"
        " enabled INTEGER NOT NULL, body TEXT NOT NULL, key_id TEXT NOT NULL, sealed TEXT NOT NULL);"
        "CREATE TABLE webhook_deliveries (event_id TEXT NOT NULL,"
        " webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE, created_ms INTEGER NOT NULL,"
        " due_ms INTEGER NOT NULL, attempts INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (event_id, webhook_id));"
        "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_ms);",
        /* 11: which node holds each session's sandbox (PostgreSQL's only, as 9; the numbers alike) */
        "CREATE TABLE sandbox_owners (session_id TEXT NOT NULL PRIMARY KEY REFERENCES sessions (id)"
        " ON DELETE CASCADE, node_id TEXT NOT NULL, instance TEXT NOT NULL);",
        /* 12: the Work API's queue (self-hosted workers), one live item a session, and the
         * digests of the workers' scoped credentials */
        "CREATE TABLE work (id TEXT NOT NULL PRIMARY KEY, env_id TEXT NOT NULL, session_id TEXT NOT NULL,"
        " state TEXT NOT NULL, created_ms INTEGER NOT NULL, polled_ms INTEGER NOT NULL, lease_ms INTEGER NOT NULL,"
        " heartbeat TEXT, worker_id TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE UNIQUE INDEX work_live ON work (session_id) WHERE state <> 'stopped';"
        "CREATE INDEX work_env ON work (env_id, created_ms, id);"
        "CREATE TABLE work_keys (digest TEXT NOT NULL PRIMARY KEY, scope TEXT NOT NULL, work_id TEXT NOT NULL,"
        " created_ms INTEGER NOT NULL);"
        "CREATE INDEX work_keys_work ON work_keys (work_id);",
        /* 13: a conversation kept as its last full text (conversations) and what later turns
         * appended to it (each part a run of ",message" texts, in idx order); a full text written
         * again (an older message changed in place) drops the parts */
        "CREATE TABLE conversation_parts (session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,"
        " idx INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (session_id, idx));"
        "CREATE TRIGGER conversation_parts_drop AFTER UPDATE ON conversations BEGIN"
        " DELETE FROM conversation_parts WHERE session_id = NEW.session_id; END;",
};

int store_sqlite_schema_version(void) {
        return (int) ELEMENTSOF(migrations);
}

/* ---- locking: the mutex, and no memory budget while it is held ---- */

sqlt_guard sqlt_guard_take(sqlt_store *s) {
        sqlt_guard g = {.s = s};
        pthread_mutex_lock(&s->lock);
        sqlmem_begin_unbounded(&g.mem);
        return g;
}

void sqlt_guard_release(sqlt_guard *g) {
        if (!g->s)
                return;
        sqlmem_end(&g->mem);
        pthread_mutex_unlock(&g->s->lock);
        g->s = NULL;
}

/* ---- SQLite's results as errno ---- */

static int sql_errno(int rc) {
        switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return -EBADMSG;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        case SQLITE_TOOBIG:
                return -E2BIG;
        default:
                return -EIO;
        }
}

int sqlt_fail(sqlite3 *db, int rc, const char *what, hull_error *e) {
        int err = sql_errno(rc);
        const char *msg = db ? sqlite3_errmsg(db) : "out of memory";
        if (err == -EBUSY)
                return hull_err_hint(e, err, "another process holds hull.db locked; try again", "store: %s: %s", what,
                                     msg);
        return hull_fail(e, err, "store: %s: %s", what, msg);
}

int sqlt_prep(sqlt_store *s, const char *sql, sqlite3_stmt **ret, hull_error *e) {
        int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);
        s->prepares++;
        if (rc != SQLITE_OK)
                return sqlt_fail(s->db, rc, "cannot prepare a statement", e);
        return 0;
}

/* A cached statement (under the lock): prepared on first use; give it back with sqlt_stmt_resetp. */
int sqlt_prep_cached(sqlt_store *s, unsigned slot, const char *sql, sqlite3_stmt **ret, hull_error *e) {
        if (!s->cached[slot]) {
                int r = sqlt_prep(s, sql, &s->cached[slot], e);
                if (r < 0)
                        return r;
        }
        *ret = s->cached[slot];
        return 0;
}

/* The end of a cached statement's use: its read transaction ends, its values go. */
void sqlt_stmt_resetp(sqlite3_stmt **p) {
        if (*p) {
                sqlite3_reset(*p);
                sqlite3_clear_bindings(*p);
        }
}

int sqlt_bind_text(sqlite3_stmt *st, int i, const char *v) {
        return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

int sqlt_bind_fail(sqlt_store *s, int rc, hull_error *e) {
        return sqlt_fail(s->db, rc, "cannot bind a value", e);
}

/* Run a statement that returns no row. */
int sqlt_step_done(sqlt_store *s, sqlite3_stmt *st, const char *what, hull_error *e) {
        int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, what, e);
        return 0;
}

int sqlt_exec(sqlt_store *s, const char *sql, const char *what, hull_error *e) {
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return sqlt_fail(s->db, rc, what, e);
        return 0;
}

static uint64_t sqlt_prepares(store *base) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        return s->prepares;
}

/* A cached statement of no row (BEGIN, COMMIT) run once. */
static int exec_cached(sqlt_store *s, unsigned slot, const char *sql, const char *what, hull_error *e) {
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, slot, sql, &st, e);
        return r < 0 ? r : sqlt_step_done(s, st, what, e);
}

int sqlt_tx_begin(sqlt_store *s, sqlt_tx *t, hull_error *e) {
        int r = exec_cached(s, CACHED_BEGIN, "BEGIN IMMEDIATE", "cannot begin a transaction", e);
        if (r < 0)
                return r;
        t->s = s;
        return 0;
}

int sqlt_tx_commit(sqlt_tx *t, hull_error *e) {
        sqlt_store *s = t->s;
        t->s = NULL;
        int r = exec_cached(s, CACHED_COMMIT, "COMMIT", "cannot commit", e);
        if (r < 0 && !sqlite3_get_autocommit(s->db))
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

void sqlt_tx_rollbackp(sqlt_tx *t) {
        if (t->s && !sqlite3_get_autocommit(t->s->db))
                sqlite3_exec(t->s->db, "ROLLBACK", NULL, NULL, NULL);
        t->s = NULL;
}

int sqlt_load_column(sqlite3_stmt *st, int col, const char *what, json_t **ret, hull_error *e) {
        const char *p = (const char *) sqlite3_column_text(st, col);
        int n = sqlite3_column_bytes(st, col);
        return store_load(p, (size_t) n, what, ret, e);
}

int sqlt_args_prep(sqlt_store *s, const char *sql, const sqlt_args *a, sqlite3_stmt **ret, hull_error *e) {
        int r = sqlt_prep(s, sql, ret, e);
        if (r < 0)
                return r;
        int rc = 0, n = sqlite3_bind_parameter_count(*ret); /* the highest ?N the statement names */
        for (int k = 0; k < 6 && !rc && k + 1 <= n; k++)
                if (a->t[k])
                        rc = sqlt_bind_text(*ret, k + 1, a->t[k]);
        for (int k = 0; k < 4 && !rc && k + 7 <= n; k++)
                rc = sqlite3_bind_int64(*ret, k + 7, a->i[k]);
        return rc ? sqlt_bind_fail(s, rc, e) : 0;
}

int sqlt_args_run(sqlt_store *s, const char *sql, const sqlt_args *a, const char *what, int *ret_changes,
                  hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_args_prep(s, sql, a, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return hull_fail(e, -EEXIST, "store: %s: it exists already", what);
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, what, e);
        if (ret_changes)
                *ret_changes = sqlite3_changes(s->db);
        return 0;
}

int sqlt_page_rows(sqlt_store *s, sqlite3_stmt *st, const char *what, store_rowkey *keys, json_t *out, size_t *ret_n,
                   hull_error *e) {
        size_t n = 0;
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list", e);
                if (keys) {
                        keys[n].key = sqlite3_column_int64(st, 0);
                        const char *id = (const char *) sqlite3_column_text(st, 1);
                        snprintf(keys[n].id, sizeof(keys[n].id), "%s", id ? id : "");
                }
                if (out) {
                        json_t *o;
                        int r = sqlt_load_column(st, 2, what, &o, e);
                        if (r < 0)
                                return r;
                        if (json_array_append_new(out, o) < 0)
                                return hull_err(e, -ENOMEM, "store: cannot list");
                }
                n++;
        }
        *ret_n = n;
        return 0;
}

int sqlt_session_exists(sqlt_store *s, const char *session_id, hull_error *e) {
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, CACHED_SESSION_EXISTS, "SELECT 1 FROM sessions WHERE id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, session_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read", e);
        return 0;
}

/* ---- open ---- */

static int query_int(sqlt_store *s, const char *sql, int64_t *ret, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc, "cannot read a setting", e);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

static int migrate(sqlt_store *s, const char *path, hull_error *e) {
        for (;;) {
                _cleanup_tx_ sqlt_tx t = {0};
                int r = sqlt_tx_begin(s, &t, e);
                if (r < 0)
                        return r;
                int64_t v;
                r = query_int(s, "PRAGMA user_version", &v, e);
                if (r < 0)
                        return r;
                if (v < 0 || v > store_sqlite_schema_version())
                        return hull_fail(e, -EPROTO,
                                         "store: %s has schema version %" PRId64
                                         ", newer than this hull knows (%d): use a newer hull, or another HULL_HOME",
                                         path, v, store_sqlite_schema_version());
                if (v == store_sqlite_schema_version())
                        return sqlt_tx_commit(&t, e);
                char what[64], set[64];
                snprintf(what, sizeof(what), "cannot migrate to schema version %" PRId64, v + 1);
                r = sqlt_exec(s, migrations[v], what, e);
                if (r < 0)
                        return r;
                snprintf(set, sizeof(set), "PRAGMA user_version = %" PRId64, v + 1);
                r = sqlt_exec(s, set, what, e);
                if (r < 0)
                        return r;
                r = sqlt_tx_commit(&t, e);
                if (r < 0)
                        return r;
        }
}

static int setup(sqlt_store *s, const char *path, hull_error *e) {
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DML, 0, NULL);
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DDL, 0, NULL);
        sqlite3_busy_timeout(s->db, (int) STORE_BUSY_TIMEOUT_MS);

        /* The first statement that reads the file: a file that is not a database fails here. */
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "PRAGMA journal_mode = WAL", &st, e);
        int rc = r < 0 ? SQLITE_ERROR : sqlite3_step(st);
        if (r < 0 || rc != SQLITE_ROW) {
                int code = r < 0 ? sqlite3_errcode(s->db) : rc;
                if ((code & 0xff) == SQLITE_NOTADB)
                        return hull_fail(e, -EINVAL,
                                         "store: %s is not a SQLite database (move it away and hull makes a new one)",
                                         path);
                return r < 0 ? r : sqlt_fail(s->db, rc, "cannot use WAL mode", e);
        }
        const char *mode = (const char *) sqlite3_column_text(st, 0);
        if (!mode || strcmp(mode, "wal") != 0)
                return hull_fail(
                        e, -EIO,
                        "store: %s: SQLite cannot use WAL mode here (got \"%s\"; is it on a network file system?)",
                        path, mode ? mode : "");
        sqlite3_finalize(TAKE_PTR(st));
        r = sqlt_exec(s, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON", "cannot set up hull.db", e);
        if (r < 0)
                return r;
        return migrate(s, path, e);
}

/* Every cached statement finalized: sqlite3_close_v2 frees a connection only once none is left. */
static void cached_finalize(sqlt_store *s) {
        for (size_t i = 0; i < _CACHED_MAX; i++)
                if (s->cached[i])
                        sqlite3_finalize(TAKE_PTR(s->cached[i]));
}

static void sqlt_close(store *base) {
        sqlt_store *s = sqlt_of(base);
        sqlmem_scope mem;
        sqlmem_begin_unbounded(&mem);
        cached_finalize(s);
        sqlite3_close_v2(s->db);
        sqlmem_end(&mem);
        safe_close(s->blob_fd);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

static int sqlt_user_version(store *base) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int64_t v;
        int r = query_int(s, "PRAGMA user_version", &v, NULL);
        return r < 0 ? r : (int) v;
}

static const store_ops sqlt_ops = {
        .name = "sqlite",
        .close = sqlt_close,
        .user_version = sqlt_user_version,
        .insert = sqlt_insert,
        .get = sqlt_get,
        .update = sqlt_update,
        .remove = sqlt_remove,
        .list = sqlt_list,
        .sessions_with_status = sqlt_sessions_with_status,
        .events_append = sqlt_events_append,
        .events_append_object = sqlt_events_append_object,
        .events_set_processed = sqlt_events_set_processed,
        .events_last_seq = sqlt_events_last_seq,
        .events_seq_of = sqlt_events_seq_of,
        .conversation_put = sqlt_conversation_put,
        .conversation_get = sqlt_conversation_get,
        .conversation_append = sqlt_conversation_append,
        .key_add = sqlt_key_add,
        .key_list = sqlt_key_list,
        .key_delete = sqlt_key_delete,
        .key_find = sqlt_key_find,
        .key_count = sqlt_key_count,
        .prepares = sqlt_prepares,
        .sandbox_add = sqlt_sandbox_add,
        .sandbox_list = sqlt_sandbox_list,
        .thread_get = sqlt_thread_get,
        .thread_put = sqlt_thread_put,
        .env_put = sqlt_env_put,
        .env_get = sqlt_env_get,
        .env_list = sqlt_env_list,
        .env_delete = sqlt_env_delete,
        .skills = &sqlt_skill_ops,
        .webhooks = &sqlt_webhook_ops,
        .work = &sqlt_work_ops,
        .memory_apply = sqlt_memory_apply,
        .memory_get = sqlt_memory_get,
        .memory_scan = sqlt_memory_scan,
        .memory_version_get = sqlt_memory_version_get,
        .memory_version_put = sqlt_memory_version_put,
        .rows_read = sqlt_rows_read,
        .rows_write = sqlt_rows_write,
        .check = sqlt_check,
        .vault = &sqlt_vault_ops,
        .deploy = &sqlt_deploy_ops,
        .file_insert = sqlt_file_insert,
        .file_get = sqlt_file_get,
        .file_list = sqlt_file_list,
        .file_delete = sqlt_file_delete,
        .blob_read = sqlt_blob_read,
        .blob_path = sqlt_blob_path,
};

/* ---- a fresh store, made in one go ---- */

/* Every migration's schema in one transaction on a new file beside hull.db that nothing else can
 * see yet: its journal in memory and no syncs while it is built, then turned to WAL (the header
 * written once, here, not by the first open). The caller syncs it and links it into place. */
static int build_fresh(const char *tmp, hull_error *e) {
        sqlite3 *db = NULL;
        int rc = sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
        _cleanup_db_ sqlite3 *owned = db;
        if (rc != SQLITE_OK)
                return sqlt_fail(db, rc, "cannot make a new hull.db", e);
        sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
        rc = sqlite3_exec(db, "PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; BEGIN", NULL, NULL, NULL);
        for (size_t i = 0; rc == SQLITE_OK && i < ELEMENTSOF(migrations); i++)
                rc = sqlite3_exec(db, migrations[i], NULL, NULL, NULL);
        char set[64];
        snprintf(set, sizeof(set), "PRAGMA user_version = %d; COMMIT", store_sqlite_schema_version());
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, set, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return sqlt_fail(db, rc, "cannot make a new hull.db", e);
        owned = NULL;
        rc = sqlite3_close_v2(db); /* its WAL checkpointed into it and removed */
        return rc == SQLITE_OK ? 0 : hull_fail(e, -EIO, "store: cannot close a new hull.db (SQLite error %d)", rc);
}

/* A store that does not exist yet (nor its WAL) is made whole beside path, synced, and linked to
 * it (link never replaces a store another process made meanwhile), then the directory is synced:
 * a crash leaves no hull.db or a complete one, never a half-migrated one (at worst a stray
 * hull.db.new-* name beside it). Twelve migrations one by one cost a fresh server's start about as
 * much as the rest of its store; they still upgrade every existing store, and test-store-fresh
 * checks that both ways give the same schema. Any failure here leaves the migrations to do it. */
static void make_fresh(const char *path) {
        char wal[SBX_PATH_MAX + 8], tmp[SBX_PATH_MAX + 16];
        struct stat st;
        if ((size_t) snprintf(wal, sizeof(wal), "%s-wal", path) >= sizeof(wal) ||
            (size_t) snprintf(tmp, sizeof(tmp), "%s.new-XXXXXX", path) >= sizeof(tmp) || lstat(path, &st) == 0 ||
            errno != ENOENT || lstat(wal, &st) == 0 || errno != ENOENT)
                return;
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC); /* 0600: SQLite's -wal and -shm get its mode */
        if (fd < 0)
                return;
        hull_error ignored = {0};
        bool linked = build_fresh(tmp, &ignored) == 0 && fsync(fd) == 0 && link(tmp, path) == 0;
        (void) unlink(tmp);
        if (!linked)
                return;
        char dir[SBX_PATH_MAX]; /* its name in the directory made durable too */
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
                *(slash == dir ? slash + 1 : slash) = '\0';
        _cleanup_close_ int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                (void) fsync(dfd);
}

int store_sqlite_open(const char *path, store **ret, hull_error *e) {
        if (!dlib_sqlite3_load(e))
                return -ENOSYS;
        sqlmem_scope fresh_mem; /* SQLite's own memory, as the open below */
        sqlmem_begin_unbounded(&fresh_mem);
        make_fresh(path);
        sqlmem_end(&fresh_mem);
        /* Made here first, so it is 0600 (SQLite gives its -wal and -shm files the same mode). */
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return hull_err(e, negative_errno(), "store: cannot open %s", path);
        safe_close(fd);

        _cleanup_sqlmem_ sqlmem_scope mem;
        sqlmem_begin_unbounded(&mem);
        _cleanup_free_ sqlt_store *s = calloc(1, sizeof(*s));
        if (!s)
                return hull_err(e, -ENOMEM, "store: cannot open %s", path);
        s->base.ops = &sqlt_ops;
        s->blob_fd = -1;
        if ((size_t) snprintf(s->blob_dir, sizeof(s->blob_dir), "%s-blobs", path) >= sizeof(s->blob_dir))
                return hull_err(e, -ENAMETOOLONG, "store: the path %s is too long", path);
        int rc =
                sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
        _cleanup_db_ sqlite3 *db = s->db;
        if (rc != SQLITE_OK)
                return sqlt_fail(db, rc, "cannot open hull.db", e);
        int r = setup(s, path, e);
        if (r < 0) {
                cached_finalize(s); /* the migrations' transactions cached BEGIN and COMMIT */
                return r;
        }
        pthread_mutex_init(&s->lock, NULL);
        db = NULL;
        *ret = &TAKE_PTR(s)->base;
        return 0;
}
