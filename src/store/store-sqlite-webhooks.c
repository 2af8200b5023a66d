/* store-sqlite-webhooks.c: the SQLite backend's webhooks and their outbox
 * (store-webhook-backend.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-sqlite-internal.h"
#include "store-webhook-backend.h"

static int wh_put(store *base, bool create, const store_webhook_row *w, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        sqlt_args a = {.t = {w->id, w->types, w->body, w->key_id, w->sealed}, .i = {w->created_ms, w->enabled}};
        int changes = 0;
        int r = create ? sqlt_args_run(s,
                                       "INSERT INTO webhooks (id, created_ms, types, enabled, body, key_id, sealed)"
                                       " VALUES (?1, ?7, ?2, ?8, ?3, ?4, ?5)",
                                       &a, "cannot store a webhook", &changes, e)
                : w->sealed
                        ? sqlt_args_run(
                                  s,
                                  "UPDATE webhooks SET types = ?2, enabled = ?8, body = ?3, key_id = ?4, sealed = ?5"
                                  " WHERE id = ?1",
                                  &a, "cannot update a webhook", &changes, e)
                        : sqlt_args_run(s, "UPDATE webhooks SET types = ?2, enabled = ?8, body = ?3 WHERE id = ?1", &a,
                                        "cannot update a webhook", &changes, e);
        if (r < 0)
                return r;
        return changes ? 0 : hull_fail(e, -ENOENT, "store: no webhook %.64s", w->id);
}

static int wh_get(store *base, const char *id, json_t **ret, char **ret_sealed, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_args_prep(s, "SELECT body, sealed FROM webhooks WHERE id = ?1", &(sqlt_args){.t = {id}}, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no webhook %.64s", id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a webhook", e);
        json_t *o = NULL;
        if ((r = sqlt_load_column(st, 0, "a webhook", &o, e)) < 0)
                return r;
        if (ret_sealed) {
                const char *z = (const char *) sqlite3_column_text(st, 1);
                if (!(*ret_sealed = strdup(z ? z : ""))) {
                        json_decref(o);
                        return hull_err(e, -ENOMEM, "store: out of memory");
                }
        }
        if (ret)
                *ret = o;
        else
                json_decref(o);
        return 0;
}

static int wh_list(store *base, unsigned max, json_t *out, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_args_prep(s, "SELECT body FROM webhooks ORDER BY created_ms DESC, id DESC LIMIT ?7",
                               &(sqlt_args){.i = {max}}, &st, e);
        if (r < 0)
                return r;
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        return 0;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot list webhooks", e);
                json_t *o;
                if ((r = sqlt_load_column(st, 0, "a webhook", &o, e)) < 0)
                        return r;
                if (json_array_append_new(out, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
}

static int wh_remove(store *base, const char *id, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_tx_ sqlt_tx t = {0};
        int r, changes = 0;
        if ((r = sqlt_tx_begin(s, &t, e)) < 0)
                return r;
        sqlt_args a = {.t = {id}};
        if ((r = sqlt_args_run(s, "DELETE FROM webhook_deliveries WHERE webhook_id = ?1", &a,
                               "cannot delete deliveries", NULL, e)) < 0 ||
            (r = sqlt_args_run(s, "DELETE FROM webhooks WHERE id = ?1", &a, "cannot delete a webhook", &changes, e)) <
                    0)
                return r;
        if (!changes)
                return hull_fail(e, -ENOENT, "store: no webhook %.64s", id);
        return sqlt_tx_commit(&t, e);
}

/* Does an enabled subscription want type? A read: no write transaction (and no WAL write lock) for
 * the statuses of a turn nobody subscribed to. Under the store's lock with the INSERT after it, so
 * a subscription this process makes meanwhile waits; one another connection commits between the
 * two was made after this event and is not owed it. */
static int wh_wanted(sqlt_store *s, const char *type, hull_error *e) {
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(
                s, CACHED_WEBHOOK_WANTED,
                "SELECT 1 FROM webhooks WHERE enabled = 1 AND instr(types, ',' || ?1 || ',') > 0 LIMIT 1", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, type);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, "cannot read the webhooks", e);
        return rc == SQLITE_ROW;
}

static int wh_enqueue(store *base, const char *type, const char *event_id, const char *webhook_id, int64_t created_ms,
                      const char *body, size_t *ret_n, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        sqlt_args a = {.t = {type, event_id, body, webhook_id}, .i = {created_ms}};
        int changes = 0, r;
        if (webhook_id)
                r = sqlt_args_run(s,
                                  "INSERT INTO webhook_deliveries (event_id, webhook_id, created_ms, due_ms, attempts,"
                                  " body) SELECT ?2, id, ?7, ?7, 0, ?3 FROM webhooks WHERE id = ?4",
                                  &a, "cannot queue a webhook delivery", &changes, e);
        else if ((r = wh_wanted(s, type, e)) <= 0) { /* on every turn (its session's statuses) */
                if (r == 0)
                        *ret_n = 0;
                return r;
        } else { /* compiled once */
                _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
                r = sqlt_prep_cached(
                        s, CACHED_WEBHOOK_ENQUEUE,
                        "INSERT INTO webhook_deliveries (event_id, webhook_id, created_ms, due_ms, attempts,"
                        " body) SELECT ?2, id, ?7, ?7, 0, ?3 FROM webhooks"
                        " WHERE enabled = 1 AND instr(types, ',' || ?1 || ',') > 0",
                        &st, e);
                if (r < 0)
                        return r;
                int rc = sqlt_bind_text(st, 1, type);
                rc = rc ?: sqlt_bind_text(st, 2, event_id);
                rc = rc ?: sqlt_bind_text(st, 3, body);
                rc = rc ?: sqlite3_bind_int64(st, 7, created_ms);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if ((rc & 0xff) == SQLITE_CONSTRAINT) /* as sqlt_args_run has it */
                        return hull_fail(e, -EEXIST, "store: cannot queue a webhook delivery: it exists already");
                if (rc != SQLITE_DONE)
                        return sqlt_fail(s->db, rc, "cannot queue a webhook delivery", e);
                changes = sqlite3_changes(s->db);
        }
        if (r < 0)
                return r;
        *ret_n = (size_t) changes;
        return 0;
}

static int wh_claim(store *base, int64_t now_ms, int64_t until_ms, unsigned max, json_t *out, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_args_prep(
                s,
                "UPDATE webhook_deliveries SET due_ms = ?8 WHERE (event_id, webhook_id) IN"
                " (SELECT d.event_id, d.webhook_id FROM webhook_deliveries d JOIN webhooks w"
                " ON w.id = d.webhook_id WHERE w.enabled = 1 AND d.due_ms <= ?7 ORDER BY d.due_ms LIMIT ?9)"
                " RETURNING event_id, webhook_id, attempts, body",
                &(sqlt_args){.i = {now_ms, until_ms, max}}, &st, e);
        if (r < 0)
                return r;
        for (;;) {
                int rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        return 0;
                if (rc != SQLITE_ROW)
                        return sqlt_fail(s->db, rc, "cannot claim webhook deliveries", e);
                json_t *o = json_pack("{s:s, s:s, s:I, s:s}", "event_id",
                                      sqlite3_column_text(st, 0) ?: (const unsigned char *) "", "webhook_id",
                                      sqlite3_column_text(st, 1) ?: (const unsigned char *) "", "attempts",
                                      (json_int_t) sqlite3_column_int64(st, 2), "body",
                                      sqlite3_column_text(st, 3) ?: (const unsigned char *) "");
                if (!o || json_array_append_new(out, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
}

static int wh_settle(store *base, const char *event_id, const char *webhook_id, int64_t due_ms, int64_t attempts,
                     hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        sqlt_args a = {.t = {event_id, webhook_id}, .i = {due_ms, attempts}};
        int changes = 0;
        int r = due_ms < 0 ? sqlt_args_run(s, "DELETE FROM webhook_deliveries WHERE event_id = ?1 AND webhook_id = ?2",
                                           &a, "cannot end a webhook delivery", &changes, e)
                           : sqlt_args_run(s,
                                           "UPDATE webhook_deliveries SET due_ms = ?7, attempts = ?8"
                                           " WHERE event_id = ?1 AND webhook_id = ?2",
                                           &a, "cannot reschedule a webhook delivery", &changes, e);
        if (r < 0)
                return r;
        return changes ? 0 : hull_fail(e, -ENOENT, "store: no such webhook delivery");
}

static int wh_pending(store *base, const char *webhook_id, int64_t *ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_args_prep(s,
                               webhook_id ? "SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ?1"
                                          : "SELECT count(*) FROM webhook_deliveries",
                               &(sqlt_args){.t = {webhook_id}}, &st, e);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot count webhook deliveries", e);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

const store_webhook_ops sqlt_webhook_ops = {
        .put = wh_put,
        .get = wh_get,
        .list = wh_list,
        .remove = wh_remove,
        .enqueue = wh_enqueue,
        .claim = wh_claim,
        .settle = wh_settle,
        .pending = wh_pending,
};
