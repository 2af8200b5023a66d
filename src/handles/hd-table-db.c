/* hd-table-db.c: what the table code shares (hd-table-internal.h): SQLite connections with
 * their defensive settings and time budget, the column set of an ingest or a query result, and
 * SQLite values as JSON. */
#include "hd-table-internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hd-internal.h"
#include "limits.h"
#include "utf8.h"

/* ---- connections ---- */

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int progress(void *userdata) {
        budget *b = userdata;
        if (now_ns() > b->deadline_ns)
                b->expired = true;
        return b->expired;
}

void hdt_budget_start(budget *b, uint64_t ms) {
        *b = (budget){.deadline_ns = now_ns() + ms * 1000000ULL};
}

int hdt_sql_fail(sqlite3 *db, int rc, const budget *b, hull_error *e, const char *what) {
        if (b && b->expired)
                return hull_err_hint(e, -ETIMEDOUT, "filter or aggregate more, or ask for a longer budget",
                                     "handles: %s ran past its time budget", what);
        const char *msg = db ? sqlite3_errmsg(db) : "out of memory";
        switch (rc & 0xff) {
        case SQLITE_NOMEM:
                return hull_err(e, -ENOMEM, "handles: %s: %s", what, msg);
        case SQLITE_AUTH:
                return hull_err_hint(e, -EPERM, "queries may only read", "handles: %s: %s", what, msg);
        case SQLITE_TOOBIG:
                return hull_err(e, -EFBIG, "handles: %s: %s", what, msg);
        case SQLITE_IOERR:
        case SQLITE_CANTOPEN:
        case SQLITE_FULL:
                return hull_err(e, -EIO, "handles: %s: %s", what, msg);
        default:
                return hull_err(e, -EBADMSG, "handles: %s: %s", what, msg);
        }
}

int hdt_db_open(int dir_fd, const char *name, int mode, budget *b, unsigned attached, sqlite3 **ret, hull_error *e) {
        if (!dlib_sqlite3_load(e))
                return -ENOSYS;
        char path[128], uri[160];
        int flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX |
                    (mode == DB_READ ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        if (!name) { /* the query connection: nothing of its own, handles are attached */
                snprintf(uri, sizeof(uri), "file::memory:");
                flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY;
        } else {
                int k = hd_sqlite_path(dir_fd, name, path, sizeof(path));
                if (k < 0)
                        return hull_err(e, k, "handles: path too long");
                snprintf(uri, sizeof(uri), mode == DB_READ ? "file:%s?immutable=1" : "file:%s", path);
        }
        sqlite3 *db = NULL;
        int rc = sqlite3_open_v2(uri, &db, flags, NULL);
        _cleanup_db_ sqlite3 *owned = db;
        if (rc != SQLITE_OK)
                return hdt_sql_fail(db, rc, NULL, e, "cannot open a table");
        sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 0, NULL);
        sqlite3_limit(db, SQLITE_LIMIT_LENGTH, (int) HD_SQLITE_LENGTH_MAX);
        sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, (int) HD_SQLITE_SQL_MAX);
        sqlite3_limit(db, SQLITE_LIMIT_COLUMN, 2000);
        sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, (int) attached);
        sqlite3_limit(db, SQLITE_LIMIT_EXPR_DEPTH, 200);
        sqlite3_limit(db, SQLITE_LIMIT_COMPOUND_SELECT, 100);
        sqlite3_limit(db, SQLITE_LIMIT_TRIGGER_DEPTH, 1);
        sqlite3_limit(db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000);
        sqlite3_limit(db, SQLITE_LIMIT_FUNCTION_ARG, 100);
        if (b)
                sqlite3_progress_handler(db, HD_SQLITE_PROGRESS_OPS, progress, b);
        char pragmas[256];
        snprintf(pragmas, sizeof(pragmas),
                 "PRAGMA mmap_size=0; PRAGMA cell_size_check=ON; PRAGMA cache_size=-%u; PRAGMA temp_store=FILE;%s",
                 HD_SQLITE_CACHE_KIB,
                 mode == DB_CREATE ? " PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
                                   : "");
        rc = sqlite3_exec(db, pragmas, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return hdt_sql_fail(db, rc, b, e, "cannot set up a table");
        *ret = TAKE_PTR(owned);
        return 0;
}

char *hdt_quote_ident(const char *name) {
        size_t n = strlen(name), q = 0;
        for (size_t i = 0; i < n; i++)
                q += name[i] == '"';
        char *out = malloc(n + q + 3), *o = out;
        if (!out)
                return NULL;
        *o++ = '"';
        for (size_t i = 0; i < n; i++) {
                *o++ = name[i];
                if (name[i] == '"')
                        *o++ = '"';
        }
        *o++ = '"';
        *o = 0;
        return out;
}

/* ---- columns ---- */

void hdt_columns_done(columns *cs) {
        for (size_t i = 0; i < cs->n; i++)
                free(cs->c[i].name);
        free(cs->c);
        free(cs->slots);
}

uint64_t hdt_hash_bytes(const void *p, size_t n, uint64_t seed) {
        const unsigned char *s = p;
        uint64_t h = 0xcbf29ce484222325ULL ^ seed;
        for (size_t i = 0; i < n; i++)
                h = (h ^ s[i]) * 0x100000001b3ULL;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        return h;
}

int hdt_columns_find(columns *cs, const char *name, size_t n) {
        if (!cs->slots)
                return -1;
        for (size_t i = hdt_hash_bytes(name, n, 0) & (cs->n_slots - 1);; i = (i + 1) & (cs->n_slots - 1)) {
                int32_t s = cs->slots[i];
                if (s < 0)
                        return -1;
                if (strlen(cs->c[s].name) == n && memcmp(cs->c[s].name, name, n) == 0)
                        return s;
        }
}

int hdt_columns_add(columns *cs, const char *name, size_t n, hull_error *e) {
        if (cs->n >= HD_TABLE_COLUMNS_MAX)
                return hull_err_hint(e, -E2BIG, "select fewer columns", "handles: more than %u columns",
                                     HD_TABLE_COLUMNS_MAX);
        if (!cs->slots) {
                cs->n_slots = 4096; /* > 2 * HD_TABLE_COLUMNS_MAX */
                cs->slots = malloc(cs->n_slots * sizeof(int32_t));
                cs->c = calloc(HD_TABLE_COLUMNS_MAX, sizeof(column));
                if (!cs->slots || !cs->c)
                        return hull_err(e, -ENOMEM, "handles: cannot ingest");
                memset(cs->slots, 0xff, cs->n_slots * sizeof(int32_t));
        }
        char buf[HD_COLUMN_NAME_MAX + 32];
        size_t len = MIN(n, (size_t) HD_COLUMN_NAME_MAX);
        while (len > 0 && len < n && ((unsigned char) name[len] & 0xc0) == 0x80)
                len--;
        if (memchr(name, 0, len))
                return hull_err(e, -EBADMSG, "handles: a column name holds a NUL byte");
        if (len == 0)
                len = (size_t) snprintf(buf, sizeof(buf), "col_%zu", cs->n + 1);
        else
                memcpy(buf, name, len);
        buf[len] = 0;
        for (unsigned k = 2; hdt_columns_find(cs, buf, strlen(buf)) >= 0; k++)
                snprintf(buf + len, sizeof(buf) - len, "_%u", k);
        if (!utf8_is_valid(buf, strlen(buf)))
                return hull_err(e, -EILSEQ, "handles: a column name is not UTF-8");
        column *c = &cs->c[cs->n];
        c->name = strdup(buf);
        if (!c->name)
                return hull_err(e, -ENOMEM, "handles: cannot ingest");
        c->type = HD_TYPE_NULL;
        size_t i = hdt_hash_bytes(buf, strlen(buf), 0) & (cs->n_slots - 1);
        while (cs->slots[i] >= 0)
                i = (i + 1) & (cs->n_slots - 1);
        cs->slots[i] = (int32_t) cs->n;
        return (int) cs->n++;
}

int hdt_step_insert(sqlite3 *db, sqlite3_stmt *st, hull_error *e) {
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : hdt_sql_fail(db, rc, NULL, e, "cannot insert a row");
}

/* ---- values ---- */

const char *hdt_decl_type_name(const char *decl) {
        char up[64];
        size_t n = 0;
        for (; decl && decl[n] && n + 1 < sizeof(up); n++)
                up[n] = (char) (decl[n] >= 'a' && decl[n] <= 'z' ? decl[n] - 32 : decl[n]);
        up[n] = 0;
        if (n == 0)
                return "any";
        if (strstr(up, "BOOL"))
                return "boolean";
        if (strstr(up, "TIMESTAMP") || strstr(up, "DATETIME"))
                return "timestamp";
        if (strstr(up, "DATE"))
                return "date";
        if (strstr(up, "INT"))
                return "integer";
        if (strstr(up, "CHAR") || strstr(up, "CLOB") || strstr(up, "TEXT"))
                return "text";
        if (strstr(up, "BLOB"))
                return "blob";
        if (strstr(up, "REAL") || strstr(up, "FLOA") || strstr(up, "DOUB") || strstr(up, "NUM") || strstr(up, "DEC"))
                return "real";
        return "any";
}

json_t *hdt_text_json(const char *p, size_t n) {
        json_t *s = json_stringn(p, n);
        if (s)
                return s;
        char *fixed = NULL;
        size_t fl;
        if (utf8_make_valid(p, n, &fixed, &fl) < 0)
                return json_null();
        s = json_stringn(fixed, fl);
        free(fixed);
        return s ? s : json_null();
}

json_t *hdt_column_json(sqlite3_stmt *st, int i) {
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER:
                return json_integer(sqlite3_column_int64(st, i));
        case SQLITE_FLOAT: {
                json_t *r = json_real(sqlite3_column_double(st, i));
                return r ? r : json_null();
        }
        case SQLITE_TEXT: {
                const char *p = (const char *) sqlite3_column_text(st, i);
                return hdt_text_json(p ? p : "", (size_t) sqlite3_column_bytes(st, i));
        }
        case SQLITE_BLOB: {
                char b[48];
                snprintf(b, sizeof(b), "<blob, %d bytes>", sqlite3_column_bytes(st, i));
                return json_string(b);
        }
        default:
                return json_null();
        }
}
