/* store-webhook.c: the front of the webhooks' rows (store-webhook.h): arguments checked, a
 * subscription's types as the ",a,b," text its backend matches an event's type in, then the
 * backend (store_ops.webhooks). */
#include "store-webhook.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "macro.h"
#include "store-webhook-backend.h"

static bool id_ok(const char *id) {
        return id && id[0] && strlen(id) < STORE_ID_MAX;
}

int store_webhook_put(store *s, bool create, const json_t *obj, int64_t created_ms, const char *sealed,
                      const char *key_id, hull_error *e) {
        const char *id = json_string_value(json_object_get(obj, "id"));
        json_t *types = json_object_get(obj, "event_types");
        if (!id_ok(id) || !json_is_array(types) || (create && (!sealed || !key_id)))
                return hull_err(e, -EINVAL, "store: a webhook needs an id, its event_types and (new) its secrets");
        _cleanup_(dynbuf_free) dynbuf t;
        dynbuf_init(&t, 64U << 10);
        int r = dynbuf_add_str(&t, ",");
        size_t i;
        json_t *v;
        json_array_foreach(types, i, v) {
                const char *ty = json_string_value(v);
                if (!ty || strchr(ty, ','))
                        return hull_err(e, -EINVAL, "store: a webhook's event type is a string without ','");
                if (r >= 0)
                        r = dynbuf_addf(&t, "%s,", ty);
        }
        _cleanup_free_ char *body = NULL;
        if (r < 0)
                return hull_err(e, -ENOMEM, "store: out of memory");
        if ((r = store_dump(obj, "a webhook", &body, e)) < 0)
                return r;
        const char *status = json_string_value(json_object_get(obj, "status"));
        store_webhook_row w = {.id = id,
                               .types = t.buf,
                               .body = body,
                               .key_id = key_id,
                               .sealed = sealed,
                               .created_ms = created_ms,
                               .enabled = status && strcmp(status, "enabled") == 0};
        return s->ops->webhooks->put(s, create, &w, e);
}

int store_webhook_get(store *s, const char *id, json_t **ret, char **ret_sealed, hull_error *e) {
        if (!id_ok(id))
                return hull_fail(e, -ENOENT, "store: no webhook with that id");
        return s->ops->webhooks->get(s, id, ret, ret_sealed, e);
}

int store_webhook_list(store *s, json_t **ret, hull_error *e) {
        json_t *out = json_array();
        if (!out)
                return hull_err(e, -ENOMEM, "store: out of memory");
        int r = s->ops->webhooks->list(s, WEBHOOKS_MAX, out, e);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

int store_webhook_delete(store *s, const char *id, hull_error *e) {
        if (!id_ok(id))
                return hull_fail(e, -ENOENT, "store: no webhook with that id");
        return s->ops->webhooks->remove(s, id, e);
}

int store_webhook_enqueue(store *s, const char *type, const char *event_id, const char *webhook_id, int64_t created_ms,
                          const char *body, size_t *ret_n, hull_error *e) {
        if (!type || !type[0] || strchr(type, ',') || !id_ok(event_id) || !body || (webhook_id && !id_ok(webhook_id)))
                return hull_err(e, -EINVAL, "store: a webhook delivery needs its type, event id and body");
        size_t n = 0;
        int r = s->ops->webhooks->enqueue(s, type, event_id, webhook_id, created_ms, body, &n, e);
        if (r < 0)
                return r;
        if (n > 0 && s->webhook_wake)
                s->webhook_wake(s->webhook_wake_ud);
        if (ret_n)
                *ret_n = n;
        return 0;
}

int store_webhook_claim(store *s, int64_t now_ms, int64_t until_ms, unsigned max, json_t **ret, hull_error *e) {
        json_t *out = json_array();
        if (!out)
                return hull_err(e, -ENOMEM, "store: out of memory");
        int r = s->ops->webhooks->claim(s, now_ms, until_ms, max ? max : 1, out, e);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

int store_webhook_settle(store *s, const char *event_id, const char *webhook_id, int64_t due_ms, int64_t attempts,
                         hull_error *e) {
        if (!id_ok(event_id) || !id_ok(webhook_id))
                return hull_err(e, -EINVAL, "store: a delivery is named by its event and webhook ids");
        return s->ops->webhooks->settle(s, event_id, webhook_id, due_ms, attempts, e);
}

int store_webhook_pending(store *s, const char *webhook_id, int64_t *ret, hull_error *e) {
        return s->ops->webhooks->pending(s, webhook_id, ret, e);
}

void store_webhook_set_wake(store *s, void (*fn)(void *ud), void *ud) {
        s->webhook_wake = fn;
        s->webhook_wake_ud = ud;
}
