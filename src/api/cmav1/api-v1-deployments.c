/* api-v1-deployments.c: the /v1 routes of scheduled deployments and their runs
 * (managed-agents-2026-04-01; ../shared/reference/cma-api-more.md §8) over v1-deploy.h: their
 * head (the version, the beta, ids that can name something) and their queries are read here;
 * api-v1.c registers the table (v1a_deploy_routes) when hull serve has a scheduler. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "macro.h"
#include "utf8.h"
#include "v1-deploy.h"

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

static int head_deploy(http_req *r) {
        unsigned n = 0;
        const char *v = http_req_header(r, "anthropic-version", &n);
        if (!v || (strcmp(v, "2023-06-01") != 0 && strcmp(v, "2026-10-21") != 0)) {
                v1a_failf(r, 400, n ? "unsupported_anthropic_version" : "missing_anthropic_version",
                          "send anthropic-version: 2023-06-01 (or 2026-10-21)");
                return 1;
        }
        v = http_req_header(r, "anthropic-beta", &n);
        if (!list_has(v, V1_BETA)) {
                v1a_failf(r, 400, n ? "unsupported_anthropic_beta" : "missing_anthropic_beta",
                          "anthropic-beta must list %s (got '%.80s')", V1_BETA, v ? v : "");
                return 1;
        }
        const char *id = http_req_param(r, "id");
        if (id) {
                bool ok = utf8_is_valid(id, strlen(id)) && strlen(id) < STORE_ID_MAX;
                for (const char *p = id; ok && *p; p++)
                        ok = (unsigned char) *p >= 0x20 && *p != 0x7f;
                if (!ok) {
                        v1a_failf(r, 404, "", "no such deployment or run");
                        return 1;
                }
        }
        return 0;
}

/* ---- the query ---- */

enum {
        Q_LIMIT,
        Q_PAGE,
        Q_STATUS,
        Q_AGENT,
        Q_ARCHIVED,
        Q_DEPLOYMENT,
        Q_ERROR,
        Q_TRIGGER,
        Q_GT,
        Q_GTE,
        Q_LT,
        Q_LTE,
        _Q_MAX
};
static const char *const qnames[_Q_MAX] = {
        "limit",     "page",         "status",         "agent_id",        "include_archived", "deployment_id",
        "has_error", "trigger_type", "created_at[gt]", "created_at[gte]", "created_at[lt]",   "created_at[lte]"};

typedef struct dquery {
        const char *v[_Q_MAX];
        unsigned allowed; /* bits of qnames */
        char bad[80];
} dquery;

static void dquery_arg(void *data, const char *name, const char *value) {
        dquery *q = data;
        if (strcmp(name, "beta") == 0)
                return;
        for (unsigned i = 0; i < _Q_MAX; i++)
                if (strcmp(name, qnames[i]) == 0 && (q->allowed >> i & 1)) {
                        if (q->v[i] && !q->bad[0])
                                snprintf(q->bad, sizeof(q->bad), "%.40s (given twice)", name);
                        q->v[i] = value[0] ? value : NULL; /* a null param is "key=" */
                        return;
                }
        if (!q->bad[0])
                snprintf(q->bad, sizeof(q->bad), "%.60s", name);
}

/* Returns true once r is refused. */
static bool refuse_dquery(http_req *r, dquery *q, unsigned allowed) {
        *q = (dquery){.allowed = allowed};
        http_req_each_query(r, dquery_arg, q);
        if (q->bad[0]) {
                char names[400] = "";
                for (unsigned i = 0; i < _Q_MAX; i++)
                        if (allowed >> i & 1)
                                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                                         names[0] ? ", " : "", qnames[i]);
                v1a_failf(r, 400, "", "unknown query parameter '%s' (this route takes: %s)", q->bad,
                          names[0] ? names : "none");
                return true;
        }
        uint64_t lim = 0;
        if (v1a_refuse_int(r, "limit", q->v[Q_LIMIT], 1, UINT32_MAX, &lim))
                return true;
        for (unsigned i = Q_GT; i <= Q_LTE; i++)
                if (v1a_refuse_time(r, qnames[i], q->v[i]))
                        return true;
        return false;
}

static unsigned clamp_limit(const char *v) {
        unsigned long n = v ? strtoul(v, NULL, 10) : 0;
        return n == 0 ? 0 : n > STORE_PAGE_MAX ? STORE_PAGE_MAX : (unsigned) n;
}

static void answer_page(http_req *r, store_page *p, v1_deploy *d) {
        size_t i;
        json_t *o;
        if (d)
                json_array_foreach(p->data, i, o) v1_deploy_decorate(d, o);
        json_t *page = v1a_page_json(p, false);
        if (page)
                json_object_del(page, "prev_page");
        v1a_answer_json(r, 200, page);
        store_page_done(p);
}

static void list_fail(http_req *r, int rr, const hull_error *e) {
        if (rr == -EINVAL)
                v1a_failf(r, 400, "", "%s", e->msg);
        else
                v1a_failf(r, 500, "", "the list could not be read: %s", e->msg);
}

/* ---- the routes ---- */

static void deployment_list(api_v1 *a, http_req *r) {
        dquery q;
        bool arch = false;
        if (refuse_dquery(r, &q,
                          1U << Q_LIMIT | 1U << Q_PAGE | 1U << Q_STATUS | 1U << Q_AGENT | 1U << Q_ARCHIVED |
                                  1U << Q_GTE | 1U << Q_LTE) ||
            v1a_refuse_bool(r, "include_archived", q.v[Q_ARCHIVED], &arch))
                return;
        const char *st = q.v[Q_STATUS];
        if (st && strcmp(st, "active") != 0 && strcmp(st, "paused") != 0) {
                v1a_failf(r, 400, "", "status must be active or paused, got '%.40s'", st);
                return;
        }
        if (st && q.v[Q_ARCHIVED]) {
                v1a_failf(r, 400, "",
                          "status and include_archived cannot be given together: archived deployments "
                          "have no status filter; drop one of them");
                return;
        }
        store_deploy_q dq = {.limit = clamp_limit(q.v[Q_LIMIT]),
                             .page = q.v[Q_PAGE],
                             .include_archived = arch,
                             .status = st,
                             .agent_id = q.v[Q_AGENT],
                             .has_error = -1,
                             .created_gte = q.v[Q_GTE],
                             .created_lte = q.v[Q_LTE]};
        store_page p = {0};
        hull_error e = {0};
        int rr = store_deploy_list(a->cfg.store, STORE_DEPLOYMENT, &dq, &p, &e);
        if (rr < 0)
                list_fail(r, rr, &e);
        else
                answer_page(r, &p, a->cfg.deploy);
}

static void run_list(api_v1 *a, http_req *r) {
        dquery q;
        bool err = false;
        if (refuse_dquery(r, &q,
                          1U << Q_LIMIT | 1U << Q_PAGE | 1U << Q_DEPLOYMENT | 1U << Q_ERROR | 1U << Q_TRIGGER |
                                  1U << Q_GT | 1U << Q_GTE | 1U << Q_LT | 1U << Q_LTE) ||
            v1a_refuse_bool(r, "has_error", q.v[Q_ERROR], &err))
                return;
        const char *t = q.v[Q_TRIGGER];
        if (t && strcmp(t, "schedule") != 0 && strcmp(t, "manual") != 0) {
                v1a_failf(r, 400, "", "trigger_type must be schedule or manual, got '%.40s'", t);
                return;
        }
        store_deploy_q dq = {.limit = clamp_limit(q.v[Q_LIMIT]),
                             .page = q.v[Q_PAGE],
                             .deployment_id = q.v[Q_DEPLOYMENT],
                             .trigger_type = t,
                             .has_error = q.v[Q_ERROR] ? err : -1,
                             .created_gt = q.v[Q_GT],
                             .created_gte = q.v[Q_GTE],
                             .created_lt = q.v[Q_LT],
                             .created_lte = q.v[Q_LTE]};
        store_page p = {0};
        hull_error e = {0};
        int rr = store_deploy_list(a->cfg.store, STORE_DEPLOYMENT_RUN, &dq, &p, &e);
        if (rr < 0)
                list_fail(r, rr, &e);
        else
                answer_page(r, &p, NULL);
}

static void run_get(api_v1 *a, http_req *r) {
        dquery q;
        if (refuse_dquery(r, &q, 0))
                return;
        const char *id = http_req_param(r, "id");
        json_t *run = NULL;
        hull_error e = {0};
        int rr = store_deploy_get(a->cfg.store, STORE_DEPLOYMENT_RUN, id, &run, &e);
        if (rr == -ENOENT)
                v1a_failf(r, 404, "deployment_run_not_found",
                          "no deployment run %.64s (GET /v1/deployment_runs lists them)", id);
        else if (rr < 0)
                v1a_failf(r, 500, "", "the run could not be read: %s", e.msg);
        else
                v1a_answer_json(r, 200, run);
}

typedef enum dop { D_CREATE, D_GET, D_UPDATE, D_ARCHIVE, D_PAUSE, D_UNPAUSE, D_RUN } dop;

static void deployment_op(api_v1 *a, http_req *r, dop op) {
        dquery q;
        if (refuse_dquery(r, &q, 0))
                return;
        const char *id = http_req_param(r, "id");
        json_auto_t *body = NULL;
        if (op != D_GET) {
                body = v1a_body_object(r, op != D_CREATE && op != D_UPDATE);
                if (!body)
                        return;
                if (op != D_CREATE && op != D_UPDATE && json_object_size(body) > 0) {
                        v1a_failf(r, 400, "", "this route takes no body");
                        return;
                }
        }
        v1_deploy *d = a->cfg.deploy;
        json_t *out = NULL;
        v1_err err = {0};
        int rr;
        switch (op) {
        case D_CREATE:
                rr = v1_deploy_create(d, body, &out, &err);
                break;
        case D_GET:
                rr = v1_deploy_get(d, id, &out, &err);
                break;
        case D_UPDATE:
                rr = v1_deploy_update(d, id, body, &out, &err);
                break;
        case D_ARCHIVE:
                rr = v1_deploy_act(d, id, V1_DEPLOY_ARCHIVE, &out, &err);
                break;
        case D_PAUSE:
                rr = v1_deploy_act(d, id, V1_DEPLOY_PAUSE, &out, &err);
                break;
        case D_UNPAUSE:
                rr = v1_deploy_act(d, id, V1_DEPLOY_UNPAUSE, &out, &err);
                break;
        case D_RUN:
        default:
                rr = v1_deploy_run_now(d, id, &out, &err);
                break;
        }
        if (rr < 0)
                v1a_fail(r, &err);
        else
                v1a_answer_json(r, 200, out);
}

#define HANDLER(name, call)                                                                                            \
        static void name##_h(http_req *r) {                                                                            \
                api_v1 *a = http_req_data(r);                                                                          \
                call;                                                                                                  \
        }
HANDLER(create, deployment_op(a, r, D_CREATE))
HANDLER(list, deployment_list(a, r))
HANDLER(get, deployment_op(a, r, D_GET))
HANDLER(update, deployment_op(a, r, D_UPDATE))
HANDLER(archive, deployment_op(a, r, D_ARCHIVE))
HANDLER(pause, deployment_op(a, r, D_PAUSE))
HANDLER(unpause, deployment_op(a, r, D_UNPAUSE))
HANDLER(run, deployment_op(a, r, D_RUN))
HANDLER(runs, run_list(a, r))
HANDLER(run_get, run_get(a, r))

#define DROUTE(m, p, body, fn)                                                                                         \
        { .methods = (m), .pattern = (p), .scope = "v1", .body_max = (body), .head = head_deploy, .handler = (fn) }
#define DP "/v1/deployments"

const http_route v1a_deploy_routes[] = {
        DROUTE(HTTP_POST, DP, V1_BODY_MAX, create_h),
        DROUTE(HTTP_GET, DP, 0, list_h),
        DROUTE(HTTP_GET, DP "/{id}", 0, get_h),
        DROUTE(HTTP_POST, DP "/{id}", V1_BODY_MAX, update_h),
        DROUTE(HTTP_POST, DP "/{id}/archive", V1_BODY_MAX, archive_h),
        DROUTE(HTTP_POST, DP "/{id}/pause", V1_BODY_MAX, pause_h),
        DROUTE(HTTP_POST, DP "/{id}/unpause", V1_BODY_MAX, unpause_h),
        DROUTE(HTTP_POST, DP "/{id}/run", V1_BODY_MAX, run_h),
        DROUTE(HTTP_GET, "/v1/deployment_runs", 0, runs_h),
        DROUTE(HTTP_GET, "/v1/deployment_runs/{id}", 0, run_get_h),
};
const size_t v1a_n_deploy_routes = ELEMENTSOF(v1a_deploy_routes);
