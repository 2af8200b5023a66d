/* store-pg-copy.c: the PostgreSQL backend's side of hull db copy (every row of a table read in
 * order, rows written a batch a transaction) and hull db check (each session's seqs). Table and
 * column names come from store_tables (constants); every value is bound. */
#include "store-pg-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rows of res to fn, each as a JSON array; > 0 when fn stopped. */
static int rows_to(const store_table *t, PGresult *res, store_row_fn fn, void *ud, hull_error *e) {
        size_t cols = strlen(t->types);
        for (int i = 0; i < PQntuples(res); i++) {
                _cleanup_(json_decrefp) json_t *row = json_array();
                if (!row)
                        return hull_err(e, -ENOMEM, "store: out of memory");
                for (size_t c = 0; c < cols; c++) {
                        json_t *v = PQgetisnull(res, i, (int) c) ? json_null()
                                    : t->types[c] == 't'         ? json_string(PQgetvalue(res, i, (int) c))
                                                                 : json_integer(pg_get_int(res, i, (int) c));
                        if (json_array_append_new(row, v) < 0)
                                return hull_fail(e, -EBADMSG, "store: %s: a value that is not UTF-8 text", t->name);
                }
                int r = fn(ud, row, e);
                if (r != 0)
                        return r;
        }
        return 0;
}

/* Through a cursor, STORE_COPY_BATCH rows a round trip: a big table is never all in memory, and
 * a reader that stops (is it empty?) reads one batch. */
int pg_rows_read(store *base, const store_table *t, store_row_fn fn, void *ud, hull_error *e) {
        pg_store *s = pg_of(base);
        char sql[512], fetch[64];
        snprintf(sql, sizeof(sql), "DECLARE hull_rows NO SCROLL CURSOR FOR SELECT %s FROM %s ORDER BY %s", t->columns,
                 t->name, t->order);
        snprintf(fetch, sizeof(fetch), "FETCH %u FROM hull_rows", STORE_COPY_BATCH);
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx tx = {0};
        int r = pg_tx_begin(pc, &tx, e);
        if (r < 0 || (r = pg_exec(pc, sql, 0, NULL, "cannot read a table", NULL, e)) < 0)
                return r;
        for (;;) {
                _cleanup_res_ PGresult *res = NULL;
                if ((r = pg_exec(pc, fetch, 0, NULL, "cannot read a table", &res, e)) < 0)
                        return r;
                if (PQntuples(res) == 0)
                        break;
                if ((r = rows_to(t, res, fn, ud, e)) != 0)
                        return r < 0 ? r : 0; /* the transaction (and cursor) rolled back */
        }
        return pg_tx_commit(&tx, e);
}

/* rows (arrays) as objects keyed by t's column names, for json_populate_recordset. */
static int rows_objects(const store_table *t, json_t *rows, json_t **ret, hull_error *e) {
        char names[16][32];
        size_t n = 0;
        for (const char *p = t->columns; *p && n < ELEMENTSOF(names); n++) {
                size_t len = strcspn(p, ", ");
                snprintf(names[n], sizeof(names[n]), "%.*s", (int) len, p);
                p += len;
                p += strspn(p, ", ");
        }
        _cleanup_(json_decrefp) json_t *a = json_array();
        size_t i;
        json_t *row;
        json_array_foreach(rows, i, row) {
                json_t *o = json_object();
                if (!o || json_array_append_new(a, o) < 0 || json_array_size(row) != n)
                        return hull_fail(e, -EINVAL, "store: %s: row %zu has not %zu columns", t->name, i, n);
                for (size_t c = 0; c < n; c++)
                        json_object_set(o, names[c], json_array_get(row, c));
        }
        *ret = TAKE_PTR(a);
        return 0;
}

int pg_rows_write(store *base, const store_table *t, json_t *rows, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_(json_decrefp) json_t *objs = NULL;
        int r = rows_objects(t, rows, &objs, e);
        if (r < 0)
                return r;
        _cleanup_free_ char *text = json_dumps(objs, JSON_COMPACT);
        if (!text)
                return hull_err(e, -ENOMEM, "store: out of memory");
        char sql[768];
        snprintf(sql, sizeof(sql), "INSERT INTO %s (%s) SELECT %s FROM json_populate_recordset(NULL::%s, $1::json)",
                 t->name, t->columns, t->columns, t->name);
        const char *v[] = {text};
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx tx = {0};
        if ((r = pg_tx_begin(pc, &tx, e)) < 0 || (r = pg_exec(pc, sql, 1, v, "cannot copy rows", NULL, e)) < 0)
                return r;
        /* the counter events_append takes the next seq from */
        if (strcmp(t->name, "events") == 0 &&
            (r = pg_exec(pc,
                         "UPDATE sessions SET last_seq = m.last FROM (SELECT session_id, max(seq) AS last FROM events"
                         " WHERE session_id IN (SELECT r->>'session_id' FROM json_array_elements($1::json) r)"
                         " GROUP BY session_id) m WHERE sessions.id = m.session_id",
                         1, v, "cannot copy rows", NULL, e)) < 0)
                return r;
        return pg_tx_commit(&tx, e);
}

int pg_check(store *base, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_(json_decrefp) json_t *problems = json_array();
        if (!problems)
                return hull_err(e, -ENOMEM, "store: out of memory");
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        "SELECT s.id, s.last_seq, count(e.seq), coalesce(min(e.seq), 0), coalesce(max(e.seq), 0)"
                        " FROM sessions s LEFT JOIN events e ON e.session_id = s.id GROUP BY s.id, s.last_seq"
                        " HAVING count(e.seq) <> coalesce(max(e.seq), 0) OR coalesce(min(e.seq), 1) <> 1"
                        " OR s.last_seq <> coalesce(max(e.seq), 0) ORDER BY s.id",
                        0, NULL, "cannot check the sequences", &res, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++) {
                char line[512];
                snprintf(line, sizeof(line),
                         "session %s: %" PRId64 " events with seqs %" PRId64 "..%" PRId64 ", last seq %" PRId64
                         " (want 1..N without a gap, and the last seq N)",
                         PQgetvalue(res, i, 0), pg_get_int(res, i, 2), pg_get_int(res, i, 3), pg_get_int(res, i, 4),
                         pg_get_int(res, i, 1));
                if (json_array_append_new(problems, json_string(line)) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        *ret = TAKE_PTR(problems);
        return 0;
}
