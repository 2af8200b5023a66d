/* store-sqlite-copy.c: the SQLite backend's side of hull db copy (every row of a table read in
 * rowid order, rows written a batch a transaction) and hull db check (each session's seqs).
 * Table and column names come from store_tables (constants); every value is bound. */
#include "store-sqlite-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sqlt_rows_read(store *base, const store_table *t, store_row_fn fn, void *ud, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        char sql[512];
        snprintf(sql, sizeof(sql), "SELECT %s FROM %s ORDER BY rowid", t->columns, t->name);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql, &st, e);
        if (r < 0)
                return r;
        size_t cols = strlen(t->types);
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        return 0;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot read a table", e);
                _cleanup_(json_decrefp) json_t *row = json_array();
                if (!row)
                        return hull_err(e, -ENOMEM, "store: out of memory");
                for (size_t c = 0; c < cols; c++) {
                        json_t *v;
                        if (sqlite3_column_type(st, (int) c) == SQLITE_NULL)
                                v = json_null();
                        else if (t->types[c] == 't') {
                                const char *p = (const char *) sqlite3_column_text(st, (int) c);
                                v = p ? json_stringn(p, (size_t) sqlite3_column_bytes(st, (int) c)) : NULL;
                        } else
                                v = json_integer(sqlite3_column_int64(st, (int) c));
                        if (json_array_append_new(row, v) < 0)
                                return hull_fail(e, -EBADMSG, "store: %s: a value that is not UTF-8 text", t->name);
                }
                r = fn(ud, row, e);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
}

int sqlt_rows_write(store *base, const store_table *t, json_t *rows, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        size_t cols = strlen(t->types);
        char sql[512], marks[64];
        size_t m = 0;
        for (size_t c = 0; c < cols && c < 16; c++)
                m += (size_t) snprintf(marks + m, sizeof(marks) - m, c ? ", ?" : "?");
        marks[m] = '\0';
        snprintf(sql, sizeof(sql), "INSERT INTO %s (%s) VALUES (%s)", t->name, t->columns, marks);
        LOCKED(s);
        _cleanup_tx_ sqlt_tx tx = {0};
        int r = sqlt_tx_begin(s, &tx, e);
        if (r < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        if ((r = sqlt_prep(s, sql, &st, e)) < 0)
                return r;
        size_t i;
        json_t *row;
        json_array_foreach(rows, i, row) {
                if (json_array_size(row) != cols)
                        return hull_fail(e, -EINVAL, "store: %s: row %zu has not %zu columns", t->name, i, cols);
                sqlite3_reset(st);
                int rc = 0;
                for (size_t c = 0; c < cols && !rc; c++) {
                        json_t *v = json_array_get(row, c);
                        rc = json_is_string(v)    ? sqlt_bind_text(st, (int) c + 1, json_string_value(v))
                             : json_is_integer(v) ? sqlite3_bind_int64(st, (int) c + 1, json_integer_value(v))
                                                  : sqlite3_bind_null(st, (int) c + 1);
                }
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                if ((r = sqlt_step_done(s, st, "cannot copy rows", e)) < 0)
                        return r;
        }
        sqlite3_finalize(TAKE_PTR(st));
        return sqlt_tx_commit(&tx, e);
}

int sqlt_check(store *base, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        _cleanup_(json_decrefp) json_t *problems = json_array();
        if (!problems)
                return hull_err(e, -ENOMEM, "store: out of memory");
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s,
                          "SELECT s.id, count(e.seq), coalesce(min(e.seq), 0), coalesce(max(e.seq), 0)"
                          " FROM sessions s LEFT JOIN events e ON e.session_id = s.id GROUP BY s.id"
                          " HAVING count(e.seq) <> coalesce(max(e.seq), 0) OR coalesce(min(e.seq), 1) <> 1"
                          " ORDER BY s.id",
                          &st, e);
        if (r < 0)
                return r;
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot check the sequences", e);
                const char *id = (const char *) sqlite3_column_text(st, 0);
                char line[512];
                snprintf(line, sizeof(line),
                         "session %s: %" PRId64 " events with seqs %" PRId64 "..%" PRId64 " (want 1..N without a gap)",
                         id ? id : "?", (int64_t) sqlite3_column_int64(st, 1), (int64_t) sqlite3_column_int64(st, 2),
                         (int64_t) sqlite3_column_int64(st, 3));
                if (json_array_append_new(problems, json_string(line)) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        *ret = TAKE_PTR(problems);
        return 0;
}
