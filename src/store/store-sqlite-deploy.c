/* store-sqlite-deploy.c: the SQLite backend's deployments and their runs (store_deploy_ops): rows
 * of the tables of migration 8, their pages for store_paginate, and the claim of a scheduled run. */
#include "store-sqlite-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int dput(store *base, store_dkind k, const store_drow *row, bool create, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        static const char *const sql[2][2] = {
                [STORE_DEPLOYMENT] = {"UPDATE deployments SET archived = ?3, status = ?4, agent_id = ?5, body = ?6"
                                      " WHERE id = ?1",
                                      "INSERT INTO deployments (id, created_ms, archived, status, agent_id, claimed_ms,"
                                      " body) VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6)"},
                [STORE_DEPLOYMENT_RUN] = {NULL, "INSERT INTO deployment_runs (id, created_ms, deployment_id,"
                                                " trigger_type, has_error, body) VALUES (?1, ?2, ?7, ?8, ?9, ?6)"},
        };
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql[k][create], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, row->id);
        rc = rc ?: sqlt_bind_text(st, 6, row->body);
        if (create)
                rc = rc ?: sqlite3_bind_int64(st, 2, row->created_ms);
        if (k == STORE_DEPLOYMENT) {
                rc = rc ?: sqlite3_bind_int64(st, 3, row->archived);
                rc = rc ?: sqlt_bind_text(st, 4, row->status);
                rc = rc ?: sqlt_bind_text(st, 5, row->agent_id);
        } else {
                rc = rc ?: sqlt_bind_text(st, 7, row->deployment_id);
                rc = rc ?: sqlt_bind_text(st, 8, row->trigger_type);
                rc = rc ?: sqlite3_bind_int64(st, 9, row->has_error);
        }
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return hull_fail(e, -EEXIST, "store: a deployment%s with id %s exists",
                                 k == STORE_DEPLOYMENT ? "" : " run", row->id);
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, create ? "cannot insert" : "cannot update", e);
        if (!create && sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no deployment %s", row->id);
        return 0;
}

static int dget(store *base, store_dkind k, const char *id, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        static const char *const sql[2] = {
                [STORE_DEPLOYMENT] = "SELECT body FROM deployments WHERE id = ?1",
                [STORE_DEPLOYMENT_RUN] = "SELECT body FROM deployment_runs WHERE id = ?1",
        };
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql[k], &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no deployment%s %s", k == STORE_DEPLOYMENT ? "" : " run", id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read", e);
        return sqlt_load_column(st, 0, "deployment", ret, e);
}

typedef struct dlisting {
        sqlt_store *s;
        store_dkind k;
        const store_dfilter *f;
        const store_listing *l;
} dlisting;

/* ?5 ?6 the anchor, ?7..?10 the time filters (NULL: none), ?11 the limit */
#define D_TIMES                                                                                                        \
        " AND (?7 IS NULL OR created_ms > ?7) AND (?8 IS NULL OR created_ms >= ?8)"                                    \
        " AND (?9 IS NULL OR created_ms < ?9) AND (?10 IS NULL OR created_ms <= ?10)"
#define D_DEPLOYMENTS                                                                                                  \
        "SELECT created_ms, id, body FROM deployments WHERE (?1 OR archived = 0) AND (?2 IS NULL OR status = ?2)"      \
        " AND (?3 IS NULL OR agent_id = ?3) AND ?4 IS NULL" D_TIMES
#define D_RUNS                                                                                                         \
        "SELECT created_ms, id, body FROM deployment_runs WHERE ?1 IS NOT NULL"                                        \
        " AND (?2 IS NULL OR deployment_id = ?2) AND (?3 IS NULL OR trigger_type = ?3)"                                \
        " AND (?4 IS NULL OR has_error = ?4)" D_TIMES
#define D_DESC " AND (?5 IS NULL OR (created_ms, id) < (?5, ?6)) ORDER BY created_ms DESC, id DESC LIMIT ?11"
#define D_ASC " AND (?5 IS NULL OR (created_ms, id) > (?5, ?6)) ORDER BY created_ms, id LIMIT ?11"

static int dfetch(void *ctx, const store_rowkey *anchor, bool asc, unsigned want, json_t *out, store_rowkey *keys,
                  size_t *ret_n, hull_error *e) {
        const dlisting *dl = ctx;
        static const char *const sql[2][2] = {
                [STORE_DEPLOYMENT] = {D_DEPLOYMENTS D_DESC, D_DEPLOYMENTS D_ASC},
                [STORE_DEPLOYMENT_RUN] = {D_RUNS D_DESC, D_RUNS D_ASC},
        };
        sqlt_store *s = dl->s;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, sql[dl->k][asc], &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_bind_int64(st, 1, dl->f->include_archived);
        rc = rc ?: sqlt_bind_text(st, 2, dl->f->s1);
        rc = rc ?: sqlt_bind_text(st, 3, dl->f->s2);
        if (dl->f->has_error >= 0)
                rc = rc ?: sqlite3_bind_int64(st, 4, dl->f->has_error);
        if (anchor) {
                rc = rc ?: sqlite3_bind_int64(st, 5, anchor->key);
                rc = rc ?: sqlt_bind_text(st, 6, anchor->id);
        }
        for (int i = 0; i < _STORE_TIME_MAX; i++)
                if (dl->l->has_time[i])
                        rc = rc ?: sqlite3_bind_int64(st, 7 + i, dl->l->time_ms[i]);
        rc = rc ?: sqlite3_bind_int64(st, 11, want);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        return sqlt_page_rows(s, st, "deployment", keys, out, ret_n, e);
}

static int dlist(store *base, store_dkind k, const store_dfilter *f, const store_listing *l, const char *page,
                 unsigned limit, store_page *ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        dlisting dl = {.s = s, .k = k, .f = f, .l = l};
        return store_paginate(l, page, limit, dfetch, &dl, ret, NULL, e);
}

static int dclaim(store *base, const char *id, int64_t scheduled_ms, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s,
                          "UPDATE deployments SET claimed_ms = ?2 WHERE id = ?1 AND claimed_ms < ?2 AND archived = 0"
                          " AND status = 'active'",
                          &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, id);
        rc = rc ?: sqlite3_bind_int64(st, 2, scheduled_ms);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        if ((r = sqlt_step_done(s, st, "cannot claim a run", e)) < 0)
                return r;
        return sqlite3_changes(s->db) == 1;
}

const store_deploy_ops sqlt_deploy_ops = {
        .put = dput,
        .get = dget,
        .list = dlist,
        .claim = dclaim,
};
