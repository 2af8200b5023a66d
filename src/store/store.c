/* store.c: hull's own state in SQLite (hull.db). See store.h.
 *
 * One connection behind a mutex. Every call takes the mutex and, while it holds it, charges
 * SQLite's memory to nobody (sqlmem_begin_unbounded): a budget left open on the calling thread
 * by untrusted work (the handle store's queries) can never fail a write here. Writes of more
 * than one statement run in one BEGIN IMMEDIATE transaction. SQL is constant text (a list's
 * fragments chosen from constants), every value from outside is bound. */
#include "store.h"
#include "time-util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "dlib-sqlite3.h"
#include "dynbuf.h"
#include "macro.h"
#include "sqlite-mem.h"

/* The statements of the hot paths (a GET of a resource, a key's lookup), prepared once. */
enum {
        CACHED_GET_AGENT,
        CACHED_GET_ENVIRONMENT,
        CACHED_GET_SESSION,
        CACHED_KEY_FIND,
        CACHED_KEY_COUNT,
        CACHED_DATA_VERSION,
        _CACHED_MAX,
};

struct store {
        pthread_mutex_t lock;
        sqlite3 *db;
        sqlite3_stmt *cached[_CACHED_MAX];
        /* how many keys there are, as read when PRAGMA data_version was keys_version (keys_known
         * false: not read yet); this store's own changes forget it at once, another
         * connection's commits change data_version */
        size_t keys;
        int64_t keys_version;
        bool keys_known;
};

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
};

int store_schema_version(void) {
        return (int) ELEMENTSOF(migrations);
}

typedef struct kind_info {
        const char *name;  /* in messages: "agent" */
        const char *table; /* its table (a constant, never input) */
        char tag;          /* its cursors' first byte */
} kind_info;

static const kind_info kinds[_STORE_KIND_MAX] = {
        [STORE_AGENT] = {"agent", "agents", 'a'},
        [STORE_ENVIRONMENT] = {"environment", "environments", 'e'},
        [STORE_SESSION] = {"session", "sessions", 's'},
};
#define TAG_VERSIONS 'v'
#define TAG_EVENTS 'E'

/* ---- locking: the mutex, and no memory budget while it is held ---- */

typedef struct guard {
        store *s;
        sqlmem_scope mem;
} guard;

static guard guard_take(store *s) {
        guard g = {.s = s};
        pthread_mutex_lock(&s->lock);
        sqlmem_begin_unbounded(&g.mem);
        return g;
}

static void guard_release(guard *g) {
        if (!g->s)
                return;
        sqlmem_end(&g->mem);
        pthread_mutex_unlock(&g->s->lock);
        g->s = NULL;
}
/* Declared first in a function, so its statements (declared after) are finalized before. */
#define LOCKED(s) _cleanup_(guard_release) _unused_ guard _guard = guard_take(s)

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

static int sql_fail(sqlite3 *db, int rc, const char *what, hull_error *e) {
        int err = sql_errno(rc);
        const char *msg = db ? sqlite3_errmsg(db) : "out of memory";
        if (err == -EBUSY)
                return hull_err_hint(e, err, "another process holds hull.db locked; try again", "store: %s: %s", what,
                                     msg);
        return hull_fail(e, err, "store: %s: %s", what, msg);
}

static int prep(store *s, const char *sql, sqlite3_stmt **ret, hull_error *e) {
        int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);
        if (rc != SQLITE_OK)
                return sql_fail(s->db, rc, "cannot prepare a statement", e);
        return 0;
}

/* A cached statement (under the lock): prepared on first use; give it back with stmt_resetp. */
static int prep_cached(store *s, unsigned slot, const char *sql, sqlite3_stmt **ret, hull_error *e) {
        if (!s->cached[slot]) {
                int r = prep(s, sql, &s->cached[slot], e);
                if (r < 0)
                        return r;
        }
        *ret = s->cached[slot];
        return 0;
}

/* The end of a cached statement's use: its read transaction ends, its values go. */
static void stmt_resetp(sqlite3_stmt **p) {
        if (*p) {
                sqlite3_reset(*p);
                sqlite3_clear_bindings(*p);
        }
}

static int bind_text(sqlite3_stmt *st, int i, const char *v) {
        return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

static int bind_fail(store *s, int rc, hull_error *e) {
        return sql_fail(s->db, rc, "cannot bind a value", e);
}

/* Run a statement that returns no row. */
static int step_done(store *s, sqlite3_stmt *st, const char *what, hull_error *e) {
        int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                return sql_fail(s->db, rc, what, e);
        return 0;
}

static int exec(store *s, const char *sql, const char *what, hull_error *e) {
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return sql_fail(s->db, rc, what, e);
        return 0;
}

/* A transaction that rolls back unless committed. */
typedef struct tx {
        store *s;
} tx;

static int tx_begin(store *s, tx *t, hull_error *e) {
        int r = exec(s, "BEGIN IMMEDIATE", "cannot begin a transaction", e);
        if (r < 0)
                return r;
        t->s = s;
        return 0;
}

static int tx_commit(tx *t, hull_error *e) {
        store *s = t->s;
        t->s = NULL;
        int r = exec(s, "COMMIT", "cannot commit", e);
        if (r < 0 && !sqlite3_get_autocommit(s->db))
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

static void tx_rollbackp(tx *t) {
        if (t->s && !sqlite3_get_autocommit(t->s->db))
                sqlite3_exec(t->s->db, "ROLLBACK", NULL, NULL, NULL);
        t->s = NULL;
}
#define _cleanup_tx_ _cleanup_(tx_rollbackp)

/* ---- times ---- */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        unsigned yoe = (unsigned) (y - era * 400);
        unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
        unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + (int64_t) doe - 719468;
}

static bool digits(const char *p, int n, unsigned *ret) {
        unsigned v = 0;
        for (int i = 0; i < n; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return false;
                v = v * 10 + (unsigned) (p[i] - '0');
        }
        *ret = v;
        return true;
}

int store_time_ms(const char *s, int64_t *ret) {
        unsigned y, mo, d, h, mi, sec, ms = 0;
        if (!s || strnlen(s, 20) < 20)
                return -EINVAL;
        if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' || !digits(s + 8, 2, &d) ||
            (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s + 11, 2, &h) || s[13] != ':' ||
            !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec))
                return -EINVAL;
        const char *p = s + 19;
        if (*p == '.') {
                unsigned n = 0;
                for (p++; *p >= '0' && *p <= '9'; p++, n++)
                        if (n < 3)
                                ms = ms * 10 + (unsigned) (*p - '0');
                if (n == 0)
                        return -EINVAL;
                for (; n < 3; n++)
                        ms *= 10;
        }
        int64_t off_min = 0;
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                unsigned oh, om;
                if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 || om > 59)
                        return -EINVAL;
                off_min = (int64_t) (oh * 60 + om) * (*p == '-' ? -1 : 1);
                p += 6;
        } else
                return -EINVAL;
        if (*p)
                return -EINVAL;
        static const unsigned mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 ||
            sec > 60)
                return -EINVAL;
        int64_t days = days_from_civil(y, mo, d);
        *ret = (((days * 24 + h) * 60 + mi) * 60 + sec) * 1000 + ms - off_min * 60000;
        return 0;
}

void store_now_rfc3339(char ret[static STORE_TIME_MAX]) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        unsigned year = (unsigned) (tm.tm_year + 1900) % 10000;
        snprintf(ret, STORE_TIME_MAX, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ", year, (unsigned) (tm.tm_mon + 1) % 100,
                 (unsigned) tm.tm_mday % 100, (unsigned) tm.tm_hour % 100, (unsigned) tm.tm_min % 100,
                 (unsigned) tm.tm_sec % 100, (unsigned) (ts.tv_nsec / 1000000) % 1000);
}

/* ---- JSON in and out ---- */

static int dump(const json_t *o, const char *what, char **ret, hull_error *e) {
        char *p = json_dumps(o, JSON_COMPACT);
        if (!p)
                return hull_err(e, -ENOMEM, "store: cannot serialise %s", what);
        size_t n = strlen(p);
        if (n > STORE_OBJECT_BYTES_MAX) {
                free(p);
                return hull_fail(e, -E2BIG, "store: %s is %zu bytes of JSON, more than the %u kept", what, n,
                                 STORE_OBJECT_BYTES_MAX);
        }
        *ret = p;
        return 0;
}

static int load_column(sqlite3_stmt *st, int col, const char *what, json_t **ret, hull_error *e) {
        const char *p = (const char *) sqlite3_column_text(st, col);
        int n = sqlite3_column_bytes(st, col);
        if (!p)
                return hull_fail(e, -EBADMSG, "store: %s: stored body is missing (hull.db is damaged)", what);
        json_error_t err;
        json_t *o = json_loadb(p, (size_t) n, JSON_ALLOW_NUL, &err);
        if (!o)
                return hull_fail(e, -EBADMSG, "store: %s: stored body is not JSON (%s; hull.db is damaged)", what,
                                 err.text);
        *ret = o;
        return 0;
}

/* ---- what the columns need of a resource ---- */

typedef struct cols {
        const char *id;
        int64_t created_ms;
        bool archived;
        int64_t version; /* agents */
        const char *status, *agent_id;
        int64_t agent_version; /* sessions */
} cols;

static int id_check(const char *what, const char *id, hull_error *e) {
        if (!id || !*id || strnlen(id, STORE_ID_MAX) >= STORE_ID_MAX)
                return hull_fail(e, -EINVAL, "store: %s id must be a string of 1 to %u bytes", what, STORE_ID_MAX - 1);
        return 0;
}

static int kind_check(store_kind k, hull_error *e) {
        if ((unsigned) k >= _STORE_KIND_MAX)
                return hull_fail(e, -EINVAL, "store: unknown kind of resource %d", (int) k);
        return 0;
}

static int read_cols(store_kind k, const json_t *obj, cols *c, hull_error *e) {
        const char *what = kinds[k].name;
        if (!json_is_object(obj))
                return hull_fail(e, -EINVAL, "store: %s must be a JSON object", what);
        *c = (cols){.id = json_string_value(json_object_get(obj, "id"))};
        int r = id_check(what, c->id, e);
        if (r < 0)
                return r;
        if (store_time_ms(json_string_value(json_object_get(obj, "created_at")), &c->created_ms) < 0)
                return hull_fail(e, -EINVAL, "store: %s %s: \"created_at\" must be an RFC 3339 time", what, c->id);
        json_t *a = json_object_get(obj, "archived_at");
        if (a && !json_is_null(a) && !json_is_string(a))
                return hull_fail(e, -EINVAL, "store: %s %s: \"archived_at\" must be null or a string", what, c->id);
        c->archived = json_is_string(a);
        if (k == STORE_AGENT) {
                json_t *v = json_object_get(obj, "version");
                if (!json_is_integer(v) || json_integer_value(v) < 1)
                        return hull_fail(e, -EINVAL, "store: agent %s: \"version\" must be an integer >= 1", c->id);
                c->version = json_integer_value(v);
        } else if (k == STORE_SESSION) {
                c->status = json_string_value(json_object_get(obj, "status"));
                if (!c->status)
                        return hull_fail(e, -EINVAL, "store: session %s: \"status\" must be a string", c->id);
                json_t *ag = json_object_get(obj, "agent");
                c->agent_id = json_string_value(json_object_get(ag, "id"));
                json_t *v = json_object_get(ag, "version");
                if (!c->agent_id || !json_is_integer(v) || json_integer_value(v) < 1)
                        return hull_fail(e, -EINVAL,
                                         "store: session %s: \"agent\" must be an object with \"id\" and \"version\"",
                                         c->id);
                c->agent_version = json_integer_value(v);
        }
        return 0;
}

/* ---- open ---- */

static int query_int(store *s, const char *sql, int64_t *ret, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s, sql, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc, "cannot read a setting", e);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

static int migrate(store *s, const char *path, hull_error *e) {
        for (;;) {
                _cleanup_tx_ tx t = {0};
                int r = tx_begin(s, &t, e);
                if (r < 0)
                        return r;
                int64_t v;
                r = query_int(s, "PRAGMA user_version", &v, e);
                if (r < 0)
                        return r;
                if (v < 0 || v > store_schema_version())
                        return hull_fail(e, -EPROTO,
                                         "store: %s has schema version %" PRId64
                                         ", newer than this hull knows (%d): use a newer hull, or another HULL_HOME",
                                         path, v, store_schema_version());
                if (v == store_schema_version())
                        return tx_commit(&t, e);
                char what[64], set[64];
                snprintf(what, sizeof(what), "cannot migrate to schema version %" PRId64, v + 1);
                r = exec(s, migrations[v], what, e);
                if (r < 0)
                        return r;
                snprintf(set, sizeof(set), "PRAGMA user_version = %" PRId64, v + 1);
                r = exec(s, set, what, e);
                if (r < 0)
                        return r;
                r = tx_commit(&t, e);
                if (r < 0)
                        return r;
        }
}

static int setup(store *s, const char *path, hull_error *e) {
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DML, 0, NULL);
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DDL, 0, NULL);
        sqlite3_busy_timeout(s->db, (int) STORE_BUSY_TIMEOUT_MS);

        /* The first statement that reads the file: a file that is not a database fails here. */
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s, "PRAGMA journal_mode = WAL", &st, e);
        int rc = r < 0 ? SQLITE_ERROR : sqlite3_step(st);
        if (r < 0 || rc != SQLITE_ROW) {
                int code = r < 0 ? sqlite3_errcode(s->db) : rc;
                if ((code & 0xff) == SQLITE_NOTADB)
                        return hull_fail(e, -EINVAL,
                                         "store: %s is not a SQLite database (move it away and hull makes a new one)",
                                         path);
                return r < 0 ? r : sql_fail(s->db, rc, "cannot use WAL mode", e);
        }
        const char *mode = (const char *) sqlite3_column_text(st, 0);
        if (!mode || strcmp(mode, "wal") != 0)
                return hull_fail(
                        e, -EIO,
                        "store: %s: SQLite cannot use WAL mode here (got \"%s\"; is it on a network file system?)",
                        path, mode ? mode : "");
        sqlite3_finalize(TAKE_PTR(st));
        r = exec(s, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON", "cannot set up hull.db", e);
        if (r < 0)
                return r;
        return migrate(s, path, e);
}

int store_open(const char *path, store **ret, hull_error *e) {
        if (!dlib_sqlite3_load(e))
                return -ENOSYS;
        /* Made here first, so it is 0600 (SQLite gives its -wal and -shm files the same mode). */
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return hull_err(e, negative_errno(), "store: cannot open %s", path);
        safe_close(fd);

        _cleanup_sqlmem_ sqlmem_scope mem;
        sqlmem_begin_unbounded(&mem);
        _cleanup_free_ store *s = calloc(1, sizeof(*s));
        if (!s)
                return hull_err(e, -ENOMEM, "store: cannot open %s", path);
        int rc =
                sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
        _cleanup_db_ sqlite3 *db = s->db;
        if (rc != SQLITE_OK)
                return sql_fail(db, rc, "cannot open hull.db", e);
        int r = setup(s, path, e);
        if (r < 0)
                return r;
        pthread_mutex_init(&s->lock, NULL);
        db = NULL;
        *ret = TAKE_PTR(s);
        return 0;
}

void store_close(store *s) {
        if (!s)
                return;
        sqlmem_scope mem;
        sqlmem_begin_unbounded(&mem);
        for (size_t i = 0; i < _CACHED_MAX; i++)
                if (s->cached[i])
                        sqlite3_finalize(s->cached[i]);
        sqlite3_close_v2(s->db);
        sqlmem_end(&mem);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

int store_user_version(store *s) {
        LOCKED(s);
        int64_t v;
        int r = query_int(s, "PRAGMA user_version", &v, NULL);
        return r < 0 ? r : (int) v;
}

/* ---- resources ---- */

static int insert_row(store *s, store_kind k, const cols *c, const char *body, bool agent_version, hull_error *e) {
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_AGENT] = "INSERT INTO agents (id, version, latest, created_ms, archived, body)"
                                " VALUES (?1, ?5, 1, ?2, ?3, ?4)",
                [STORE_ENVIRONMENT] =
                        "INSERT INTO environments (id, created_ms, archived, body) VALUES (?1, ?2, ?3, ?4)",
                [STORE_SESSION] =
                        "INSERT INTO sessions (id, created_ms, archived, body, status, agent_id, agent_version)"
                        " VALUES (?1, ?2, ?3, ?4, ?6, ?7, ?8)",
        };
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s, sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, c->id);
        rc = rc ?: sqlite3_bind_int64(st, 2, c->created_ms);
        rc = rc ?: sqlite3_bind_int64(st, 3, c->archived);
        rc = rc ?: bind_text(st, 4, body);
        if (k == STORE_AGENT)
                rc = rc ?: sqlite3_bind_int64(st, 5, c->version);
        if (k == STORE_SESSION) {
                rc = rc ?: bind_text(st, 6, c->status);
                rc = rc ?: bind_text(st, 7, c->agent_id);
                rc = rc ?: sqlite3_bind_int64(st, 8, c->agent_version);
        }
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return agent_version ? hull_fail(e, -ESTALE,
                                                 "store: agent %s already has version %" PRId64
                                                 " (someone else updated it first: read it again)",
                                                 c->id, c->version)
                                     : hull_fail(e, -EEXIST, "store: a %s with id %s exists", kinds[k].name, c->id);
        if (rc != SQLITE_DONE)
                return sql_fail(s->db, rc, "cannot insert", e);
        return 0;
}

int store_insert(store *s, store_kind k, const json_t *obj, hull_error *e) {
        cols c;
        int r = kind_check(k, e);
        if (r < 0 || (r = read_cols(k, obj, &c, e)) < 0)
                return r;
        if (k == STORE_AGENT && c.version != 1)
                return hull_fail(e, -EINVAL, "store: a new agent's version must be 1, not %" PRId64, c.version);
        _cleanup_free_ char *body = NULL;
        r = dump(obj, kinds[k].name, &body, e);
        if (r < 0)
                return r;
        LOCKED(s);
        return insert_row(s, k, &c, body, false, e);
}

static int get(store *s, store_kind k, const char *id, int64_t version, json_t **ret, char **ret_raw, size_t *ret_len,
               hull_error *e) {
        int r = kind_check(k, e);
        if (r < 0 || (r = id_check(kinds[k].name, id, e)) < 0)
                return r;
        if (version < 0 || (version > 0 && k != STORE_AGENT))
                return hull_fail(e, -EINVAL, "store: a version is for agents only, and >= 1");
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_AGENT] = "SELECT body FROM agents WHERE id = ?1 AND (?2 = 0 AND latest = 1 OR version = ?2)",
                [STORE_ENVIRONMENT] = "SELECT body FROM environments WHERE id = ?1",
                [STORE_SESSION] = "SELECT body FROM sessions WHERE id = ?1",
        };
        static const unsigned slot[_STORE_KIND_MAX] = {
                [STORE_AGENT] = CACHED_GET_AGENT,
                [STORE_ENVIRONMENT] = CACHED_GET_ENVIRONMENT,
                [STORE_SESSION] = CACHED_GET_SESSION,
        };
        LOCKED(s);
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        r = prep_cached(s, slot[k], sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, id);
        if (k == STORE_AGENT)
                rc = rc ?: sqlite3_bind_int64(st, 2, version);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                if (version > 0)
                        return hull_fail(e, -ENOENT, "store: no version %" PRId64 " of agent %s", version, id);
                return hull_fail(e, -ENOENT, "store: no %s %s", kinds[k].name, id);
        }
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot read", e);
        if (ret)
                return load_column(st, 0, kinds[k].name, ret, e);
        const char *p = (const char *) sqlite3_column_text(st, 0);
        int n = sqlite3_column_bytes(st, 0);
        if (!p)
                return hull_fail(e, -EBADMSG, "store: %s: stored body is missing (hull.db is damaged)", kinds[k].name);
        char *copy = malloc((size_t) n + 1);
        if (!copy)
                return hull_err(e, -ENOMEM, "store: out of memory");
        memcpy(copy, p, (size_t) n);
        copy[n] = '\0';
        *ret_raw = copy;
        *ret_len = (size_t) n;
        return 0;
}

int store_get(store *s, store_kind k, const char *id, int64_t version, json_t **ret, hull_error *e) {
        return get(s, k, id, version, ret, NULL, NULL, e);
}

int store_get_raw(store *s, store_kind k, const char *id, int64_t version, char **ret, size_t *ret_len, hull_error *e) {
        return get(s, k, id, version, NULL, ret, ret_len, e);
}

static int update_agent(store *s, const cols *c, const char *body, hull_error *e) {
        _cleanup_tx_ tx t = {0};
        int r = tx_begin(s, &t, e);
        if (r < 0)
                return r;
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                r = prep(s, "SELECT version FROM agents WHERE id = ?1 AND latest = 1", &st, e);
                if (r < 0)
                        return r;
                int rc = bind_text(st, 1, c->id);
                if (rc)
                        return bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        return hull_fail(e, -ENOENT, "store: no agent %s", c->id);
                if (rc != SQLITE_ROW)
                        return sql_fail(s->db, rc, "cannot read", e);
                int64_t newest = sqlite3_column_int64(st, 0);
                if (c->version != newest + 1)
                        return hull_fail(e, -ESTALE,
                                         "store: agent %s is at version %" PRId64 ", so the next is %" PRId64
                                         ", not %" PRId64 " (someone else updated it first: read it again)",
                                         c->id, newest, newest + 1, c->version);
        }
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                r = prep(s, "UPDATE agents SET latest = 0 WHERE id = ?1 AND latest = 1", &st, e);
                if (r < 0)
                        return r;
                int rc = bind_text(st, 1, c->id);
                if (rc)
                        return bind_fail(s, rc, e);
                r = step_done(s, st, "cannot update", e);
                if (r < 0)
                        return r;
        }
        r = insert_row(s, STORE_AGENT, c, body, true, e);
        if (r < 0)
                return r;
        return tx_commit(&t, e);
}

int store_update(store *s, store_kind k, const json_t *obj, hull_error *e) {
        cols c;
        int r = kind_check(k, e);
        if (r < 0 || (r = read_cols(k, obj, &c, e)) < 0)
                return r;
        _cleanup_free_ char *body = NULL;
        r = dump(obj, kinds[k].name, &body, e);
        if (r < 0)
                return r;
        LOCKED(s);
        if (k == STORE_AGENT)
                return update_agent(s, &c, body, e);
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_ENVIRONMENT] = "UPDATE environments SET created_ms = ?2, archived = ?3, body = ?4 WHERE id = ?1",
                [STORE_SESSION] = "UPDATE sessions SET created_ms = ?2, archived = ?3, body = ?4, status = ?5,"
                                  " agent_id = ?6, agent_version = ?7 WHERE id = ?1",
        };
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, c.id);
        rc = rc ?: sqlite3_bind_int64(st, 2, c.created_ms);
        rc = rc ?: sqlite3_bind_int64(st, 3, c.archived);
        rc = rc ?: bind_text(st, 4, body);
        if (k == STORE_SESSION) {
                rc = rc ?: bind_text(st, 5, c.status);
                rc = rc ?: bind_text(st, 6, c.agent_id);
                rc = rc ?: sqlite3_bind_int64(st, 7, c.agent_version);
        }
        if (rc)
                return bind_fail(s, rc, e);
        r = step_done(s, st, "cannot update", e);
        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", kinds[k].name, c.id);
        return 0;
}

int store_delete(store *s, store_kind k, const char *id, hull_error *e) {
        int r = kind_check(k, e);
        if (r < 0 || (r = id_check(kinds[k].name, id, e)) < 0)
                return r;
        static const char *const sql[_STORE_KIND_MAX] = {
                [STORE_AGENT] = "DELETE FROM agents WHERE id = ?1",
                [STORE_ENVIRONMENT] = "DELETE FROM environments WHERE id = ?1",
                /* its events and conversation go too (ON DELETE CASCADE) */
                [STORE_SESSION] = "DELETE FROM sessions WHERE id = ?1",
        };
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, id);
        if (rc)
                return bind_fail(s, rc, e);
        r = step_done(s, st, "cannot delete", e);
        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", kinds[k].name, id);
        return 0;
}

/* ---- lists ----
 * A list is ordered by a key (created_ms then id, an agent's version, an event's seq). A cursor
 * names one row's key, a direction ('n': the rows after it in the list's order, 'p': the rows
 * before it) and a digest of the query it came from, as base64url of "TD.FFFFFFFF.KEY.ID" (T the
 * list's tag, D the direction, F the digest, KEY in hex). */

typedef struct rowkey {
        int64_t key;
        char id[STORE_ID_MAX];
} rowkey;

typedef struct bindv {
        const char *text; /* NULL: num */
        int64_t num;
} bindv;

#define SQL_MAX 2048U
#define BINDS_MAX 16U

/* A statement being built: constant fragments and the values they bind, in order. */
typedef struct query {
        char sql[SQL_MAX];
        size_t len;
        bindv v[BINDS_MAX];
        unsigned n;
        bool overflow;
} query;

static void q_add(query *q, const char *frag, const char *text, int64_t num, bool bind) {
        size_t n = strlen(frag);
        if (q->len + n >= sizeof(q->sql) || (bind && q->n >= BINDS_MAX)) {
                q->overflow = true;
                return;
        }
        memcpy(q->sql + q->len, frag, n + 1);
        q->len += n;
        if (bind)
                q->v[q->n++] = (bindv){text, num};
}
#define q_sql(q, f) q_add(q, f, NULL, 0, false)
#define q_text(q, f, t) q_add(q, f, t, 0, true)
#define q_int(q, f, i) q_add(q, f, NULL, i, true)

typedef struct listing {
        char tag;
        bool bidirectional;
        bool with_id;        /* ordered by (key, id), else by key */
        const char *key;     /* the key's column */
        const char *select;  /* "SELECT key, id, body FROM ... WHERE ..." (the filters follow) */
        const char *what;    /* in messages */
        bool descending;     /* the list's order */
        uint32_t digest;     /* of the query */
        const query *filter; /* " AND ..." fragments after select */
} listing;

static void fnv(uint32_t *h, const void *p, size_t n) {
        const unsigned char *b = p;
        for (size_t i = 0; i < n; i++) {
                *h ^= b[i];
                *h *= 16777619U;
        }
}
static void fnv_str(uint32_t *h, const char *s) {
        fnv(h, s ? "S" : "N", 1);
        if (s)
                fnv(h, s, strlen(s) + 1);
}
static void fnv_int(uint32_t *h, int64_t v) {
        fnv(h, &v, sizeof(v));
}

static int cursor_encode(const listing *l, char dir, const rowkey *k, char ret[static STORE_CURSOR_MAX]) {
        char raw[STORE_CURSOR_MAX];
        int n = snprintf(raw, sizeof(raw), "%c%c.%08" PRIx32 ".%" PRIx64 ".%s", l->tag, dir, l->digest,
                         (uint64_t) k->key, l->with_id ? k->id : "");
        if (n < 0 || (size_t) n >= sizeof(raw))
                return -EOVERFLOW;
        char out[STORE_CURSOR_MAX + 4];
        size_t len;
        if (base64_encode_to(out, sizeof(out), raw, (size_t) n, false, &len) < 0 || len >= STORE_CURSOR_MAX)
                return -EOVERFLOW;
        for (size_t i = 0; i < len; i++)
                out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
        memcpy(ret, out, len + 1);
        return 0;
}

static bool hex64(const char *p, size_t n, uint64_t *ret) {
        uint64_t v = 0;
        if (n == 0 || n > 16)
                return false;
        for (size_t i = 0; i < n; i++) {
                int d = p[i] >= '0' && p[i] <= '9' ? p[i] - '0' : p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10 : -1;
                if (d < 0)
                        return false;
                v = v << 4 | (uint64_t) d;
        }
        *ret = v;
        return true;
}

static int cursor_decode(const listing *l, const char *page, rowkey *ret, char *ret_dir, hull_error *e) {
        size_t n = strnlen(page, STORE_CURSOR_MAX);
        bool ok = n > 0 && n < STORE_CURSOR_MAX;
        for (size_t i = 0; ok && i < n; i++)
                ok = (page[i] >= 'A' && page[i] <= 'Z') || (page[i] >= 'a' && page[i] <= 'z') ||
                     (page[i] >= '0' && page[i] <= '9') || page[i] == '-' || page[i] == '_';
        _cleanup_free_ char *raw = NULL;
        size_t len = 0;
        if (ok)
                ok = base64_decode(page, n, (void **) &raw, &len) == 0;
        /* "TD." "FFFFFFFF" "." KEY "." ID */
        const char *key = NULL, *dot = NULL;
        if (ok)
                ok = len >= 14 && memchr(raw, 0, len) == NULL && raw[0] == l->tag &&
                     (raw[1] == 'n' || (raw[1] == 'p' && l->bidirectional)) && raw[2] == '.' && raw[11] == '.';
        uint64_t digest = 0, k = 0;
        if (ok)
                ok = hex64(raw + 3, 8, &digest) && digest == l->digest;
        if (ok) {
                key = raw + 12;
                dot = strchr(key, '.');
                ok = dot && hex64(key, (size_t) (dot - key), &k);
        }
        if (ok) {
                size_t idn = strlen(dot + 1);
                ok = l->with_id ? idn > 0 && idn < STORE_ID_MAX : idn == 0;
                if (ok)
                        memcpy(ret->id, dot + 1, idn + 1);
        }
        if (!ok)
                return hull_fail(e, -EINVAL,
                                 "store: page \"%.40s\" is not a cursor of this %s list (pass the next_page or "
                                 "prev_page of the same query, or none to start again)",
                                 page, l->what);
        ret->key = (int64_t) k;
        *ret_dir = raw[1];
        return 0;
}

/* Up to want rows after (asc: above, else below) the anchor (or from the start), in that order,
 * into out (may be NULL) and keys (may be NULL); *ret_n how many. */
static int fetch(store *s, const listing *l, const rowkey *anchor, bool asc, unsigned want, json_t *out, rowkey *keys,
                 size_t *ret_n, hull_error *e) {
        query q = *l->filter;
        q.len = 0;
        q.n = 0;
        q_sql(&q, l->select);
        for (unsigned i = 0; i < l->filter->n; i++)
                q.v[q.n++] = l->filter->v[i];
        q_sql(&q, l->filter->sql);
        if (anchor) {
                char frag[128];
                if (l->with_id) {
                        snprintf(frag, sizeof(frag), " AND (%s, id) %s (?, ?)", l->key, asc ? ">" : "<");
                        q_int(&q, frag, anchor->key);
                        q_text(&q, "", anchor->id);
                } else {
                        snprintf(frag, sizeof(frag), " AND %s %s ?", l->key, asc ? ">" : "<");
                        q_int(&q, frag, anchor->key);
                }
        }
        char order[128];
        snprintf(order, sizeof(order), " ORDER BY %s %s%s LIMIT ?", l->key, asc ? "ASC" : "DESC",
                 l->with_id ? (asc ? ", id ASC" : ", id DESC") : "");
        q_int(&q, order, want);
        if (q.overflow)
                return hull_fail(e, -E2BIG, "store: a %s list query is too long", l->what);

        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s, q.sql, &st, e);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < q.n; i++) {
                int rc = q.v[i].text ? bind_text(st, (int) i + 1, q.v[i].text)
                                     : sqlite3_bind_int64(st, (int) i + 1, q.v[i].num);
                if (rc)
                        return bind_fail(s, rc, e);
        }
        size_t n = 0;
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sql_fail(s->db, rc, "cannot list", e);
                if (keys) {
                        keys[n].key = sqlite3_column_int64(st, 0);
                        const char *id = (const char *) sqlite3_column_text(st, 1);
                        snprintf(keys[n].id, sizeof(keys[n].id), "%s", id ? id : "");
                }
                if (out) {
                        json_t *o;
                        r = load_column(st, 2, l->what, &o, e);
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

static int exists_beyond(store *s, const listing *l, const rowkey *k, bool asc, bool *ret, hull_error *e) {
        size_t n;
        int r = fetch(s, l, k, asc, 1, NULL, NULL, &n, e);
        if (r < 0)
                return r;
        *ret = n > 0;
        return 0;
}

static int run_list(store *s, const listing *l, const char *page, unsigned limit, store_page *ret, int64_t **ret_keys,
                    hull_error *e) {
        rowkey anchor;
        char dir = 'n';
        if (page) {
                int r = cursor_decode(l, page, &anchor, &dir, e);
                if (r < 0)
                        return r;
        }
        bool prev = dir == 'p';
        bool list_asc = !l->descending, asc = list_asc != prev;
        _cleanup_free_ rowkey *keys = calloc(limit + 1, sizeof(*keys));
        _cleanup_(json_decrefp) json_t *rows = json_array();
        if (!keys || !rows)
                return hull_err(e, -ENOMEM, "store: cannot list");
        size_t n;
        int r = fetch(s, l, page ? &anchor : NULL, asc, limit + 1, rows, keys, &n, e);
        if (r < 0)
                return r;
        bool more = n > limit;
        if (more) {
                json_array_remove(rows, limit);
                n = limit;
        }
        _cleanup_(json_decrefp) json_t *data = json_array();
        if (!data)
                return hull_err(e, -ENOMEM, "store: cannot list");
        for (size_t i = 0; i < n; i++)
                if (json_array_append(data, json_array_get(rows, prev ? n - 1 - i : i)) < 0)
                        return hull_err(e, -ENOMEM, "store: cannot list");
        if (prev)
                for (size_t i = 0; i < n / 2; i++) {
                        rowkey t = keys[i];
                        keys[i] = keys[n - 1 - i];
                        keys[n - 1 - i] = t;
                }

        store_page p = {0};
        bool before = false, after = false; /* rows before the first / after the last, in the list's order */
        if (!prev) {
                after = more;
                if (l->bidirectional && page && n > 0 && (r = exists_beyond(s, l, &keys[0], !list_asc, &before, e)) < 0)
                        return r;
        } else {
                before = more;
                if (n > 0 && (r = exists_beyond(s, l, &keys[n - 1], list_asc, &after, e)) < 0)
                        return r;
        }
        if ((after && cursor_encode(l, 'n', &keys[n - 1], p.next_page) < 0) ||
            (before && cursor_encode(l, 'p', &keys[0], p.prev_page) < 0))
                return hull_err(e, -EOVERFLOW, "store: cannot make a page cursor");
        if (ret_keys) {
                int64_t *ks = malloc((n ? n : 1) * sizeof(*ks));
                if (!ks)
                        return hull_err(e, -ENOMEM, "store: cannot list");
                for (size_t i = 0; i < n; i++)
                        ks[i] = keys[i].key;
                *ret_keys = ks;
        }
        p.data = TAKE_PTR(data);
        *ret = p;
        return 0;
}

static int limit_check(unsigned limit, unsigned max, unsigned *ret, hull_error *e) {
        if (limit > max)
                return hull_fail(e, -EINVAL, "store: limit %u is out of 1..%u", limit, max);
        *ret = limit ? limit : STORE_PAGE_DEFAULT;
        return 0;
}

/* The created_at filters on column col; fed to the digest too. */
static int time_filters(query *f, uint32_t *h, const char *col, const char *gt, const char *gte, const char *lt,
                        const char *lte, hull_error *e) {
        const struct {
                const char *v, *op, *name;
        } t[] = {{gt, ">", "gt"}, {gte, ">=", "gte"}, {lt, "<", "lt"}, {lte, "<=", "lte"}};
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                fnv_str(h, t[i].v);
                if (!t[i].v)
                        continue;
                int64_t ms;
                if (store_time_ms(t[i].v, &ms) < 0)
                        return hull_fail(e, -EINVAL,
                                         "store: created_at[%s] \"%.40s\" is not an RFC 3339 time (like "
                                         "2026-12-02T10:00:00Z)",
                                         t[i].name, t[i].v);
                char frag[64];
                snprintf(frag, sizeof(frag), " AND %s %s ?", col, t[i].op);
                q_int(f, frag, ms);
        }
        return 0;
}

/* A JSON array of the n strings, as text (for "x IN (SELECT value FROM json_each(?))"). */
static int string_set(const char *what, const char *const *v, size_t n, uint32_t *h, char **ret, hull_error *e) {
        _cleanup_(json_decrefp) json_t *a = json_array();
        if (!a)
                return hull_err(e, -ENOMEM, "store: cannot list");
        for (size_t i = 0; i < n; i++) {
                if (!v[i] || json_array_append_new(a, json_string(v[i])) < 0)
                        return hull_fail(e, -EINVAL, "store: %s filter %zu is not a UTF-8 string", what, i + 1);
                fnv_str(h, v[i]);
        }
        return dump(a, what, ret, e);
}

int store_list(store *s, store_kind k, const store_list_q *q, store_page *ret, hull_error *e) {
        unsigned limit = 0;
        int r = kind_check(k, e);
        if (r < 0 || (r = limit_check(q->limit, STORE_PAGE_MAX, &limit, e)) < 0)
                return r;
        query f = {0};
        uint32_t h = 2166136261U;
        listing l = {.tag = kinds[k].tag,
                     .with_id = true,
                     .key = "created_ms",
                     .what = kinds[k].name,
                     .descending = q->descending,
                     .filter = &f};
        _cleanup_free_ char *statuses = NULL;
        if (k == STORE_AGENT && q->versions_of) {
                if ((r = id_check("agent", q->versions_of, e)) < 0)
                        return r;
                l.tag = TAG_VERSIONS;
                l.with_id = false;
                l.key = "version";
                l.descending = false;
                l.what = "agent version";
                l.select = "SELECT version, NULL, body FROM agents WHERE id = ?";
                q_text(&f, "", q->versions_of);
                fnv_str(&h, q->versions_of);
        } else {
                static const char *const select[_STORE_KIND_MAX] = {
                        [STORE_AGENT] = "SELECT created_ms, id, body FROM agents WHERE latest = 1",
                        [STORE_ENVIRONMENT] = "SELECT created_ms, id, body FROM environments WHERE 1",
                        [STORE_SESSION] = "SELECT created_ms, id, body FROM sessions WHERE 1",
                };
                l.select = select[k];
                l.bidirectional = k == STORE_SESSION;
                fnv_int(&h, q->descending);
                fnv_int(&h, q->include_archived);
                if (!q->include_archived)
                        q_sql(&f, " AND archived = 0");
                r = time_filters(&f, &h, "created_ms", q->created_gt, q->created_gte, q->created_lt, q->created_lte, e);
                if (r < 0)
                        return r;
                if (k == STORE_SESSION) {
                        fnv_str(&h, q->agent_id);
                        fnv_int(&h, q->agent_version);
                        fnv_int(&h, (int64_t) q->n_statuses);
                        if (q->agent_id)
                                q_text(&f, " AND agent_id = ?", q->agent_id);
                        if (q->agent_version)
                                q_int(&f, " AND agent_version = ?", q->agent_version);
                        if (q->n_statuses) {
                                r = string_set("status", q->statuses, q->n_statuses, &h, &statuses, e);
                                if (r < 0)
                                        return r;
                                q_text(&f, " AND status IN (SELECT value FROM json_each(?))", statuses);
                        }
                }
        }
        fnv(&h, &l.tag, 1);
        l.digest = h;

        LOCKED(s);
        if (l.tag == TAG_VERSIONS) {
                int64_t found;
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                r = prep(s, "SELECT count(*) FROM agents WHERE id = ?1", &st, e);
                if (r < 0)
                        return r;
                int rc = bind_text(st, 1, q->versions_of);
                if (rc)
                        return bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if (rc != SQLITE_ROW)
                        return sql_fail(s->db, rc, "cannot list", e);
                found = sqlite3_column_int64(st, 0);
                if (!found)
                        return hull_fail(e, -ENOENT, "store: no agent %s", q->versions_of);
        }
        return run_list(s, &l, q->page, limit, ret, NULL, e);
}

void store_page_done(store_page *p) {
        if (!p)
                return;
        json_decref(p->data);
        *p = (store_page){0};
}

/* ---- events ---- */

static int session_exists(store *s, const char *session_id, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s, "SELECT 1 FROM sessions WHERE id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, session_id);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no session %s", session_id);
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot read", e);
        return 0;
}

static int last_seq(store *s, const char *session_id, int64_t *ret, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s, "SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, session_id);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot read", e);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

typedef struct event_cols {
        const char *id, *type;
        bool processed;
        int64_t processed_ms;
} event_cols;

static int read_event(const json_t *ev, size_t i, event_cols *c, hull_error *e) {
        if (!json_is_object(ev))
                return hull_fail(e, -EINVAL, "store: event %zu must be a JSON object", i + 1);
        c->id = json_string_value(json_object_get(ev, "id"));
        c->type = json_string_value(json_object_get(ev, "type"));
        if (!c->id || !*c->id || strnlen(c->id, STORE_ID_MAX) >= STORE_ID_MAX)
                return hull_fail(e, -EINVAL, "store: event %zu: \"id\" must be a string of 1 to %u bytes", i + 1,
                                 STORE_ID_MAX - 1);
        if (!c->type || !*c->type)
                return hull_fail(e, -EINVAL, "store: event %s: \"type\" must be a string", c->id);
        json_t *p = json_object_get(ev, "processed_at");
        c->processed = p && !json_is_null(p);
        if (c->processed && store_time_ms(json_string_value(p), &c->processed_ms) < 0)
                return hull_fail(e, -EINVAL, "store: event %s: \"processed_at\" must be null or an RFC 3339 time",
                                 c->id);
        return 0;
}

int store_events_append(store *s, const char *session_id, json_t *const *events, size_t n, int64_t *ret_first_seq,
                        hull_error *e) {
        int r = id_check("session", session_id, e);
        if (r < 0)
                return r;
        if (n > 0 && !events)
                return hull_fail(e, -EINVAL, "store: no events to append");
        for (size_t i = 0; i < n; i++) {
                event_cols c;
                if ((r = read_event(events[i], i, &c, e)) < 0)
                        return r;
        }
        LOCKED(s);
        _cleanup_tx_ tx t = {0};
        if ((r = tx_begin(s, &t, e)) < 0 || (r = session_exists(s, session_id, e)) < 0)
                return r;
        int64_t seq;
        if ((r = last_seq(s, session_id, &seq, e)) < 0)
                return r;
        int64_t first = seq + 1;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s,
                 "INSERT INTO events (session_id, seq, id, type, processed_ms, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                 &st, e);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                event_cols c;
                if ((r = read_event(events[i], i, &c, e)) < 0)
                        return r;
                _cleanup_free_ char *body = NULL;
                if ((r = dump(events[i], "an event", &body, e)) < 0)
                        return r;
                sqlite3_reset(st);
                int rc = bind_text(st, 1, session_id);
                rc = rc ?: sqlite3_bind_int64(st, 2, first + (int64_t) i);
                rc = rc ?: bind_text(st, 3, c.id);
                rc = rc ?: bind_text(st, 4, c.type);
                rc = rc ?: (c.processed ? sqlite3_bind_int64(st, 5, c.processed_ms) : sqlite3_bind_null(st, 5));
                rc = rc ?: bind_text(st, 6, body);
                if (rc)
                        return bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if ((rc & 0xff) == SQLITE_CONSTRAINT)
                        return hull_fail(e, -EEXIST, "store: an event with id %s exists (nothing was appended)", c.id);
                if (rc != SQLITE_DONE)
                        return sql_fail(s->db, rc, "cannot append events", e);
        }
        sqlite3_finalize(TAKE_PTR(st));
        if ((r = tx_commit(&t, e)) < 0)
                return r;
        if (ret_first_seq)
                *ret_first_seq = first;
        return 0;
}

int store_events_list(store *s, const char *session_id, const store_events_q *q, store_page *ret, int64_t **ret_seqs,
                      hull_error *e) {
        unsigned limit = 0;
        int r = id_check("session", session_id, e);
        if (r < 0 || (r = limit_check(q->limit, STORE_EVENTS_PAGE_MAX, &limit, e)) < 0)
                return r;
        if (q->after_seq < 0)
                return hull_fail(e, -EINVAL, "store: after_seq must be >= 0");
        query f = {0};
        uint32_t h = 2166136261U;
        listing l = {.tag = TAG_EVENTS,
                     .key = "seq",
                     .select = "SELECT seq, NULL, body FROM events WHERE session_id = ?",
                     .what = "event",
                     .descending = q->descending,
                     .filter = &f};
        q_text(&f, "", session_id);
        fnv_str(&h, session_id);
        fnv_int(&h, q->descending);
        fnv_int(&h, q->after_seq);
        if (q->after_seq > 0)
                q_int(&f, " AND seq > ?", q->after_seq);
        _cleanup_free_ char *types = NULL;
        fnv_int(&h, (int64_t) q->n_types);
        if (q->n_types) {
                r = string_set("type", q->types, q->n_types, &h, &types, e);
                if (r < 0)
                        return r;
                q_text(&f, " AND type IN (SELECT value FROM json_each(?))", types);
        }
        r = time_filters(&f, &h, "processed_ms", q->created_gt, q->created_gte, q->created_lt, q->created_lte, e);
        if (r < 0)
                return r;
        fnv(&h, &l.tag, 1);
        l.digest = h;
        LOCKED(s);
        if ((r = session_exists(s, session_id, e)) < 0)
                return r;
        r = run_list(s, &l, q->page, limit, ret, ret_seqs, e);
        if (r < 0)
                return r;
        ret->prev_page[0] = 0;
        return 0;
}

int store_events_set_processed(store *s, const char *session_id, const char *event_id, const char *processed_at,
                               hull_error *e) {
        int r = id_check("session", session_id, e);
        if (r < 0 || (r = id_check("event", event_id, e)) < 0)
                return r;
        int64_t ms;
        if (store_time_ms(processed_at, &ms) < 0)
                return hull_fail(e, -EINVAL, "store: event %s: processed_at must be an RFC 3339 time", event_id);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s,
                 "UPDATE events SET processed_ms = ?3, body = json_set(body, '$.processed_at', ?4)"
                 " WHERE session_id = ?1 AND id = ?2",
                 &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, session_id);
        rc = rc ?: bind_text(st, 2, event_id);
        rc = rc ?: sqlite3_bind_int64(st, 3, ms);
        rc = rc ?: bind_text(st, 4, processed_at);
        if (rc)
                return bind_fail(s, rc, e);
        if ((r = step_done(s, st, "cannot update an event", e)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no event %s in session %s", event_id, session_id);
        return 0;
}

int store_events_last_seq(store *s, const char *session_id, int64_t *ret, hull_error *e) {
        int r = id_check("session", session_id, e);
        if (r < 0)
                return r;
        LOCKED(s);
        if ((r = session_exists(s, session_id, e)) < 0)
                return r;
        return last_seq(s, session_id, ret, e);
}

int store_events_seq_of(store *s, const char *session_id, const char *event_id, int64_t *ret, hull_error *e) {
        int r = id_check("session", session_id, e);
        if (r < 0 || (r = id_check("event", event_id, e)) < 0)
                return r;
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, "SELECT seq FROM events WHERE session_id = ?1 AND id = ?2", &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, session_id);
        rc = rc ?: bind_text(st, 2, event_id);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no event %s in session %s", event_id, session_id);
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot read", e);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

/* ---- conversations ---- */

int store_conversation_put(store *s, const char *session_id, const json_t *messages, hull_error *e) {
        int r = id_check("session", session_id, e);
        if (r < 0)
                return r;
        if (!messages)
                return hull_fail(e, -EINVAL, "store: no conversation to keep");
        _cleanup_free_ char *body = NULL;
        if ((r = dump(messages, "a conversation", &body, e)) < 0)
                return r;
        LOCKED(s);
        if ((r = session_exists(s, session_id, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s,
                 "INSERT INTO conversations (session_id, body) VALUES (?1, ?2)"
                 " ON CONFLICT (session_id) DO UPDATE SET body = excluded.body",
                 &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, session_id);
        rc = rc ?: bind_text(st, 2, body);
        if (rc)
                return bind_fail(s, rc, e);
        return step_done(s, st, "cannot keep a conversation", e);
}

int store_conversation_get(store *s, const char *session_id, json_t **ret, hull_error *e) {
        int r = id_check("session", session_id, e);
        if (r < 0)
                return r;
        LOCKED(s);
        if ((r = session_exists(s, session_id, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, "SELECT body FROM conversations WHERE session_id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, session_id);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                *ret = NULL;
                return 0;
        }
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot read a conversation", e);
        return load_column(st, 0, "a conversation", ret, e);
}

/* ---- API keys ---- */

static int text_check(const char *what, const char *v, size_t max, bool empty_ok, hull_error *e) {
        size_t n = strnlen(v, max);
        if (n >= max || (!empty_ok && n == 0))
                return hull_fail(e, -EINVAL, "store: a key's %s must be %s%zu bytes at most", what,
                                 empty_ok ? "" : "1 to ", max - 1);
        return 0;
}

int store_key_add(store *s, const store_key *k, hull_error *e) {
        int r;
        if ((r = text_check("id", k->id, sizeof(k->id), false, e)) < 0 ||
            (r = text_check("name", k->name, sizeof(k->name), true, e)) < 0 ||
            (r = text_check("created_at", k->created_at, sizeof(k->created_at), false, e)) < 0 ||
            (r = text_check("hint", k->hint, sizeof(k->hint), true, e)) < 0)
                return r;
        bool hex = strnlen(k->digest_hex, sizeof(k->digest_hex)) == 64;
        for (size_t i = 0; hex && i < 64; i++)
                hex = (k->digest_hex[i] >= '0' && k->digest_hex[i] <= '9') ||
                      (k->digest_hex[i] >= 'a' && k->digest_hex[i] <= 'f');
        if (!hex)
                return hull_fail(e, -EINVAL, "store: a key's digest must be 64 lowercase hex digits");
        LOCKED(s);
        s->keys_known = false; /* the count is read again */
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, "INSERT INTO api_keys (id, name, digest, created_at, hint) VALUES (?1, ?2, ?3, ?4, ?5)", &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, k->id);
        rc = rc ?: bind_text(st, 2, k->name);
        rc = rc ?: bind_text(st, 3, k->digest_hex);
        rc = rc ?: bind_text(st, 4, k->created_at);
        rc = rc ?: bind_text(st, 5, k->hint);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return hull_fail(e, -EEXIST, "store: that key (or key id %s) is already stored", k->id);
        if (rc != SQLITE_DONE)
                return sql_fail(s->db, rc, "cannot add a key", e);
        return 0;
}

static void key_row(sqlite3_stmt *st, store_key *k) {
        *k = (store_key){0};
        const char *v[5];
        for (int i = 0; i < 5; i++) {
                v[i] = (const char *) sqlite3_column_text(st, i);
                if (!v[i])
                        v[i] = "";
        }
        snprintf(k->id, sizeof(k->id), "%s", v[0]);
        snprintf(k->name, sizeof(k->name), "%s", v[1]);
        snprintf(k->digest_hex, sizeof(k->digest_hex), "%s", v[2]);
        snprintf(k->created_at, sizeof(k->created_at), "%s", v[3]);
        snprintf(k->hint, sizeof(k->hint), "%s", v[4]);
}

int store_key_list(store *s, store_key **ret, size_t *ret_n, hull_error *e) {
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s, "SELECT id, name, digest, created_at, hint FROM api_keys ORDER BY created_at, rowid", &st, e);
        if (r < 0)
                return r;
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, SIZE_MAX / 2);
        size_t n = 0;
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sql_fail(s->db, rc, "cannot list keys", e);
                store_key k;
                key_row(st, &k);
                if (dynbuf_add(&b, &k, sizeof(k)) < 0)
                        return hull_err(e, -ENOMEM, "store: cannot list keys");
                n++;
        }
        store_key *keys = n ? (store_key *) dynbuf_take(&b, NULL) : calloc(1, sizeof(*keys));
        if (!keys)
                return hull_err(e, -ENOMEM, "store: cannot list keys");
        *ret = keys;
        *ret_n = n;
        return 0;
}

int store_key_delete(store *s, const char *id, hull_error *e) {
        int r = id_check("key", id, e);
        if (r < 0)
                return r;
        LOCKED(s);
        s->keys_known = false; /* the count is read again */
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, "DELETE FROM api_keys WHERE id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, id);
        if (rc)
                return bind_fail(s, rc, e);
        if ((r = step_done(s, st, "cannot delete a key", e)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no key %s", id);
        return 0;
}

int store_key_find(store *s, const char digest_hex[static 65], store_key *ret, hull_error *e) {
        LOCKED(s);
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r = prep_cached(s, CACHED_KEY_FIND,
                            "SELECT id, name, digest, created_at, hint FROM api_keys WHERE digest = ?1", &st, e);
        if (r < 0)
                return r;
        char d[65];
        snprintf(d, sizeof(d), "%s", digest_hex);
        int rc = bind_text(st, 1, d);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return 0;
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot find a key", e);
        if (ret)
                key_row(st, ret);
        return 1;
}

/* PRAGMA data_version: the same number until another connection (a `hull key create` beside the
 * daemon) commits a change. */
static int data_version(store *s, int64_t *ret, hull_error *e) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r = prep_cached(s, CACHED_DATA_VERSION, "PRAGMA data_version", &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot read the data version", e);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

int store_key_count(store *s, size_t *ret, hull_error *e) {
        LOCKED(s);
        int64_t version = 0;
        int r = data_version(s, &version, e);
        if (r < 0)
                return r;
        if (s->keys_known && version == s->keys_version) {
                *ret = s->keys;
                return 0;
        }
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        r = prep_cached(s, CACHED_KEY_COUNT, "SELECT count(*) FROM api_keys", &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot count the keys", e);
        s->keys = (size_t) sqlite3_column_int64(st, 0);
        s->keys_version = version;
        s->keys_known = true;
        *ret = s->keys;
        return 0;
}

int store_sessions_with_status(store *s, const char *const *statuses, size_t n, json_t **ret, hull_error *e) {
        uint32_t h = 0;
        _cleanup_free_ char *set = NULL;
        int r = string_set("status", statuses, n, &h, &set, e);
        if (r < 0)
                return r;
        _cleanup_(json_decrefp) json_t *ids = json_array();
        if (!ids)
                return hull_err(e, -ENOMEM, "store: cannot list sessions");
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, "SELECT id FROM sessions WHERE status IN (SELECT value FROM json_each(?1)) ORDER BY created_ms, id",
                 &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, set);
        if (rc)
                return bind_fail(s, rc, e);
        for (;;) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sql_fail(s->db, rc, "cannot list sessions", e);
                const char *id = (const char *) sqlite3_column_text(st, 0);
                if (!id || json_array_append_new(ids, json_string(id)) < 0)
                        return hull_fail(e, -EBADMSG, "store: a stored session id is not text (hull.db is damaged)");
        }
        *ret = TAKE_PTR(ids);
        return 0;
}

/* ---- the sandboxes of a session; AG-UI threads ---- */

int store_sandbox_add(store *s, const char *session_id, const char *fingerprint, const char *opened_at, hull_error *e) {
        int r = id_check("session", session_id, e);
        if (r < 0)
                return r;
        if (!fingerprint || strlen(fingerprint) != 64 || strspn(fingerprint, "0123456789abcdef") != 64)
                return hull_fail(e, -EINVAL, "store: a sandbox's fingerprint must be 64 lowercase hex digits");
        int64_t ms;
        if (store_time_ms(opened_at, &ms) < 0 || strlen(opened_at) >= STORE_TIME_MAX)
                return hull_fail(e, -EINVAL, "store: a sandbox's opened_at must be an RFC 3339 time");
        LOCKED(s);
        if ((r = session_exists(s, session_id, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s,
                 "INSERT INTO session_sandboxes (session_id, fingerprint, opened_at) VALUES (?1, ?2, ?3)"
                 " ON CONFLICT DO NOTHING",
                 &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, session_id);
        rc = rc ?: bind_text(st, 2, fingerprint);
        rc = rc ?: bind_text(st, 3, opened_at);
        if (rc)
                return bind_fail(s, rc, e);
        return step_done(s, st, "cannot keep a session's sandbox", e);
}

int store_sandbox_list(store *s, const char *session_id, json_t **ret, hull_error *e) {
        int r = id_check("session", session_id, e);
        if (r < 0)
                return r;
        _cleanup_(json_decrefp) json_t *arr = json_array();
        if (!arr)
                return hull_err(e, -ENOMEM, "store: out of memory");
        LOCKED(s);
        if ((r = session_exists(s, session_id, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, "SELECT fingerprint, opened_at FROM session_sandboxes WHERE session_id = ?1 ORDER BY rowid", &st,
                 e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, session_id);
        if (rc)
                return bind_fail(s, rc, e);
        for (;;) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sql_fail(s->db, rc, "cannot list a session's sandboxes", e);
                const char *fp = (const char *) sqlite3_column_text(st, 0);
                const char *at = (const char *) sqlite3_column_text(st, 1);
                if (!fp || !at ||
                    json_array_append_new(arr, json_pack("{s:s, s:s}", "fingerprint", fp, "opened_at", at)) < 0)
                        return hull_fail(e, -EBADMSG, "store: a stored sandbox is not text (hull.db is damaged)");
        }
        *ret = TAKE_PTR(arr);
        return 0;
}

static int thread_check(const char *thread_id, hull_error *e) {
        size_t n = thread_id ? strnlen(thread_id, STORE_THREAD_ID_MAX) : 0;
        if (n == 0 || n >= STORE_THREAD_ID_MAX)
                return hull_fail(e, -EINVAL, "store: a thread id must be 1 to %u bytes", STORE_THREAD_ID_MAX - 1);
        return 0;
}

int store_thread_get(store *s, const char *thread_id, char ret[static STORE_ID_MAX], hull_error *e) {
        int r = thread_check(thread_id, e);
        if (r < 0)
                return r;
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, "SELECT session_id FROM agui_threads WHERE thread_id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, thread_id);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot read a thread", e);
        const char *id = (const char *) sqlite3_column_text(st, 0);
        if (!id || strlen(id) >= STORE_ID_MAX)
                return hull_fail(e, -EBADMSG, "store: a stored thread's session is not an id (hull.db is damaged)");
        snprintf(ret, STORE_ID_MAX, "%s", id);
        return 0;
}

int store_thread_put(store *s, const char *thread_id, const char *session_id, hull_error *e) {
        int r = thread_check(thread_id, e);
        if (r < 0 || (r = id_check("session", session_id, e)) < 0)
                return r;
        LOCKED(s);
        if ((r = session_exists(s, session_id, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = prep(s, "INSERT INTO agui_threads (thread_id, session_id) VALUES (?1, ?2)", &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, thread_id);
        rc = rc ?: bind_text(st, 2, session_id);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return hull_fail(e, -EEXIST, "store: thread %.64s has a session already", thread_id);
        if (rc != SQLITE_DONE)
                return sql_fail(s->db, rc, "cannot keep a thread", e);
        return 0;
}

/* ---- hull's named environments ---- */

static int env_row(sqlite3_stmt *st, int col, json_t **ret, hull_error *e) {
        const char *body = (const char *) sqlite3_column_text(st, col);
        json_error_t je;
        json_t *o = body ? json_loads(body, 0, &je) : NULL;
        if (!json_is_object(o)) {
                json_decref(o);
                return hull_fail(e, -EBADMSG, "store: an environment's stored body is not a JSON object");
        }
        *ret = o;
        return 0;
}

int store_env_put(store *s, const char *name, const json_t *spec, const char *digest, json_t **ret, hull_error *e) {
        int r;
        if ((r = text_check("name", name, STORE_NAME_MAX, false, e)) < 0)
                return r;
        LOCKED(s);
        _cleanup_tx_ tx t = {0};
        if ((r = tx_begin(s, &t, e)) < 0)
                return r;
        int64_t newest = 0;
        _cleanup_(json_decrefp) json_t *cur = NULL;
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                if ((r = prep(s, "SELECT version, body FROM env_specs WHERE name = ?1 AND latest = 1", &st, e)) < 0)
                        return r;
                int rc = bind_text(st, 1, name);
                if (rc)
                        return bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if (rc == SQLITE_ROW) {
                        newest = sqlite3_column_int64(st, 0);
                        if ((r = env_row(st, 1, &cur, e)) < 0)
                                return r;
                } else if (rc != SQLITE_DONE)
                        return sql_fail(s->db, rc, "cannot read an environment", e);
        }
        /* The same spec again is no new version. */
        if (cur && json_equal(json_object_get(cur, "spec"), (json_t *) spec)) {
                *ret = TAKE_PTR(cur);
                return 0;
        }
        char now[STORE_TIME_MAX];
        int64_t now_ms = 0;
        store_now_rfc3339(now);
        (void) store_time_ms(now, &now_ms);
        _cleanup_(json_decrefp) json_t *o =
                json_pack("{s:s,s:I,s:s,s:s,s:O}", "name", name, "version", (json_int_t) (newest + 1), "created_at",
                          now, "digest", digest ? digest : "", "spec", (json_t *) spec);
        _cleanup_free_ char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (!body)
                return hull_err(e, -ENOMEM, "store: out of memory");
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                if ((r = prep(s, "UPDATE env_specs SET latest = 0 WHERE name = ?1 AND latest = 1", &st, e)) < 0)
                        return r;
                int rc = bind_text(st, 1, name);
                if (rc)
                        return bind_fail(s, rc, e);
                if ((r = step_done(s, st, "cannot update an environment", e)) < 0)
                        return r;
        }
        {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                if ((r = prep(s,
                              "INSERT INTO env_specs (name, version, latest, created_ms, body)"
                              " VALUES (?1, ?2, 1, ?3, ?4)",
                              &st, e)) < 0)
                        return r;
                int rc = bind_text(st, 1, name);
                rc = rc ?: sqlite3_bind_int64(st, 2, newest + 1);
                rc = rc ?: sqlite3_bind_int64(st, 3, now_ms);
                rc = rc ?: bind_text(st, 4, body);
                if (rc)
                        return bind_fail(s, rc, e);
                if ((r = step_done(s, st, "cannot store an environment", e)) < 0)
                        return r;
        }
        if ((r = tx_commit(&t, e)) < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int store_env_get(store *s, const char *name, int64_t version, json_t **ret, hull_error *e) {
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s,
                     version > 0 ? "SELECT body FROM env_specs WHERE name = ?1 AND version = ?2"
                                 : "SELECT body FROM env_specs WHERE name = ?1 AND latest = 1",
                     &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, name);
        if (!rc && version > 0)
                rc = sqlite3_bind_int64(st, 2, version);
        if (rc)
                return bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no environment %.64s", name);
        if (rc != SQLITE_ROW)
                return sql_fail(s->db, rc, "cannot read an environment", e);
        return env_row(st, 0, ret, e);
}

int store_env_list(store *s, bool all_versions, json_t **ret, hull_error *e) {
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s,
                     all_versions ? "SELECT body FROM env_specs ORDER BY name, version"
                                  : "SELECT body FROM env_specs WHERE latest = 1 ORDER BY name",
                     &st, e);
        if (r < 0)
                return r;
        _cleanup_(json_decrefp) json_t *a = json_array();
        if (!a)
                return hull_err(e, -ENOMEM, "store: out of memory");
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sql_fail(s->db, rc, "cannot list environments", e);
                json_t *o;
                if ((r = env_row(st, 0, &o, e)) < 0)
                        return r;
                if (json_array_append_new(a, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        *ret = TAKE_PTR(a);
        return 0;
}

int store_env_delete(store *s, const char *name, hull_error *e) {
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = prep(s, "DELETE FROM env_specs WHERE name = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = bind_text(st, 1, name);
        if (rc)
                return bind_fail(s, rc, e);
        if ((r = step_done(s, st, "cannot delete an environment", e)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no environment %.64s", name);
        return 0;
}
