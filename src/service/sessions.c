/* sessions.c: hull serve's session procedures as thin adapters over the session core
 * (src/session/ss.h): plimsoll's OpenSession, SessionRun and CloseSession, and hull's
 * /hull.v1.Workspace, /hull.v1.Sessions and /hull.v1.Handles. Each parses its request (plimsoll.c,
 * hullapi.c), calls the core with plain arguments, and turns the core's answer or errno into the
 * protocol's answer or error. The sandboxes come from the broker's keepers (the daemon's threads
 * never fork). */
#include "sessions.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sha256.h"
#include "ss.h"
#include "time-util.h"

_Static_assert((int) SS_END_UNCLAIMED == (int) PLIM_SESSION_END_UNCLAIMED &&
                       (int) SS_END_REPLACED == (int) PLIM_SESSION_END_REPLACED &&
                       (int) SS_END_CLOSED == (int) PLIM_SESSION_END_CLOSED,
               "the core's session ends are plimsoll's");

struct hs_manager {
        hs_config cfg;
        ss_manager *core;
        int audit_fd;       /* runs.jsonl, -1: no audit logs */
        atomic_bool lifted; /* the zygote's warm-up priority lifted by the first call (hook_call) */
};

/* ---- sandboxes from the broker ---- */

static int broker_open(void *ctx, const ss_box_spec *spec, ss_box *ret, hull_error *e) {
        brk_session *bs = calloc(1, sizeof(*bs));
        if (!bs)
                return hull_err(e, -ENOMEM, "session: out of memory");
        brk_session_spec s = {.memory_bytes = spec->memory_bytes,
                              .pids = spec->pids,
                              .tmp_bytes = spec->tmp_bytes,
                              .handles_dir = spec->handles_dir,
                              .layer_dir = spec->layer_dir,
                              .skills_dir = spec->skills_dir,
                              .mnt_dir = spec->mnt_dir,
                              .net = spec->net,
                              .net_policy = spec->net_policy,
                              .tier = spec->tier};
        int r = brk_session_open(ctx, &s, bs, e);
        if (r < 0) {
                free(bs);
                return r;
        }
        *ret = (ss_box){.end_fd = bs->keeper_fd,
                        .ctl_fd = bs->ctl_fd,
                        .ws_fd = bs->ws_fd,
                        .pidfd = bs->pidfd,
                        .bpf_fd = bs->bpf_fd,
                        .n_cg_fds = bs->n_cg_fds,
                        .cg_dir_fd = bs->cg_dir_fd,
                        .host_uid = bs->host_uid,
                        .host_gid = bs->host_gid,
                        .priv = bs};
        memcpy(ret->cg_fds, bs->cg_fds, sizeof(ret->cg_fds));
        return 0;
}

static int broker_ended(void *ctx, ss_box *b, bool *ret_oom) {
        return brk_session_ended(b->priv, ret_oom);
}

/* Hanging up the keeper makes it kill the sandbox; the fds stay valid until close. */
static void broker_kill(void *ctx, ss_box *b) {
        brk_session *bs = b->priv;
        if (bs->keeper_fd >= 0)
                (void) shutdown(bs->keeper_fd, SHUT_RDWR);
}

static void broker_close(void *ctx, ss_box *b) {
        brk_session_close(b->priv);
        free(b->priv);
        b->priv = NULL;
}

static void hook_opened(void *ctx) {
        metrics_session_opened(((hs_manager *) ctx)->cfg.metrics);
}
static void hook_ended(void *ctx, ss_end why) {
        metrics_session_ended(((hs_manager *) ctx)->cfg.metrics, (plim_session_end) why);
}
/* A call may start a python interpreter: the zygote, if still warming up at low priority
 * (sbx_zygote_start_reaped), gets the default priority from the first call on. */
static void hook_call(void *ctx) {
        hs_manager *m = ctx;
        metrics_session_call(m->cfg.metrics);
        if (m->cfg.zygote_lift_fd >= 0 && !atomic_exchange(&m->lifted, true))
                sbx_zygote_lift(m->cfg.zygote_lift_fd);
}

/* ---- the manager ---- */

/* A kernel-tier session is refused when runsc's check (waited for) found no kernel tier. */
static const char *kernel_refused(void *ud) {
        plim_evidence ev = tg_evidence(ud, true);
        return ev.kernel_sessions
                       ? NULL
                       : "this hull serve has no kernel tier (runsc missing, failed its self-check at start, "
                         "--no-kernel-tier, or not root: its log says which); container is its highest tier";
}

int hs_new(const hs_config *cfg, hs_manager **ret, hull_error *e) {
        hs_manager *m = calloc(1, sizeof(*m));
        if (!m)
                return hull_err(e, -ENOMEM, "sessions: out of memory");
        m->cfg = *cfg;
        m->audit_fd = -1;
        plim_evidence base = tg_evidence(cfg->tier, false);
        if (cfg->audit_dir) {
                m->audit_fd = open(cfg->audit_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (m->audit_fd < 0) {
                        int r = negative_errno();
                        free(m);
                        return hull_err_hint(e, r, "create it, or pass another --audit-dir",
                                             "sessions: cannot open the audit directory %s", cfg->audit_dir);
                }
        }
        ss_config sc = {
                .box = {.open = broker_open,
                        .ended = broker_ended,
                        .kill = broker_kill,
                        .close = broker_close,
                        .ctx = cfg->broker},
                .log = cfg->log,
                .hooks = {.opened = hook_opened, .ended = hook_ended, .call = hook_call, .ctx = m},
                .zygote_fd = cfg->zygote_fd,
                .max_sessions = cfg->max_sessions,
                .max_per_owner = cfg->max_per_owner,
                .max_per_caller = cfg->max_per_caller,
                .lifetime_ms = cfg->lifetime_ms,
                .idle_ms = cfg->idle_ms,
                .memory_bytes = cfg->memory_bytes,
                .pids = cfg->pids,
                .tmp_bytes = cfg->tmp_bytes,
                .audit_dir = cfg->audit_dir,
                .handles_dir = cfg->handles_dir,
                .handle_bytes_max = cfg->handle_bytes_max,
                .store_bytes_max = cfg->store_bytes_max,
                .provider = base.sandbox,
                /* "container" before and after the kernel check: a kernel session asks for it */
                .isolation = plim_session_tier(&base),
                .kernel_evidence = tg_kernel_evidence(cfg->tier),
                .kernel_refused = kernel_refused,
                .kernel_refused_ud = cfg->tier,
        };
        int r = ss_new(&sc, &m->core, e);
        if (r < 0) {
                safe_close(m->audit_fd);
                free(m);
                return r;
        }
        *ret = m;
        return 0;
}

void hs_shutdown(hs_manager *m, uint64_t wait_ms) {
        if (m)
                ss_shutdown(m->core, wait_ms);
}

void hs_free(hs_manager *m) {
        if (!m)
                return;
        ss_free(m->core);
        safe_close(m->audit_fd);
        free(m);
}

ss_manager *hs_core(hs_manager *m) {
        return m ? m->core : NULL;
}

unsigned hs_open_count(hs_manager *m) {
        return ss_open_count(m->core);
}

/* ---- errors ---- */

/* An infrastructure fault: the detail (paths, errno) goes to the log only. */
static int fail_internal(plim_error *f, const hs_manager *m, const char *what, const hull_error *e) {
        char clean[HULL_ERROR_MSG_MAX];
        dlog_log(m->cfg.log, DLOG_ERROR, "event=session-error what=%s error=\"%s\"", what,
                 dlog_clean(e->msg, clean, sizeof(clean)));
        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE,
                         "internal error in %s (hull serve's log has the detail)", what);
}

/* The refusal of a call the core would not begin. */
static int fail_begin(plim_error *f, hs_manager *m, ss_session *s, int r, const hull_error *e) {
        char detail[PLIM_END_DETAIL_MAX];
        if (r == -ESHUTDOWN) {
                ss_end why = ss_end_state(m->core, s, detail);
                return plim_fail_session_ended(f, (plim_session_end) why, detail);
        }
        return plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, "%s; nothing ran", e->msg);
}

/* A call the session's end cut: internal (it may have run) with SessionEnded. */
static int fail_cut(plim_error *f, plim_session_end why, const char *detail) {
        plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the session ended during the call (%s: %s)",
                  plim_session_end_to_string(why), detail);
        plim_error_session_ended(f, why, detail);
        return -1;
}

/* The code of an operation that failed after the call began: what was wrong with the request,
 * the session ending under it, or the server's fault. */
static int fail_op_code(plim_error *f, hs_manager *m, ss_session *s, const char *what, int r, const hull_error *e) {
        char detail[PLIM_END_DETAIL_MAX];
        switch (ss_fault_of(r)) {
        case SS_FAULT_NOT_FOUND:
                return plim_fail(f, PLIM_CODE_NOT_FOUND, PLIM_REASON_REQUEST, "%s", e->msg);
        case SS_FAULT_REQUEST:
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s", e->msg);
        case SS_FAULT_SERVER:
                break;
        }
        ss_end why = ss_end_state(m->core, s, detail);
        if (why != SS_END_NONE)
                return fail_cut(f, (plim_session_end) why, detail);
        return fail_internal(f, m, what, e);
}

/* An operation that failed after the call began: what was wrong with the request, the session
 * ending under it, or the server's fault; with an UnansweredCall detail when the core recorded
 * the call as one that may have run. */
static int fail_op(plim_error *f, hs_manager *m, ss_session *s, const char *what, int r, const hull_error *e) {
        plim_record v;
        fail_op_code(f, m, s, what, r, e);
        const json_t *rec = ss_call_record(s);
        if (rec && json_integer_value(json_object_get(rec, "version")) == 3 && plim_record_from_json(rec, &v) == 0 &&
            plim_error_unanswered(f, &v) == 0) {
                f->reason = PLIM_REASON_NONE; /* it may have run: not "not dispatched" */
                f->before_handler = false;
        }
        return -1;
}

/* The handle store's errors. */
static int fail_store(plim_error *f, int r, const hull_error *e) {
        switch (-r) {
        case ENOENT:
                return plim_fail(f, PLIM_CODE_NOT_FOUND, PLIM_REASON_REQUEST, "%s", e->msg);
        case EOPNOTSUPP:
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                 "this hull serve keeps no handle store; nothing ran");
        case EEXIST:
                return plim_fail(f, PLIM_CODE_ALREADY_EXISTS, PLIM_REASON_REQUEST, "%s", e->msg);
        case EFBIG:
                return plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, "%s", e->msg);
        case EBADMSG: /* a tampered file, or an SQL error (the store's message says which) */
                if (strstr(e->msg, "tamper"))
                        return plim_fail(f, PLIM_CODE_DATA_LOSS, PLIM_REASON_NONE, "%s", e->msg);
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s", e->msg);
        case ETIMEDOUT:
                return plim_fail(f, PLIM_CODE_DEADLINE_EXCEEDED, PLIM_REASON_NONE, "%s", e->msg);
        case EPERM:
        case EACCES:
                return plim_fail(f, PLIM_CODE_PERMISSION_DENIED, PLIM_REASON_REQUEST, "%s", e->msg);
        case ENOMEM:
        case EIO:
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "internal error in the handle store (%s)",
                                 strerror(-r));
        default:
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s", e->msg);
        }
}

/* The daemon's evidence as a call of s states it: with the session's environment (hullEnvironment),
 * which its answers and records name. */
static plim_evidence evidence_of(const hs_manager *m, ss_session *s) {
        plim_evidence ev = tg_evidence(m->cfg.tier, false);
        ev.environment = ss_environment(s);
        /* the session's own tier is what its answers state and its calls are admitted against */
        ev.isolation = ev.session_isolation = ss_tier(s) == SBX_TIER_KERNEL ? "kernel" : plim_session_tier(&ev);
        if (ss_tier(s) == SBX_TIER_KERNEL && ev.kernel_evidence)
                ev.policy = ev.kernel_evidence; /* runsc's version and platform, as a kernel run's records */
        return ev;
}

/* ---- OpenSession ---- */

static void do_open(hs_manager *m, const char *principal, const char *body, size_t len, hs_answer *ret) {
        plim_open_request req = {0};
        plim_error *f = &ret->f;
        hull_error e = {0};
        ss_session *s = NULL;
        char layer[SBX_PATH_MAX] = "", desc[ENV_DESC_MAX] = "";
        sbx_net_policy policy = {.log_fd = -1};
        bool have_policy = false;

        if (plim_open_parse(body, len, &req, f) < 0)
                return;
        /* a floor of kernel waits for runsc's check (started with hull serve) to settle */
        plim_evidence gev = tg_evidence(m->cfg.tier, strcmp(req.minimum_isolation, "kernel") == 0);
        if (plim_open_admit(&req, &gev, f) < 0)
                goto out;
        ss_open_opts o = {.principal = principal,
                          .owner = req.owner ? req.owner : "",
                          .rule_id = req.software_rule_id,
                          .lifetime_ms = req.lifetime_ms,
                          .idle_ms = req.idle_timeout_ms,
                          .tier = plim_open_kernel(&req, &gev) ? SBX_TIER_KERNEL : SBX_TIER_CONTAINER};
        int r;
        if (req.environment[0]) { /* hull's extension: an environment's layer and network */
                if (!m->cfg.env_resolve) {
                        plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT,
                                  "this hull serve has no environments (hull.db); nothing ran");
                        goto out;
                }
                r = m->cfg.env_resolve(m->cfg.env_ctx, req.environment, layer, &o.net, &policy, desc, &e);
                if (r < 0) {
                        plim_fail(f, r == -ENOENT ? PLIM_CODE_INVALID_ARGUMENT : PLIM_CODE_FAILED_PRECONDITION,
                                  r == -ENOENT ? PLIM_REASON_REQUEST : PLIM_REASON_ENVIRONMENT, "%s; nothing ran",
                                  e.msg);
                        goto out;
                }
                have_policy = true;
                o.layer_dir = layer[0] ? layer : NULL;
                o.net_policy = o.net == SBX_NET_LIMITED ? &policy : NULL;
                o.environment = desc; /* the session's records name it */
        }
        r = ss_open(m->core, &o, &s, &e);
        if (r == -EOPNOTSUPP) /* a network mode the keepers do not carry (yet) */
                plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT, "%s; nothing ran", e.msg);
        else if (r == -EUSERS)
                plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, "%s; nothing ran", e.msg);
        else if (r == -EAGAIN)
                plim_fail(f, PLIM_CODE_UNAVAILABLE, PLIM_REASON_CAPACITY, "%s; nothing ran", e.msg);
        else if (r < 0)
                fail_internal(f, m, "open", &e);
        if (r < 0)
                goto out;
        ss_info info;
        ss_session_info(m->core, s, &info);
        plim_evidence oev = evidence_of(m, s);
        r = plim_open_answer(info.id, &oev, info.expires_unix_ms, (uint32_t) info.idle_ms, &ret->body, &ret->len);
        if (r < 0) {
                ss_close_info ci;
                ss_close(m->core, s, &ci);
                plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                goto out;
        }
        ret->ok = true;
        snprintf(ret->note, sizeof(ret->note), "session=%.12s", info.fingerprint);
out:
        if (have_policy && m->cfg.env_done)
                m->cfg.env_done(m->cfg.env_ctx, &policy);
        ss_unref(m->core, s);
        plim_open_request_done(&req);
}

/* ---- SessionRun ---- */

static void chain_of(ss_session *s, plim_chain *ret) {
        ss_chain c;
        ss_chain_get(s, &c);
        *ret = (plim_chain){.calls = c.calls};
        memcpy(ret->session, c.session, sizeof(ret->session));
        memcpy(ret->last_sha256, c.last_sha256, sizeof(ret->last_sha256));
}

/* The call's record (an answer's, or an UnansweredCall's), on the session's chain. */
static void record_call(hs_manager *m, ss_session *s, const plim_call_record *rec) {
        if (ss_record_append(m->core, s, NULL, rec->record, rec->request, rec->result) < 0)
                dlog_log(m->cfg.log, DLOG_ERROR, "event=record-failed error=\"not the chain's next record\"");
}

/* The call failed after it may have run: answer with an UnansweredCall record, counted. */
static void run_failed(hs_manager *m, ss_session *s, const plim_request *req, uint64_t received, const hull_error *e,
                       plim_error *f) {
        char detail[PLIM_END_DETAIL_MAX], clean[HULL_ERROR_MSG_MAX];
        plim_session_end why = (plim_session_end) ss_end_state(m->core, s, detail);
        plim_chain chain;
        plim_call_record rec = {0};
        /* A session ended on purpose (closed, expired, replaced) cuts its call: not a fault. */
        dlog_log(m->cfg.log,
                 why == PLIM_SESSION_END_UNSPECIFIED || why == PLIM_SESSION_END_MAIN_PROCESS_ENDED ? DLOG_ERROR
                                                                                                   : DLOG_INFO,
                 "event=session-call-failed ended=%s error=\"%s\"", plim_session_end_to_string(why),
                 dlog_clean(e->msg, clean, sizeof(clean)));
        if (why != PLIM_SESSION_END_UNSPECIFIED)
                fail_cut(f, why, detail);
        else
                plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE,
                          "the call failed: internal error (hull serve's log has the detail)");
        chain_of(s, &chain);
        plim_evidence ev = evidence_of(m, s);
        if (plim_unanswered_error(req, &ev, &chain, received, now_unix_ms(), f, &rec) == 0)
                record_call(m, s, &rec);
        plim_call_record_done(&rec);
}

/* A javascript payload in a session is written under a private name at the top of the workspace
 * (so relative imports resolve as from main.mjs, which may be the agent's own file), removed
 * after. */
static void private_js_name(sbx_plan *plan, char name[40]) {
        uint8_t rnd[8];
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                memset(rnd, 0, sizeof(rnd));
        snprintf(name, 40, ".hull-run-%02x%02x%02x%02x%02x%02x%02x%02x.mjs", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
                 rnd[5], rnd[6], rnd[7]);
        plan->files[0].path = name;
        plan->steps[0].argv[plan->steps[0].argc - 1] = name; /* the file is node's last argument */
}

static int run_payload(hs_manager *m, ss_session *s, const plim_request *req, sbx_plan_result *res,
                       plim_cell_result *cell, ss_cell_output *co, hull_error *e) {
        if (req->kind == PLIM_KIND_CELL) {
                sbx_lang lang = SBX_LANG_PYTHON;
                (void) sbx_lang_from_string(req->cell_language, &lang);
                ss_file *files = calloc(MAX(req->n_files, 1U), sizeof(*files));
                if (!files)
                        return hull_err(e, -ENOMEM, "out of memory");
                for (size_t i = 0; i < req->n_files; i++)
                        files[i] = (ss_file){req->files[i].path, req->files[i].content, req->files[i].content_len};
                ss_cell_args a = {.lang = lang,
                                  .code = req->code,
                                  .code_len = req->code_len,
                                  .files = files,
                                  .n_files = req->n_files,
                                  .timeout_ms = req->effective_timeout_ms,
                                  .output_bytes = PLIM_JS_OUTPUT_BYTES,
                                  .no_record = true};
                int r = ss_cell(m->core, s, &a, co, e);
                free(files);
                if (r < 0)
                        return r;
                *cell = (plim_cell_result){.exit_code = co->o.exit_code,
                                           .timed_out = co->o.timed_out,
                                           .out = co->o.out,
                                           .err = co->o.err,
                                           .out_len = co->o.out_len,
                                           .err_len = co->o.err_len,
                                           .out_truncated = co->o.out_truncated,
                                           .err_truncated = co->o.err_truncated,
                                           .interpreter_started = co->interpreter_started,
                                           .interpreter_ended = co->interpreter_ended,
                                           .wall_us = co->o.wall_us};
                return 0;
        }
        sbx_plan plan = {0};
        char js_name[40] = "";
        plim_evidence pev = tg_evidence(m->cfg.tier, false);
        if (plim_plan(req, &pev, &plan) < 0)
                return hull_err(e, -ENOMEM, "session: out of memory for the plan");
        if (req->kind == PLIM_KIND_JAVASCRIPT && plan.n_files == 1)
                private_js_name(&plan, js_name);
        int r = ss_plan(m->core, s, &plan, js_name[0] ? js_name : NULL, res, e);
        if (js_name[0])
                plan.steps[0].argv[plan.steps[0].argc - 1] = NULL; /* borrowed; plim_plan_done frees the argv array */
        plim_plan_done(&plan);
        return r;
}

static void do_session_run(hs_manager *m, const char *principal, const char *body, size_t len, uint64_t received,
                           int watch_fd, hs_answer *ret) {
        plim_request req = {0};
        plim_error *f = &ret->f;
        hull_error e = {0};
        sbx_plan_result res = {0};
        plim_cell_result cell = {0};
        ss_cell_output co = {0};
        plim_call_record rec = {0};
        ss_session *s = NULL;
        bool in_call = false;

        if (plim_session_run_parse(body, len, &req, f) < 0)
                return;
        if (ss_lookup(m->core, req.session_id, principal, &s) < 0) {
                plim_fail_session_not_found(f);
                goto out;
        }
        plim_evidence aev = evidence_of(m, s); /* the session's tier is the one admitted */
        if (plim_run_admit(&req, &aev, f) < 0)
                goto out;
        if (strcmp(req.software_rule_id, ss_rule_id(s)) != 0) {
                plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT,
                          "the call's software rule is not the one the session was opened with; nothing ran");
                goto out;
        }
        int r = ss_call_begin(m->core, s, watch_fd, &e);
        if (r < 0) {
                fail_begin(f, m, s, r, &e);
                goto out;
        }
        in_call = true;
        r = run_payload(m, s, &req, &res, &cell, &co, &e);
        if (r == -EINVAL && req.kind == PLIM_KIND_CELL) { /* a file of the cell: nothing ran */
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s", e.msg);
                goto out;
        }
        if (r < 0) {
                run_failed(m, s, &req, received, &e, f);
                goto out;
        }
        char detail[PLIM_END_DETAIL_MAX];
        plim_session_end why = (plim_session_end) ss_end_state(m->core, s, detail);
        plim_chain chain;
        chain_of(s, &chain);
        bool is_cell = req.kind == PLIM_KIND_CELL;
        /* hull's extension: a limited session's connections since the last call */
        char *net_log = NULL;
        size_t net_log_len = 0;
        if (ss_net_log_take(s, SERVE_NET_LOG_ANSWER_MAX, &net_log, &net_log_len) < 0)
                dlog_log(m->cfg.log, DLOG_ERROR, "event=net-log-unread session=%.12s", chain.session);
        if (is_cell) {
                cell.net_log = net_log;
                cell.net_log_len = net_log_len;
        } else {
                free(res.net_log);
                res.net_log = TAKE_PTR(net_log);
                res.net_log_len = net_log_len;
        }
        plim_evidence ev = evidence_of(m, s);
        r = plim_session_run_answer(&req, is_cell ? NULL : &res, is_cell ? &cell : NULL, &ev, &chain, received,
                                    now_unix_ms(), why, detail, &ret->body, &ret->len, &rec, f);
        if (r == -ENOMEM)
                plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        if (r < 0) {
                if (f->reason == PLIM_REASON_NONE &&
                    plim_unanswered_error(&req, &ev, &chain, received, now_unix_ms(), f, &rec) == 0)
                        record_call(m, s, &rec);
                goto out;
        }
        record_call(m, s, &rec);
        ret->ok = true;
        snprintf(ret->note, sizeof(ret->note), "session=%.12s call=%" PRIu64 " kind=%s", chain.session, chain.calls + 1,
                 plim_kind_to_string(req.kind));
out:
        if (in_call)
                ss_call_end(m->core, s);
        ss_unref(m->core, s);
        ss_output_done(&co.o);
        free((char *) cell.net_log);
        plim_call_record_done(&rec);
        sbx_plan_result_done(&res);
        plim_request_done(&req);
}

/* ---- CloseSession ---- */

static void do_close(hs_manager *m, const char *principal, const char *body, size_t len, hs_answer *ret) {
        char id[PLIM_SESSION_ID_MAX + 1];
        ss_session *s;
        ss_close_info ci;
        if (plim_close_parse(body, len, id, &ret->f) < 0)
                return;
        if (ss_lookup(m->core, id, principal, &s) < 0) {
                plim_fail_session_not_found(&ret->f);
                return;
        }
        ss_close(m->core, s, &ci);
        if (plim_close_answer(ci.fingerprint, ci.calls, ci.last_sha256, (plim_session_end) ci.ended, &ret->body,
                              &ret->len) < 0)
                plim_fail(&ret->f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        else {
                ret->ok = true;
                snprintf(ret->note, sizeof(ret->note), "session=%.12s calls=%" PRIu64, ci.fingerprint, ci.calls);
        }
        ss_unref(m->core, s);
}

/* ---- hull's own procedures ---- */

static void do_list(hs_manager *m, const char *principal, hs_answer *ret) {
        ss_info *v = NULL;
        size_t n = 0;
        int r = ss_list(m->core, principal, &v, &n);
        hull_api_session_info *h = r < 0 ? NULL : calloc(MAX(n, 1U), sizeof(*h));
        for (size_t i = 0; h && i < n; i++)
                h[i] = (hull_api_session_info){.session_id = v[i].id,
                                               .fingerprint = v[i].fingerprint,
                                               .owner = v[i].owner,
                                               .opened_unix_ms = v[i].opened_unix_ms,
                                               .expires_unix_ms = v[i].expires_unix_ms,
                                               .idle_timeout_ms = (uint32_t) v[i].idle_ms,
                                               .calls = v[i].calls};
        r = h ? hull_api_list_answer(h, n, &ret->body, &ret->len) : -ENOMEM;
        free(h);
        free(v);
        if (r < 0)
                plim_fail(&ret->f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        else
                ret->ok = true;
}

static int handles_op(hs_manager *m, ss_session *s, hull_api_procedure p, const hull_api_request *req, hs_answer *ret) {
        hull_error e = {0};
        json_t *j = NULL, *record = NULL;
        int r;
        if (p == HULL_API_HANDLES_LIST) {
                json_t *list = NULL;
                r = ss_handles_list(m->core, s, &list, &e);
                if (r >= 0)
                        j = json_pack("{s:o}", "handles", list);
        } else if (p == HULL_API_HANDLES_INSPECT) {
                ss_inspect_opts o = {.head = req->handles.head, .tail = req->handles.tail, .stats = req->handles.stats};
                r = ss_handles_inspect(m->core, s, req->handles.id, &o, &j, &e);
        } else if (p == HULL_API_HANDLES_QUERY)
                r = ss_handles_query(m->core, s, req->handles.sql, req->handles.ids, req->handles.n_ids,
                                     req->handles.max_rows, &j, &e);
        else if (p == HULL_API_HANDLES_READ)
                r = ss_handles_read(m->core, s, req->handles.id, req->handles.offset, req->handles.limit, &j, &e);
        else if (p == HULL_API_HANDLES_ADD_INPUT) {
                r = ss_handles_add_input(m->core, s, req->handles.input_id, req->handles.name, req->handles.format,
                                         req->handles.content, req->handles.content_len, &j, &record, &e);
                if (r >= 0 && record)
                        json_object_set_new(j, "record", record);
        } else
                return plim_fail(&ret->f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                 "no such procedure; nothing ran");
        if (r < 0) {
                json_decref(j);
                return fail_store(&ret->f, r, &e);
        }
        if ((j ? plim_json_dump(j, &ret->body, &ret->len) : -ENOMEM) < 0)
                return plim_fail(&ret->f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        return 0;
}

static int exec_op(hs_manager *m, ss_session *s, const hull_api_request *req, hs_answer *ret) {
        hull_error e = {0};
        ss_output o = {0};
        ss_exec_args a = {.command = req->exec.command,
                          .env = req->exec.env,
                          .n_env = req->exec.n_env,
                          .timeout_ms = req->exec.timeout_ms,
                          .output_bytes = PLIM_JS_OUTPUT_BYTES};
        int r = ss_exec(m->core, s, &a, &o, &e);
        if (r < 0)
                return fail_op(&ret->f, m, s, "exec", r, &e);
        r = hull_api_exec_answer(&o, &ret->body, &ret->len);
        snprintf(ret->note, sizeof(ret->note), "exit=%d", o.exit_code);
        ss_output_done(&o);
        return r < 0 ? plim_fail(&ret->f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory") : 0;
}

/* One of hull's procedures on a claimed session. */
static int workspace_op(hs_manager *m, ss_session *s, hull_api_procedure p, const hull_api_request *req,
                        hs_answer *ret) {
        plim_error *f = &ret->f;
        hull_error e = {0};
        json_t *record = NULL;
        int r, a = 0;
        switch (p) {
        case HULL_API_EXEC:
                return exec_op(m, s, req, ret);
        case HULL_API_READ: {
                ws_read_result rr = {0};
                r = ss_read(m->core, s, req->read.path, req->read.offset, req->read.limit, &rr, &e);
                if (r >= 0)
                        a = hull_api_read_answer(&rr, &ret->body, &ret->len);
                ws_read_result_done(&rr);
                break;
        }
        case HULL_API_WRITE:
                r = ss_write(m->core, s, req->write.path, req->write.content, req->write.content_len, req->write.append,
                             &record, &e);
                if (r >= 0)
                        a = hull_api_write_answer(req->write.content_len, record, &ret->body, &ret->len);
                break;
        case HULL_API_EDIT:
                r = ss_edit(m->core, s, req->edit.path, req->edit.old_text, req->edit.old_len, req->edit.new_text,
                            req->edit.new_len, &record, &e);
                if (r >= 0)
                        a = hull_api_edit_answer(record, &ret->body, &ret->len);
                break;
        case HULL_API_GLOB: {
                ws_glob_result gr = {0};
                ws_glob_opts go = {.hidden = req->glob.hidden};
                r = ss_glob(m->core, s, req->glob.pattern, &go, &gr, &e);
                if (r >= 0)
                        a = hull_api_glob_answer(&gr, &ret->body, &ret->len);
                ws_glob_result_done(&gr);
                break;
        }
        case HULL_API_GREP: {
                ws_grep_result gr = {0};
                ws_grep_opts go;
                hull_api_grep_opts(req, &go);
                r = ss_grep(m->core, s, req->grep.pattern, &go, &gr, &e);
                if (r >= 0)
                        a = hull_api_grep_answer(&gr, &ret->body, &ret->len);
                ws_grep_result_done(&gr);
                break;
        }
        case HULL_API_PERSIST: {
                void *buf = NULL;
                size_t blen = 0;
                r = ss_persist(m->core, s, HULL_API_PERSIST_BYTES_MAX, &buf, &blen, &e);
                if (r >= 0)
                        a = hull_api_persist_answer(buf, blen, &ret->body, &ret->len);
                free(buf);
                break;
        }
        case HULL_API_HYDRATE: {
                ws_tar_stats st = {0};
                r = ss_hydrate(m->core, s, req->hydrate.archive, req->hydrate.archive_len, &st, &record, &e);
                if (r >= 0)
                        a = hull_api_hydrate_answer(&st, record, &ret->body, &ret->len);
                break;
        }
        case HULL_API_HANDLES_LIST:
        case HULL_API_HANDLES_INSPECT:
        case HULL_API_HANDLES_QUERY:
        case HULL_API_HANDLES_READ:
        case HULL_API_HANDLES_ADD_INPUT:
                return handles_op(m, s, p, req, ret);
        case HULL_API_NONE:
        case HULL_API_UNKNOWN:
        case HULL_API_SESSIONS_LIST:
        case _HULL_API_PROCEDURE_MAX:
        default:
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "no such procedure; nothing ran");
        }
        json_decref(record);
        if (r < 0)
                return fail_op(f, m, s, hull_api_procedure_to_string(p), r, &e);
        return a < 0 ? plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory") : 0;
}

static void do_hull(hs_manager *m, hull_api_procedure p, const char *principal, const char *body, size_t len,
                    int watch_fd, hs_answer *ret) {
        hull_api_request req = {0};
        hull_error e = {0};
        ss_session *s = NULL;
        if (hull_api_parse(p, body, len, &req, &ret->f) < 0)
                return;
        if (p == HULL_API_SESSIONS_LIST)
                do_list(m, principal, ret);
        else if (ss_lookup(m->core, req.session_id, principal, &s) < 0)
                plim_fail_session_not_found(&ret->f);
        else {
                int r = ss_call_begin(m->core, s, watch_fd, &e);
                if (r < 0)
                        fail_begin(&ret->f, m, s, r, &e);
                else {
                        ret->ok = workspace_op(m, s, p, &req, ret) >= 0 && ret->body;
                        ss_call_end(m->core, s);
                }
                if (ret->ok) {
                        ss_info info;
                        ss_session_info(m->core, s, &info);
                        size_t n = strlen(ret->note);
                        snprintf(ret->note + n, sizeof(ret->note) - n, "%ssession=%.12s", n ? " " : "",
                                 info.fingerprint);
                }
        }
        ss_unref(m->core, s);
        hull_api_request_done(&req);
}

void hs_rpc(hs_manager *m, plim_procedure proc, hull_api_procedure hproc, const char *principal, const char *body,
            size_t len, uint64_t received_unix_ms, int watch_fd, hs_answer *ret) {
        *ret = (hs_answer){0};
        if (!m || m->cfg.max_sessions == 0) {
                if (proc != PLIM_PROC_NONE)
                        plim_session_refuse(body, len, proc, &ret->f);
                else
                        plim_fail(&ret->f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                  "sessions are off on this daemon; nothing ran");
                return;
        }
        switch (proc) {
        case PLIM_PROC_OPEN_SESSION:
                do_open(m, principal, body, len, ret);
                return;
        case PLIM_PROC_SESSION_RUN:
                do_session_run(m, principal, body, len, received_unix_ms, watch_fd, ret);
                return;
        case PLIM_PROC_CLOSE_SESSION:
                do_close(m, principal, body, len, ret);
                return;
        case PLIM_PROC_NONE:
                do_hull(m, hproc, principal, body, len, watch_fd, ret);
                return;
        case PLIM_PROC_UNKNOWN:
        case PLIM_PROC_DESCRIBE:
        case PLIM_PROC_RUN:
                break;
        }
        plim_fail(&ret->f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "no such procedure; nothing ran");
}

/* ---- streamed uploads ---- */

struct hs_upload {
        hs_manager *m;
        ss_session *s;
        int fd;
        sha256_ctx sha;
        uint64_t bytes, max;
        hd_format format;
        bool document; /* format "document": read into handles after it is kept */
        char input_id[HULL_API_HANDLE_ID_MAX + 1];
        char name[HULL_API_INPUT_NAME_MAX + 1];
        char note[SERVE_SHORT_STR_MAX];
};

void hs_upload_free(hs_upload *u) {
        if (!u)
                return;
        if (u->s)
                ss_unref(u->m->core, u->s);
        safe_close(u->fd);
        sha256_done(&u->sha);
        free(u);
}

int hs_upload_begin(hs_manager *m, const char *principal, const char *session_id, const char *input_id,
                    const char *name, const char *format, hs_upload **ret, plim_error *f) {
        hull_error e = {0};
        if (!m || m->cfg.max_sessions == 0)
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                 "sessions are off on this daemon; nothing changed");
        if (!session_id || !session_id[0])
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "name the session: ?sessionId=...; nothing changed");
        if (!input_id || !hd_id_is_valid(input_id))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "inputId must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}; nothing changed");
        if (!name || !name[0] || strlen(name) > HULL_API_INPUT_NAME_MAX)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "name (the file's name) must be 1 to %u bytes; nothing changed",
                                 HULL_API_INPUT_NAME_MAX);
        hd_format fmt = HD_FORMAT_BINARY;
        bool document = format && strcmp(format, "document") == 0;
        if (document && !m->cfg.read_document)
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                 "this hull serve does not read documents; nothing changed");
        if (!document && format && format[0] && hull_api_input_format(format, &fmt) < 0)
                return plim_fail(
                        f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                        "format must be binary, csv, tsv, json (an array of objects), jsonl or document; nothing "
                        "changed");
        hs_upload *u = calloc(1, sizeof(*u));
        if (!u)
                return plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                                 "out of memory; nothing changed");
        u->m = m;
        u->fd = -1;
        u->format = fmt;
        u->document = document;
        snprintf(u->input_id, sizeof(u->input_id), "%s", input_id);
        snprintf(u->name, sizeof(u->name), "%s", name);
        if (ss_lookup(m->core, session_id, principal, &u->s) < 0) {
                hs_upload_free(u);
                return plim_fail_session_not_found(f);
        }
        u->fd = ss_upload_file(m->core, u->s, &e);
        if (u->fd < 0 || sha256_init(&u->sha) < 0) {
                int r = u->fd;
                hs_upload_free(u);
                if (r == -EOPNOTSUPP)
                        return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                         "this hull serve keeps no handle store; nothing changed");
                return fail_internal(f, m, "upload", &e);
        }
        u->max = ss_handle_bytes_max(m->core);
        *ret = u;
        return 0;
}

int hs_upload_write(hs_upload *u, const void *data, size_t n) {
        if (u->bytes + n > u->max)
                return -EFBIG;
        int r = loop_write(u->fd, data, n);
        if (r < 0)
                return r;
        if (sha256_update(&u->sha, data, n) < 0)
                return -EIO;
        u->bytes += n;
        return 0;
}

void hs_upload_finish(hs_manager *m, hs_upload *u, int watch_fd, hs_answer *ret) {
        char hex[SHA256_HEX_SIZE];
        hull_error e = {0};
        json_t *sum = NULL, *record = NULL;
        *ret = (hs_answer){0};
        if (sha256_final_hex(&u->sha, hex) < 0) {
                fail_internal(&ret->f, m, "upload", &(hull_error){.msg = "cannot hash the upload"});
                return;
        }
        int r = ss_call_begin(m->core, u->s, watch_fd, &e);
        if (r < 0) {
                fail_begin(&ret->f, m, u->s, r, &e);
                return;
        }
        r = ss_handles_add_input_fd(m->core, u->s, u->input_id, u->name, u->format, u->fd, hex, &sum, &record, &e);
        if (r >= 0 && u->document) { /* the input is kept whatever the document's reading says */
                json_t *doc = NULL;
                hull_error de = {0};
                if (m->cfg.read_document(m->core, u->s, u->name, u->fd, &doc, &de) < 0)
                        doc = json_pack("{s:s}", "error", de.msg);
                if (doc)
                        json_object_set_new(sum, "document", doc);
        }
        ss_call_end(m->core, u->s);
        if (r < 0) {
                fail_store(&ret->f, r, &e);
                return;
        }
        if (record)
                json_object_set_new(sum, "record", record);
        if (plim_json_dump(sum, &ret->body, &ret->len) < 0) {
                plim_fail(&ret->f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                return;
        }
        ret->ok = true;
        ss_info info;
        ss_session_info(m->core, u->s, &info);
        snprintf(ret->note, sizeof(ret->note), "session=%.12s upload_bytes=%" PRIu64, info.fingerprint, u->bytes);
}

void hs_audit_run(hs_manager *m, const json_t *request, const char *answer, size_t len) {
        if (!m || m->audit_fd < 0 || !request)
                return;
        json_t *ans = json_loadb(answer, len, 0, NULL);
        json_t *record = json_object_get(ans, "record"), *result = json_object();
        const char *kinds[] = {"javascript", "project", "module", "cell"};
        for (size_t i = 0; result && i < ELEMENTSOF(kinds); i++) {
                json_t *v = json_object_get(ans, kinds[i]);
                if (v)
                        json_object_set(result, kinds[i], v);
        }
        json_t *entry = NULL;
        hull_error e = {0};
        if (!record || !result || rec_log_entry_new(NULL, record, request, result, &entry, &e) < 0 ||
            rec_log_append(m->audit_fd, "runs.jsonl", entry, 0, &e) < 0) {
                char clean[HULL_ERROR_MSG_MAX];
                dlog_log(m->cfg.log, DLOG_ERROR, "event=audit-log-failed log=runs.jsonl error=\"%s\"",
                         dlog_clean(e.msg[0] ? e.msg : "malformed answer", clean, sizeof(clean)));
        }
        json_decref(entry);
        json_decref(result);
        json_decref(ans);
}
