/* store-sqlite-work.c: the SQLite backend of the Work API's queue and worker credentials
 * (store-work-backend.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-sqlite-internal.h"
#include "store-work-backend.h"

static int wk_insert(store *base, const store_work *w, const char *body, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        sqlt_args a = {.t = {w->id, w->env_id, w->session_id, w->state, body, w->worker_id},
                       .i = {w->created_ms, w->polled_ms, w->lease_ms}};
        int r = sqlt_args_run(
                s,
                "INSERT INTO work (id, env_id, session_id, state, created_ms, polled_ms, lease_ms, heartbeat,"
                " worker_id, version, body) VALUES (?1, ?2, ?3, ?4, ?7, ?8, ?9, NULL, ?6, 1, ?5)",
                &a, "cannot queue a work item", NULL, e);
        return r == -EEXIST ? hull_fail(e, -EEXIST, "store: session %.64s has a work item already", w->session_id) : r;
}

static void copy_text(char *dst, size_t size, const unsigned char *z) {
        snprintf(dst, size, "%s", z ? (const char *) z : "");
}

static int wk_get(store *base, const char *id, store_work *w, char **ret_body, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_args_prep(s,
                               "SELECT id, env_id, session_id, state, created_ms, polled_ms, lease_ms, heartbeat,"
                               " worker_id, version, body FROM work WHERE id = ?1",
                               &(sqlt_args){.t = {id}}, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no work item %.64s", id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a work item", e);
        copy_text(w->id, sizeof(w->id), sqlite3_column_text(st, 0));
        copy_text(w->env_id, sizeof(w->env_id), sqlite3_column_text(st, 1));
        copy_text(w->session_id, sizeof(w->session_id), sqlite3_column_text(st, 2));
        copy_text(w->state, sizeof(w->state), sqlite3_column_text(st, 3));
        w->created_ms = sqlite3_column_int64(st, 4);
        w->polled_ms = sqlite3_column_int64(st, 5);
        w->lease_ms = sqlite3_column_int64(st, 6);
        w->has_heartbeat = sqlite3_column_type(st, 7) != SQLITE_NULL;
        copy_text(w->heartbeat, sizeof(w->heartbeat), sqlite3_column_text(st, 7));
        copy_text(w->worker_id, sizeof(w->worker_id), sqlite3_column_text(st, 8));
        w->version = sqlite3_column_int64(st, 9);
        const unsigned char *b = sqlite3_column_text(st, 10);
        if (!(*ret_body = strdup(b ? (const char *) b : "{}")))
                return hull_err(e, -ENOMEM, "store: out of memory");
        return 0;
}

static int wk_update(store *base, const store_work *w, const char *body, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        sqlt_args a = {.t = {w->id, w->state, w->has_heartbeat ? w->heartbeat : NULL, w->worker_id, body},
                       .i = {w->polled_ms, w->lease_ms, w->version}};
        int changes = 0;
        int r = sqlt_args_run(s,
                              "UPDATE work SET state = ?2, heartbeat = ?3, worker_id = ?4, body = ?5, polled_ms = ?7,"
                              " lease_ms = ?8, version = version + 1 WHERE id = ?1 AND version = ?9",
                              &a, "cannot update a work item", &changes, e);
        if (r < 0)
                return r;
        return changes ? 0 : hull_fail(e, -ESTALE, "store: work item %.64s changed meanwhile", w->id);
}

static int wk_expire(store *base, const char *env_id, int64_t now_ms, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        sqlt_args a = {.t = {env_id}, .i = {now_ms}};
        int r = sqlt_args_run(
                s,
                "UPDATE work SET state = 'queued', polled_ms = 0, lease_ms = 0, heartbeat = NULL,"
                " worker_id = '', version = version + 1 WHERE env_id = ?1 AND state IN ('starting', 'active')"
                " AND lease_ms > 0 AND lease_ms < ?7",
                &a, "cannot requeue expired work", NULL, e);
        if (r >= 0)
                r = sqlt_args_run(
                        s,
                        "UPDATE work SET state = 'stopped', lease_ms = 0, version = version + 1 WHERE env_id = ?1"
                        " AND state = 'stopping' AND lease_ms > 0 AND lease_ms < ?7",
                        &a, "cannot stop expired work", NULL, e);
        return r;
}

static int ids_of(sqlt_store *s, const char *sql, const sqlt_args *a, json_t *ids, hull_error *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_args_prep(s, sql, a, &st, e);
        if (r < 0)
                return r;
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        return 0;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list work items", e);
                const unsigned char *z = sqlite3_column_text(st, 0);
                if (json_array_append_new(ids, json_string(z ? (const char *) z : "")) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
}

static int wk_due(store *base, const char *env_id, int64_t reclaim_before_ms, unsigned max, json_t *ids,
                  hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        return ids_of(s,
                      "SELECT id FROM work WHERE env_id = ?1 AND state = 'queued' AND polled_ms < ?7"
                      " ORDER BY created_ms, id LIMIT ?8",
                      &(sqlt_args){.t = {env_id}, .i = {reclaim_before_ms, max}}, ids, e);
}

static int wk_list(store *base, const char *env_id, int64_t after_ms, const char *after_id, unsigned max, json_t *ids,
                   hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        return ids_of(s,
                      "SELECT id FROM work WHERE env_id = ?1 AND (created_ms, id) > (?7, ?2)"
                      " ORDER BY created_ms, id LIMIT ?8",
                      &(sqlt_args){.t = {env_id, after_id ? after_id : ""}, .i = {after_ms, max}}, ids, e);
}

static int wk_stats(store *base, const char *env_id, store_work_stats *ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_args_prep(s,
                               "SELECT coalesce(sum(polled_ms = 0), 0), coalesce(sum(polled_ms > 0), 0),"
                               " coalesce(min(created_ms), 0) FROM work WHERE env_id = ?1 AND state = 'queued'",
                               &(sqlt_args){.t = {env_id}}, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot count work items", e);
        ret->depth = sqlite3_column_int64(st, 0);
        ret->pending = sqlite3_column_int64(st, 1);
        ret->oldest_created = sqlite3_column_int64(st, 2);
        return 0;
}

static int wk_key_add(store *base, const char *digest_hex, const char *scope, const char *work_id, int64_t created_ms,
                      hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        return sqlt_args_run(s, "INSERT INTO work_keys (digest, scope, work_id, created_ms) VALUES (?1, ?2, ?3, ?7)",
                             &(sqlt_args){.t = {digest_hex, scope, work_id}, .i = {created_ms}},
                             "cannot store a worker credential", NULL, e);
}

static int wk_key_find(store *base, const char *digest_hex, char *ret_scope, char *ret_work_id, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_args_prep(s, "SELECT scope, work_id FROM work_keys WHERE digest = ?1",
                               &(sqlt_args){.t = {digest_hex}}, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return 0;
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a worker credential", e);
        copy_text(ret_scope, STORE_WORK_SCOPE_MAX, sqlite3_column_text(st, 0));
        copy_text(ret_work_id, STORE_ID_MAX, sqlite3_column_text(st, 1));
        return 1;
}

static int wk_key_drop(store *base, const char *work_id, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        return sqlt_args_run(s, "DELETE FROM work_keys WHERE work_id = ?1", &(sqlt_args){.t = {work_id}},
                             "cannot forget a work item's tokens", NULL, e);
}

const store_work_ops sqlt_work_ops = {
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
