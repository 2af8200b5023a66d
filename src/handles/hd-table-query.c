/* hd-table-query.c: read-only queries over table handles attached to one connection, an
 * authorizer allowing only reads, small results inline and larger ones written to a new table
 * file (hd_table_query; hd-table.h). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hd-internal.h"
#include "hd-table-internal.h"
#include "hd-table.h"
#include "limits.h"

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
        int k = hdt_db_open(dir_fd, stage, DB_CREATE, b, 0, &ot->db, e);
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
        return rc == SQLITE_OK ? 0 : hdt_sql_fail(ot->db, rc, NULL, e, "cannot store a query result");
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
                        return hdt_sql_fail(ot->db, rc, NULL, e, "cannot store a query result");
        }
        return hdt_step_insert(ot->db, ot->ins, e);
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
                        return hdt_sql_fail(ot->db, rc, NULL, e, "cannot store a query result");
        }
        return hdt_step_insert(ot->db, ot->ins, e);
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
                return hdt_sql_fail(ot->db, rc, NULL, e, "cannot store a query result");
        sqlite3_finalize(TAKE_PTR(ot->ins));
        sqlite3_close_v2(TAKE_PTR(ot->db));
        _cleanup_db_ sqlite3 *db = NULL;
        int k = hdt_db_open(dir_fd, out_name, DB_CREATE, b, 1, &db, e);
        if (k < 0)
                return k;
        _cleanup_(hdt_columns_done) columns cs = {0};
        size_t cap = 128;
        for (int i = 0; i < ot->ncol; i++) {
                const char *n = sqlite3_column_name(q, i);
                k = hdt_columns_add(&cs, n ? n : "", n ? strlen(n) : 0, e);
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
                const char *d = hdt_decl_type_name(ot->decl[i]), *type;
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
                _cleanup_free_ char *qn = hdt_quote_ident(cs.c[i].name);
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
                return hdt_sql_fail(db, rc, NULL, e, "cannot store a query result");
        return 0;
}

int hd_table_query(int dir_fd, const char *sql, const hd_query_table *t, size_t n, uint64_t time_ms, uint64_t max_rows,
                   uint64_t max_bytes, const char *out_name, json_t **ret_inline, hull_error *e) {
        budget b;
        hdt_budget_start(&b, time_ms);
        _cleanup_db_ sqlite3 *db = NULL;
        int k = hdt_db_open(dir_fd, NULL, DB_READ, &b, (unsigned) n, &db, e);
        if (k < 0)
                return k;
        query_auth qa = {.setup = true};
        sqlite3_set_authorizer(db, authorize, &qa);
        for (size_t i = 0; i < n; i++) {
                char path[128], uri[256];
                _cleanup_free_ char *schema = hdt_quote_ident(t[i].id);
                k = hd_sqlite_path(dir_fd, t[i].name, path, sizeof(path));
                if (k < 0 || !schema)
                        return hull_err(e, k < 0 ? k : -ENOMEM, "handles: cannot attach %s", t[i].id);
                snprintf(uri, sizeof(uri), "ATTACH 'file:%s?mode=ro&immutable=1' AS %s", path, schema);
                int rc = sqlite3_exec(db, uri, NULL, NULL, NULL);
                if (rc != SQLITE_OK)
                        return hdt_sql_fail(db, rc, &b, e, "cannot attach a table");
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
                return hdt_sql_fail(db, rc, &b, e, "the query failed");
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
                json_array_append_new(cols, hdt_text_json(name ? name : "", name ? strlen(name) : 0));
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
                                json_t *v = hdt_column_json(q, i);
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
                k = hdt_sql_fail(db, rc, &b, e, "the query failed");
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
