/* store-pg-deploy.c: the PostgreSQL backend's deployments and their runs (store_deploy_ops): rows
 * of the tables of migration 8, their pages for store_paginate, and the claim of a scheduled run
 * (one UPDATE: row-locked, so two nodes sharing the database never both claim a run). */
#include "store-pg-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int dput(store *base, store_dkind k, const store_drow *row, bool create, hull_error *e) {
        pg_store *s = pg_of(base);
        static const char *const sql[2][2] = {
                [STORE_DEPLOYMENT] = {"UPDATE deployments SET archived = $3::int, status = $4, agent_id = $5, body = $6"
                                      " WHERE id = $1 AND $2::bigint IS NOT NULL AND $7::text IS NULL"
                                      " AND $8::text IS NULL AND $9::int IS NULL",
                                      "INSERT INTO deployments (id, created_ms, archived, status, agent_id, claimed_ms,"
                                      " body) SELECT $1, $2::bigint, $3::int, $4, $5, 0, $6"
                                      " WHERE $7::text IS NULL AND $8::text IS NULL AND $9::int IS NULL"},
                [STORE_DEPLOYMENT_RUN] = {NULL, "INSERT INTO deployment_runs (id, created_ms, deployment_id,"
                                                " trigger_type, has_error, body) SELECT $1, $2::bigint, $7, $8,"
                                                " $9::int, $6 WHERE $3::int IS NULL AND $4::text IS NULL"
                                                " AND $5::text IS NULL"},
        };
        char ms[PG_INT_MAX];
        bool dep = k == STORE_DEPLOYMENT;
        const char *v[9] = {row->id,
                            pg_int(ms, row->created_ms),
                            dep ? (row->archived ? "1" : "0") : NULL,
                            dep ? row->status : NULL,
                            dep ? row->agent_id : NULL,
                            row->body,
                            dep ? NULL : row->deployment_id,
                            dep ? NULL : row->trigger_type,
                            dep ? NULL : (row->has_error ? "1" : "0")};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, sql[k][create], 9, v, create ? "cannot insert" : "cannot update", &res, e);
        if (r == -EEXIST)
                return hull_fail(e, -EEXIST, "store: a deployment%s with id %s exists", dep ? "" : " run", row->id);
        if (r < 0)
                return r;
        if (!create && pg_changes(res) == 0)
                return hull_fail(e, -ENOENT, "store: no deployment %s", row->id);
        return 0;
}

static int dget(store *base, store_dkind k, const char *id, json_t **ret, hull_error *e) {
        pg_store *s = pg_of(base);
        static const char *const sql[2] = {
                [STORE_DEPLOYMENT] = "SELECT body FROM deployments WHERE id = $1",
                [STORE_DEPLOYMENT_RUN] = "SELECT body FROM deployment_runs WHERE id = $1",
        };
        const char *v[] = {id};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, sql[k], 1, v, "cannot read", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no deployment%s %s", k == STORE_DEPLOYMENT ? "" : " run", id);
        return pg_load(res, 0, 0, "deployment", ret, e);
}

typedef struct dlisting {
        pg_conn *pc;
        store_dkind k;
        const store_dfilter *f;
        const store_listing *l;
} dlisting;

/* $5 $6 the anchor, $7..$10 the time filters (NULL: none), $11 the limit */
#define D_TIMES                                                                                                        \
        " AND ($7::bigint IS NULL OR created_ms > $7::bigint) AND ($8::bigint IS NULL OR created_ms >= $8::bigint)"    \
        " AND ($9::bigint IS NULL OR created_ms < $9::bigint) AND ($10::bigint IS NULL OR created_ms <= $10::bigint)"
#define D_DEPLOYMENTS                                                                                                  \
        "SELECT created_ms, id, body FROM deployments WHERE ($1::int = 1 OR archived = 0)"                             \
        " AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR agent_id = $3) AND $4::int IS NULL" D_TIMES
#define D_RUNS                                                                                                         \
        "SELECT created_ms, id, body FROM deployment_runs WHERE $1::int IS NOT NULL"                                   \
        " AND ($2::text IS NULL OR deployment_id = $2) AND ($3::text IS NULL OR trigger_type = $3)"                    \
        " AND ($4::int IS NULL OR has_error = $4::int)" D_TIMES
#define D_DESC                                                                                                         \
        " AND ($5::bigint IS NULL OR (created_ms, id) < ($5::bigint, $6::text))"                                       \
        " ORDER BY created_ms DESC, id DESC LIMIT $11::bigint"
#define D_ASC                                                                                                          \
        " AND ($5::bigint IS NULL OR (created_ms, id) > ($5::bigint, $6::text)) ORDER BY created_ms, id"               \
        " LIMIT $11::bigint"

static int dfetch(void *ctx, const store_rowkey *anchor, bool asc, unsigned want, json_t *out, store_rowkey *keys,
                  size_t *ret_n, hull_error *e) {
        const dlisting *dl = ctx;
        static const char *const sql[2][2] = {
                [STORE_DEPLOYMENT] = {D_DEPLOYMENTS D_DESC, D_DEPLOYMENTS D_ASC},
                [STORE_DEPLOYMENT_RUN] = {D_RUNS D_DESC, D_RUNS D_ASC},
        };
        char key[PG_INT_MAX], lim[PG_INT_MAX], t[_STORE_TIME_MAX][PG_INT_MAX];
        const char *v[11] = {dl->f->include_archived ? "1" : "0",
                             dl->f->s1,
                             dl->f->s2,
                             dl->f->has_error < 0 ? NULL
                             : dl->f->has_error   ? "1"
                                                  : "0",
                             anchor ? pg_int(key, anchor->key) : NULL,
                             anchor ? anchor->id : NULL};
        for (int i = 0; i < _STORE_TIME_MAX; i++)
                v[6 + i] = dl->l->has_time[i] ? pg_int(t[i], dl->l->time_ms[i]) : NULL;
        v[10] = pg_int(lim, want);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(dl->pc, sql[dl->k][asc], 11, v, "cannot list", &res, e);
        if (r < 0)
                return r;
        return pg_page_rows(res, "deployment", keys, out, ret_n, e);
}

static int dlist(store *base, store_dkind k, const store_dfilter *f, const store_listing *l, const char *page,
                 unsigned limit, store_page *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        PG_LOCKED(s);
        dlisting dl = {.pc = pc, .k = k, .f = f, .l = l};
        return store_paginate(l, page, limit, dfetch, &dl, ret, NULL, e);
}

static int dclaim(store *base, const char *id, int64_t scheduled_ms, hull_error *e) {
        pg_store *s = pg_of(base);
        char ms[PG_INT_MAX];
        const char *v[] = {id, pg_int(ms, scheduled_ms)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        "UPDATE deployments SET claimed_ms = $2::bigint WHERE id = $1 AND claimed_ms < $2::bigint"
                        " AND archived = 0 AND status = 'active'",
                        2, v, "cannot claim a run", &res, e);
        if (r < 0)
                return r;
        return pg_changes(res) == 1;
}

const store_deploy_ops pg_deploy_ops = {
        .put = dput,
        .get = dget,
        .list = dlist,
        .claim = dclaim,
};
