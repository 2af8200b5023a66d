/* store-memory.c: the front of the store for memory stores' memories and their versions
 * (store.h's store_memory_*): each argument checked, the objects serialised with the columns a
 * backend needs, and the versions' list query with its cursors' digest; the rows are the
 * backends' (store-sqlite-memory.c, store-pg-memory.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-backend.h"
#include "store.h"

#define TAG_MEMORY_VERSIONS 'M'

static int path_check(const char *what, const char *p, hull_error *e) {
        if (p && strnlen(p, STORE_MEMORY_PATH_MAX + 1) > STORE_MEMORY_PATH_MAX)
                return hull_fail(e, -EINVAL, "store: a memory's %s is longer than %u bytes", what,
                                 STORE_MEMORY_PATH_MAX);
        return 0;
}

int store_memory_apply(store *s, const store_memory_change *c, char ret_conflict[static STORE_ID_MAX], hull_error *e) {
        int r = store_id_check("memory store", c->store_id, e);
        if (r < 0 || (r = store_id_check("memory", c->memory_id, e)) < 0)
                return r;
        if (c->expect_version_id && (r = store_id_check("memory version", c->expect_version_id, e)) < 0)
                return r;
        if (!c->expect_version_id && !c->memory)
                return hull_fail(e, -EINVAL, "store: a new memory must have an object");
        const char *path = NULL, *vid, *op, *created;
        if (c->memory) {
                path = json_string_value(json_object_get(c->memory, "path"));
                const char *head = json_string_value(json_object_get(c->memory, "memory_version_id"));
                if (!path || !*path || (r = path_check("path", path, e)) < 0 ||
                    (r = store_id_check("memory version", head, e)) < 0)
                        return r < 0 ? r : hull_fail(e, -EINVAL, "store: a memory must have a \"path\"");
        }
        vid = json_string_value(json_object_get(c->version, "id"));
        op = json_string_value(json_object_get(c->version, "operation"));
        created = json_string_value(json_object_get(c->version, "created_at"));
        int64_t created_ms = 0;
        if ((r = store_id_check("memory version", vid, e)) < 0)
                return r;
        if (!op || !*op || store_time_ms(created, &created_ms) < 0)
                return hull_fail(e, -EINVAL, "store: a memory version needs \"operation\" and \"created_at\"");
        if (c->session_id && (r = store_id_check("session", c->session_id, e)) < 0)
                return r;
        _cleanup_free_ char *mbody = NULL, *vbody = NULL;
        if ((c->memory && (r = store_dump(c->memory, "memory", &mbody, e)) < 0) ||
            (r = store_dump(c->version, "memory version", &vbody, e)) < 0)
                return r;
        char conflict[STORE_ID_MAX] = "";
        r = s->ops->memory_apply(s, c, mbody, path, vid, op, created_ms, vbody, conflict, e);
        if (ret_conflict)
                memcpy(ret_conflict, conflict, STORE_ID_MAX);
        return r;
}

int store_memory_get(store *s, const char *store_id, const char *memory_id, const char *path, json_t **ret,
                     hull_error *e) {
        int r = store_id_check("memory store", store_id, e);
        if (r < 0)
                return r;
        if (!!memory_id == !!path)
                return hull_fail(e, -EINVAL, "store: a memory is read by its id or by its path");
        if ((memory_id && (r = store_id_check("memory", memory_id, e)) < 0) || (r = path_check("path", path, e)) < 0)
                return r;
        return s->ops->memory_get(s, store_id, memory_id, path, ret, e);
}

int store_memory_scan(store *s, const char *store_id, const char *from, bool from_inclusive, const char *below,
                      unsigned limit, json_t **ret, hull_error *e) {
        int r = store_id_check("memory store", store_id, e);
        if (r < 0 || (r = path_check("from", from, e)) < 0 || (r = path_check("bound", below, e)) < 0)
                return r;
        if (limit == 0 || limit > STORE_PAGE_MAX)
                return hull_fail(e, -EINVAL, "store: a scan of memories takes 1 to %u", STORE_PAGE_MAX);
        return s->ops->memory_scan(s, store_id, from, from_inclusive, below, limit, ret, e);
}

int store_memory_version_get(store *s, const char *store_id, const char *version_id, json_t **ret, hull_error *e) {
        int r = store_id_check("memory store", store_id, e);
        if (r < 0 || (r = store_id_check("memory version", version_id, e)) < 0)
                return r;
        return s->ops->memory_version_get(s, store_id, version_id, ret, e);
}

int store_memory_version_put(store *s, const char *store_id, const json_t *version, hull_error *e) {
        const char *vid = json_string_value(json_object_get(version, "id"));
        int r = store_id_check("memory store", store_id, e);
        if (r < 0 || (r = store_id_check("memory version", vid, e)) < 0)
                return r;
        _cleanup_free_ char *body = NULL;
        if ((r = store_dump(version, "memory version", &body, e)) < 0)
                return r;
        return s->ops->memory_version_put(s, store_id, vid, body, e);
}

static void fnv_str(uint32_t *h, const char *s) {
        const char *p = s ? s : "";
        *h ^= s ? 'S' : 'N';
        *h *= 16777619U;
        for (size_t i = 0; s && i <= strlen(p); i++) {
                *h ^= (unsigned char) p[i];
                *h *= 16777619U;
        }
}

int store_memory_versions_list(store *s, const char *store_id, const store_memory_versions_q *q, store_page *ret,
                               hull_error *e) {
        unsigned limit = 0;
        int r = store_id_check("memory store", store_id, e);
        if (r < 0 || (r = store_limit_check(q->limit, STORE_PAGE_MAX, &limit, e)) < 0)
                return r;
        store_listing l = {.of = STORE_LIST_MEMORY_VERSIONS,
                           .tag = TAG_MEMORY_VERSIONS,
                           .descending = true,
                           .what = "memory version",
                           .memory_store_id = store_id,
                           .memory_id = q->memory_id,
                           .session_id = q->session_id,
                           .operation = q->operation};
        uint32_t h = 2166136261U;
        const char *const filters[] = {store_id, q->memory_id, q->session_id, q->operation};
        for (size_t i = 0; i < ELEMENTSOF(filters); i++) {
                if (filters[i] && strnlen(filters[i], STORE_ID_MAX) >= STORE_ID_MAX)
                        return hull_fail(e, -EINVAL, "store: a filter of memory versions is longer than %u bytes",
                                         STORE_ID_MAX - 1);
                fnv_str(&h, filters[i]);
        }
        const struct {
                const char *v;
                unsigned slot;
        } t[] = {{q->created_gte, STORE_TIME_GTE}, {q->created_lte, STORE_TIME_LTE}};
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                fnv_str(&h, t[i].v);
                if (!t[i].v)
                        continue;
                if (store_time_ms(t[i].v, &l.time_ms[t[i].slot]) < 0)
                        return hull_fail(e, -EINVAL, "store: \"%.40s\" is not an RFC 3339 time", t[i].v);
                l.has_time[t[i].slot] = true;
        }
        h ^= (unsigned char) l.tag;
        l.digest = h * 16777619U;
        return s->ops->list(s, &l, q->page, limit, ret, NULL, e);
}
