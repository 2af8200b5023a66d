/* store-pg-memory.c: the PostgreSQL backend's memories and memory versions (store.h's
 * store_memory_*): a change of a memory and the version it makes in one transaction that first
 * locks the store's row (FOR UPDATE), so writers of one store take turns on every node and the
 * head, the path, the count and the next seq are read and written without a race. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-pg-internal.h"

/* The checks of a change before its rows: the store (locked), the head, the path, the count. */
static int apply_checks(pg_conn *pc, const store_memory_change *c, const char *path, char *conflict, hull_error *e) {
        _cleanup_res_ PGresult *st = NULL, *hd = NULL, *pt = NULL, *ct = NULL;
        const char *v1[] = {c->store_id};
        int r = pg_exec(pc, "SELECT id FROM memory_stores WHERE id = $1 FOR UPDATE", 1, v1, "cannot write a memory",
                        &st, e);
        if (r < 0)
                return r;
        if (PQntuples(st) == 0)
                return hull_fail(e, -ENOENT, "store: no memory store %s", c->store_id);
        const char *v2[] = {c->memory_id, c->store_id};
        if ((r = pg_exec(pc, "SELECT version_id FROM memories WHERE id = $1 AND store_id = $2", 2, v2,
                         "cannot read a memory", &hd, e)) < 0)
                return r;
        bool have = PQntuples(hd) > 0;
        if (c->expect_version_id ? !have || strcmp(PQgetvalue(hd, 0, 0), c->expect_version_id) != 0 : have)
                return hull_fail(e, -ESTALE, "store: memory %s changed meanwhile", c->memory_id);
        if (path) {
                const char *v3[] = {c->store_id, path, c->memory_id};
                if ((r = pg_exec(pc, "SELECT id FROM memories WHERE store_id = $1 AND path = $2 AND id <> $3", 3, v3,
                                 "cannot read a memory", &pt, e)) < 0)
                        return r;
                if (PQntuples(pt) > 0) {
                        snprintf(conflict, STORE_ID_MAX, "%s", PQgetvalue(pt, 0, 0));
                        return hull_fail(e, -EEXIST, "store: memory %s has the path %s", conflict, path);
                }
        }
        if (!c->expect_version_id) {
                if ((r = pg_exec(pc, "SELECT count(*) FROM memories WHERE store_id = $1", 1, v1,
                                 "cannot count memories", &ct, e)) < 0)
                        return r;
                if ((size_t) pg_get_int(ct, 0, 0) >= c->memories_max)
                        return hull_fail(e, -ENOSPC, "store: memory store %s holds %zu memories, its most", c->store_id,
                                         c->memories_max);
        }
        return 0;
}

int pg_memory_apply(store *base, const store_memory_change *c, const char *memory_body, const char *memory_path,
                    const char *version_id, const char *operation, int64_t created_ms, const char *version_body,
                    char ret_conflict[static STORE_ID_MAX], hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx t = {0};
        int r = pg_tx_begin(pc, &t, e);
        if (r < 0 || (r = apply_checks(pc, c, memory_path, ret_conflict, e)) < 0)
                return r;
        const char *head = json_string_value(json_object_get(c->memory, "memory_version_id"));
        if (!c->memory) {
                const char *v[] = {c->memory_id};
                r = pg_exec(pc, "DELETE FROM memories WHERE id = $1", 1, v, "cannot write a memory", NULL, e);
        } else if (!c->expect_version_id) {
                const char *v[] = {c->memory_id, c->store_id, memory_path, head, memory_body};
                r = pg_exec(pc,
                            "INSERT INTO memories (id, store_id, path, version_id, body) VALUES ($1, $2, $3, $4, $5)",
                            5, v, "cannot write a memory", NULL, e);
        } else {
                const char *v[] = {c->memory_id, memory_path, head, memory_body};
                r = pg_exec(pc, "UPDATE memories SET path = $2, version_id = $3, body = $4 WHERE id = $1", 4, v,
                            "cannot write a memory", NULL, e);
        }
        if (r < 0)
                return r;
        char ms[PG_INT_MAX];
        const char *v[] = {c->store_id, version_id, c->memory_id, c->session_id, operation, pg_int(ms, created_ms),
                           version_body};
        r = pg_exec(
                pc,
                "INSERT INTO memory_versions (store_id, seq, id, memory_id, session_id, operation, created_ms, body)"
                " SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4, $5, $6::bigint, $7 FROM memory_versions"
                " WHERE store_id = $1",
                7, v, "cannot write a memory version", NULL, e);
        if (r == -EEXIST)
                return hull_fail(e, -ESTALE, "store: memory version %s exists", version_id);
        if (r < 0)
                return r;
        return pg_tx_commit(&t, e);
}

static int one_body(PGresult *res, const char *what, const char *id, json_t **ret, hull_error *e) {
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no %s %s", what, id);
        return pg_load(res, 0, 0, what, ret, e);
}

int pg_memory_get(store *base, const char *store_id, const char *memory_id, const char *path, json_t **ret,
                  hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {store_id, memory_id ? memory_id : path};
        int r = pg_exec(pc,
                        memory_id ? "SELECT body FROM memories WHERE store_id = $1 AND id = $2"
                                  : "SELECT body FROM memories WHERE store_id = $1 AND path = $2",
                        2, v, "cannot read a memory", &res, e);
        if (r < 0)
                return r;
        return one_body(res, "memory", v[1], ret, e);
}

int pg_memory_scan(store *base, const char *store_id, const char *from, bool from_inclusive, const char *below,
                   unsigned limit, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        _cleanup_(json_decrefp) json_t *out = json_array();
        if (!out)
                return hull_err(e, -ENOMEM, "store: out of memory");
        char n[PG_INT_MAX];
        const char *v[] = {store_id, from, below, pg_int(n, limit)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        from_inclusive ? "SELECT body FROM memories WHERE store_id = $1 AND ($2::text IS NULL OR"
                                         " path >= $2) AND ($3::text IS NULL OR path < $3) ORDER BY path LIMIT $4"
                                       : "SELECT body FROM memories WHERE store_id = $1 AND ($2::text IS NULL OR"
                                         " path > $2) AND ($3::text IS NULL OR path < $3) ORDER BY path LIMIT $4",
                        4, v, "cannot list memories", &res, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++) {
                json_t *o;
                if ((r = pg_load(res, i, 0, "memory", &o, e)) < 0)
                        return r;
                if (json_array_append_new(out, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int pg_memory_version_get(store *base, const char *store_id, const char *version_id, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {store_id, version_id};
        int r = pg_exec(pc, "SELECT body FROM memory_versions WHERE store_id = $1 AND id = $2", 2, v,
                        "cannot read a memory version", &res, e);
        if (r < 0)
                return r;
        return one_body(res, "memory version", version_id, ret, e);
}

int pg_memory_version_put(store *base, const char *store_id, const char *version_id, const char *body, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        const char *v[] = {store_id, version_id, body};
        int r = pg_exec(pc, "UPDATE memory_versions SET body = $3 WHERE store_id = $1 AND id = $2", 3, v,
                        "cannot write a memory version", &res, e);
        if (r < 0)
                return r;
        if (pg_changes(res) == 0)
                return hull_fail(e, -ENOENT, "store: no memory version %s", version_id);
        return 0;
}
