/* api-v1-webhooks.c: hull's extension /v1/webhooks (docs/WEBHOOKS.md) over v1-webhook.h:
 * subscribe (the answer holds the whsec_ secret, this once), list (PageCursor), retrieve,
 * update, delete, rotate the secret, and a test delivery. No other answer holds a secret. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api-v1-internal.h"
#include "macro.h"
#include "store-webhook.h"
#include "v1-webhook.h"

static const char *const list_args[] = {"limit", "page", NULL};

typedef enum op { OP_CREATE, OP_GET, OP_UPDATE, OP_DELETE, OP_ROTATE, OP_TEST } op;

static void answer(http_req *r, int rr, const v1_err *err, json_t *obj) {
        if (rr < 0) {
                v1_err oom = {.status = 500};
                snprintf(oom.msg, sizeof(oom.msg), "out of memory");
                v1a_fail(r, err->status ? err : &oom);
                json_decref(obj);
                return;
        }
        v1a_answer_json(r, 200, obj);
}

static void list(api_v1 *a, http_req *r) {
        query q;
        uint64_t limit = STORE_PAGE_DEFAULT;
        if (v1a_refuse_query(r, &q, list_args, NULL) || v1a_refuse_int(r, "limit", q.limit, 1, UINT32_MAX, &limit))
                return;
        json_t *obj = NULL;
        v1_err err = {0};
        int rr = v1_webhook_list(a->cfg.store, q.page && q.page[0] ? q.page : NULL,
                                 (unsigned) (limit > WEBHOOKS_MAX ? WEBHOOKS_MAX : limit), &obj, &err);
        answer(r, rr, &err, obj);
}

static void webhook(api_v1 *a, http_req *r, op o) {
        const char *id = http_req_param(r, "id");
        if (o != OP_CREATE && (!id || !id[0] || strlen(id) >= STORE_ID_MAX)) {
                v1a_failf(r, 404, "webhook_not_found", "no webhook with that id (GET /v1/webhooks lists them)");
                return;
        }
        json_auto_t *body = NULL;
        if (o != OP_GET && o != OP_DELETE && !(body = v1a_body_object(r, o == OP_ROTATE || o == OP_TEST)))
                return;
        json_t *obj = NULL;
        v1_err err = {0};
        int rr = 0;
        const settings *st = v1_engine_settings(a->cfg.engine);
        switch (o) {
        case OP_CREATE:
                rr = v1_webhook_create(a->cfg.store, st, body, &obj, &err);
                break;
        case OP_GET: {
                hull_error e = {0};
                rr = store_webhook_get(a->cfg.store, id, &obj, NULL, &e);
                if (rr < 0)
                        rr = v1_fail(&err, rr == -ENOENT ? 404 : 500, rr == -ENOENT ? "webhook_not_found" : NULL, "%s",
                                     rr == -ENOENT ? "no such webhook (GET /v1/webhooks lists them)" : e.msg);
                break;
        }
        case OP_UPDATE:
                rr = v1_webhook_update(a->cfg.store, st, id, body, &obj, &err);
                break;
        case OP_DELETE:
                rr = v1_webhook_delete(a->cfg.store, id, &err);
                obj = rr < 0 ? NULL : json_pack("{s:s, s:s}", "id", id, "type", "webhook_deleted");
                break;
        case OP_ROTATE: {
                json_t *g = json_object_get(body, "grace_period_seconds");
                if ((json_object_size(body) > (g ? 1U : 0U)) ||
                    (g &&
                     (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) > 7 * 24 * 3600))) {
                        v1a_failf(r, 400, "",
                                  "rotate_secret takes only grace_period_seconds: 0 to 604800 (default "
                                  "86400: the previous secret still signs that long)");
                        return;
                }
                rr = v1_webhook_rotate(a->cfg.store, id,
                                       g ? (uint64_t) json_integer_value(g) * 1000 : WEBHOOK_ROTATE_GRACE_MS, &obj,
                                       &err);
                break;
        }
        case OP_TEST: {
                json_t *t = json_object_get(body, "event_type");
                if (json_object_size(body) > (t ? 1U : 0U) || (t && !json_is_string(t))) {
                        v1a_failf(r, 400, "", "test takes only event_type: one of the catalog's event types");
                        return;
                }
                rr = v1_webhook_test(a->cfg.store, id, json_string_value(t), &obj, &err);
                break;
        }
        }
        answer(r, rr, &err, obj);
}

#define HANDLER(name, call)                                                                                            \
        void v1a_##name(http_req *r) {                                                                                 \
                api_v1 *a = http_req_data(r);                                                                          \
                call;                                                                                                  \
        }
HANDLER(webhook_create, webhook(a, r, OP_CREATE))
HANDLER(webhook_list, list(a, r))
HANDLER(webhook_get, webhook(a, r, OP_GET))
HANDLER(webhook_update, webhook(a, r, OP_UPDATE))
HANDLER(webhook_delete, webhook(a, r, OP_DELETE))
HANDLER(webhook_rotate, webhook(a, r, OP_ROTATE))
HANDLER(webhook_test, webhook(a, r, OP_TEST))
