/* store-deploy.c: the front of the deployments and their runs (store.h): every argument checked,
 * the columns read from the object, then the backend's store_deploy_ops. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-backend.h"

static const char *dkind_name(store_dkind k) {
        return k == STORE_DEPLOYMENT ? "deployment" : "deployment run";
}

static int dkind_check(store *s, store_dkind k, hull_error *e) {
        if (k != STORE_DEPLOYMENT && k != STORE_DEPLOYMENT_RUN)
                return hull_fail(e, -EINVAL, "store: not a deployment kind");
        if (!s->ops->deploy)
                return hull_fail(e, -ENOSYS, "store: the %s backend keeps no deployments", s->ops->name);
        return 0;
}

int store_deploy_put(store *s, store_dkind k, const json_t *obj, bool create, hull_error *e) {
        int r = dkind_check(s, k, e);
        if (r < 0)
                return r;
        const char *what = dkind_name(k);
        if (!json_is_object(obj))
                return hull_fail(e, -EINVAL, "store: a %s must be a JSON object", what);
        if (k == STORE_DEPLOYMENT_RUN && !create)
                return hull_fail(e, -EINVAL, "store: deployment runs are append-only");
        store_drow row = {.id = json_string_value(json_object_get(obj, "id"))};
        if ((r = store_id_check(what, row.id, e)) < 0)
                return r;
        if (store_time_ms(json_string_value(json_object_get(obj, "created_at")), &row.created_ms) < 0)
                return hull_fail(e, -EINVAL, "store: %s %s: \"created_at\" must be an RFC 3339 time", what, row.id);
        if (k == STORE_DEPLOYMENT) {
                json_t *a = json_object_get(obj, "archived_at");
                if (a && !json_is_null(a) && !json_is_string(a))
                        return hull_fail(e, -EINVAL, "store: %s %s: \"archived_at\" must be null or a string", what,
                                         row.id);
                row.archived = json_is_string(a);
                row.status = json_string_value(json_object_get(obj, "status"));
                row.agent_id = json_string_value(json_object_get(json_object_get(obj, "agent"), "id"));
                if ((r = store_text_check("status", row.status, STORE_NAME_MAX, false, e)) < 0 ||
                    (r = store_id_check("agent", row.agent_id, e)) < 0)
                        return r;
        } else {
                row.deployment_id = json_string_value(json_object_get(obj, "deployment_id"));
                row.trigger_type = json_string_value(json_object_get(json_object_get(obj, "trigger_context"), "type"));
                json_t *err = json_object_get(obj, "error");
                row.has_error = err && !json_is_null(err);
                if ((r = store_id_check("deployment", row.deployment_id, e)) < 0 ||
                    (r = store_text_check("trigger type", row.trigger_type, STORE_NAME_MAX, false, e)) < 0)
                        return r;
        }
        _cleanup_free_ char *body = NULL;
        if ((r = store_dump(obj, what, &body, e)) < 0)
                return r;
        row.body = body;
        return s->ops->deploy->put(s, k, &row, create, e);
}

int store_deploy_get(store *s, store_dkind k, const char *id, json_t **ret, hull_error *e) {
        int r = dkind_check(s, k, e);
        if (r < 0 || (r = store_id_check(dkind_name(k), id, e)) < 0)
                return r;
        return s->ops->deploy->get(s, k, id, ret, e);
}

static uint32_t fnv(uint32_t h, const char *p) {
        for (p = p ? p : ""; *p; p++)
                h = (h ^ (uint8_t) *p) * 16777619U;
        return (h ^ 0xffU) * 16777619U; /* a separator: ("a","bc") is not ("ab","c") */
}

int store_deploy_list(store *s, store_dkind k, const store_deploy_q *q, store_page *ret, hull_error *e) {
        unsigned limit = 0;
        int r = dkind_check(s, k, e);
        if (r < 0 || (r = store_limit_check(q->limit, STORE_PAGE_MAX, &limit, e)) < 0)
                return r;
        store_dfilter f = {.include_archived = q->include_archived, .has_error = -1};
        if (k == STORE_DEPLOYMENT) {
                f.s1 = q->status;
                f.s2 = q->agent_id;
        } else {
                f.s1 = q->deployment_id;
                f.s2 = q->trigger_type;
                f.has_error = q->has_error < 0 ? -1 : !!q->has_error;
        }
        store_listing l = {.of = STORE_LIST_OBJECTS,
                           .tag = k == STORE_DEPLOYMENT ? 'D' : 'R',
                           .with_id = true,
                           .descending = true,
                           .what = dkind_name(k)};
        const char *times[_STORE_TIME_MAX] = {q->created_gt, q->created_gte, q->created_lt, q->created_lte};
        uint32_t h = fnv(2166136261U, k == STORE_DEPLOYMENT ? "D" : "R");
        h = fnv(h, f.include_archived ? "1" : "0");
        h = fnv(fnv(h, f.s1), f.s2);
        h = fnv(h, f.has_error < 0 ? "-" : f.has_error ? "1" : "0");
        for (int i = 0; i < _STORE_TIME_MAX; i++) {
                h = fnv(h, times[i]);
                if (!times[i])
                        continue;
                if (store_time_ms(times[i], &l.time_ms[i]) < 0)
                        return hull_fail(e, -EINVAL, "store: '%.40s' is not an RFC 3339 time", times[i]);
                l.has_time[i] = true;
        }
        l.digest = h;
        *ret = (store_page){0};
        return s->ops->deploy->list(s, k, &f, &l, q->page, limit, ret, e);
}

int store_deploy_claim(store *s, const char *id, int64_t scheduled_ms, hull_error *e) {
        int r = dkind_check(s, STORE_DEPLOYMENT, e);
        if (r < 0 || (r = store_id_check("deployment", id, e)) < 0)
                return r;
        return s->ops->deploy->claim(s, id, scheduled_ms, e);
}
