/* store-pg-webhooks.c: the PostgreSQL backend's webhooks and their outbox
 * (store-webhook-backend.h). A claim takes its rows FOR UPDATE SKIP LOCKED, so nodes sharing the
 * database share the deliveries without waiting for one another. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-pg-internal.h"
#include "store-webhook-backend.h"

static int wh_put(store *base, bool create, const store_webhook_row *w, hull_error *e) {
        pg_store *s = pg_of(base);
        char cb[PG_INT_MAX], eb[PG_INT_MAX];
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r;
        if (create) {
                const char *v[] = {
                        w->id,    pg_int(cb, w->created_ms), w->types, pg_int(eb, w->enabled), w->body, w->key_id,
                        w->sealed};
                r = pg_exec(pc,
                            "INSERT INTO webhooks (id, created_ms, types, enabled, body, key_id, sealed)"
                            " VALUES ($1, $2, $3, $4, $5, $6, $7)",
                            7, v, "cannot store a webhook", &res, e);
                if (r == -EEXIST)
                        return hull_fail(e, -EEXIST, "store: webhook %.64s exists already", w->id);
        } else if (w->sealed) {
                const char *v[] = {w->id, w->types, pg_int(eb, w->enabled), w->body, w->key_id, w->sealed};
                r = pg_exec(pc,
                            "UPDATE webhooks SET types = $2, enabled = $3, body = $4, key_id = $5, sealed = $6"
                            " WHERE id = $1",
                            6, v, "cannot update a webhook", &res, e);
        } else {
                const char *v[] = {w->id, w->types, pg_int(eb, w->enabled), w->body};
                r = pg_exec(pc, "UPDATE webhooks SET types = $2, enabled = $3, body = $4 WHERE id = $1", 4, v,
                            "cannot update a webhook", &res, e);
        }
        if (r < 0)
                return r;
        return pg_changes(res) ? 0 : hull_fail(e, -ENOENT, "store: no webhook %.64s", w->id);
}

static int wh_get(store *base, const char *id, json_t **ret, char **ret_sealed, hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {id};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, "SELECT body, sealed FROM webhooks WHERE id = $1", 1, v, "cannot read a webhook", &res, e);
        if (r < 0)
                return r;
        if (PQntuples(res) == 0)
                return hull_fail(e, -ENOENT, "store: no webhook %.64s", id);
        if (ret_sealed && !(*ret_sealed = strdup(PQgetvalue(res, 0, 1))))
                return hull_err(e, -ENOMEM, "store: out of memory");
        return ret ? pg_load(res, 0, 0, "a webhook", ret, e) : 0;
}

static int wh_list(store *base, unsigned max, json_t *out, hull_error *e) {
        pg_store *s = pg_of(base);
        char mb[PG_INT_MAX];
        const char *v[] = {pg_int(mb, max)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc, "SELECT body FROM webhooks ORDER BY created_ms DESC, id DESC LIMIT $1", 1, v,
                        "cannot list webhooks", &res, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++) {
                json_t *o;
                if ((r = pg_load(res, i, 0, "a webhook", &o, e)) < 0)
                        return r;
                if (json_array_append_new(out, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        return 0;
}

static int wh_remove(store *base, const char *id, hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {id};
        PG_LOCKED(s);
        _cleanup_pg_tx_ pg_tx t = {0};
        _cleanup_res_ PGresult *res = NULL;
        int r;
        if ((r = pg_tx_begin(pc, &t, e)) < 0 ||
            (r = pg_exec(pc, "DELETE FROM webhook_deliveries WHERE webhook_id = $1", 1, v, "cannot delete deliveries",
                         NULL, e)) < 0 ||
            (r = pg_exec(pc, "DELETE FROM webhooks WHERE id = $1", 1, v, "cannot delete a webhook", &res, e)) < 0)
                return r;
        if (!pg_changes(res))
                return hull_fail(e, -ENOENT, "store: no webhook %.64s", id);
        return pg_tx_commit(&t, e);
}

static int wh_enqueue(store *base, const char *type, const char *event_id, const char *webhook_id, int64_t created_ms,
                      const char *body, size_t *ret_n, hull_error *e) {
        pg_store *s = pg_of(base);
        char cb[PG_INT_MAX];
        const char *v[] = {event_id, pg_int(cb, created_ms), body, webhook_id ? webhook_id : type};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        webhook_id
                                ? "INSERT INTO webhook_deliveries (event_id, webhook_id, created_ms, due_ms, attempts,"
                                  " body) SELECT $1, id, $2, $2, 0, $3 FROM webhooks WHERE id = $4"
                                : "INSERT INTO webhook_deliveries (event_id, webhook_id, created_ms, due_ms, attempts,"
                                  " body) SELECT $1, id, $2, $2, 0, $3 FROM webhooks"
                                  " WHERE enabled = 1 AND strpos(types, ',' || $4 || ',') > 0",
                        4, v, "cannot queue a webhook delivery", &res, e);
        if (r < 0)
                return r;
        *ret_n = (size_t) pg_changes(res);
        return 0;
}

static int wh_claim(store *base, int64_t now_ms, int64_t until_ms, unsigned max, json_t *out, hull_error *e) {
        pg_store *s = pg_of(base);
        char nb[PG_INT_MAX], ub[PG_INT_MAX], mb[PG_INT_MAX];
        const char *v[] = {pg_int(nb, now_ms), pg_int(ub, until_ms), pg_int(mb, max)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = pg_exec(pc,
                        "UPDATE webhook_deliveries SET due_ms = $2 WHERE (event_id, webhook_id) IN"
                        " (SELECT d.event_id, d.webhook_id FROM webhook_deliveries d JOIN webhooks w"
                        " ON w.id = d.webhook_id WHERE w.enabled = 1 AND d.due_ms <= $1 ORDER BY d.due_ms LIMIT $3"
                        " FOR UPDATE OF d SKIP LOCKED)"
                        " RETURNING event_id, webhook_id, attempts, body",
                        3, v, "cannot claim webhook deliveries", &res, e);
        if (r < 0)
                return r;
        for (int i = 0; i < PQntuples(res); i++) {
                json_t *o = json_pack("{s:s, s:s, s:I, s:s}", "event_id", PQgetvalue(res, i, 0), "webhook_id",
                                      PQgetvalue(res, i, 1), "attempts", (json_int_t) pg_get_int(res, i, 2), "body",
                                      PQgetvalue(res, i, 3));
                if (!o || json_array_append_new(out, o) < 0)
                        return hull_err(e, -ENOMEM, "store: out of memory");
        }
        return 0;
}

static int wh_settle(store *base, const char *event_id, const char *webhook_id, int64_t due_ms, int64_t attempts,
                     hull_error *e) {
        pg_store *s = pg_of(base);
        char db[PG_INT_MAX], ab[PG_INT_MAX];
        const char *v[] = {event_id, webhook_id, pg_int(db, due_ms), pg_int(ab, attempts)};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = due_ms < 0 ? pg_exec(pc, "DELETE FROM webhook_deliveries WHERE event_id = $1 AND webhook_id = $2", 2, v,
                                     "cannot end a webhook delivery", &res, e)
                           : pg_exec(pc,
                                     "UPDATE webhook_deliveries SET due_ms = $3, attempts = $4"
                                     " WHERE event_id = $1 AND webhook_id = $2",
                                     4, v, "cannot reschedule a webhook delivery", &res, e);
        if (r < 0)
                return r;
        return pg_changes(res) ? 0 : hull_fail(e, -ENOENT, "store: no such webhook delivery");
}

static int wh_pending(store *base, const char *webhook_id, int64_t *ret, hull_error *e) {
        pg_store *s = pg_of(base);
        const char *v[] = {webhook_id};
        PG_LOCKED(s);
        _cleanup_res_ PGresult *res = NULL;
        int r = webhook_id ? pg_exec(pc, "SELECT count(*) FROM webhook_deliveries WHERE webhook_id = $1", 1, v,
                                     "cannot count webhook deliveries", &res, e)
                           : pg_exec(pc, "SELECT count(*) FROM webhook_deliveries", 0, v,
                                     "cannot count webhook deliveries", &res, e);
        if (r < 0)
                return r;
        *ret = pg_get_int(res, 0, 0);
        return 0;
}

const store_webhook_ops pg_webhook_ops = {
        .put = wh_put,
        .get = wh_get,
        .list = wh_list,
        .remove = wh_remove,
        .enqueue = wh_enqueue,
        .claim = wh_claim,
        .settle = wh_settle,
        .pending = wh_pending,
};
