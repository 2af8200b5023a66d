/* api-v1-memory.c: the /v1 routes of memory stores (the agent-memory-2026-07-22 beta): stores,
 * their memories and memory versions with redaction, each over v1-memory.h. Their head (the
 * version, the beta, the path's ids) and their queries are read here; api-v1.c's route table
 * lists them (api_v1_memory_routes). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "v1-webhook.h"
#include "macro.h"
#include "parse-util.h"
#include "utf8.h"
#include "v1-memory.h"

/* ---- the head ---- */

/* Is name one of the comma-separated list v? */
static bool list_has(const char *v, const char *name) {
        for (const char *p = v ? v : ""; *p;) {
                p += strspn(p, " \t,");
                size_t k = strcspn(p, ","), t = k;
                while (t > 0 && (p[t - 1] == ' ' || p[t - 1] == '\t'))
                        t--;
                if (t == strlen(name) && memcmp(p, name, t) == 0)
                        return true;
                p += k;
        }
        return false;
}

static bool param_ok(const char *v) {
        if (!v)
                return true;
        for (const char *p = v; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return false;
        return utf8_is_valid(v, strlen(v)) && strlen(v) < STORE_ID_MAX;
}

/* The version, the beta (the SDK's agent-memory-2026-07-22; managed-agents-2026-04-01 is taken
 * too), ids that can name something. Returns nonzero once r is refused. */
static int head_memory(http_req *r) {
        unsigned n = 0;
        const char *v = http_req_header(r, "anthropic-version", &n);
        if (!v || (strcmp(v, "2023-06-01") != 0 && strcmp(v, "2026-10-21") != 0)) {
                v1a_failf(r, 400, n ? "unsupported_anthropic_version" : "missing_anthropic_version",
                          "send anthropic-version: 2023-06-01 (or 2026-10-21)");
                return 1;
        }
        v = http_req_header(r, "anthropic-beta", &n);
        if (!list_has(v, V1_MEMORY_BETA) && !list_has(v, V1_BETA)) {
                v1a_failf(r, 400, n ? "unsupported_anthropic_beta" : "missing_anthropic_beta",
                          "anthropic-beta must list %s (got '%.80s')", V1_MEMORY_BETA, v ? v : "");
                return 1;
        }
        const char *const params[] = {"id", "mid", "vid"};
        for (size_t i = 0; i < ELEMENTSOF(params); i++)
                if (!param_ok(http_req_param(r, params[i]))) {
                        v1a_failf(r, 404, "", "no %s with that id: the id in the path is not one hull makes",
                                  i == 0   ? "memory store"
                                  : i == 1 ? "memory"
                                           : "memory version");
                        return 1;
                }
        return 0;
}

/* ---- the query ---- */

enum { Q_LIMIT, Q_PAGE, Q_VIEW, Q_PREFIX, Q_DEPTH, Q_ARCH, Q_GTE, Q_LTE, Q_MEMORY, Q_SESSION, Q_OP, Q_SHA, _Q_MAX };
static const char *const QNAMES[_Q_MAX] = {
        [Q_LIMIT] = "limit",         [Q_PAGE] = "page",           [Q_VIEW] = "view",
        [Q_PREFIX] = "path_prefix",  [Q_DEPTH] = "depth",         [Q_ARCH] = "include_archived",
        [Q_GTE] = "created_at[gte]", [Q_LTE] = "created_at[lte]", [Q_MEMORY] = "memory_id",
        [Q_SESSION] = "session_id",  [Q_OP] = "operation",        [Q_SHA] = "expected_content_sha256",
};

typedef struct mquery {
        unsigned allowed; /* a bit per Q_ */
        const char *v[_Q_MAX];
        char bad[64];
} mquery;

static void mquery_arg(void *data, const char *name, const char *value) {
        mquery *q = data;
        if (strcmp(name, "beta") == 0)
                return;
        for (unsigned i = 0; i < _Q_MAX; i++)
                if (strcmp(name, QNAMES[i]) == 0 && (q->allowed & (1U << i))) {
                        if (q->v[i] && !q->bad[0])
                                snprintf(q->bad, sizeof(q->bad), "%.40s (given twice)", name);
                        q->v[i] = value && value[0] ? value : NULL; /* a null param comes as "key=" */
                        return;
                }
        if (!q->bad[0])
                snprintf(q->bad, sizeof(q->bad), "%.60s", name);
}

/* Read r's query (the names in allowed, a bit each). Returns true once r is refused. */
static bool refuse_mquery(http_req *r, mquery *q, unsigned allowed) {
        *q = (mquery){.allowed = allowed};
        http_req_each_query(r, mquery_arg, q);
        if (!q->bad[0])
                return false;
        char names[256] = "";
        for (unsigned i = 0; i < _Q_MAX; i++)
                if (allowed & (1U << i))
                        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", names[0] ? ", " : "",
                                 QNAMES[i]);
        v1a_failf(r, 400, "", "unknown query parameter '%s' (this route takes: %s)", q->bad, names[0] ? names : "none");
        return true;
}

#define B(x) (1U << (x))

/* view=basic|full (absent: def). Returns true once r is refused. */
static bool refuse_view(http_req *r, const char *v, bool def, bool *ret_full) {
        *ret_full = def;
        if (!v)
                return false;
        if (strcmp(v, "full") == 0 || strcmp(v, "basic") == 0) {
                *ret_full = v[0] == 'f';
                return false;
        }
        v1a_failf(r, 400, "", "view must be basic or full, got '%.20s'", v);
        return true;
}

static v1_memory_actor actor_of(http_req *r) {
        const char *p = http_req_principal(r);
        return (v1_memory_actor){.api_key_id = p && strncmp(p, "key:", 4) == 0 ? p + 4 : p ? p : ""};
}

/* ---- stores ---- */

static void ms_create(api_v1 *a, http_req *r) {
        json_auto_t *body = v1a_body_object(r, false);
        if (!body)
                return;
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        v1_id_new("memstore_", id);
        store_now_rfc3339(now);
        json_t *obj = NULL;
        v1_err err = {0};
        if (v1_memory_store_create(body, id, now, &obj, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        hull_error e = {0};
        int rr = store_insert(a->cfg.store, STORE_MEMORY_STORE, obj, &e);
        if (rr < 0) {
                json_decref(obj);
                v1a_answer_store_error(r, rr, &e, "memory store", id);
                return;
        }
        v1_webhook_emit(a->cfg.store, "memory_store.created", id, NULL, NULL);
        v1a_answer_json(r, 200, obj);
}

static void ms_list(api_v1 *a, http_req *r) {
        mquery q;
        uint64_t limit = STORE_PAGE_DEFAULT;
        bool arch = false;
        if (refuse_mquery(r, &q, B(Q_LIMIT) | B(Q_PAGE) | B(Q_ARCH) | B(Q_GTE) | B(Q_LTE)) ||
            v1a_refuse_int(r, "limit", q.v[Q_LIMIT], 1, UINT32_MAX, &limit) ||
            v1a_refuse_bool(r, "include_archived", q.v[Q_ARCH], &arch) ||
            v1a_refuse_time(r, "created_at[gte]", q.v[Q_GTE]) || v1a_refuse_time(r, "created_at[lte]", q.v[Q_LTE]))
                return;
        store_list_q lq = {.limit = (unsigned) MIN(limit, (uint64_t) STORE_PAGE_MAX),
                           .page = q.v[Q_PAGE],
                           .descending = true,
                           .include_archived = arch,
                           .created_gte = q.v[Q_GTE],
                           .created_lte = q.v[Q_LTE]};
        store_page p = {0};
        hull_error e = {0};
        int rr = store_list(a->cfg.store, STORE_MEMORY_STORE, &lq, &p, &e);
        if (rr < 0) {
                v1a_answer_store_error(r, rr, &e, "page", NULL);
                return;
        }
        json_t *page = v1a_page_json(&p, false);
        if (page)
                json_object_del(page, "prev_page");
        v1a_answer_json(r, 200, page);
        store_page_done(&p);
}

static void ms_get(api_v1 *a, http_req *r) {
        mquery q;
        if (refuse_mquery(r, &q, 0))
                return;
        json_t *obj = NULL;
        v1_err err = {0};
        if (v1_memory_store_get(a->cfg.store, http_req_param(r, "id"), &obj, &err) < 0)
                v1a_fail(r, &err);
        else
                v1a_answer_json(r, 200, obj);
}

/* Update (or archive) a store: read, change, write, again when someone else came first. */
static void ms_update(api_v1 *a, http_req *r, bool archive) {
        mquery q;
        if (refuse_mquery(r, &q, 0))
                return;
        const char *id = http_req_param(r, "id");
        json_auto_t *body = v1a_body_object(r, archive);
        if (!body)
                return;
        if (archive && json_object_size(body) > 0) {
                v1a_failf(r, 400, "", "archive takes no body");
                return;
        }
        json_auto_t *cur = NULL;
        v1_err err = {0};
        if (v1_memory_store_get(a->cfg.store, id, &cur, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        json_t *next = NULL;
        if (archive) {
                if (json_is_string(json_object_get(cur, "archived_at"))) {
                        v1a_answer_json(r, 200, json_incref(cur));
                        return;
                }
                next = json_deep_copy(cur);
                if (next) {
                        json_object_set_new(next, "archived_at", json_string(now));
                        json_object_set_new(next, "updated_at", json_string(now));
                }
        } else if (v1_memory_store_update(cur, body, now, &next, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        if (!next) {
                v1a_answer_json(r, 200, json_incref(cur));
                return;
        }
        hull_error e = {0};
        int rr = store_update(a->cfg.store, STORE_MEMORY_STORE, next, &e);
        if (rr < 0) {
                json_decref(next);
                v1a_answer_store_error(r, rr, &e, "memory store", id);
                return;
        }
        if (archive) /* the catalog has no memory_store.updated */
                v1_webhook_emit(a->cfg.store, "memory_store.archived", id, NULL, NULL);
        v1a_answer_json(r, 200, next);
}

static void ms_delete(api_v1 *a, http_req *r) {
        mquery q;
        if (refuse_mquery(r, &q, 0))
                return;
        const char *id = http_req_param(r, "id");
        hull_error e = {0};
        int rr = store_delete(a->cfg.store, STORE_MEMORY_STORE, id, &e);
        if (rr < 0)
                v1a_answer_store_error(r, rr, &e, "memory store", id);
        else {
                v1_webhook_emit(a->cfg.store, "memory_store.deleted", id, NULL, NULL);
                v1a_answer_json(r, 200, json_pack("{s:s, s:s}", "id", id, "type", "memory_store_deleted"));
        }
}

/* ---- memories ---- */

/* The body's content (a string, "" allowed) and path; NULL fields when absent. Returns true once
 * r is refused. */
static bool refuse_memory_body(http_req *r, const json_t *body, bool create, v1_memory_req *q) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) body, k, v) {
                if (strcmp(k, "path") == 0 || strcmp(k, "content") == 0 || (!create && strcmp(k, "precondition") == 0))
                        continue;
                v1a_failf(r, 400, "", "unknown field '%.60s' (a memory takes: path, content%s)", k,
                          create ? "" : ", precondition");
                return true;
        }
        const json_t *path = json_object_get(body, "path"), *content = json_object_get(body, "content");
        if ((path && !json_is_string(path)) || (create && !path)) {
                v1a_failf(r, 400, "", "path: %s",
                          create ? "required, a string such as \"/notes/todo.md\"" : "must be a string");
                return true;
        }
        if ((content && !json_is_string(content)) || (create && !content)) {
                v1a_failf(r, 400, "", "content: %s",
                          create ? "required, a string (\"\" is a content)" : "must be a string");
                return true;
        }
        if (path && strlen(json_string_value(path)) != json_string_length(path)) {
                v1a_failf(r, 400, "", "path: must not hold a NUL character");
                return true;
        }
        q->path = json_string_value(path);
        q->content = json_string_value(content);
        q->content_len = json_string_length(content);
        const json_t *pre = json_object_get(body, "precondition");
        if (pre && !json_is_null(pre)) {
                const char *t = json_string_value(json_object_get(pre, "type"));
                const json_t *sha = json_object_get(pre, "content_sha256");
                if (!json_is_object(pre) || !t || strcmp(t, "content_sha256") != 0 || !json_is_string(sha) ||
                    json_object_size(pre) != 2) {
                        v1a_failf(
                                r, 400, "",
                                "precondition: must be {\"type\":\"content_sha256\",\"content_sha256\":\"<64 hex>\"}");
                        return true;
                }
                q->expect_sha256 = json_string_value(sha);
        }
        return false;
}

static void answer_memory(http_req *r, int rr, json_t *m, bool full, const v1_err *err) {
        if (rr < 0)
                v1a_fail(r, err);
        else
                v1a_answer_json(r, 200, v1_memory_view(m, full));
        json_decref(m);
}

static void memory_write(api_v1 *a, http_req *r, bool create) {
        mquery q;
        bool full = false;
        if (refuse_mquery(r, &q, B(Q_VIEW)) || refuse_view(r, q.v[Q_VIEW], false, &full))
                return;
        json_auto_t *body = v1a_body_object(r, false);
        if (!body)
                return;
        v1_memory_req mq = {.store_id = http_req_param(r, "id"),
                            .memory_id = create ? NULL : http_req_param(r, "mid"),
                            .actor = actor_of(r)};
        if (refuse_memory_body(r, body, create, &mq))
                return;
        json_t *m = NULL;
        v1_err err = {0};
        int rr = v1_memory_write(a->cfg.store, &mq, &m, &err);
        answer_memory(r, rr, m, full, &err);
}

static void memory_get(api_v1 *a, http_req *r) {
        mquery q;
        bool full = true;
        if (refuse_mquery(r, &q, B(Q_VIEW)) || refuse_view(r, q.v[Q_VIEW], true, &full))
                return;
        json_t *m = NULL;
        v1_err err = {0};
        int rr = v1_memory_read(a->cfg.store, http_req_param(r, "id"), http_req_param(r, "mid"), NULL, &m, &err);
        answer_memory(r, rr, m, full, &err);
}

static void memory_delete(api_v1 *a, http_req *r) {
        mquery q;
        if (refuse_mquery(r, &q, B(Q_SHA)))
                return;
        const char *mid = http_req_param(r, "mid");
        v1_memory_req mq = {.store_id = http_req_param(r, "id"),
                            .memory_id = mid,
                            .remove = true,
                            .expect_sha256 = q.v[Q_SHA],
                            .actor = actor_of(r)};
        v1_err err = {0};
        if (v1_memory_write(a->cfg.store, &mq, NULL, &err) < 0)
                v1a_fail(r, &err);
        else
                v1a_answer_json(r, 200, json_pack("{s:s, s:s}", "id", mid, "type", "memory_deleted"));
}

static void memory_list(api_v1 *a, http_req *r) {
        mquery q;
        bool full = false;
        uint64_t limit = STORE_PAGE_DEFAULT, depth = 0;
        if (refuse_mquery(r, &q, B(Q_LIMIT) | B(Q_PAGE) | B(Q_VIEW) | B(Q_PREFIX) | B(Q_DEPTH)) ||
            refuse_view(r, q.v[Q_VIEW], false, &full) ||
            v1a_refuse_int(r, "limit", q.v[Q_LIMIT], 1, UINT32_MAX, &limit) ||
            v1a_refuse_int(r, "depth", q.v[Q_DEPTH], 0, MEMORY_SYNC_DEPTH_MAX * 32, &depth))
                return;
        limit = MIN(limit, (uint64_t) (full ? MEMORY_LIST_FULL_MAX : STORE_PAGE_MAX)); /* clamped, never refused */
        json_t *page = NULL;
        v1_err err = {0};
        if (v1_memory_list(a->cfg.store, http_req_param(r, "id"), q.v[Q_PREFIX], (unsigned) depth, q.v[Q_PAGE],
                           (unsigned) limit, full, &page, &err) < 0)
                v1a_fail(r, &err);
        else
                v1a_answer_json(r, 200, page);
}

/* ---- versions ---- */

static void version_list(api_v1 *a, http_req *r) {
        static const char *const ops[] = {"created", "modified", "deleted"};
        mquery q;
        bool full = false;
        uint64_t limit = STORE_PAGE_DEFAULT;
        if (refuse_mquery(r, &q,
                          B(Q_LIMIT) | B(Q_PAGE) | B(Q_VIEW) | B(Q_MEMORY) | B(Q_SESSION) | B(Q_OP) | B(Q_GTE) |
                                  B(Q_LTE)) ||
            refuse_view(r, q.v[Q_VIEW], false, &full) ||
            v1a_refuse_int(r, "limit", q.v[Q_LIMIT], 1, UINT32_MAX, &limit) ||
            v1a_refuse_time(r, "created_at[gte]", q.v[Q_GTE]) || v1a_refuse_time(r, "created_at[lte]", q.v[Q_LTE]))
                return;
        bool op_ok = !q.v[Q_OP];
        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                op_ok |= q.v[Q_OP] && strcmp(q.v[Q_OP], ops[i]) == 0;
        if (!op_ok) {
                v1a_failf(r, 400, "", "operation must be created, modified or deleted, got '%.20s'", q.v[Q_OP]);
                return;
        }
        limit = MIN(limit, (uint64_t) (full ? MEMORY_LIST_FULL_MAX : STORE_PAGE_MAX));
        store_memory_versions_q vq = {.limit = (unsigned) limit,
                                      .page = q.v[Q_PAGE],
                                      .memory_id = q.v[Q_MEMORY],
                                      .session_id = q.v[Q_SESSION],
                                      .operation = q.v[Q_OP],
                                      .created_gte = q.v[Q_GTE],
                                      .created_lte = q.v[Q_LTE]};
        const char *id = http_req_param(r, "id");
        store_page p = {0};
        hull_error e = {0};
        int rr = store_memory_versions_list(a->cfg.store, id, &vq, &p, &e);
        if (rr < 0) {
                v1a_answer_store_error(r, rr, &e, rr == -ENOENT ? "memory store" : "page", id);
                return;
        }
        if (!full) {
                size_t i;
                json_t *v;
                json_array_foreach(p.data, i, v) if (json_object_get(v, "content"))
                        json_object_set_new(v, "content", json_null());
        }
        json_t *page = v1a_page_json(&p, false);
        if (page)
                json_object_del(page, "prev_page");
        v1a_answer_json(r, 200, page);
        store_page_done(&p);
}

static void version_get(api_v1 *a, http_req *r) {
        mquery q;
        bool full = true;
        if (refuse_mquery(r, &q, B(Q_VIEW)) || refuse_view(r, q.v[Q_VIEW], true, &full))
                return;
        const char *id = http_req_param(r, "id"), *vid = http_req_param(r, "vid");
        json_t *v = NULL;
        hull_error e = {0};
        int rr = store_memory_version_get(a->cfg.store, id, vid, &v, &e);
        if (rr == -ENOENT) {
                json_auto_t *st = NULL;
                v1_err err = {0};
                if (v1_memory_store_get(a->cfg.store, id, &st, &err) < 0)
                        v1a_fail(r, &err);
                else
                        v1a_failf(r, 404, "", "memory store %.64s has no memory version %.64s", id, vid);
                return;
        }
        if (rr < 0) {
                v1a_answer_store_error(r, rr, &e, "memory version", vid);
                return;
        }
        v1a_answer_json(r, 200, v1_memory_view(v, full));
        json_decref(v);
}

static void version_redact(api_v1 *a, http_req *r) {
        mquery q;
        if (refuse_mquery(r, &q, 0))
                return;
        json_auto_t *body = v1a_body_object(r, true);
        if (!body)
                return;
        if (json_object_size(body) > 0) {
                v1a_failf(r, 400, "", "redact takes no body");
                return;
        }
        v1_memory_actor actor = actor_of(r);
        json_t *v = NULL;
        v1_err err = {0};
        if (v1_memory_redact(a->cfg.store, http_req_param(r, "id"), http_req_param(r, "vid"), &actor, &v, &err) < 0)
                v1a_fail(r, &err);
        else
                v1a_answer_json(r, 200, v);
}

#define HANDLER(name, call)                                                                                            \
        static void name##_h(http_req *r) {                                                                            \
                api_v1 *a = http_req_data(r);                                                                          \
                call;                                                                                                  \
        }
HANDLER(store_create, ms_create(a, r))
HANDLER(store_list, ms_list(a, r))
HANDLER(store_get, ms_get(a, r))
HANDLER(store_update, ms_update(a, r, false))
HANDLER(store_archive, ms_update(a, r, true))
HANDLER(store_delete, ms_delete(a, r))
HANDLER(memory_create, memory_write(a, r, true))
HANDLER(memory_update, memory_write(a, r, false))
HANDLER(memory_get, memory_get(a, r))
HANDLER(memory_delete, memory_delete(a, r))
HANDLER(memory_list, memory_list(a, r))
HANDLER(version_list, version_list(a, r))
HANDLER(version_get, version_get(a, r))
HANDLER(version_redact, version_redact(a, r))

#define MROUTE(m, p, body, fn)                                                                                         \
        { .methods = (m), .pattern = (p), .scope = "v1", .body_max = (body), .head = head_memory, .handler = (fn) }
#define MS "/v1/memory_stores"

const http_route api_v1_memory_routes[] = {
        MROUTE(HTTP_POST, MS, V1_BODY_MAX, store_create_h),
        MROUTE(HTTP_GET, MS, 0, store_list_h),
        MROUTE(HTTP_GET, MS "/{id}", 0, store_get_h),
        MROUTE(HTTP_POST, MS "/{id}", V1_BODY_MAX, store_update_h),
        MROUTE(HTTP_DELETE, MS "/{id}", 0, store_delete_h),
        MROUTE(HTTP_POST, MS "/{id}/archive", V1_BODY_MAX, store_archive_h),
        MROUTE(HTTP_POST, MS "/{id}/memories", V1_BODY_MAX, memory_create_h),
        MROUTE(HTTP_GET, MS "/{id}/memories", 0, memory_list_h),
        MROUTE(HTTP_GET, MS "/{id}/memories/{mid}", 0, memory_get_h),
        MROUTE(HTTP_POST, MS "/{id}/memories/{mid}", V1_BODY_MAX, memory_update_h),
        MROUTE(HTTP_DELETE, MS "/{id}/memories/{mid}", 0, memory_delete_h),
        MROUTE(HTTP_GET, MS "/{id}/memory_versions", 0, version_list_h),
        MROUTE(HTTP_GET, MS "/{id}/memory_versions/{vid}", 0, version_get_h),
        MROUTE(HTTP_POST, MS "/{id}/memory_versions/{vid}/redact", V1_BODY_MAX, version_redact_h),
};
const size_t api_v1_memory_n_routes = ELEMENTSOF(api_v1_memory_routes);
