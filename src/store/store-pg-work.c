/* store-pg-work.c: the PostgreSQL backend of the Work API's queue and worker credentials
 * (store-work-backend.h). An update is a compare-and-set on the row's version, so two nodes (or
 * two pollers) never both take one item. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-pg-internal.h"
#include "store-work-backend.h"

static int wk_insert(store *base, const store_work *w, const char *body, hull_error *e) {
        pg_store *s = pg_of(base);
        char cb[PG_INT_MAX], pb[PG_INT_MAX], lb[PG_INT_MAX];
        const char *v[] = {w->id,
                           w->env_id,
                           w->session_id,
                           w->state,
                           pg_int(cb, w->created_ms),
                           pg_int(pb, w->polled_ms),
                           pg_int(lb, w->lease_ms),
                           w->worker_id,
                           body};
        PG_LOCKED(s);
        int r = pg_exec(pc,
                        "INSERT INTO work (id, env_id, session_id, state, created_ms, polled_ms, lease_ms, heartbeat,"
                        " worker_id, version, body) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, 1, $9)",
                        9, v, "cannot queue a work item", NULL, e);
        return r == -EEXIST ? hull_fail(e, -EEXIST, "store: session %.64s has a work item already", w->session_id) : r;
}

static int wk_get(store *base, const char *id, store_work *w, char **ret_body, hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {id};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        "SELECT id, env_id, session_id, state, created_ms, polled_ms, lease_ms, heartbeat,"
                        " worker_id, version, body FROM work WHERE id = $1",
                        1, v, "cannot read a work item", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no work item %.64s", id);
        snprintf(w->id, sizeof(w->id), "%s", PQgetvalue(res, 0, 0));
        snprintf(w->env_id, sizeof(w->env_id), "%s", PQgetvalue(res, 0, 1));
        snprintf(w->session_id, sizeof(w->session_id), "%s", PQgetvalue(res, 0, 2));
        snprintf(w->state, sizeof(w->state), "%s", PQgetvalue(res, 0, 3));
        w->created_ms = pg_get_int(res, 0, 4);
        w->polled_ms = pg_get_int(res, 0, 5);
        w->lease_ms = pg_get_int(res, 0, 6);
        w->has_heartbeat = !PQgetisnull(res, 0, 7);
        snprintf(w->heartbeat, sizeof(w->heartbeat), "%s", PQgetvalue(res, 0, 7));
        snprintf(w->worker_id, sizeof(w->worker_id), "%s", PQgetvalue(res, 0, 8));
        w->version = pg_get_int(res, 0, 9);
        if (!(*ret_body = strdup(PQgetvalue(res, 0, 10))))
                return hull_err(e, -ENOMEM, "store: out of memory");
        return 0;
}

static int wk_update(store *base, const store_work *w, const char *body, hull_error *e) {
        pg_store *s = pg_of(base);
        char pb[PG_INT_MAX], lb[PG_INT_MAX], vb[PG_INT_MAX];
        const char *v[] = {w->id,
                           w->state,
                           w->has_heartbeat ? w->heartbeat : NULL,
                           w->worker_id,
                           body,
                           pg_int(pb, w->polled_ms),
                           pg_int(lb, w->lease_ms),
                           pg_int(vb, w->version)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        "UPDATE work SET state = $2, heartbeat = $3, worker_id = $4, body = $5, polled_ms = $6,"
                        " lease_ms = $7, version = version + 1 WHERE id = $1 AND version = $8",
                        8, v, "cannot update a work item", &res, e);
        if (r < 0)
                return r;
        return pg_changes(res) ? 0 : hull_fail(e, -ESTALE, "store: work item %.64s changed meanwhile", w->id);
}

static int wk_expire(store *base, const char *env_id, int64_t now_ms, hull_error *e) {
        pg_store *s = pg_of(base);
        char nb[PG_INT_MAX];
        const char *v[] = {env_id, pg_int(nb, now_ms)};
        PG_LOCKED(s);
        int r = pg_exec(pc,
                        "UPDATE work SET state = 'queued', polled_ms = 0, lease_ms = 0, heartbeat = NULL,"
                        " worker_id = '', version = version + 1 WHERE env_id = $1 AND state IN ('starting', 'active')"
                        " AND lease_ms > 0 AND lease_ms < $2",
                        2, v, "cannot requeue expired work", NULL, e);
        if (r >= 0)
                r = pg_exec(pc,
                            "UPDATE work SET state = 'stopped', lease_ms = 0, version = version + 1 WHERE env_id = $1"
                            " AND state = 'stopping' AND lease_ms > 0 AND lease_ms < $2",
                            2, v, "cannot stop expired work", NULL, e);
        return r;
}

static int ids_of(pg_conn *pc, const char *sql, int n, const char *const *v, json_t *ids, hull_error *e) {
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, sql, n, v, "cannot list work items", &res, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++)
                if (json_array_append_new(ids, json_string(PQgetvalue(res, i, 0))) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        return 0;
}

static int wk_due(store *base, const char *env_id, int64_t reclaim_before_ms, unsigned max, json_t *ids,
                  hull_error *e) {
        pg_store *s = pg_of(base);
        char rb[PG_INT_MAX], mb[PG_INT_MAX];
        const char *v[] = {env_id, pg_int(rb, reclaim_before_ms), pg_int(mb, max)};
        PG_LOCKED(s);
        return ids_of(pc,
                      "SELECT id FROM work WHERE env_id = $1 AND state = 'queued' AND polled_ms < $2"
                      " ORDER BY created_ms, id LIMIT $3",
                      3, v, ids, e);
}

static int wk_list(store *base, const char *env_id, int64_t after_ms, const char *after_id, unsigned max, json_t *ids,
                   hull_error *e) {
        pg_store *s = pg_of(base);
        char ab[PG_INT_MAX], mb[PG_INT_MAX];
        const char *v[] = {env_id, pg_int(ab, after_ms), after_id ? after_id : "", pg_int(mb, max)};
        PG_LOCKED(s);
        return ids_of(pc,
                      "SELECT id FROM work WHERE env_id = $1 AND (created_ms, id) > ($2::BIGINT, $3::TEXT)"
                      " ORDER BY created_ms, id LIMIT $4",
                      4, v, ids, e);
}

static int wk_stats(store *base, const char *env_id, store_work_stats *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {env_id};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        "SELECT count(*) FILTER (WHERE polled_ms = 0), count(*) FILTER (WHERE polled_ms > 0),"
                        " coalesce(min(created_ms), 0) FROM work WHERE env_id = $1 AND state = 'queued'",
                        1, v, "cannot count work items", &res, e);
        if (r < 0)
                return r;
        ret->depth = pg_get_int(res, 0, 0);
        ret->pending = pg_get_int(res, 0, 1);
        ret->oldest_created = pg_get_int(res, 0, 2);
        return 0;
}

static int wk_key_add(store *base, const char *digest_hex, const char *scope, const char *work_id, int64_t created_ms,
                      hull_error *e) {
        pg_store *s = pg_of(base);
        char cb[PG_INT_MAX];
        const char *v[] = {digest_hex, scope, work_id, pg_int(cb, created_ms)};
        PG_LOCKED(s);
        return pg_exec(pc, "INSERT INTO work_keys (digest, scope, work_id, created_ms) VALUES ($1, $2, $3, $4)", 4, v,
                       "cannot store a worker credential", NULL, e);
}

static int wk_key_find(store *base, const char *digest_hex, char *ret_scope, char *ret_work_id, hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {digest_hex};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, "SELECT scope, work_id FROM work_keys WHERE digest = $1", 1, v,
                        "cannot read a worker credential", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return 0;
        snprintf(ret_scope, STORE_WORK_SCOPE_MAX, "%s", PQgetvalue(res, 0, 0));
        snprintf(ret_work_id, STORE_ID_MAX, "%s", PQgetvalue(res, 0, 1));
        return 1;
}

static int wk_key_drop(store *base, const char *work_id, hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {work_id};
        PG_LOCKED(s);
        return pg_exec(pc, "DELETE FROM work_keys WHERE work_id = $1", 1, v, "cannot forget a work item's tokens", NULL,
                       e);
}

const store_work_ops pg_work_ops = {
        .insert = wk_insert,
        .get = wk_get,
        .update = wk_update,
        .expire = wk_expire,
        .due = wk_due,
        .list = wk_list,
        .stats = wk_stats,
        .key_add = wk_key_add,
        .key_find = wk_key_find,
        .key_drop = wk_key_drop,
};
