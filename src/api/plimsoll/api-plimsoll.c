/* api-plimsoll.c: plimsoll's routes (the Connect wording is in src/api/connect). */
#include "api-plimsoll.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api-connect.h"
#include "hullapi.h"
#include "macro.h"
#include "time-util.h"

#define NOTHING_RAN "; nothing ran"

/* ---- plimsoll ---- */

struct api_plimsoll {
        api_connect connect; /* first: the Connect wording reads it */
        api_plimsoll_config cfg;
        http_server *srv;
        atomic_uint admitted; /* runs admitted whose thread has not yet answered */
};

/* What a run carries from its handler to its thread. */
typedef struct run_call {
        plim_request req;
        sbx_plan plan;
        plim_evidence ev;            /* the daemon's evidence the run was admitted against */
        char env_desc[ENV_DESC_MAX]; /* hullEnvironment: how its answer and record name it */
} run_call;

static void run_call_free(void *p) {
        run_call *c = p;
        plim_plan_done(&c->plan);
        plim_request_done(&c->req);
        free(c);
}

static metrics_outcome outcome_of(const plim_request *r, const sbx_plan_result *res) {
        switch ((sbx_plan_outcome) res->outcome) {
        case SBX_PLAN_COMPLETED:
                for (uint32_t i = 0; i < res->n_steps; i++)
                        if (res->steps[i].status != 0)
                                return METRICS_RUN_FAILED;
                return res->n_steps == (r->kind == PLIM_KIND_JAVASCRIPT ? 1 : r->n_steps) ? METRICS_RUN_OK
                                                                                          : METRICS_RUN_FAILED;
        case SBX_PLAN_TIMED_OUT:
                return METRICS_RUN_TIMED_OUT;
        case SBX_PLAN_SETUP_FAILED:
                return METRICS_RUN_SETUP_FAILED;
        case SBX_PLAN_CANCELLED:
        case SBX_PLAN_ERROR:
        case SBX_PLAN_NOT_STARTED:
                break;
        }
        return METRICS_RUN_ERROR;
}

/* Run's hullEnvironment: OpenSession's resolution (the layer, built first when missing, and the
 * network), copied into the plan (the plan owns its copies). Returns 0 or -1 with *f. */
static int run_environment(const api_plimsoll_config *cfg, run_call *c, plim_error *f) {
        char layer[SBX_PATH_MAX] = "";
        sbx_net_mode net = SBX_NET_NONE;
        sbx_net_policy policy = {.log_fd = -1};
        hull_error e = {0};
        if (!cfg->env_resolve)
                return plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT,
                                 "this hull serve has no environments (hull.db); nothing ran");
        int r = cfg->env_resolve(cfg->env_ctx, c->req.environment, layer, &net, &policy, c->env_desc, &e);
        if (r < 0)
                return plim_fail(f, r == -ENOENT ? PLIM_CODE_INVALID_ARGUMENT : PLIM_CODE_FAILED_PRECONDITION,
                                 r == -ENOENT ? PLIM_REASON_REQUEST : PLIM_REASON_ENVIRONMENT, "%s; nothing ran",
                                 e.msg);
        sbx_plan *p = &c->plan;
        p->net = (uint32_t) net;
        p->net_allow_package_managers = policy.allow_package_managers;
        size_t n = 0;
        for (char *const *h = policy.allowed_hosts; h && *h; h++)
                n++;
        bool ok = n <= SBX_NET_ALLOW_MAX;
        if (ok && layer[0])
                ok = (p->layer_dir = strdup(layer)) != NULL;
        if (ok && n > 0)
                ok = (p->net_hosts = calloc(n + 1, sizeof(char *))) != NULL;
        for (size_t i = 0; ok && i < n; i++, p->n_net_hosts++)
                ok = (p->net_hosts[i] = strdup(policy.allowed_hosts[i])) != NULL;
        if (cfg->env_done)
                cfg->env_done(cfg->env_ctx, &policy);
        if (!ok)
                return plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                                 "environment %s: out of memory, or more than %u allowed hosts" NOTHING_RAN,
                                 c->req.environment, SBX_NET_ALLOW_MAX);
        return 0;
}

/* A run's thread: the broker runs it while the connection is suspended. */
static void run_thread(http_req *r) {
        api_plimsoll *a = http_req_data(r);
        const api_plimsoll_config *cfg = &a->cfg;
        run_call *c = http_req_ctx(r);
        sbx_plan_result res = {0};
        hull_error e = {0};
        plim_error f = {0};
        char *body = NULL, clean[HULL_ERROR_MSG_MAX];
        size_t len = 0;
        uint64_t t0 = now_mono_us();

        /* The caller's socket is watched while the run lasts: a caller that hangs up gets its
         * run dropped from the queue or stopped. */
        if (c->req.environment[0] && run_environment(cfg, c, &f) < 0) {
                api_connect_error(r, &f, NULL, 0);
                metrics_run_dropped(cfg->metrics);
                atomic_fetch_sub(&a->admitted, 1);
                return;
        }
        int q = brk_call(cfg->broker, &c->plan, (uint64_t) c->req.effective_timeout_ms + BRK_RESULT_SLACK_MS,
                         http_req_fd(r), &res, &e);
        uint64_t ended = now_unix_ms();
        if (q == -ECANCELED) {
                /* Nobody reads this; whatever it says, it is never a status that asks to retry. */
                dlog_log(cfg->log, DLOG_INFO, "event=run-cancelled id=%s reason=client-gone error=\"%s\"",
                         http_req_id(r), dlog_clean(e.msg, clean, sizeof(clean)));
                plim_fail(&f, PLIM_CODE_CANCELED, PLIM_REASON_NONE,
                          "the caller hung up; the run was stopped, or never started");
                metrics_run_ended(cfg->metrics, METRICS_RUN_ERROR, now_mono_us() - t0);
        } else if (q < 0) {
                dlog_log(cfg->log, DLOG_ERROR, "event=run-lost id=%s error=\"%s\"", http_req_id(r),
                         dlog_clean(e.msg, clean, sizeof(clean)));
                plim_fail(&f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "internal error %s", http_req_id(r));
                metrics_run_ended(cfg->metrics, METRICS_RUN_ERROR, now_mono_us() - t0);
        } else {
                plim_evidence ev = c->ev; /* the environment's description, when it named one */
                ev.environment = c->env_desc;
                ev.isolation = plim_run_tier(&c->req, &c->ev); /* the tier this run had */
                ev.policy = strcmp(ev.isolation, "kernel") == 0 ? c->ev.kernel_evidence : NULL;
                q = plim_run_answer(&c->req, &res, &ev, http_req_received_unix_ms(r), ended, &body, &len, &f);
                if (q == -ENOMEM)
                        plim_fail(&f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                if (res.outcome == SBX_PLAN_NOT_STARTED) {
                        metrics_run_dropped(cfg->metrics);
                        if (http_stopping(a->srv))
                                f.code = PLIM_CODE_UNAVAILABLE;
                } else
                        metrics_run_ended(cfg->metrics, outcome_of(&c->req, &res), now_mono_us() - t0);
                if (q < 0 && f.code == PLIM_CODE_INTERNAL) { /* the detail goes to the log only */
                        dlog_log(cfg->log, DLOG_ERROR, "event=run-failed id=%s error=\"%s\"", http_req_id(r),
                                 dlog_clean(f.message, clean, sizeof(clean)));
                        plim_fail(&f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "internal error %s", http_req_id(r));
                }
        }
        if (q == 0) {
                hs_audit_run(cfg->sessions, c->req.root, body, len);
                http_req_note(r, "kind=%s outcome=%s run_ms=%" PRIu64, plim_kind_to_string(c->req.kind),
                              res.outcome == SBX_PLAN_COMPLETED   ? "completed"
                              : res.outcome == SBX_PLAN_TIMED_OUT ? "timed_out"
                                                                  : "setup_failed",
                              res.ended_unix_ms - res.started_unix_ms);
                (void) http_answer(r, 200, "application/json", body, len);
        } else
                api_connect_error(r, &f, NULL, 0);
        sbx_plan_result_done(&res);
        atomic_fetch_sub(&a->admitted, 1);
}

static void run_admit(http_req *r, bool on_thread);

static void run_admit_thread(http_req *r) {
        run_admit(r, true);
}

static void do_run(http_req *r) {
        api_plimsoll *a = http_req_data(r);
        const api_plimsoll_config *cfg = &a->cfg;
        plim_error f;
        size_t len;

        run_call *c = calloc(1, sizeof(*c));
        if (!c) {
                api_connect_refuse(r, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                                   "out of memory; retry later" NOTHING_RAN);
                return;
        }
        http_req_set_ctx(r, c, run_call_free);
        const char *body = http_req_body(r, &len);
        int q = plim_run_parse(body, len, &c->req, &f);
        http_req_body_release(r); /* the request keeps what it needs */
        if (q < 0) {
                api_connect_error(r, &f, f.before_handler ? "request" : NULL, 0);
                return;
        }
        if (c->req.trace_id_dropped)
                dlog_log(cfg->log, DLOG_INFO, "event=trace-id-dropped id=%s", http_req_id(r));
        /* A floor of kernel before runsc's check (started with hull serve) has settled: admitted
         * on a thread of its own once it has (the polling threads never wait) */
        if (strcmp(c->req.minimum_isolation, "kernel") == 0 && !tg_settled(cfg->tier)) {
                if (http_req_spawn(r, run_admit_thread) < 0)
                        api_connect_refuse(r, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                                           "no thread for the run; retry later" NOTHING_RAN);
                return;
        }
        run_admit(r, false);
}

/* Admission against the evidence (waiting for the kernel check when the floor is kernel), the
 * plan, and the run's thread (on_thread: this one). */
static void run_admit(http_req *r, bool on_thread) {
        api_plimsoll *a = http_req_data(r);
        const api_plimsoll_config *cfg = &a->cfg;
        run_call *c = http_req_ctx(r);
        plim_error f;
        c->ev = tg_evidence(cfg->tier, strcmp(c->req.minimum_isolation, "kernel") == 0);
        if (plim_run_admit(&c->req, &c->ev, &f) < 0) {
                api_connect_error(r, &f, NULL, 0);
                return;
        }
        if (atomic_fetch_add(&a->admitted, 1) >= cfg->max_runs + cfg->queue_max) {
                atomic_fetch_sub(&a->admitted, 1);
                api_connect_refuse(r, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                                   "every run slot and the queue are taken; retry later" NOTHING_RAN);
                return;
        }
        if (plim_plan(&c->req, &c->ev, &c->plan) < 0) {
                atomic_fetch_sub(&a->admitted, 1);
                dlog_log(cfg->log, DLOG_ERROR, "event=run-refused id=%s error=\"out of memory for the run's plan\"",
                         http_req_id(r));
                api_connect_refuse(r, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                                   "out of memory; retry later" NOTHING_RAN);
                return;
        }
        metrics_run_started(cfg->metrics);
        if (on_thread) {
                run_thread(r);
                return;
        }
        if (http_req_spawn(r, run_thread) < 0) {
                atomic_fetch_sub(&a->admitted, 1);
                metrics_run_dropped(cfg->metrics);
                api_connect_refuse(r, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                                   "no thread for the run; retry later" NOTHING_RAN);
        }
}

/* Describe's answer, once the kernel check has settled (a thread of its own while it runs). */
static void describe_thread(http_req *r) {
        api_plimsoll *a = http_req_data(r);
        char *body;
        size_t len;
        plim_evidence ev = tg_evidence(a->cfg.tier, true);
        if (plim_describe_json(&ev, &body, &len) == 0)
                (void) http_answer(r, 200, "application/json", body, len);
}

static void do_describe(http_req *r) {
        api_plimsoll *a = http_req_data(r);
        plim_error f;
        size_t len;
        const char *req = http_req_body(r, &len);
        if (plim_describe_parse(req, len, &f) < 0) {
                api_connect_error(r, &f, f.before_handler ? "request" : NULL, 0);
                return;
        }
        if (!tg_settled(a->cfg.tier)) { /* the highest tier is known once runsc's check has settled */
                if (http_req_spawn(r, describe_thread) < 0)
                        api_connect_refuse(r, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                                           "no thread for Describe; retry later");
                return;
        }
        describe_thread(r);
}

/* A session procedure's thread: hs_rpc for the whole call. */
static void session_thread(http_req *r) {
        api_plimsoll *a = http_req_data(r);
        hs_answer ans;
        size_t len;
        const char *body = http_req_body(r, &len);
        hs_rpc(a->cfg.sessions, (plim_procedure) http_req_tag(r), HULL_API_NONE, http_req_principal(r), body, len,
               http_req_received_unix_ms(r), http_req_fd(r), &ans);
        http_req_body_release(r);
        api_connect_session_answer(r, &ans);
}

static void do_session(http_req *r) {
        api_plimsoll *a = http_req_data(r);
        if (!a->cfg.sessions) {
                plim_error f;
                size_t len;
                const char *body = http_req_body(r, &len);
                plim_session_refuse(body, len, (plim_procedure) http_req_tag(r), &f);
                api_connect_error(r, &f, f.before_handler ? "request" : NULL, 0);
                return;
        }
        if (http_req_spawn_short(r, session_thread) < 0)
                api_connect_refuse(r, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                                   "no thread for the call; retry later" NOTHING_RAN);
}

#define PROCEDURE(method, proc, max, fn)                                                                               \
        {                                                                                                              \
                .methods = HTTP_POST, .pattern = "{base...}" PLIM_SERVICE_PATH method, .scope = AUTH_SCOPE_CODE_RUN,   \
                .body_max = (max), .head = api_connect_head, .handler = (fn), .tag = (proc),                           \
        }

static const http_route routes[] = {
        PROCEDURE("Describe", PLIM_PROC_DESCRIBE, PLIM_DESCRIBE_BODY_MAX, do_describe),
        PROCEDURE("Run", PLIM_PROC_RUN, SERVE_BODY_MAX, do_run),
        PROCEDURE("OpenSession", PLIM_PROC_OPEN_SESSION, SERVE_BODY_MAX, do_session),
        PROCEDURE("SessionRun", PLIM_PROC_SESSION_RUN, SERVE_BODY_MAX, do_session),
        PROCEDURE("CloseSession", PLIM_PROC_CLOSE_SESSION, SERVE_BODY_MAX, do_session),
};

int api_plimsoll_new(const api_plimsoll_config *cfg, api_plimsoll **ret) {
        api_plimsoll *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->cfg = *cfg;
        a->connect = (api_connect){.metrics = cfg->metrics, .log = cfg->log};
        atomic_init(&a->admitted, 0);
        *ret = a;
        return 0;
}

int api_plimsoll_register(api_plimsoll *a, http_server *s) {
        a->srv = s;
        return http_add_routes(s, &api_connect_api, routes, ELEMENTSOF(routes), a);
}

void api_plimsoll_free(api_plimsoll *a) {
        free(a);
}
