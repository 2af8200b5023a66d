/* hd-table-ingest.c: ingesting CSV, TSV, JSON arrays and JSON lines into a new SQLite table
 * file, column types inferred over all rows (hd_table_ingest; hd-table.h). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynbuf.h"
#include "hd-csv.h"
#include "hd-json.h"
#include "hd-table-internal.h"
#include "hd-table.h"
#include "limits.h"
#include "utf8.h"

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
                _cleanup_free_ char *q = hdt_quote_ident(cs->c[i].name);
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
        return rc == SQLITE_OK ? 0 : hdt_sql_fail(db, rc, NULL, e, "cannot create a table");
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
        _cleanup_(hdt_columns_done) columns cs = {0};
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
                int k = hdt_columns_add(&cs, name, n, e);
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
                                k = hdt_sql_fail(db, rc, NULL, e, "cannot insert a row");
                }
                if (k == 0)
                        k = hdt_step_insert(db, st, e);
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
                        int i = hdt_columns_find(&ji->cs, key, strlen(key));
                        if (i < 0) {
                                i = hdt_columns_add(&ji->cs, key, strlen(key), ji->e);
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
                int i = hdt_columns_find(&ji->cs, key, strlen(key));
                if (i < 0)
                        continue;
                int rc = bind_json(ji->st, i + 1, ji->cs.c[i].type, v);
                if (rc != SQLITE_OK)
                        return hdt_sql_fail(ji->db, rc, NULL, ji->e, "cannot insert a row");
        }
        return hdt_step_insert(ji->db, ji->st, ji->e);
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
                        hdt_columns_done(&ji.cs);
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
        hdt_columns_done(&ji.cs);
        return k;
}

int hd_table_ingest(int dir_fd, const char *name, hd_format f, const char *buf, size_t len, hull_error *e) {
        _cleanup_db_ sqlite3 *db = NULL;
        int k = hdt_db_open(dir_fd, name, DB_CREATE, NULL, 0, &db, e);
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
                        k = hdt_sql_fail(db, rc, NULL, e, "cannot write a table");
        }
        if (db)
                sqlite3_close_v2(TAKE_PTR(db));
        if (k < 0)
                unlinkat(dir_fd, name, 0);
        return k;
}
