/* api-v1-work.c: the Work API of self-hosted environments (/v1/environments/{id}/work...,
 * v1-work.h), its routes a table of their own, and the checks of a worker's credentials: an
 * environment key (its environment's queue and sessions) or a sessions token (one session and
 * its work item). Other routes never take those (http_route.scoped_keys). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "macro.h"
#include "v1-work.h"

/* ---- a worker's credential ---- */

/* The scope of the caller's worker credential ("env:E", "session:S"), or NULL for any other. */
static const char *worker_scope(http_req *r) {
        static const char prefix[] = "key:" HTTP_SCOPED_KEY_PREFIX;
        const char *p = http_req_principal(r);
        return p && strncmp(p, prefix, sizeof(prefix) - 1) == 0 ? p + sizeof(prefix) - 1 : NULL;
}

static bool scope_is(const char *scope, const char *kind, const char *id) {
        size_t n = strlen(kind);
        return strncmp(scope, kind, n) == 0 && id && strcmp(scope + n, id) == 0;
}

static bool refuse_scope(http_req *r, const char *what) {
        v1a_failf(r, 403, "",
                  "this credential is a self-hosted worker's (an environment key or a work item's sessions token): "
                  "it does not serve %s",
                  what);
        return true;
}

bool v1a_refuse_worker_session(api_v1 *a, http_req *r, const char *session_id) {
        const char *scope = worker_scope(r);
        if (!scope || scope_is(scope, V1_WORK_SCOPE_SESSION, session_id))
                return false;
        if (strncmp(scope, V1_WORK_SCOPE_ENV, strlen(V1_WORK_SCOPE_ENV)) == 0) {
                json_auto_t *sess = NULL;
                hull_error e = {0};
                if (store_get(a->cfg.store, STORE_SESSION, session_id, 0, &sess, &e) == 0 &&
                    scope_is(scope, V1_WORK_SCOPE_ENV, json_string_value(json_object_get(sess, "environment_id"))))
                        return false;
        }
        return refuse_scope(r, "this session");
}

/* ---- the routes ---- */

/* The routes' tags: past api-v1.c's (R_AGENT...), which name what a malformed {id} is not. */
typedef enum op { OP_LIST = 100, OP_POLL, OP_STATS, OP_GET, OP_UPDATE, OP_ACK, OP_HEARTBEAT, OP_STOP } op;

static const char *const list_args[] = {"limit", "page", NULL};
static const char *const poll_args[] = {"block_ms", "reclaim_older_than_ms", NULL};
static const char *const beat_args[] = {"expected_last_heartbeat", "desired_ttl_seconds", NULL};
static const char *const no_args[] = {NULL};

static op op_of(http_req *r) {
        return (op) http_req_tag(r);
}

/* The version, the beta, the ids, the query names, and the credential: an environment key of
 * this environment; a sessions token only for its own item (checked once it is read). */
static int head(http_req *r) {
        if (v1a_head_resources(r))
                return 1;
        op o = op_of(r);
        query q;
        if (v1a_refuse_query(r, &q,
                             o == OP_LIST        ? list_args
                             : o == OP_POLL      ? poll_args
                             : o == OP_HEARTBEAT ? beat_args
                                                 : no_args,
                             NULL))
                return 1;
        const char *scope = worker_scope(r), *env = http_req_param(r, "id");
        if (!scope || scope_is(scope, V1_WORK_SCOPE_ENV, env))
                return 0;
        if (strncmp(scope, V1_WORK_SCOPE_SESSION, strlen(V1_WORK_SCOPE_SESSION)) == 0 && o != OP_LIST && o != OP_POLL &&
            o != OP_STATS)
                return 0;
        return refuse_scope(r, o == OP_LIST || o == OP_POLL || o == OP_STATS ? "this environment's queue"
                                                                             : "this environment's work");
}

/* A heartbeat's 412: the envelope with details.current_state, as the SDK's worker reads it. */
static void answer_412(http_req *r, const v1_err *err, json_t *current) {
        json_t *body = json_pack("{s:s, s:{s:s, s:s, s:{s:s, s:s, s:o}}, s:s}", "type", "error", "error", "type",
                                 "invalid_request_error", "message", err->msg, "details", "error_code",
                                 "heartbeat_precondition_failed", "error_visibility", "user_facing", "current_state",
                                 current ? current : json_null(), "request_id", http_req_id(r));
        (void) http_answer_header(r, "x-should-retry", "false");
        v1a_answer_json(r, 412, body);
}

static void poll_run(http_req *r) {
        api_v1 *a = http_req_data(r);
        uint64_t block = 0, reclaim = WORK_RECLAIM_DEFAULT_MS;
        const char *b = http_req_query(r, "block_ms"), *rc = http_req_query(r, "reclaim_older_than_ms");
        if ((b && b[0] && v1a_refuse_int(r, "block_ms", b, 1, WORK_POLL_BLOCK_MAX_MS, &block)) ||
            (rc && rc[0] && v1a_refuse_int(r, "reclaim_older_than_ms", rc, 1, INT32_MAX, &reclaim)))
                return;
        unsigned n = 0;
        const char *worker = http_req_header(r, "anthropic-worker-id", &n);
        if (n > 1 || (worker && (strlen(worker) >= WORK_WORKER_ID_MAX || strpbrk(worker, "\r\n")))) {
                v1a_failf(r, 400, "",
                          "Anthropic-Worker-ID must be given at most once and be under %u characters of one line",
                          WORK_WORKER_ID_MAX);
                return;
        }
        json_t *work = NULL;
        v1_err err = {0};
        if (v1_work_poll(a->cfg.store, a->pollers, http_req_param(r, "id"), worker, block, reclaim, &work, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        if (work) {
                v1a_answer_json(r, 200, work);
                return;
        }
        char *null = strdup("null"); /* nothing: JSON null, which the SDKs read as none */
        if (!null)
                v1a_failf(r, 500, "", "out of memory");
        else
                (void) http_answer(r, 200, "application/json", null, 4);
}

static void work(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *env = http_req_param(r, "id"), *wid = http_req_param(r, "work");
        store *s = a->cfg.store;
        op o = op_of(r);
        json_auto_t *body = NULL;
        if ((o == OP_UPDATE || o == OP_STOP || o == OP_ACK) && !(body = v1a_body_object(r, o != OP_UPDATE)))
                return;
        if (o == OP_POLL) {
                const char *b = http_req_query(r, "block_ms");
                if (b && b[0] && http_req_spawn(r, poll_run) == 0) /* a long poll waits on its own thread */
                        return;
                poll_run(r);
                return;
        }
        v1_err err = {0};
        json_t *obj = NULL;
        int rr = 0;
        const char *scope = worker_scope(r);
        if (wid && scope && strncmp(scope, V1_WORK_SCOPE_SESSION, strlen(V1_WORK_SCOPE_SESSION)) == 0) {
                char sid[STORE_ID_MAX];
                json_auto_t *w = NULL;
                if (v1_work_get(s, env, wid, &w, sid, &err) < 0) {
                        v1a_fail(r, &err);
                        return;
                }
                if (!scope_is(scope, V1_WORK_SCOPE_SESSION, sid)) {
                        refuse_scope(r, "this work item");
                        return;
                }
        }
        switch (o) {
        case OP_LIST: {
                uint64_t limit = STORE_PAGE_DEFAULT;
                const char *l = http_req_query(r, "limit"), *p = http_req_query(r, "page");
                if (l && l[0] && v1a_refuse_int(r, "limit", l, 1, UINT32_MAX, &limit))
                        return;
                rr = v1_work_list(s, env, p, (unsigned) (limit > WORK_LIST_MAX ? WORK_LIST_MAX : limit), &obj, &err);
                break;
        }
        case OP_STATS:
                rr = v1_work_stats(s, a->pollers, env, &obj, &err);
                break;
        case OP_GET:
                rr = v1_work_get(s, env, wid, &obj, NULL, &err);
                break;
        case OP_UPDATE:
                rr = v1_work_update(s, env, wid, body, &obj, &err);
                break;
        case OP_ACK:
                rr = json_object_size(body) ? v1_fail(&err, 400, "", "ack takes no body")
                                            : v1_work_ack(s, env, wid, &obj, &err);
                break;
        case OP_HEARTBEAT: {
                uint64_t ttl = 0;
                const char *t = http_req_query(r, "desired_ttl_seconds");
                if (t && t[0] && v1a_refuse_int(r, "desired_ttl_seconds", t, 1, WORK_LEASE_TTL_MAX_S, &ttl))
                        return;
                rr = v1_work_heartbeat(s, env, wid, http_req_query(r, "expected_last_heartbeat"), ttl, &obj, &err);
                if (rr < 0 && err.status == 412) {
                        answer_412(r, &err, obj);
                        return;
                }
                break;
        }
        case OP_STOP: {
                json_t *f = json_object_get(body, "force");
                if (json_object_size(body) > (f ? 1U : 0U) || (f && !json_is_boolean(f))) {
                        v1a_failf(r, 400, "", "stop takes only force: true or false");
                        return;
                }
                rr = v1_work_stop(s, env, wid, json_is_true(f), &obj, &err);
                break;
        }
        case OP_POLL:
                break;
        }
        if (rr < 0) {
                json_decref(obj);
                v1a_fail(r, &err);
                return;
        }
        v1a_answer_json(r, 200, obj);
}

#define W(m, p, o, body)                                                                                               \
        {                                                                                                              \
                .methods = (m), .pattern = "/v1/environments/{id}/work" p, .scope = "v1", .body_max = (body),          \
                .head = head, .handler = work, .tag = (o), .scoped_keys = true                                         \
        }

const http_route v1a_work_routes[] = {
        W(HTTP_GET, "", OP_LIST, 0),
        W(HTTP_GET, "/poll", OP_POLL, 0),
        W(HTTP_GET, "/stats", OP_STATS, 0),
        W(HTTP_GET, "/{work}", OP_GET, 0),
        W(HTTP_POST, "/{work}", OP_UPDATE, V1_BODY_MAX),
        W(HTTP_POST, "/{work}/ack", OP_ACK, V1_BODY_MAX),
        W(HTTP_POST, "/{work}/heartbeat", OP_HEARTBEAT, V1_BODY_MAX),
        W(HTTP_POST, "/{work}/stop", OP_STOP, V1_BODY_MAX),
};
const size_t v1a_n_work_routes = ELEMENTSOF(v1a_work_routes);
