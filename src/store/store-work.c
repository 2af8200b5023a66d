/* store-work.c: the front of the Work API's rows (store-work.h): arguments checked, the body's
 * JSON made and read, then the backend (store_ops.work). */
#include "store-work.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-work-backend.h"

static bool id_ok(const char *id) {
        return id && id[0] && strlen(id) < STORE_ID_MAX;
}

void store_work_done(store_work *w) {
        if (!w)
                return;
        json_decref(w->body);
        w->body = NULL;
}

int store_work_insert(store *s, const store_work *w, hull_error *e) {
        if (!id_ok(w->id) || !id_ok(w->env_id) || !id_ok(w->session_id) || !w->state[0])
                return hull_err(e, -EINVAL, "store: a work item needs its id, environment, session and state");
        _cleanup_free_ char *body = NULL;
        json_auto_t *empty = json_object();
        int r = store_dump(w->body ? w->body : empty, "a work item", &body, e);
        if (r < 0)
                return r;
        return s->ops->work->insert(s, w, body, e);
}

int store_work_get(store *s, const char *id, store_work *ret, hull_error *e) {
        if (!id_ok(id))
                return hull_fail(e, -ENOENT, "store: no work item with that id");
        *ret = (store_work){0};
        _cleanup_free_ char *body = NULL;
        int r = s->ops->work->get(s, id, ret, &body, e);
        if (r < 0)
                return r;
        json_error_t je;
        if (!(ret->body = json_loads(body, 0, &je)) || !json_is_object(ret->body)) {
                store_work_done(ret);
                return hull_err(e, -EIO, "store: work item %.64s: its body is not a JSON object", id);
        }
        return 0;
}

int store_work_update(store *s, const store_work *w, hull_error *e) {
        if (!id_ok(w->id) || !w->state[0] || !w->body)
                return hull_err(e, -EINVAL, "store: a work item's update needs its id, state and body");
        _cleanup_free_ char *body = NULL;
        int r = store_dump(w->body, "a work item", &body, e);
        if (r < 0)
                return r;
        return s->ops->work->update(s, w, body, e);
}

int store_work_expire(store *s, const char *env_id, int64_t now_ms, hull_error *e) {
        if (!id_ok(env_id))
                return hull_err(e, -EINVAL, "store: an environment id is needed");
        return s->ops->work->expire(s, env_id, now_ms, e);
}

int store_work_due(store *s, const char *env_id, int64_t reclaim_before_ms, unsigned max, json_t **ret, hull_error *e) {
        if (!id_ok(env_id))
                return hull_err(e, -EINVAL, "store: an environment id is needed");
        json_t *ids = json_array();
        if (!ids)
                return hull_err(e, -ENOMEM, "store: out of memory");
        int r = s->ops->work->due(s, env_id, reclaim_before_ms, max ? max : 1, ids, e);
        if (r < 0) {
                json_decref(ids);
                return r;
        }
        *ret = ids;
        return 0;
}

int store_work_list(store *s, const char *env_id, int64_t after_ms, const char *after_id, unsigned max,
                    store_work **ret, size_t *ret_n, hull_error *e) {
        if (!id_ok(env_id) || (after_id && strlen(after_id) >= STORE_ID_MAX))
                return hull_err(e, -EINVAL, "store: an environment id is needed");
        json_auto_t *ids = json_array();
        if (!ids)
                return hull_err(e, -ENOMEM, "store: out of memory");
        int r = s->ops->work->list(s, env_id, after_ms, after_id, max ? max : 1, ids, e);
        if (r < 0)
                return r;
        size_t n = json_array_size(ids), k = 0;
        store_work *v = calloc(n ? n : 1, sizeof(*v));
        if (!v)
                return hull_err(e, -ENOMEM, "store: out of memory");
        for (size_t i = 0; i < n; i++) {
                r = store_work_get(s, json_string_value(json_array_get(ids, i)), &v[k], e);
                if (r == -ENOENT) /* deleted meanwhile */
                        continue;
                if (r < 0) {
                        for (size_t j = 0; j < k; j++)
                                store_work_done(&v[j]);
                        free(v);
                        return r;
                }
                k++;
        }
        *ret = v;
        *ret_n = k;
        return 0;
}

int store_work_stats_get(store *s, const char *env_id, store_work_stats *ret, hull_error *e) {
        if (!id_ok(env_id))
                return hull_err(e, -EINVAL, "store: an environment id is needed");
        *ret = (store_work_stats){0};
        return s->ops->work->stats(s, env_id, ret, e);
}

int store_work_key_add(store *s, const char digest_hex[static 65], const char *scope, const char *work_id,
                       int64_t created_ms, hull_error *e) {
        if (strlen(digest_hex) != 64 || !scope || !scope[0] || strlen(scope) >= STORE_WORK_SCOPE_MAX ||
            (work_id && strlen(work_id) >= STORE_ID_MAX))
                return hull_err(e, -EINVAL, "store: a worker credential needs its digest and scope");
        return s->ops->work->key_add(s, digest_hex, scope, work_id ? work_id : "", created_ms, e);
}

int store_work_key_find(store *s, const char digest_hex[static 65], char ret_scope[static STORE_WORK_SCOPE_MAX],
                        char *ret_work_id, hull_error *e) {
        char wid[STORE_ID_MAX];
        ret_scope[0] = '\0';
        int r = s->ops->work->key_find(s, digest_hex, ret_scope, wid, e);
        if (r == 1 && ret_work_id)
                memcpy(ret_work_id, wid, STORE_ID_MAX);
        return r;
}

int store_work_key_drop(store *s, const char *work_id, hull_error *e) {
        if (!id_ok(work_id))
                return hull_err(e, -EINVAL, "store: a work item id is needed");
        return s->ops->work->key_drop(s, work_id, e);
}
