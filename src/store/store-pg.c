/* store-pg.c: the PostgreSQL backend of the store (store-backend.h): the connection (libpq,
 * loaded by dlib-pq.h), its numbered migrations (the schema_migrations table), the statement
 * helper with SQLSTATEs as errno, transactions, and the ops table. Its resources are in
 * store-pg-objects.c, store-pg-events.c and store-pg-keys.c, hull db's copy and check in
 * store-pg-copy.c; what they share is store-pg-internal.h. */
#include "store-pg-internal.h"
#include "store-skill-backend.h"
#include "store-webhook-backend.h"
#include "store-work-backend.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the schema: migrations[i] brings version i to i + 1, in one transaction ----
 * The same numbers and tables as SQLite's (store-sqlite.c), so hull db copy moves rows column for
 * column. Ids and names sort by bytes (COLLATE "C") as SQLite's do, so a list's order and its
 * cursors are the same on both. Two columns SQLite does not have: sessions.last_seq (the
 * per-session counter events_append takes its seqs from) and an identity "ord" where SQLite
 * orders by rowid. */
static const char *const migrations[] = {
        /* 1: agents, environments, sessions, events, conversations, API keys */
        "CREATE TABLE agents (id TEXT COLLATE \"C\" NOT NULL, version BIGINT NOT NULL, latest INTEGER NOT NULL,"
        " created_ms BIGINT NOT NULL, archived INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (id, version));"
        "CREATE INDEX agents_list ON agents (latest, created_ms, id);"
        "CREATE TABLE environments (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, created_ms BIGINT NOT NULL,"
        " archived INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX environments_list ON environments (created_ms, id);"
        "CREATE TABLE sessions (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, created_ms BIGINT NOT NULL,"
        " archived INTEGER NOT NULL, status TEXT NOT NULL, agent_id TEXT NOT NULL,"
        " agent_version BIGINT NOT NULL, body TEXT NOT NULL, last_seq BIGINT NOT NULL DEFAULT 0);"
        "CREATE INDEX sessions_list ON sessions (created_ms, id);"
        "CREATE INDEX sessions_status ON sessions (status);"
        "CREATE TABLE events (session_id TEXT COLLATE \"C\" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,"
        " seq BIGINT NOT NULL, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL, processed_ms BIGINT,"
        " body TEXT NOT NULL, PRIMARY KEY (session_id, seq));"
        "CREATE TABLE conversations (session_id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY"
        " REFERENCES sessions (id) ON DELETE CASCADE, body TEXT NOT NULL);"
        "CREATE TABLE api_keys (ord BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT NOT NULL PRIMARY KEY,"
        " name TEXT NOT NULL, digest TEXT NOT NULL UNIQUE, created_at TEXT COLLATE \"C\" NOT NULL,"
        " hint TEXT NOT NULL);",
        /* 2: the sandboxes each session opened, and the AG-UI threads' sessions */
        "CREATE TABLE session_sandboxes (ord BIGINT GENERATED ALWAYS AS IDENTITY,"
        " session_id TEXT COLLATE \"C\" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,"
        " fingerprint TEXT NOT NULL, opened_at TEXT NOT NULL, PRIMARY KEY (session_id, fingerprint));"
        "CREATE TABLE agui_threads (thread_id TEXT NOT NULL PRIMARY KEY,"
        " session_id TEXT COLLATE \"C\" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE);",
        /* 3: hull's named environments: every version a row; latest marks the newest */
        "CREATE TABLE env_specs (name TEXT COLLATE \"C\" NOT NULL, version BIGINT NOT NULL, latest INTEGER NOT NULL,"
        " created_ms BIGINT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (name, version));",
        /* 4: vaults and their credentials (the secrets sealed, with the id of the key that sealed
         * them; one active credential per MCP server URL in a vault) */
        "CREATE TABLE vaults (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, created_ms BIGINT NOT NULL,"
        " archived INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX vaults_list ON vaults (created_ms, id);"
        "CREATE TABLE vault_credentials (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY,"
        " vault_id TEXT COLLATE \"C\" NOT NULL REFERENCES vaults (id) ON DELETE CASCADE,"
        " created_ms BIGINT NOT NULL, archived INTEGER NOT NULL, url TEXT NOT NULL, body TEXT NOT NULL,"
        " key_id TEXT NOT NULL, sealed TEXT NOT NULL);"
        "CREATE INDEX vault_credentials_list ON vault_credentials (vault_id, created_ms, id);"
        "CREATE UNIQUE INDEX vault_credentials_url ON vault_credentials (vault_id, url) WHERE archived = 0;",
        /* 5: skills and their versions, each version's
         * files a zip as base64 text */
        "CREATE TABLE skills (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, created_ms BIGINT NOT NULL, body TEXT NOT "
        "NULL);"
        "CREATE INDEX skills_list ON skills (created_ms, id);"
        "CREATE TABLE skill_versions (skill_id TEXT COLLATE \"C\" NOT NULL REFERENCES skills (id), version BIGINT NOT "
        "NULL,"
        " created_ms BIGINT NOT NULL, body TEXT NOT NULL, zip TEXT NOT NULL, PRIMARY KEY (skill_id, version));",
        /* 6: memory stores, their memories (unique path in a store) and every version of each */
        "CREATE TABLE memory_stores (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, created_ms BIGINT NOT NULL,"
        " archived INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX memory_stores_list ON memory_stores (created_ms, id);"
        "CREATE TABLE memories (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY,"
        " store_id TEXT COLLATE \"C\" NOT NULL REFERENCES memory_stores (id) ON DELETE CASCADE,"
        " path TEXT COLLATE \"C\" NOT NULL, version_id TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (store_id, path));"
        "CREATE TABLE memory_versions (store_id TEXT COLLATE \"C\" NOT NULL REFERENCES memory_stores (id)"
        " ON DELETE CASCADE, seq BIGINT NOT NULL, id TEXT NOT NULL UNIQUE, memory_id TEXT NOT NULL, session_id TEXT,"
        " operation TEXT NOT NULL, created_ms BIGINT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (store_id, seq));"
        "CREATE INDEX memory_versions_memory ON memory_versions (memory_id);",
        /* 7: files and their blobs (chunks of base64 text; a session's resources live in its body) */
        "CREATE TABLE files (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, created_ms BIGINT NOT NULL,"
        " sha256 TEXT NOT NULL, size BIGINT NOT NULL, scope_id TEXT COLLATE \"C\" NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX files_list ON files (created_ms, id);"
        "CREATE INDEX files_sha256 ON files (sha256);"
        "CREATE TABLE blob_chunks (sha256 TEXT COLLATE \"C\" NOT NULL, seq BIGINT NOT NULL, data TEXT NOT NULL,"
        " PRIMARY KEY (sha256, seq));",
        /* 8: scheduled deployments (claimed_ms: the last scheduled run claimed, so none is made
         * twice) and their runs (append-only). */
        "CREATE TABLE deployments (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, created_ms BIGINT NOT NULL,"
        " archived INTEGER NOT NULL, status TEXT NOT NULL, agent_id TEXT COLLATE \"C\" NOT NULL,"
        " claimed_ms BIGINT NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX deployments_list ON deployments (created_ms, id);"
        "CREATE TABLE deployment_runs (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY,"
        " deployment_id TEXT COLLATE \"C\" NOT NULL, created_ms BIGINT NOT NULL, trigger_type TEXT NOT NULL,"
        " has_error INTEGER NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX deployment_runs_list ON deployment_runs (created_ms, id);"
        "CREATE INDEX deployment_runs_deployment ON deployment_runs (deployment_id, created_ms);",
        /* 9: the nodes sharing this database (hull serve --node-id) and which node runs each
         * session's turns (a lease, renewed by its node's heartbeat); times are the server's */
        "CREATE TABLE nodes (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, instance TEXT NOT NULL,"
        " advertise TEXT NOT NULL, capacity BIGINT NOT NULL, tiers TEXT NOT NULL,"
        " started_at TIMESTAMPTZ NOT NULL, heartbeat_at TIMESTAMPTZ NOT NULL, running BIGINT NOT NULL DEFAULT 0);"
        "CREATE TABLE session_leases (session_id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY"
        " REFERENCES sessions (id) ON DELETE CASCADE, node_id TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL);"
        "CREATE INDEX session_leases_node ON session_leases (node_id);",
        /* 10: outbound webhooks (their secrets sealed) and the outbox of their deliveries */
        "CREATE TABLE webhooks (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, created_ms BIGINT NOT NULL,"
        " types TEXT NOT NULL, enabled INTEGER NOT NULL, body TEXT NOT NULL, key_id TEXT NOT NULL,"
        " sealed TEXT NOT NULL);"
        "CREATE TABLE webhook_deliveries (event_id TEXT COLLATE \"C\" NOT NULL,"
        " webhook_id TEXT COLLATE \"C\" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,"
        " created_ms BIGINT NOT NULL, due_ms BIGINT NOT NULL, attempts BIGINT NOT NULL, body TEXT NOT NULL,"
        " PRIMARY KEY (event_id, webhook_id));"
        "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_ms);",
        /* 11: which node (and which life of it: its instance) holds each session's sandbox, so a
         * request about the sandbox that reaches another node is forwarded there */
        "CREATE TABLE sandbox_owners (session_id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY"
        " REFERENCES sessions (id) ON DELETE CASCADE, node_id TEXT NOT NULL, instance TEXT NOT NULL);"
        "CREATE INDEX sandbox_owners_node ON sandbox_owners (node_id);",
        /* 12: the Work API's queue (self-hosted workers), one live item a session, and the
         * digests of the workers' scoped credentials */
        "CREATE TABLE work (id TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, env_id TEXT COLLATE \"C\" NOT NULL,"
        " session_id TEXT COLLATE \"C\" NOT NULL, state TEXT NOT NULL, created_ms BIGINT NOT NULL,"
        " polled_ms BIGINT NOT NULL, lease_ms BIGINT NOT NULL, heartbeat TEXT, worker_id TEXT NOT NULL,"
        " version BIGINT NOT NULL, body TEXT NOT NULL);"
        "CREATE UNIQUE INDEX work_live ON work (session_id) WHERE state <> 'stopped';"
        "CREATE INDEX work_env ON work (env_id, created_ms, id);"
        "CREATE TABLE work_keys (digest TEXT COLLATE \"C\" NOT NULL PRIMARY KEY, scope TEXT NOT NULL,"
        " work_id TEXT COLLATE \"C\" NOT NULL, created_ms BIGINT NOT NULL);"
        "CREATE INDEX work_keys_work ON work_keys (work_id);",
        /* 13: a conversation kept as its last full text (conversations) and what later turns
         * appended to it (each part a run of ",message" texts, in idx order); a full text written
         * again (an older message changed in place; a lease's release with it) drops the parts */
        "CREATE TABLE conversation_parts (session_id TEXT COLLATE \"C\" NOT NULL"
        " REFERENCES sessions (id) ON DELETE CASCADE, idx BIGINT NOT NULL, body TEXT NOT NULL,"
        " PRIMARY KEY (session_id, idx));"
        "CREATE FUNCTION conversation_parts_drop() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN DELETE FROM conversation_parts WHERE session_id = NEW.session_id; RETURN NULL; END $$;"
        "CREATE TRIGGER conversation_parts_drop AFTER UPDATE ON conversations FOR EACH ROW"
        " EXECUTE FUNCTION conversation_parts_drop();",
};

int store_pg_schema_version(void) {
        return (int) ELEMENTSOF(migrations);
}

/* ---- statements ---- */

const char *pg_int(char buf[static PG_INT_MAX], int64_t v) {
        snprintf(buf, PG_INT_MAX, "%" PRId64, v);
        return buf;
}

/* The first line of libpq's message (the rest is hints and context). */
static void first_line(const char *msg, char *buf, size_t size) {
        if (!msg)
                msg = "";
        size_t n = strcspn(msg, "\n");
        snprintf(buf, size, "%.*s", (int) (n < size ? n : size - 1), msg);
}

static int sqlstate_errno(const char *st) {
        static const struct {
                const char *code;
                int err;
        } map[] = {
                {"23", -EEXIST},      /* integrity constraint violations (23505 unique) */
                {"40001", -EBUSY},    /* serialization failure */
                {"40P01", -EBUSY},    /* deadlock detected */
                {"55P03", -EBUSY},    /* lock not available */
                {"53100", -ENOSPC},   /* disk full */
                {"53200", -ENOMEM},   /* out of memory */
                {"42501", -EACCES},   /* insufficient privilege */
                {"28", -EACCES},      /* invalid authorization */
                {"25006", -EROFS},    /* read-only transaction (a standby) */
                {"54", -E2BIG},       /* program limit exceeded */
                {"08", -ECONNRESET},  /* connection exceptions */
                {"57P", -ECONNRESET}, /* the server shutting down */
                {"22", -EINVAL},      /* data exceptions */
                {"3D000", -ENOENT},   /* no such database */
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (strncmp(st, map[i].code, strlen(map[i].code)) == 0)
                        return map[i].err;
        return -EIO;
}

/* libpq prints notices (a table that exists) on stderr; the store says nothing. */
static void no_notice(void *arg, const char *message) {
        (void) arg;
        (void) message;
}

/* A new connection to url (never NULL but out of memory; PQstatus says whether it is up). The url
 * is expanded last, so what it says wins over these defaults. */
PGconn *pg_connect_url(const char *url) {
        char timeout[PG_INT_MAX];
        const char *const keys[] = {"connect_timeout", "application_name", "client_encoding", "dbname", NULL};
        const char *const values[] = {pg_int(timeout, STORE_PG_CONNECT_TIMEOUT_S), "hull", "UTF8", url, NULL};
        PGconn *conn = PQconnectdbParams(keys, values, 1);
        if (conn)
                PQsetNoticeProcessor(conn, no_notice, NULL);
        pg_session_setup(conn);
        return conn;
}

/* The server session's settings, after a connection or its reset: hull's statements are planned
 * once, generically (PostgreSQL plans a prepared statement afresh for each of its first five runs
 * on a connection, 0.2-0.4 ms each, before it settles on the generic plan these key lookups get
 * anyway). A failure changes nothing but the planning. */
void pg_session_setup(PGconn *conn) {
        if (conn && PQstatus(conn) == CONNECTION_OK)
                PQclear(PQexec(conn, "SET plan_cache_mode = force_generic_plan"));
}

pg_conn *pg_acquire(pg_store *s) {
        pthread_mutex_lock(&s->lock);
        for (;;) {
                for (unsigned i = 0; i < s->n_open; i++)
                        if (!s->busy[i]) {
                                s->busy[i] = true;
                                pthread_mutex_unlock(&s->lock);
                                return &s->conns[i];
                        }
                if (s->n_open < STORE_PG_CONNS) {
                        unsigned i = s->n_open++;
                        s->busy[i] = true;
                        pthread_mutex_unlock(&s->lock);
                        /* connected outside the lock; a failure is pg_exec's to report */
                        s->conns[i].conn = pg_connect_url(s->url);
                        return &s->conns[i];
                }
                pthread_cond_wait(&s->freed, &s->lock);
        }
}

void pg_release(pg_conn *pc) {
        pg_store *s = pc->owner;
        pthread_mutex_lock(&s->lock);
        s->busy[pc - s->conns] = false;
        pthread_cond_signal(&s->freed);
        pthread_mutex_unlock(&s->lock);
}

/* Back after a lost connection, between calls (never inside a transaction). */
static int reconnect(pg_conn *pc, hull_error *e) {
        if (pc->conn && PQstatus(pc->conn) == CONNECTION_OK)
                return 0;
        pc->n_prepared = 0; /* a new server session knows none */
        if (!pc->conn)
                pc->conn = pg_connect_url(pc->owner->url);
        else
                PQreset(pc->conn);
        if (pc->conn && PQstatus(pc->conn) == CONNECTION_OK) {
                pg_session_setup(pc->conn);
                return 0;
        }
        __atomic_store_n(&pc->owner->down, 1, __ATOMIC_RELAXED);
        char why[256];
        first_line(pc->conn ? PQerrorMessage(pc->conn) : "out of memory", why, sizeof(why));
        store_redact(pc->owner->url, why, sizeof(why));
        return hull_fail(e, -ENOTCONN, "store: no connection to PostgreSQL: %s", why);
}

/* FNV-1a of a statement's text: its prepared name. */
static uint64_t sql_hash(const char *sql) {
        uint64_t h = 14695981039346656037ULL;
        for (const unsigned char *p = (const unsigned char *) sql; *p; p++)
                h = (h ^ *p) * 1099511628211ULL;
        return h;
}

static bool code_is(const PGresult *res, const char *code) {
        const char *c = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        return c && strcmp(c, code) == 0;
}

/* sql run, prepared first on this connection when hot (pg_exec_hot); its result (NULL: no memory). */
static PGresult *run(pg_conn *pc, const char *sql, int n, const char *const *v, bool hot) {
        if (!hot || pc->in_tx || pc->no_prepare)
                return PQexecParams(pc->conn, sql, n, NULL, v, NULL, NULL, 0);
        uint64_t h = sql_hash(sql);
        char name[32];
        snprintf(name, sizeof(name), "hull_%016" PRIx64, h);
        bool known = false;
        for (unsigned i = 0; i < pc->n_prepared && !known; i++)
                known = pc->prepared[i] == h;
        if (!known && pc->n_prepared >= STORE_PG_PREPARED_MAX)
                return PQexecParams(pc->conn, sql, n, NULL, v, NULL, NULL, 0);
        if (!known) { /* 42P05: this server session has it already (a pooler's, our own after a lost answer) */
                PGresult *p = PQprepare(pc->conn, name, sql, n, NULL);
                bool ok = p && (PQresultStatus(p) == PGRES_COMMAND_OK || code_is(p, "42P05"));
                PQclear(p);
                if (!ok)
                        return PQexecParams(pc->conn, sql, n, NULL, v, NULL, NULL, 0);
                pc->prepared[pc->n_prepared++] = h;
        }
        PGresult *res = PQexecPrepared(pc->conn, name, n, v, NULL, NULL, 0);
        /* 26000: no such prepared statement (another server session behind a pooler: this
         * connection prepares no more, or each statement would cost three round trips); 0A000:
         * its plan's result type changed (a migration): nothing ran, so it runs unprepared */
        bool lost = code_is(res, "26000");
        if (!lost && !code_is(res, "0A000"))
                return res;
        PQclear(res);
        pc->n_prepared = 0;
        pc->no_prepare |= lost;
        return PQexecParams(pc->conn, sql, n, NULL, v, NULL, NULL, 0);
}

static int exec_once(pg_conn *pc, const char *sql, int n, const char *const *v, bool hot, const char *what,
                     PGresult **ret, hull_error *e) {
        pc->sqlstate[0] = 0;
        pc->detail[0] = 0;
        PGresult *res = run(pc, sql, n, v, hot);
        ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
                __atomic_store_n(&pc->owner->down, 0, __ATOMIC_RELAXED);
                if (ret)
                        *ret = res;
                else
                        PQclear(res);
                return 0;
        }
        char why[256];
        const char *code = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
        const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
        first_line(primary ? primary : PQerrorMessage(pc->conn), why, sizeof(why));
        snprintf(pc->sqlstate, sizeof(pc->sqlstate), "%s", code ? code : "");
        first_line(detail, pc->detail, sizeof(pc->detail));
        bool coded = code != NULL;
        if (res)
                PQclear(res); /* code, primary and detail go with it: copied above */
        if (PQstatus(pc->conn) != CONNECTION_OK || !coded) {
                __atomic_store_n(&pc->owner->down, 1, __ATOMIC_RELAXED);
                return hull_fail(e, -ECONNRESET,
                                 "store: %s: lost the connection to PostgreSQL (%s); whether it was done is unknown",
                                 what, why);
        }
        int err = sqlstate_errno(pc->sqlstate);
        if (err == -EBUSY)
                return hull_err_hint(e, err, "another writer held the rows; try again", "store: %s: %s", what, why);
        return hull_fail(e, err, "store: %s: %s (SQLSTATE %s)", what, why, pc->sqlstate);
}

static int exec_with(pg_conn *pc, const char *sql, int n, const char *const *v, bool hot, const char *what,
                     PGresult **ret, hull_error *e) {
        int r;
        if (!pc->in_tx && (r = reconnect(pc, e)) < 0)
                return r;
        /* A statement alone is its own transaction: one that lost a serialization race did
         * nothing, so it runs again (a few times). In a transaction, the caller's -EBUSY. A read
         * (SELECT) on a connection the server dropped (a restart, an idle timeout) runs again once
         * on a new one; a write whose connection was lost may have committed, so it is the
         * caller's -ECONNRESET, and the next call reconnects. */
        bool read = strncmp(sql, "SELECT ", 7) == 0;
        for (unsigned attempt = 0;; attempt++) {
                r = exec_once(pc, sql, n, v, hot, what, ret, e);
                if (r == -ECONNRESET && read && !pc->in_tx && attempt == 0) {
                        pc->n_prepared = 0;
                        PQreset(pc->conn); /* even if libpq has not seen it closed yet */
                        pg_session_setup(pc->conn);
                        if ((r = reconnect(pc, e)) < 0)
                                return r;
                        continue;
                }
                if (r != -EBUSY || pc->in_tx || attempt >= STORE_PG_RETRIES)
                        return r;
        }
}

int pg_exec(pg_conn *pc, const char *sql, int n, const char *const *v, const char *what, PGresult **ret,
            hull_error *e) {
        return exec_with(pc, sql, n, v, false, what, ret, e);
}

int pg_exec_hot(pg_conn *pc, const char *sql, int n, const char *const *v, const char *what, PGresult **ret,
                hull_error *e) {
        return exec_with(pc, sql, n, v, true, what, ret, e);
}

int64_t pg_changes(PGresult *res) {
        const char *n = PQcmdTuples(res);
        return n && *n ? strtoll(n, NULL, 10) : 0;
}

int64_t pg_get_int(PGresult *res, int r, int c) {
        if (PQgetisnull(res, r, c))
                return 0;
        return strtoll(PQgetvalue(res, r, c), NULL, 10);
}

int pg_load(PGresult *res, int r, int c, const char *what, json_t **ret, hull_error *e) {
        if (PQgetisnull(res, r, c))
                return store_load(NULL, 0, what, ret, e);
        return store_load(PQgetvalue(res, r, c), (size_t) PQgetlength(res, r, c), what, ret, e);
}

int pg_page_rows(PGresult *res, const char *what, store_rowkey *keys, json_t *out, size_t *ret_n, hull_error *e) {
        size_t n = (size_t) PQntuples(res);
        for (size_t i = 0; i < n; i++) {
                if (keys) { /* PQgetvalue gives "" for a NULL id */
                        keys[i].key = pg_get_int(res, (int) i, 0);
                        snprintf(keys[i].id, sizeof(keys[i].id), "%s", PQgetvalue(res, (int) i, 1));
                }
                if (out) {
                        json_t *o;
                        int r = pg_load(res, (int) i, 2, what, &o, e);
                        if (r < 0)
                                return r;
                        if (json_array_append_new(out, o) < 0)
                                return hull_err(e, -ENOMEM, "store: cannot list");
                }
        }
        *ret_n = n;
        return 0;
}

int pg_session_exists(pg_conn *pc, const char *session_id, hull_error *e) {
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {session_id};
        int r = pg_exec(pc, "SELECT 1 FROM sessions WHERE id = $1", 1, v, "cannot read", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        return 0;
}

int pg_tx_begin(pg_conn *pc, pg_tx *t, hull_error *e) {
        int r = pg_exec(pc, "BEGIN", 0, NULL, "cannot begin a transaction", NULL, e);
        if (r < 0)
                return r;
        pc->in_tx = true;
        t->pc = pc;
        return 0;
}

int pg_tx_commit(pg_tx *t, hull_error *e) {
        pg_conn *pc = t->pc;
        t->pc = NULL;
        int r = pg_exec(pc, "COMMIT", 0, NULL, "cannot commit", NULL, e);
        if (r < 0 && PQtransactionStatus(pc->conn) != PQTRANS_IDLE)
                PQclear(PQexec(pc->conn, "ROLLBACK"));
        pc->in_tx = false;
        return r;
}

void pg_tx_rollbackp(pg_tx *t) {
        if (!t->pc)
                return;
        if (PQtransactionStatus(t->pc->conn) != PQTRANS_IDLE)
                PQclear(PQexec(t->pc->conn, "ROLLBACK"));
        t->pc->in_tx = false;
        t->pc = NULL;
}

/* ---- open ---- */

static int schema_version(pg_conn *pc, int64_t *ret, hull_error *e) {
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0, NULL,
                        "cannot read the schema version", &res, e);
        if (r < 0)
                return r;
        *ret = pg_get_int(res, 0, 0);
        return 0;
}

/* Each migration in its own transaction, under a transaction-scoped advisory lock so that nodes
 * started together migrate one at a time; one that finds the work done does nothing. */
static int migrate(pg_conn *pc, hull_error *e) {
        for (;;) {
                _cleanup_pg_tx_ pg_tx t = {0};
                int r = pg_tx_begin(pc, &t, e);
                if (r < 0 ||
                    (r = pg_exec(pc, "SELECT pg_advisory_xact_lock(7212055)", 0, NULL, "cannot lock the schema", NULL,
                                 e)) < 0 ||
                    (r = pg_exec(pc,
                                 "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER NOT NULL PRIMARY KEY,"
                                 " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
                                 0, NULL, "cannot make schema_migrations", NULL, e)) < 0)
                        return r;
                int64_t v;
                if ((r = schema_version(pc, &v, e)) < 0)
                        return r;
                if (v < 0 || v > store_pg_schema_version())
                        return hull_fail(e, -EPROTO,
                                         "store: the PostgreSQL database has schema version %" PRId64
                                         ", newer than this hull knows (%d): use a newer hull",
                                         v, store_pg_schema_version());
                if (v == store_pg_schema_version())
                        return pg_tx_commit(&t, e);
                char what[64], n[PG_INT_MAX];
                snprintf(what, sizeof(what), "cannot migrate to schema version %" PRId64, v + 1);
                /* constant text of several statements: the simple protocol */
                PGresult *res = PQexec(pc->conn, migrations[v]);
                ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
                if (st != PGRES_COMMAND_OK) {
                        char why[256];
                        first_line(res ? PQresultErrorMessage(res) : PQerrorMessage(pc->conn), why, sizeof(why));
                        PQclear(res);
                        return hull_fail(e, -EIO, "store: %s: %s", what, why);
                }
                PQclear(res);
                const char *p[] = {pg_int(n, v + 1)};
                if ((r = pg_exec(pc, "INSERT INTO schema_migrations (version) VALUES ($1)", 1, p, what, NULL, e)) < 0 ||
                    (r = pg_tx_commit(&t, e)) < 0)
                        return r;
        }
}

static void pg_close(store *base) {
        pg_store *s = pg_of(base);
        for (unsigned i = 0; i < s->n_open; i++)
                if (s->conns[i].conn)
                        PQfinish(s->conns[i].conn);
        if (s->listen)
                PQfinish(s->listen);
        explicit_bzero(s->url, strlen(s->url));
        free(s->url);
        pthread_cond_destroy(&s->freed);
        pthread_mutex_destroy(&s->lock);
        pg_cache_done(&s->cache);
        free(s);
}

static int pg_user_version(store *base) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        int64_t v;
        int r = schema_version(pc, &v, NULL);
        return r < 0 ? r : (int) v;
}

static const store_ops pg_ops = {
        .name = "postgresql",
        .close = pg_close,
        .user_version = pg_user_version,
        .insert = pg_insert,
        .get = pg_get,
        .update = pg_update,
        .remove = pg_remove,
        .list = pg_list,
        .sessions_with_status = pg_sessions_with_status,
        .events_append = pg_events_append,
        .events_set_processed = pg_events_set_processed,
        .events_last_seq = pg_events_last_seq,
        .events_seq_of = pg_events_seq_of,
        .conversation_put = pg_conversation_put,
        .conversation_get = pg_conversation_get,
        .conversation_append = pg_conversation_append,
        .key_add = pg_key_add,
        .key_list = pg_key_list,
        .key_delete = pg_key_delete,
        .key_find = pg_key_find,
        .key_count = pg_key_count,
        .sandbox_add = pg_sandbox_add,
        .sandbox_list = pg_sandbox_list,
        .thread_get = pg_thread_get,
        .thread_put = pg_thread_put,
        .env_put = pg_env_put,
        .env_get = pg_env_get,
        .env_list = pg_env_list,
        .env_delete = pg_env_delete,
        .skills = &pg_skill_ops,
        .webhooks = &pg_webhook_ops,
        .work = &pg_work_ops,
        .memory_apply = pg_memory_apply,
        .memory_get = pg_memory_get,
        .memory_scan = pg_memory_scan,
        .memory_version_get = pg_memory_version_get,
        .memory_version_put = pg_memory_version_put,
        .rows_read = pg_rows_read,
        .rows_write = pg_rows_write,
        .check = pg_check,
        .vault = &pg_vault_ops,
        .deploy = &pg_deploy_ops,
        .node = &pg_node_ops,
        .file_insert = pg_file_insert,
        .file_get = pg_file_get,
        .file_list = pg_file_list,
        .file_delete = pg_file_delete,
        .blob_read = pg_blob_read,
        .blob_path = pg_blob_path,
};

int store_pg_open(const char *url, store **ret, hull_error *e) {
        if (!dlib_pq_load(e))
                return -ENOSYS;
        _cleanup_free_ pg_store *s = calloc(1, sizeof(*s));
        if (!s || !(s->url = strdup(url))) {
                if (s)
                        free(s->url);
                return hull_err(e, -ENOMEM, "store: cannot open PostgreSQL");
        }
        s->base.ops = &pg_ops;
        for (unsigned i = 0; i < STORE_PG_CONNS; i++)
                s->conns[i].owner = s;
        pg_conn *pc = &s->conns[0];
        s->n_open = 1;
        pc->conn = pg_connect_url(url);
        int r = 0;
        if (!pc->conn)
                r = hull_fail(e, -ENOMEM, "store: cannot connect to PostgreSQL: out of memory");
        else if (PQstatus(pc->conn) != CONNECTION_OK) {
                char why[HULL_ERROR_MSG_MAX / 2];
                first_line(PQerrorMessage(pc->conn), why, sizeof(why));
                store_redact(url, why, sizeof(why));
                r = hull_fail(e, -ECONNREFUSED, "store: cannot connect to PostgreSQL: %s", why);
        } else
                r = migrate(pc, e);
        if (r < 0) {
                if (pc->conn)
                        PQfinish(pc->conn);
                explicit_bzero(s->url, strlen(s->url));
                free(s->url);
                return r;
        }
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->freed, NULL);
        pg_cache_init(&s->cache, &s->down);
        *ret = &TAKE_PTR(s)->base;
        return 0;
}
