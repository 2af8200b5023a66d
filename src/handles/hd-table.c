/* hd-table.c: table handles: ingesting CSV/TSV/JSON into an SQLite file, checking adopted
 * SQLite files defensively, summaries, inspect (with a HyperLogLog distinct estimate) and
 * read-only queries. See hd-store.h for the contracts. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dlib-sqlite3.h"
#include "dynbuf.h"
#include "hd-csv.h"
#include "hd-internal.h"
#include "hd-json.h"
#include "limits.h"
#include "utf8.h"

#define TABLE "data"

/* ---- connections ---- */

typedef struct budget {
        uint64_t deadline_ns;
        bool expired;
} budget;

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

static void budget_start(budget *b, uint64_t ms) {
        *b = (budget){.deadline_ns = now_ns() + ms * 1000000ULL};
}

/* Map an SQLite failure to errno and a message. */
static int sql_fail(sqlite3 *db, int rc, const budget *b, hull_error *e, const char *what) {
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

enum { DB_READ, DB_CREATE };

static int db_open(int dir_fd, const char *name, int mode, budget *b, unsigned attached, sqlite3 **ret, hull_error *e) {
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
                return sql_fail(db, rc, NULL, e, "cannot open a table");
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
                return sql_fail(db, rc, b, e, "cannot set up a table");
        *ret = TAKE_PTR(owned);
        return 0;
}

/* "name" with quotes doubled, into a new string. */
static char *quote_ident(const char *name) {
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

/* ---- ingest ---- */

typedef struct column {
        char *name;
        hd_type type;
} column;

typedef struct columns {
        column *c;
        size_t n;
        /* open addressing over names, for JSON records */
        int32_t *slots;
        size_t n_slots;
} columns;

static void columns_done(columns *cs) {
        for (size_t i = 0; i < cs->n; i++)
                free(cs->c[i].name);
        free(cs->c);
        free(cs->slots);
}

static uint64_t hash_bytes(const void *p, size_t n, uint64_t seed) {
        const unsigned char *s = p;
        uint64_t h = 0xcbf29ce484222325ULL ^ seed;
        for (size_t i = 0; i < n; i++)
                h = (h ^ s[i]) * 0x100000001b3ULL;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        return h;
}

static int columns_find(columns *cs, const char *name, size_t n) {
        if (!cs->slots)
                return -1;
        for (size_t i = hash_bytes(name, n, 0) & (cs->n_slots - 1);; i = (i + 1) & (cs->n_slots - 1)) {
                int32_t s = cs->slots[i];
                if (s < 0)
                        return -1;
                if (strlen(cs->c[s].name) == n && memcmp(cs->c[s].name, name, n) == 0)
                        return s;
        }
}

/* Add a column named name[0..n) (made unique, "col_N" when empty). Returns its index. */
static int columns_add(columns *cs, const char *name, size_t n, hull_error *e) {
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
        for (unsigned k = 2; columns_find(cs, buf, strlen(buf)) >= 0; k++)
                snprintf(buf + len, sizeof(buf) - len, "_%u", k);
        if (!utf8_is_valid(buf, strlen(buf)))
                return hull_err(e, -EILSEQ, "handles: a column name is not UTF-8");
        column *c = &cs->c[cs->n];
        c->name = strdup(buf);
        if (!c->name)
                return hull_err(e, -ENOMEM, "handles: cannot ingest");
        c->type = HD_TYPE_NULL;
        size_t i = hash_bytes(buf, strlen(buf), 0) & (cs->n_slots - 1);
        while (cs->slots[i] >= 0)
                i = (i + 1) & (cs->n_slots - 1);
        cs->slots[i] = (int32_t) cs->n;
        return (int) cs->n++;
}

/* Create the table and prepare its INSERT. */
static int create_table(sqlite3 *db, const columns *cs, sqlite3_stmt **ret, hull_error *e) {
        size_t size = 64;
        for (size_t i = 0; i < cs->n; i++)
                size += strlen(cs->c[i].name) * 2 + 32;
        _cleanup_free_ char *create = malloc(size), *insert = malloc(size);
        if (!create || !insert)
                return hull_err(e, -ENOMEM, "handles: cannot ingest");
        size_t o = (size_t) snprintf(create, size, "CREATE TABLE " TABLE " (");
        size_t p = (size_t) snprintf(insert, size, "INSERT INTO " TABLE " VALUES (");
        for (size_t i = 0; i < cs->n; i++) {
                _cleanup_free_ char *q = quote_ident(cs->c[i].name);
                if (!q)
                        return hull_err(e, -ENOMEM, "handles: cannot ingest");
                o += (size_t) snprintf(create + o, size - o, "%s%s %s", i ? ", " : "", q, hd_type_sql(cs->c[i].type));
                p += (size_t) snprintf(insert + p, size - p, "%s?", i ? "," : "");
        }
        snprintf(create + o, size - o, ")");
        snprintf(insert + p, size - p, ")");
        int rc = sqlite3_exec(db, create, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(db, insert, -1, ret, NULL);
        return rc == SQLITE_OK ? 0 : sql_fail(db, rc, NULL, e, "cannot create a table");
}

static int step_insert(sqlite3 *db, sqlite3_stmt *st, hull_error *e) {
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : sql_fail(db, rc, NULL, e, "cannot insert a row");
}

/* Room for n bytes and a NUL in s, what it held dropped; NULL when out of memory. */
static char *scratch_get(dynbuf *s, size_t n) {
        dynbuf_reset(s);
        return dynbuf_reserve(s, n) < 0 ? NULL : s->buf;
}

static int bind_cell(sqlite3_stmt *st, int idx, hd_type col, const char *p, size_t n, bool copy, dynbuf *sc) {
        if (n == 0)
                return sqlite3_bind_null(st, idx);
        switch (col) {
        case HD_TYPE_INTEGER:
                return sqlite3_bind_int64(st, idx, hd_parse_integer(p, n));
        case HD_TYPE_REAL: {
                char *b = scratch_get(sc, n);
                if (!b)
                        return SQLITE_NOMEM;
                memcpy(b, p, n);
                b[n] = 0;
                return sqlite3_bind_double(st, idx, strtod(b, NULL));
        }
        case HD_TYPE_BOOLEAN:
                return sqlite3_bind_int64(st, idx, hd_parse_boolean(p, n));
        case HD_TYPE_NULL:
        case HD_TYPE_DATE:
        case HD_TYPE_TIMESTAMP:
        case HD_TYPE_TEXT:
        case _HD_TYPE_MAX:
                break;
        }
        return sqlite3_bind_text(st, idx, p, (int) n, copy ? SQLITE_TRANSIENT : SQLITE_STATIC);
}

static int ingest_delimited(sqlite3 *db, const char *buf, size_t len, char delim, hull_error *e) {
        const char *what = delim == ',' ? "CSV" : "TSV";
        if (!utf8_is_valid(buf, len))
                return hull_err_hint(e, -EILSEQ, "convert it to UTF-8", "handles: the %s is not UTF-8", what);
        _cleanup_free_ hd_csv_field *f = calloc(HD_TABLE_COLUMNS_MAX + 1, sizeof(*f));
        _cleanup_(columns_done) columns cs = {0};
        _cleanup_free_ char *unesc = NULL;
        if (!f)
                return hull_err(e, -ENOMEM, "handles: cannot ingest");
        hd_csv c;
        uint64_t line;
        hd_csv_init(&c, buf, len, delim);
        int nf;
        do /* the header: the first line that is not blank */
                nf = hd_csv_next(&c, f, HD_TABLE_COLUMNS_MAX, &line, e);
        while (nf == 1 && f[0].n == 0 && !f[0].quoted);
        if (nf == -E2BIG)
                return hull_err_hint(e, -E2BIG, "select fewer columns",
                                     "handles: the %s header has more than %u columns", what, HD_TABLE_COLUMNS_MAX);
        if (nf < 0)
                return nf;
        if (nf == 0)
                return hull_err(e, -ENODATA, "handles: the %s is empty: a header row is needed", what);
        for (int i = 0; i < nf; i++) {
                char *name = malloc(f[i].n + 1);
                if (!name)
                        return hull_err(e, -ENOMEM, "handles: cannot ingest");
                size_t n = f[i].escaped ? hd_csv_unescape(&f[i], name) : (memcpy(name, f[i].p, f[i].n), f[i].n);
                int k = columns_add(&cs, name, n, e);
                free(name);
                if (k < 0)
                        return k;
        }
        hd_csv header_end = c;
        /* pass 1: types */
        for (;;) {
                nf = hd_csv_next(&c, f, (size_t) cs.n + 1, &line, e);
                if (nf == 0)
                        break;
                if (nf == 1 && f[0].n == 0 && !f[0].quoted)
                        continue;
                if (nf == -E2BIG || (nf > 0 && (size_t) nf != cs.n))
                        return hull_err_hint(e, -EBADMSG, "fix the row or quote fields holding the delimiter",
                                             "handles: %s line %" PRIu64 " has %s%d fields, the header has %zu", what,
                                             line, nf < 0 ? "more than " : "", nf < 0 ? (int) cs.n : nf, cs.n);
                if (nf < 0)
                        return nf;
                for (size_t i = 0; i < cs.n; i++)
                        if (cs.c[i].type != HD_TYPE_TEXT)
                                cs.c[i].type = hd_type_merge(cs.c[i].type,
                                                             f[i].escaped ? HD_TYPE_TEXT : hd_classify(f[i].p, f[i].n));
        }
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int k = create_table(db, &cs, &st, e);
        if (k < 0)
                return k;
        /* pass 2: rows */
        c = header_end;
        /* Scratch for one cell: a number to parse, an escaped field undone (never longer than the
         * input). */
        _cleanup_dynbuf_ dynbuf sc, esc;
        dynbuf_init(&sc, len);
        dynbuf_init(&esc, len);
        for (k = 0;;) {
                nf = hd_csv_next(&c, f, cs.n, &line, NULL);
                if (nf <= 0)
                        break;
                if (nf == 1 && f[0].n == 0 && !f[0].quoted)
                        continue;
                for (size_t i = 0; i < cs.n && k == 0; i++) {
                        const char *p = f[i].p;
                        size_t n = f[i].n;
                        bool copy = false;
                        if (f[i].escaped) {
                                char *b = scratch_get(&esc, n);
                                if (!b) {
                                        k = hull_err(e, -ENOMEM, "handles: cannot ingest");
                                        break;
                                }
                                n = hd_csv_unescape(&f[i], b);
                                p = b, copy = true;
                        }
                        int rc = bind_cell(st, (int) i + 1, cs.c[i].type, p, n, copy, &sc);
                        if (rc != SQLITE_OK)
                                k = sql_fail(db, rc, NULL, e, "cannot insert a row");
                }
                if (k == 0)
                        k = step_insert(db, st, e);
                if (k < 0)
                        break;
        }
        (void) unesc;
        return k;
}

/* JSON records: pass 1 learns columns and types, pass 2 binds. */
typedef struct json_ingest {
        sqlite3 *db;
        sqlite3_stmt *st;
        columns cs;
        int pass;
        uint64_t record;
        hull_error *e;
} json_ingest;

static hd_type json_value_type(json_t *v) {
        switch (json_typeof(v)) {
        case JSON_INTEGER:
                return HD_TYPE_INTEGER;
        case JSON_REAL:
                return HD_TYPE_REAL;
        case JSON_TRUE:
        case JSON_FALSE:
                return HD_TYPE_BOOLEAN;
        case JSON_NULL:
                return HD_TYPE_NULL;
        case JSON_STRING: {
                hd_type t = hd_classify(json_string_value(v), json_string_length(v));
                return t == HD_TYPE_DATE || t == HD_TYPE_TIMESTAMP || t == HD_TYPE_NULL ? t : HD_TYPE_TEXT;
        }
        case JSON_OBJECT:
        case JSON_ARRAY:
                break;
        }
        return HD_TYPE_TEXT;
}

static int bind_json(sqlite3_stmt *st, int idx, hd_type col, json_t *v) {
        switch (json_typeof(v)) {
        case JSON_NULL:
                return sqlite3_bind_null(st, idx);
        case JSON_STRING:
                if (json_string_length(v) == 0)
                        return sqlite3_bind_null(st, idx);
                return sqlite3_bind_text(st, idx, json_string_value(v), (int) json_string_length(v), SQLITE_TRANSIENT);
        case JSON_INTEGER:
                if (col == HD_TYPE_REAL)
                        return sqlite3_bind_double(st, idx, (double) json_integer_value(v));
                if (col == HD_TYPE_INTEGER)
                        return sqlite3_bind_int64(st, idx, json_integer_value(v));
                break;
        case JSON_REAL:
                if (col == HD_TYPE_REAL)
                        return sqlite3_bind_double(st, idx, json_real_value(v));
                break;
        case JSON_TRUE:
        case JSON_FALSE:
                if (col == HD_TYPE_BOOLEAN)
                        return sqlite3_bind_int64(st, idx, json_is_true(v));
                break;
        case JSON_OBJECT:
        case JSON_ARRAY:
                break;
        }
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        if (!text)
                return SQLITE_NOMEM;
        return sqlite3_bind_text(st, idx, text, -1, free);
}

static int json_record(json_ingest *ji, const char *p, size_t n) {
        json_error_t err;
        ji->record++;
        _cleanup_(json_decrefp) json_t *o = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        if (!o && strstr(err.text, "too big"))
                o = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &err);
        if (!o)
                return hull_err(ji->e, -EBADMSG, "handles: record %" PRIu64 " is not JSON: %s", ji->record, err.text);
        if (!json_is_object(o))
                return hull_err_hint(ji->e, -EBADMSG, "save an array of objects (records)",
                                     "handles: record %" PRIu64 " is not a JSON object", ji->record);
        const char *key;
        json_t *v;
        if (ji->pass == 1) {
                json_object_foreach(o, key, v) {
                        int i = columns_find(&ji->cs, key, strlen(key));
                        if (i < 0) {
                                i = columns_add(&ji->cs, key, strlen(key), ji->e);
                                if (i < 0)
                                        return i;
                                if (strcmp(ji->cs.c[i].name, key) != 0) /* renamed: an empty key */
                                        continue;
                        }
                        if (ji->cs.c[i].type != HD_TYPE_TEXT)
                                ji->cs.c[i].type = hd_type_merge(ji->cs.c[i].type, json_value_type(v));
                }
                return 0;
        }
        for (size_t i = 0; i < ji->cs.n; i++)
                sqlite3_bind_null(ji->st, (int) i + 1);
        json_object_foreach(o, key, v) {
                int i = columns_find(&ji->cs, key, strlen(key));
                if (i < 0)
                        continue;
                int rc = bind_json(ji->st, i + 1, ji->cs.c[i].type, v);
                if (rc != SQLITE_OK)
                        return sql_fail(ji->db, rc, NULL, ji->e, "cannot insert a row");
        }
        return step_insert(ji->db, ji->st, ji->e);
}

static int json_element(const char *p, size_t n, void *userdata) {
        return json_record(userdata, p, n);
}

static int json_lines(json_ingest *ji, const char *buf, size_t len) {
        ji->record = 0;
        for (size_t pos = 0; pos < len;) {
                const char *nl = memchr(buf + pos, '\n', len - pos);
                size_t end = nl ? (size_t) (nl - buf) : len;
                const char *p = buf + pos;
                size_t n = end - pos;
                pos = end + 1;
                while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
                        n--;
                while (n > 0 && (*p == ' ' || *p == '\t'))
                        p++, n--;
                if (n == 0) {
                        ji->record++; /* records are counted as lines */
                        continue;
                }
                if (n > HD_FIELD_MAX)
                        return hull_err(ji->e, -EFBIG, "handles: line %" PRIu64 " is longer than %llu bytes",
                                        ji->record + 1, (unsigned long long) HD_FIELD_MAX);
                int k = json_record(ji, p, n);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int ingest_json(sqlite3 *db, const char *buf, size_t len, bool lines, hull_error *e) {
        json_ingest ji = {.db = db, .pass = 1, .e = e};
        int k;
        if (!lines) {
                size_t i = 0;
                while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\t' || buf[i] == '\r'))
                        i++;
                if (i >= len || buf[i] != '[') {
                        columns_done(&ji.cs);
                        return hull_err_hint(e, -EBADMSG, "save an array of objects (records)",
                                             "handles: the JSON is not an array");
                }
                k = hd_json_scan(buf, len, NULL, json_element, &ji, e);
        } else
                k = json_lines(&ji, buf, len);
        if (k == 0 && ji.cs.n == 0)
                k = hull_err(e, -ENODATA, "handles: no records with keys: a table needs at least one column");
        if (k == 0)
                k = create_table(db, &ji.cs, &ji.st, e);
        if (k == 0) {
                ji.pass = 2;
                ji.record = 0;
                k = lines ? json_lines(&ji, buf, len) : hd_json_scan(buf, len, NULL, json_element, &ji, e);
        }
        if (ji.st)
                sqlite3_finalize(ji.st);
        columns_done(&ji.cs);
        return k;
}

int hd_table_ingest(int dir_fd, const char *name, hd_format f, const char *buf, size_t len, hull_error *e) {
        _cleanup_db_ sqlite3 *db = NULL;
        int k = db_open(dir_fd, name, DB_CREATE, NULL, 0, &db, e);
        if (k == 0) {
                switch (f) {
                case HD_FORMAT_CSV:
                        k = ingest_delimited(db, buf, len, ',', e);
                        break;
                case HD_FORMAT_TSV:
                        k = ingest_delimited(db, buf, len, '\t', e);
                        break;
                case HD_FORMAT_JSON_ARRAY:
                        k = ingest_json(db, buf, len, false, e);
                        break;
                case HD_FORMAT_JSON_LINES:
                        k = ingest_json(db, buf, len, true, e);
                        break;
                case HD_FORMAT_JSON:
                case HD_FORMAT_TEXT:
                case HD_FORMAT_BINARY:
                case HD_FORMAT_SQLITE:
                case _HD_FORMAT_MAX:
                case _HD_FORMAT_INVALID:
                        k = hull_err(e, -EINVAL, "handles: not a table format");
                }
        }
        if (k == 0) {
                int rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
                if (rc != SQLITE_OK)
                        k = sql_fail(db, rc, NULL, e, "cannot write a table");
        }
        if (db)
                sqlite3_close_v2(TAKE_PTR(db));
        if (k < 0)
                unlinkat(dir_fd, name, 0);
        return k;
}

/* ---- reading tables ---- */

/* The one table's name (and checks: see hd_adopt_fd). *ret is freed by the caller. */
static int one_table(sqlite3 *db, budget *b, bool strict, char **ret, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "SELECT type, name, coalesce(sql, '') FROM sqlite_schema", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sql_fail(db, rc, b, e, "the table file cannot be read");
        _cleanup_free_ char *table = NULL;
        unsigned tables = 0;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *type = (const char *) sqlite3_column_text(st, 0);
                const char *name = (const char *) sqlite3_column_text(st, 1);
                const char *sql = (const char *) sqlite3_column_text(st, 2);
                if (!type || !name || !sql)
                        return hull_err(e, -EBADMSG, "handles: the table file has a malformed schema");
                if (strcmp(type, "index") == 0)
                        continue;
                if (strcmp(type, "table") != 0)
                        return hull_err_hint(e, -EBADMSG, "save plain tables only",
                                             "handles: the table file holds a %s (%.64s): only one table is allowed",
                                             type, name);
                if (strncmp(name, "sqlite_", 7) == 0 && strncasecmp(sql, "CREATE VIRTUAL", 14) != 0)
                        continue; /* sqlite_sequence, sqlite_stat1: SQLite's own */
                if (strncasecmp(sql, "CREATE VIRTUAL", 14) == 0)
                        return hull_err_hint(e, -EBADMSG, "save plain tables only",
                                             "handles: the table file holds a virtual table (%.64s)", name);
                if (++tables > 1)
                        return hull_err_hint(e, -EBADMSG, "save one table per handle",
                                             "handles: the table file holds more than one table");
                free(table);
                table = strdup(name);
                if (!table)
                        return hull_err(e, -ENOMEM, "handles: cannot read a table");
        }
        if (rc != SQLITE_DONE)
                return sql_fail(db, rc, b, e, "the table file cannot be read");
        if (!table)
                return hull_err(e, -EBADMSG, "handles: the table file holds no table");
        if (strict && !utf8_is_valid(table, strlen(table)))
                return hull_err(e, -EBADMSG, "handles: the table name is not UTF-8");
        *ret = TAKE_PTR(table);
        return 0;
}

static const char *decl_type_name(const char *decl) {
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

typedef struct table_info {
        char *name, *qname;
        json_t *schema;  /* {column: type} in order */
        json_t *columns; /* [names] */
        int64_t n_rows;
} table_info;

static void table_info_done(table_info *t) {
        free(t->name);
        free(t->qname);
        json_decref(t->schema);
        json_decref(t->columns);
}

static json_t *text_json(const char *p, size_t n) {
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

static json_t *column_json(sqlite3_stmt *st, int i) {
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER:
                return json_integer(sqlite3_column_int64(st, i));
        case SQLITE_FLOAT: {
                json_t *r = json_real(sqlite3_column_double(st, i));
                return r ? r : json_null();
        }
        case SQLITE_TEXT: {
                const char *p = (const char *) sqlite3_column_text(st, i);
                return text_json(p ? p : "", (size_t) sqlite3_column_bytes(st, i));
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

static int table_load_info(sqlite3 *db, budget *b, bool check, table_info *t, hull_error *e) {
        int k = one_table(db, b, check, &t->name, e);
        if (k < 0)
                return k;
        t->qname = quote_ident(t->name);
        t->schema = json_object();
        t->columns = json_array();
        if (!t->qname || !t->schema || !t->columns)
                return hull_err(e, -ENOMEM, "handles: cannot read a table");
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "SELECT name, coalesce(type, ''), hidden FROM pragma_table_xinfo(?)", -1, &st,
                                    NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
        if (rc != SQLITE_OK)
                return sql_fail(db, rc, b, e, "the table file cannot be read");
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *name = (const char *) sqlite3_column_text(st, 0);
                const char *type = (const char *) sqlite3_column_text(st, 1);
                if (!name)
                        return hull_err(e, -EBADMSG, "handles: a column has no name");
                if (sqlite3_column_int64(st, 2) != 0)
                        return hull_err_hint(e, -EBADMSG, "save plain columns",
                                             "handles: column %.64s is generated or hidden", name);
                if (json_array_size(t->columns) >= HD_TABLE_COLUMNS_MAX)
                        return hull_err(e, -E2BIG, "handles: the table has more than %u columns", HD_TABLE_COLUMNS_MAX);
                if (!utf8_is_valid(name, strlen(name)))
                        return hull_err(e, -EBADMSG, "handles: a column name is not UTF-8");
                if (json_object_get(t->schema, name))
                        return hull_err(e, -EBADMSG, "handles: column %.64s appears twice", name);
                json_object_set_new(t->schema, name, json_string(decl_type_name(type)));
                json_array_append_new(t->columns, json_string(name));
        }
        if (rc != SQLITE_DONE)
                return sql_fail(db, rc, b, e, "the table file cannot be read");
        if (json_array_size(t->columns) == 0)
                return hull_err(e, -EBADMSG, "handles: the table has no columns");
        sqlite3_finalize(TAKE_PTR(st));
        char sql[HD_COLUMN_NAME_MAX * 2 + 64];
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", t->qname);
        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
                t->n_rows = sqlite3_column_int64(st, 0);
        else
                return sql_fail(db, rc, b, e, "the table cannot be counted");
        return 0;
}

static uint32_t be32(const unsigned char *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

int hd_table_check(int dir_fd, const char *name, uint64_t size, hull_error *e) {
        if (size == 0)
                return hull_err_hint(e, -EBADMSG, "save a table with data", "handles: the table file is empty");
        unsigned char h[100];
        _cleanup_close_ int fd = hd_openat(dir_fd, name, O_RDONLY | O_NOFOLLOW, 0);
        if (fd < 0)
                return hull_err(e, fd, "handles: cannot open the table file");
        ssize_t n = pread(fd, h, sizeof(h), 0);
        if (n != (ssize_t) sizeof(h) || memcmp(h, "SQLite format 3", 16) != 0)
                return hull_err_hint(e, -EBADMSG, "save tables as SQLite databases",
                                     "handles: the table file is not an SQLite database");
        uint32_t page = (uint32_t) h[16] << 8 | h[17];
        if (page == 1)
                page = 65536;
        if (page < 512 || page > 65536 || (page & (page - 1)) != 0 || size % page != 0)
                return hull_err(e, -EBADMSG,
                                "handles: the table file has a bad page size (%u) for its %" PRIu64 " bytes", page,
                                size);
        if (h[18] != 1 || h[19] != 1)
                return hull_err_hint(e, -EBADMSG,
                                     "switch it out of WAL mode (PRAGMA journal_mode=DELETE) before saving",
                                     "handles: the table file is in WAL mode or from an unknown version");
        uint32_t pages = be32(h + 28);
        if (be32(h + 24) == be32(h + 92) && pages != 0 && (uint64_t) pages * page != size)
                return hull_err(e, -EBADMSG,
                                "handles: the table file claims %" PRIu32 " pages of %u bytes but holds %" PRIu64
                                " bytes",
                                pages, page, size);
        if (size / page > HD_SQLITE_PAGE_COUNT_MAX)
                return hull_err(e, -EFBIG, "handles: the table file has too many pages");
        budget b;
        budget_start(&b, HD_SQLITE_CHECK_MS);
        _cleanup_db_ sqlite3 *db = NULL;
        int k = db_open(dir_fd, name, DB_READ, &b, 0, &db, e);
        if (k < 0)
                return k;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sql_fail(db, rc, &b, e, "the table file is malformed");
        const char *verdict = (const char *) sqlite3_column_text(st, 0);
        if (!verdict || strcmp(verdict, "ok") != 0)
                return hull_err(e, -EBADMSG, "handles: the table file is malformed: %.200s", verdict ? verdict : "?");
        sqlite3_finalize(TAKE_PTR(st));
        _cleanup_(table_info_done) table_info t = {0};
        return table_load_info(db, &b, true, &t, e);
}

/* One cell as CSV: at most HD_PREVIEW_CELL_CHARS characters (then "…"), quoted when it holds a
 * comma, a quote or a line break. Returns 0 or the errors of dynbuf_add. */
static int csv_cell(dynbuf *b, const char *p, size_t n) {
        size_t cut = 0, chars = 0;
        while (cut < n && chars < HD_PREVIEW_CELL_CHARS) {
                unsigned char c = (unsigned char) p[cut];
                cut += c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
                chars++;
        }
        cut = MIN(cut, n);
        bool quote = memchr(p, ',', cut) || memchr(p, '"', cut) || memchr(p, '\n', cut) || memchr(p, '\r', cut);
        int r = quote ? dynbuf_add(b, "\"", 1) : 0;
        for (size_t i = 0; r >= 0 && i < cut;) {
                const char *q = memchr(p + i, '"', cut - i);
                size_t k = q ? (size_t) (q - (p + i)) + 1 : cut - i;
                r = dynbuf_add(b, p + i, k);
                if (r >= 0 && q)
                        r = dynbuf_add(b, "\"", 1); /* a quote is doubled */
                i += k;
        }
        if (r >= 0 && cut < n)
                r = dynbuf_add(b, "\xe2\x80\xa6", 3); /* … */
        if (r >= 0 && quote)
                r = dynbuf_add(b, "\"", 1);
        return r;
}

static int preview(sqlite3 *db, budget *b, const table_info *t, json_t *summary, hull_error *e) {
        _cleanup_dynbuf_ dynbuf csv;
        dynbuf_init(&csv, HD_PREVIEW_TABLE_BYTES);
        int r = 0;
        size_t i;
        json_t *c;
        json_array_foreach(t->columns, i, c) {
                if (r >= 0 && i)
                        r = dynbuf_add(&csv, ",", 1);
                if (r >= 0)
                        r = csv_cell(&csv, json_string_value(c), json_string_length(c));
        }
        if (r < 0)
                return hull_err(e, r, "handles: cannot preview");
        char sql[HD_COLUMN_NAME_MAX * 2 + 64];
        snprintf(sql, sizeof(sql), "SELECT * FROM %s LIMIT %u", t->qname, HD_PREVIEW_ROWS);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sql_fail(db, rc, b, e, "the table cannot be read");
        unsigned shown = 0;
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                shown++;
                r = dynbuf_add(&csv, "\n", 1);
                for (int j = 0; r >= 0 && j < sqlite3_column_count(st); j++) {
                        if (j)
                                r = dynbuf_add(&csv, ",", 1);
                        int type = sqlite3_column_type(st, j);
                        if (r < 0 || type == SQLITE_NULL)
                                continue;
                        if (type == SQLITE_BLOB) {
                                char bl[48];
                                snprintf(bl, sizeof(bl), "<blob, %d bytes>", sqlite3_column_bytes(st, j));
                                r = csv_cell(&csv, bl, strlen(bl));
                                continue;
                        }
                        const char *p = (const char *) sqlite3_column_text(st, j);
                        r = csv_cell(&csv, p ? p : "", (size_t) sqlite3_column_bytes(st, j));
                }
        }
        if (r < 0)
                return hull_err(e, r, "handles: cannot preview");
        if (rc != SQLITE_DONE)
                return sql_fail(db, rc, b, e, "the table cannot be read");
        if ((int64_t) shown < t->n_rows &&
            (r = dynbuf_addf(&csv, "\n... (%u of %" PRId64 " rows)", shown, t->n_rows)) < 0)
                return hull_err(e, r, "handles: cannot preview");
        json_object_set_new(summary, "preview", text_json(csv.buf ? csv.buf : "", csv.len));
        return 0;
}

int hd_table_summary(int dir_fd, const char *name, json_t *summary, hull_error *e) {
        budget b;
        budget_start(&b, HD_SQLITE_CHECK_MS);
        _cleanup_db_ sqlite3 *db = NULL;
        int k = db_open(dir_fd, name, DB_READ, &b, 0, &db, e);
        if (k < 0)
                return k;
        _cleanup_(table_info_done) table_info t = {0};
        k = table_load_info(db, &b, false, &t, e);
        if (k < 0)
                return k;
        json_object_set_new(summary, "table", json_string(t.name));
        json_object_set(summary, "schema", t.schema);
        json_object_set_new(summary, "n_rows", json_integer(t.n_rows));
        json_object_set_new(summary, "n_cols", json_integer((json_int_t) json_array_size(t.columns)));
        return preview(db, &b, &t, summary, e);
}

/* ---- inspect ---- */

/* HyperLogLog: 2^HD_HLL_BITS one-byte registers over a 64-bit hash of each value's type and
 * bytes (integers and reals by their 8 bytes, so 1 and 1.0 count as two). */
#define HLL_M (1U << HD_HLL_BITS)

static void hll_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
        uint8_t *reg = sqlite3_aggregate_context(ctx, HLL_M);
        if (!reg || argc != 1)
                return;
        sqlite3_value *v = argv[0];
        int type = sqlite3_value_type(v);
        uint64_t h;
        if (type == SQLITE_NULL)
                return;
        if (type == SQLITE_INTEGER) {
                int64_t x = sqlite3_value_int64(v);
                h = hash_bytes(&x, sizeof(x), 1);
        } else if (type == SQLITE_FLOAT) {
                double x = sqlite3_value_double(v);
                h = hash_bytes(&x, sizeof(x), 2);
        } else {
                const void *p = sqlite3_value_blob(v);
                h = hash_bytes(p ? p : "", (size_t) sqlite3_value_bytes(v), 3);
        }
        unsigned idx = (unsigned) (h >> (64 - HD_HLL_BITS));
        uint64_t rest = h << HD_HLL_BITS;
        uint8_t rho = rest ? (uint8_t) (__builtin_clzll(rest) + 1) : (uint8_t) (64 - HD_HLL_BITS + 1);
        if (rho > reg[idx])
                reg[idx] = rho;
}

/* ln(x) for x > 0 without libm (hull links no libm). */
static double ln(double x) {
        int k = 0;
        while (x > 2.0)
                x /= 2.0, k++;
        while (x < 1.0)
                x *= 2.0, k--;
        double y = (x - 1.0) / (x + 1.0), y2 = y * y, term = y, sum = 0;
        for (int i = 1; i < 60; i += 2) {
                sum += term / i;
                term *= y2;
        }
        return 2.0 * sum + k * 0.69314718055994530942;
}

static void hll_final(sqlite3_context *ctx) {
        uint8_t *reg = sqlite3_aggregate_context(ctx, 0);
        if (!reg) {
                sqlite3_result_int64(ctx, 0);
                return;
        }
        double sum = 0, m = HLL_M;
        unsigned zeros = 0;
        for (unsigned i = 0; i < HLL_M; i++) {
                sum += 1.0 / (double) (1ULL << reg[i]);
                zeros += reg[i] == 0;
        }
        double est = (0.7213 / (1.0 + 1.079 / m)) * m * m / sum;
        if (est <= 2.5 * m && zeros > 0)
                est = m * ln(m / zeros);
        sqlite3_result_int64(ctx, (sqlite3_int64) (est + 0.5));
}

static int rows_json(sqlite3 *db, budget *b, const char *sql, json_t **ret, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sql_fail(db, rc, b, e, "the table cannot be read");
        json_t *rows = json_array();
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                json_t *row = json_array();
                for (int j = 0; j < sqlite3_column_count(st); j++)
                        json_array_append_new(row, column_json(st, j));
                json_array_append_new(rows, row);
        }
        if (rc != SQLITE_DONE) {
                json_decref(rows);
                return sql_fail(db, rc, b, e, "the table cannot be read");
        }
        *ret = rows;
        return 0;
}

int hd_table_inspect(int dir_fd, const char *name, const hd_inspect_opts *o, json_t *out, hull_error *e) {
        budget b;
        budget_start(&b, HD_INSPECT_MS);
        _cleanup_db_ sqlite3 *db = NULL;
        int k = db_open(dir_fd, name, DB_READ, &b, 0, &db, e);
        if (k < 0)
                return k;
        _cleanup_(table_info_done) table_info t = {0};
        k = table_load_info(db, &b, false, &t, e);
        if (k < 0)
                return k;
        json_object_set(out, "columns", t.columns);
        char sql[HD_COLUMN_NAME_MAX * 2 + 128];
        json_t *rows;
        if (o->head) {
                snprintf(sql, sizeof(sql), "SELECT * FROM %s LIMIT %u", t.qname, o->head);
                k = rows_json(db, &b, sql, &rows, e);
                if (k < 0)
                        return k;
                json_object_set_new(out, "head", rows);
        }
        if (o->tail) {
                int64_t off = t.n_rows > (int64_t) o->tail ? t.n_rows - (int64_t) o->tail : 0;
                snprintf(sql, sizeof(sql), "SELECT * FROM %s LIMIT %u OFFSET %" PRId64, t.qname, o->tail, off);
                k = rows_json(db, &b, sql, &rows, e);
                if (k < 0)
                        return k;
                json_object_set_new(out, "tail", rows);
        }
        if (!o->stats)
                return 0;
        int rc = sqlite3_create_function_v2(db, "hd_hll", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL, hll_step,
                                            hll_final, NULL);
        if (rc != SQLITE_OK)
                return sql_fail(db, rc, &b, e, "cannot compute stats");
        size_t ncol = MIN(json_array_size(t.columns), (size_t) HD_STATS_COLUMNS_MAX);
        size_t cap = 64 + ncol * (HD_COLUMN_NAME_MAX * 2 + 8) * 7, len = 0;
        _cleanup_free_ char *q = malloc(cap);
        if (!q)
                return hull_err(e, -ENOMEM, "handles: cannot compute stats");
        len += (size_t) snprintf(q + len, cap - len, "SELECT ");
        for (size_t i = 0; i < ncol; i++) {
                _cleanup_free_ char *c = quote_ident(json_string_value(json_array_get(t.columns, i)));
                if (!c)
                        return hull_err(e, -ENOMEM, "handles: cannot compute stats");
                len += (size_t) snprintf(q + len, cap - len,
                                         "%scount(%s), count(*) - count(%s), min(%s), max(%s), "
                                         "avg(CASE WHEN typeof(%s) IN ('integer', 'real') THEN %s END), hd_hll(%s)",
                                         i ? ", " : "", c, c, c, c, c, c, c);
        }
        snprintf(q + len, cap - len, " FROM %s", t.qname);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sql_fail(db, rc, &b, e, "computing stats");
        json_t *stats = json_object();
        for (size_t i = 0; i < ncol; i++) {
                int c = (int) i * 6;
                json_object_set_new(stats, json_string_value(json_array_get(t.columns, i)),
                                    json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "count", column_json(st, c), "nulls",
                                              column_json(st, c + 1), "min", column_json(st, c + 2), "max",
                                              column_json(st, c + 3), "mean", column_json(st, c + 4), "distinct",
                                              column_json(st, c + 5)));
        }
        json_object_set_new(out, "stats", stats);
        if (ncol < json_array_size(t.columns))
                json_object_set_new(out, "stats_truncated", json_true());
        return 0;
}

/* ---- query ---- */

typedef struct query_auth {
        bool setup; /* our own ATTACHes and views, before the caller's statement */
} query_auth;

static int authorize(void *userdata, int action, const char *a, const char *b, const char *db, const char *trigger) {
        static const char *const denied_functions[] = {
                "load_extension", "fts3_tokenizer", "readfile",         "writefile", "edit",
                "zipfile",        "sqlar_compress", "sqlar_uncompress", "hd_hll",
        };
        query_auth *q = userdata;
        if (q->setup) /* only our own statements run while it is set */
                return SQLITE_OK;
        switch (action) {
        case SQLITE_SELECT:
        case SQLITE_READ:
        case SQLITE_RECURSIVE:
                return SQLITE_OK;
        case SQLITE_FUNCTION:
                for (size_t i = 0; b && i < ELEMENTSOF(denied_functions); i++)
                        if (strcasecmp(b, denied_functions[i]) == 0)
                                return SQLITE_DENY;
                return SQLITE_OK;
        default:
                return SQLITE_DENY;
        }
}

typedef struct out_table {
        sqlite3 *db; /* the staging database */
        sqlite3_stmt *ins;
        int ncol;
        unsigned *mask; /* per column: 1 int, 2 real, 4 text, 8 blob */
        char **decl;
} out_table;

static int out_begin(out_table *ot, int dir_fd, const char *stage, sqlite3_stmt *q, budget *b, hull_error *e) {
        int k = db_open(dir_fd, stage, DB_CREATE, b, 0, &ot->db, e);
        if (k < 0)
                return k;
        ot->ncol = sqlite3_column_count(q);
        ot->mask = calloc((size_t) ot->ncol, sizeof(unsigned));
        ot->decl = calloc((size_t) ot->ncol, sizeof(char *));
        size_t cap = 64 + (size_t) ot->ncol * 16;
        _cleanup_free_ char *create = malloc(cap), *insert = malloc(cap);
        if (!ot->mask || !ot->decl || !create || !insert)
                return hull_err(e, -ENOMEM, "handles: cannot store a query result");
        size_t o = (size_t) snprintf(create, cap, "CREATE TABLE staging ("),
               p = (size_t) snprintf(insert, cap, "INSERT INTO staging VALUES (");
        for (int i = 0; i < ot->ncol; i++) {
                const char *d = sqlite3_column_decltype(q, i);
                ot->decl[i] = strdup(d ? d : "");
                o += (size_t) snprintf(create + o, cap - o, "%sc%d", i ? ", " : "", i);
                p += (size_t) snprintf(insert + p, cap - p, "%s?", i ? "," : "");
        }
        snprintf(create + o, cap - o, ")");
        snprintf(insert + p, cap - p, ")");
        int rc = sqlite3_exec(ot->db, create, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(ot->db, "BEGIN", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(ot->db, insert, -1, &ot->ins, NULL);
        return rc == SQLITE_OK ? 0 : sql_fail(ot->db, rc, NULL, e, "cannot store a query result");
}

static int out_row_json(out_table *ot, json_t *row, hull_error *e) {
        for (int i = 0; i < ot->ncol; i++) {
                json_t *v = json_array_get(row, (size_t) i);
                int rc;
                if (json_is_integer(v))
                        rc = sqlite3_bind_int64(ot->ins, i + 1, json_integer_value(v)), ot->mask[i] |= 1;
                else if (json_is_real(v))
                        rc = sqlite3_bind_double(ot->ins, i + 1, json_real_value(v)), ot->mask[i] |= 2;
                else if (json_is_string(v))
                        rc = sqlite3_bind_text(ot->ins, i + 1, json_string_value(v), (int) json_string_length(v),
                                               SQLITE_STATIC),
                        ot->mask[i] |= 4;
                else
                        rc = sqlite3_bind_null(ot->ins, i + 1);
                if (rc != SQLITE_OK)
                        return sql_fail(ot->db, rc, NULL, e, "cannot store a query result");
        }
        return step_insert(ot->db, ot->ins, e);
}

static int out_row(out_table *ot, sqlite3_stmt *q, hull_error *e) {
        for (int i = 0; i < ot->ncol; i++) {
                int rc, t = sqlite3_column_type(q, i);
                switch (t) {
                case SQLITE_INTEGER:
                        rc = sqlite3_bind_int64(ot->ins, i + 1, sqlite3_column_int64(q, i));
                        ot->mask[i] |= 1;
                        break;
                case SQLITE_FLOAT:
                        rc = sqlite3_bind_double(ot->ins, i + 1, sqlite3_column_double(q, i));
                        ot->mask[i] |= 2;
                        break;
                case SQLITE_TEXT:
                        rc = sqlite3_bind_text(ot->ins, i + 1, (const char *) sqlite3_column_text(q, i),
                                               sqlite3_column_bytes(q, i), SQLITE_TRANSIENT);
                        ot->mask[i] |= 4;
                        break;
                case SQLITE_BLOB:
                        rc = sqlite3_bind_null(ot->ins, i + 1);
                        ot->mask[i] |= 8;
                        break;
                default:
                        rc = sqlite3_bind_null(ot->ins, i + 1);
                }
                if (rc != SQLITE_OK)
                        return sql_fail(ot->db, rc, NULL, e, "cannot store a query result");
        }
        return step_insert(ot->db, ot->ins, e);
}

static void out_done(out_table *ot) {
        if (ot->ins)
                sqlite3_finalize(ot->ins);
        if (ot->db)
                sqlite3_close_v2(ot->db);
        for (int i = 0; ot->decl && i < ot->ncol; i++)
                free(ot->decl[i]);
        free(ot->decl);
        free(ot->mask);
}

/* Turn the staging file into out_name: typed columns named as the query's. */
static int out_finish(out_table *ot, int dir_fd, const char *stage, const char *out_name, sqlite3_stmt *q, budget *b,
                      hull_error *e) {
        int rc = sqlite3_exec(ot->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return sql_fail(ot->db, rc, NULL, e, "cannot store a query result");
        sqlite3_finalize(TAKE_PTR(ot->ins));
        sqlite3_close_v2(TAKE_PTR(ot->db));
        _cleanup_db_ sqlite3 *db = NULL;
        int k = db_open(dir_fd, out_name, DB_CREATE, b, 1, &db, e);
        if (k < 0)
                return k;
        _cleanup_(columns_done) columns cs = {0};
        size_t cap = 128;
        for (int i = 0; i < ot->ncol; i++) {
                const char *n = sqlite3_column_name(q, i);
                k = columns_add(&cs, n ? n : "", n ? strlen(n) : 0, e);
                if (k < 0)
                        return k;
                cap += strlen(cs.c[i].name) * 2 + 32;
        }
        _cleanup_free_ char *create = malloc(cap);
        if (!create)
                return hull_err(e, -ENOMEM, "handles: cannot store a query result");
        size_t o = (size_t) snprintf(create, cap, "CREATE TABLE " TABLE " (");
        for (int i = 0; i < ot->ncol; i++) {
                unsigned m = ot->mask[i];
                const char *d = decl_type_name(ot->decl[i]), *type;
                if (m == 1)
                        type = strcmp(d, "boolean") == 0 ? "BOOLEAN" : "INTEGER";
                else if (m == 2 || m == 3)
                        type = "REAL";
                else if (m == 4)
                        type = strcmp(d, "date") == 0 ? "DATE" : strcmp(d, "timestamp") == 0 ? "TIMESTAMP" : "TEXT";
                else if (m == 0)
                        type = "TEXT";
                else
                        type = ""; /* mixed: no affinity, values kept as they are */
                _cleanup_free_ char *qn = quote_ident(cs.c[i].name);
                if (!qn)
                        return hull_err(e, -ENOMEM, "handles: cannot store a query result");
                o += (size_t) snprintf(create + o, cap - o, "%s%s %s", i ? ", " : "", qn, type);
        }
        snprintf(create + o, cap - o, ")");
        char path[128], attach[200];
        k = hd_sqlite_path(dir_fd, stage, path, sizeof(path));
        if (k < 0)
                return hull_err(e, k, "handles: path too long");
        snprintf(attach, sizeof(attach), "ATTACH 'file:%s' AS stage", path);
        rc = sqlite3_exec(db, create, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, attach, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "INSERT INTO main." TABLE " SELECT * FROM stage.staging; DETACH stage", NULL,
                                  NULL, NULL);
        if (rc != SQLITE_OK)
                return sql_fail(db, rc, NULL, e, "cannot store a query result");
        return 0;
}

int hd_table_query(int dir_fd, const char *sql, const hd_query_table *t, size_t n, uint64_t time_ms, uint64_t max_rows,
                   uint64_t max_bytes, const char *out_name, json_t **ret_inline, hull_error *e) {
        budget b;
        budget_start(&b, time_ms);
        _cleanup_db_ sqlite3 *db = NULL;
        int k = db_open(dir_fd, NULL, DB_READ, &b, (unsigned) n, &db, e);
        if (k < 0)
                return k;
        query_auth qa = {.setup = true};
        sqlite3_set_authorizer(db, authorize, &qa);
        for (size_t i = 0; i < n; i++) {
                char path[128], uri[256];
                _cleanup_free_ char *schema = quote_ident(t[i].id);
                k = hd_sqlite_path(dir_fd, t[i].name, path, sizeof(path));
                if (k < 0 || !schema)
                        return hull_err(e, k < 0 ? k : -ENOMEM, "handles: cannot attach %s", t[i].id);
                snprintf(uri, sizeof(uri), "ATTACH 'file:%s?mode=ro&immutable=1' AS %s", path, schema);
                int rc = sqlite3_exec(db, uri, NULL, NULL, NULL);
                if (rc != SQLITE_OK)
                        return sql_fail(db, rc, &b, e, "cannot attach a table");
                /* The table by the handle's id alone (FROM sales), as a model writes it: a view in
                 * the connection's temp schema (the only one SQLite lets hold views here). An id
                 * SQLite reserves (sqlite_*) keeps only the schema form. */
                char view[HD_ID_MAX * 4 + 64]; /* two quoted ids, each at most 2 * HD_ID_MAX + 2 */
                snprintf(view, sizeof(view), "CREATE TEMP VIEW %s AS SELECT * FROM %s." TABLE, schema, schema);
                (void) sqlite3_exec(db, view, NULL, NULL, NULL);
        }
        qa.setup = false;
        _cleanup_stmt_ sqlite3_stmt *q = NULL;
        const char *tail = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &q, &tail);
        if (rc != SQLITE_OK)
                return sql_fail(db, rc, &b, e, "the query failed");
        if (!q)
                return hull_err(e, -EINVAL, "handles: no SQL statement");
        for (; tail && *tail; tail++)
                if (*tail != ' ' && *tail != '\n' && *tail != '\t' && *tail != '\r' && *tail != ';')
                        return hull_err_hint(e, -EINVAL, "send one statement per query",
                                             "handles: more than one SQL statement");
        if (!sqlite3_stmt_readonly(q))
                return hull_err_hint(e, -EPERM, "queries may only read", "handles: the statement would write");
        int ncol = sqlite3_column_count(q);
        if (ncol == 0)
                return hull_err(e, -EINVAL, "handles: the statement returns no columns");
        json_t *cols = json_array();
        for (int i = 0; i < ncol; i++) {
                const char *name = sqlite3_column_name(q, i);
                json_array_append_new(cols, text_json(name ? name : "", name ? strlen(name) : 0));
        }
        _cleanup_(json_decrefp) json_t *rows = json_array();
        out_table ot = {0};
        char stage[80];
        snprintf(stage, sizeof(stage), "%s-stage", out_name);
        uint64_t n_rows = 0, bytes = 0;
        bool spilled = false;
        k = 0;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
                if (++n_rows > max_rows) {
                        k = hull_err_hint(e, -EFBIG, "add a LIMIT or aggregate",
                                          "handles: the query returns more than %" PRIu64 " rows", max_rows);
                        break;
                }
                if (!spilled) {
                        json_t *row = json_array();
                        for (int i = 0; i < ncol; i++) {
                                json_t *v = column_json(q, i);
                                bytes += json_is_string(v) ? json_string_length(v) + 3 : 12;
                                json_array_append_new(row, v);
                        }
                        json_array_append_new(rows, row);
                        if (json_array_size(rows) <= HD_QUERY_INLINE_ROWS && bytes <= HD_QUERY_INLINE_BYTES)
                                continue;
                        /* too big inline: move what we have into a staging table */
                        spilled = true;
                        k = out_begin(&ot, dir_fd, stage, q, &b, e);
                        size_t i;
                        json_t *r;
                        json_array_foreach(rows, i, r) {
                                if (k < 0)
                                        break;
                                if (i + 1 == json_array_size(rows))
                                        k = out_row(&ot, q, e); /* the current row, with its real types */
                                else
                                        k = out_row_json(&ot, r, e);
                        }
                        json_array_clear(rows);
                } else {
                        k = out_row(&ot, q, e);
                        /* what the row holds, so the cap trips while writing, not after */
                        bytes += 16;
                        for (int c = 0; c < sqlite3_column_count(q); c++)
                                bytes += (uint64_t) sqlite3_column_bytes(q, c);
                }
                if (k == 0 && bytes > max_bytes)
                        k = hull_err_hint(e, -EFBIG, "add a LIMIT or aggregate",
                                          "handles: the query result is over %" PRIu64 " bytes", max_bytes);
                if (k < 0)
                        break;
        }
        if (k == 0 && rc != SQLITE_DONE)
                k = sql_fail(db, rc, &b, e, "the query failed");
        if (k == 0 && spilled)
                k = out_finish(&ot, dir_fd, stage, out_name, q, &b, e);
        out_done(&ot);
        if (spilled)
                unlinkat(dir_fd, stage, 0);
        if (k < 0) {
                json_decref(cols);
                unlinkat(dir_fd, out_name, 0);
                return k;
        }
        if (spilled) {
                json_decref(cols);
                *ret_inline = NULL;
                return 0;
        }
        *ret_inline = json_pack("{s:o, s:O, s:I}", "columns", cols, "rows", rows, "n_rows", (json_int_t) n_rows);
        return *ret_inline ? 0 : -ENOMEM;
}
