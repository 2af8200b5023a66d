/* store-sqlite-memory.c: the SQLite backend's memories and memory versions (store.h's
 * store_memory_*): a change of a memory and the version it makes in one BEGIN IMMEDIATE
 * transaction (so writers of one store take turns), the head compared before it is replaced. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store-sqlite-internal.h"

/* 1 when the statement gives a row (its first column's text into out, may be NULL), 0 when none. */
static int one_text(sqlt_store *s, sqlite3_stmt *st, char *out, size_t size, hull_error *e) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return 0;
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a memory", e);
        if (out) {
                const char *p = (const char *) sqlite3_column_text(st, 0);
                snprintf(out, size, "%s", p ? p : "");
        }
        return 1;
}

static int prep_bind(sqlt_store *s, const char *sql, sqlite3_stmt **st, const char *const *v, size_t n, hull_error *e) {
        int r = sqlt_prep(s, sql, st, e);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                int rc = sqlt_bind_text(*st, (int) i + 1, v[i]);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
        }
        return 0;
}

/* The checks of a change before its rows: the store, the head, the path, the count. */
static int apply_checks(sqlt_store *s, const store_memory_change *c, const char *path, char *conflict, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL, *hd = NULL, *pt = NULL, *ct = NULL;
        const char *v1[] = {c->store_id};
        int r = prep_bind(s, "SELECT id FROM memory_stores WHERE id = ?1", &st, v1, 1, e);
        if (r < 0 || (r = one_text(s, st, NULL, 0, e)) < 0)
                return r;
        if (r == 0)
                return hull_fail(e, -ENOENT, "store: no memory store %s", c->store_id);
        char head[STORE_ID_MAX] = "";
        const char *v2[] = {c->memory_id, c->store_id};
        if ((r = prep_bind(s, "SELECT version_id FROM memories WHERE id = ?1 AND store_id = ?2", &hd, v2, 2, e)) < 0 ||
            (r = one_text(s, hd, head, sizeof(head), e)) < 0)
                return r;
        if (c->expect_version_id ? r == 0 || strcmp(head, c->expect_version_id) != 0 : r == 1)
                return hull_fail(e, -ESTALE, "store: memory %s changed meanwhile", c->memory_id);
        if (path) {
                const char *v3[] = {c->store_id, path, c->memory_id};
                if ((r = prep_bind(s, "SELECT id FROM memories WHERE store_id = ?1 AND path = ?2 AND id <> ?3", &pt, v3,
                                   3, e)) < 0 ||
                    (r = one_text(s, pt, conflict, STORE_ID_MAX, e)) < 0)
                        return r;
                if (r == 1)
                        return hull_fail(e, -EEXIST, "store: memory %s has the path %s", conflict, path);
        }
        if (!c->expect_version_id) {
                if ((r = prep_bind(s, "SELECT count(*) FROM memories WHERE store_id = ?1", &ct, v1, 1, e)) < 0)
                        return r;
                int rc = sqlite3_step(ct);
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot count memories", e);
                if ((size_t) sqlite3_column_int64(ct, 0) >= c->memories_max)
                        return hull_fail(e, -ENOSPC, "store: memory store %s holds %zu memories, its most", c->store_id,
                                         c->memories_max);
        }
        return 0;
}

int sqlt_memory_apply(store *base, const store_memory_change *c, const char *memory_body, const char *memory_path,
                      const char *version_id, const char *operation, int64_t created_ms, const char *version_body,
                      char ret_conflict[static STORE_ID_MAX], hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_tx_ sqlt_tx t = {0};
        int r = sqlt_tx_begin(s, &t, e);
        if (r < 0 || (r = apply_checks(s, c, memory_path, ret_conflict, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *m = NULL, *vst = NULL;
        const char *head = json_string_value(json_object_get(c->memory, "memory_version_id"));
        if (!c->memory) {
                const char *v[] = {c->memory_id};
                r = prep_bind(s, "DELETE FROM memories WHERE id = ?1", &m, v, 1, e);
        } else if (!c->expect_version_id) {
                const char *v[] = {c->memory_id, c->store_id, memory_path, head, memory_body};
                r = prep_bind(s,
                              "INSERT INTO memories (id, store_id, path, version_id, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                              &m, v, 5, e);
        } else {
                const char *v[] = {c->memory_id, memory_path, head, memory_body};
                r = prep_bind(s, "UPDATE memories SET path = ?2, version_id = ?3, body = ?4 WHERE id = ?1", &m, v, 4,
                              e);
        }
        if (r < 0 || (r = sqlt_step_done(s, m, "cannot write a memory", e)) < 0)
                return r;
        const char *v[] = {c->store_id, version_id, c->memory_id, c->session_id, operation};
        if ((r = prep_bind(s,
                           "INSERT INTO memory_versions (store_id, seq, id, memory_id, session_id, operation,"
                           " created_ms, body) SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7"
                           " FROM memory_versions WHERE store_id = ?1",
                           &vst, v, 5, e)) < 0)
                return r;
        int rc = sqlite3_bind_int64(vst, 6, created_ms);
        rc = rc ?: sqlt_bind_text(vst, 7, version_body);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        r = sqlt_step_done(s, vst, "cannot write a memory version", e);
        if (r == -EEXIST)
                return hull_fail(e, -ESTALE, "store: memory version %s exists", version_id);
        if (r < 0)
                return r;
        return sqlt_tx_commit(&t, e);
}

static int one_body(sqlt_store *s, sqlite3_stmt *st, const char *what, const char *id, json_t **ret, hull_error *e) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no %s %s", what, id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read", e);
        return sqlt_load_column(st, 0, what, ret, e);
}

int sqlt_memory_get(store *base, const char *store_id, const char *memory_id, const char *path, json_t **ret,
                    hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        const char *v[] = {store_id, memory_id ? memory_id : path};
        int r = prep_bind(s,
                          memory_id ? "SELECT body FROM memories WHERE store_id = ?1 AND id = ?2"
                                    : "SELECT body FROM memories WHERE store_id = ?1 AND path = ?2",
                          &st, v, 2, e);
        if (r < 0)
                return r;
        return one_body(s, st, "memory", v[1], ret, e);
}

int sqlt_memory_scan(store *base, const char *store_id, const char *from, bool from_inclusive, const char *below,
                     unsigned limit, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        _cleanup_(json_decrefp) json_t *out = json_array();
        if (!out)
                return hull_err(e, -ENOMEM, "store: out of memory");
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        const char *v[] = {store_id, from, below};
        int r = prep_bind(s,
                          from_inclusive
                                  ? "SELECT body FROM memories WHERE store_id = ?1 AND (?2 IS NULL OR path >= ?2)"
                                    " AND (?3 IS NULL OR path < ?3) ORDER BY path LIMIT ?4"
                                  : "SELECT body FROM memories WHERE store_id = ?1 AND (?2 IS NULL OR path > ?2)"
                                    " AND (?3 IS NULL OR path < ?3) ORDER BY path LIMIT ?4",
                          &st, v, 3, e);
        if (r < 0)
                return r;
        int rc = sqlite3_bind_int64(st, 4, limit);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        for (;;) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list memories", e);
                json_t *o;
                if ((r = sqlt_load_column(st, 0, "memory", &o, e)) < 0)
                        return r;
                if (json_array_append_new(out, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int sqlt_memory_version_get(store *base, const char *store_id, const char *version_id, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        const char *v[] = {store_id, version_id};
        int r = prep_bind(s, "SELECT body FROM memory_versions WHERE store_id = ?1 AND id = ?2", &st, v, 2, e);
        if (r < 0)
                return r;
        return one_body(s, st, "memory version", version_id, ret, e);
}

int sqlt_memory_version_put(store *base, const char *store_id, const char *version_id, const char *body,
                            hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        const char *v[] = {store_id, version_id, body};
        int r = prep_bind(s, "UPDATE memory_versions SET body = ?3 WHERE store_id = ?1 AND id = ?2", &st, v, 3, e);
        if (r < 0 || (r = sqlt_step_done(s, st, "cannot write a memory version", e)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no memory version %s", version_id);
        return 0;
}
