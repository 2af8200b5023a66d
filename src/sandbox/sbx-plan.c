/* sbx-plan.c: plans and their results (see sbx-plan.h): freeing them, the clean-path rule, a
 * step's result from the sandbox's, and a plan carried out in a session's sandbox. */
#include "sbx-plan.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "macro.h"
#include "sbx-cgroup.h"
#include "sbx-session.h"
#include "sbx-workspace.h"
#include "sbx.h"
#include "time-util.h"

bool sbx_plan_path_is_clean(const char *p, size_t len) {
        if (len == 0 || len > PLIM_PATH_MAX || p[0] == '/')
                return false;
        size_t seg = 0; /* start of the current segment */
        for (size_t i = 0; i <= len; i++) {
                if (i == len || p[i] == '/') {
                        size_t n = i - seg;
                        if (n == 0 || (n == 1 && p[seg] == '.') || (n == 2 && p[seg] == '.' && p[seg + 1] == '.'))
                                return false;
                        seg = i + 1;
                        continue;
                }
                unsigned char c = (unsigned char) p[i];
                if (c < 0x20 || c == 0x7f || c == '\\')
                        return false;
        }
        return true;
}

void sbx_plan_files_free(sbx_plan_file *f, uint32_t n) {
        for (uint32_t i = 0; f && i < n; i++) {
                free(f[i].path);
                free(f[i].data);
        }
        free(f);
}

void sbx_plan_done(sbx_plan *r) {
        sbx_plan_files_free(r->files, r->n_files);
        for (uint32_t i = 0; r->steps && i < r->n_steps; i++) {
                for (uint32_t j = 0; r->steps[i].argv && j < r->steps[i].argc; j++)
                        free(r->steps[i].argv[j]);
                free(r->steps[i].argv);
        }
        free(r->steps);
        for (uint32_t i = 0; r->artifacts && i < r->n_artifacts; i++)
                free(r->artifacts[i]);
        free(r->artifacts);
        free(r->layer_dir);
        for (uint32_t i = 0; r->net_hosts && i < r->n_net_hosts; i++)
                free(r->net_hosts[i]);
        free(r->net_hosts);
        *r = (sbx_plan){0};
}

void sbx_plan_result_done(sbx_plan_result *r) {
        free(r->detail);
        for (uint32_t i = 0; r->steps && i < r->n_steps; i++) {
                free(r->steps[i].out);
                free(r->steps[i].err);
        }
        free(r->steps);
        sbx_plan_files_free(r->artifacts, r->n_artifacts);
        free(r->net_log);
        *r = (sbx_plan_result){0};
}

void sbx_plan_set_detail(sbx_plan_result *res, const char *fmt, ...) {
        char buf[BRK_DETAIL_MAX + 1];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        free(res->detail);
        res->detail = strdup(buf);
}

void sbx_step_from_result(sbx_step_result *s, sbx_result *sr) {
        s->status = sbx_result_exit_status(sr);
        s->term_signal = sr->term_signal;
        s->flags = (sr->exited ? SBX_STEP_EXITED : 0) | (sr->timed_out ? SBX_STEP_TIMED_OUT : 0) |
                   (sr->oom_killed ? SBX_STEP_OOM : 0) | (sr->out_dropped ? SBX_STEP_OUT_TRUNCATED : 0) |
                   (sr->err_dropped ? SBX_STEP_ERR_TRUNCATED : 0) | (sr->interrupted_signal ? SBX_STEP_INTERRUPTED : 0);
        s->wall_us = sr->wall_us;
        s->out = TAKE_PTR(sr->out);
        s->out_len = sr->out_len;
        s->err = TAKE_PTR(sr->err);
        s->err_len = sr->err_len;
}

/* The run in a sandbox set up in advance (a session box): files written and artifacts read
 * through the box's workspace fd (as the sandbox user: the workspace is a tmpfs of its user
 * namespace), steps run by its init, what a step leaves swept before the next. */
static bool fd_readable(int fd) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        return fd >= 0 && poll(&p, 1, 0) > 0;
}

bool sbx_plan_js_code(const sbx_plan *req, const char **ret, size_t *ret_len) {
        if (!(req->flags & SBX_PLAN_JAVASCRIPT) || req->n_steps != 1 || req->steps[0].argc < 2)
                return false;
        if (req->n_files == 1) { /* over what one argument holds: the code is the file */
                *ret = req->files[0].data;
                *ret_len = req->files[0].len;
        } else {
                *ret = req->steps[0].argv[req->steps[0].argc - 1];
                *ret_len = strlen(*ret);
        }
        return true;
}

/* Step 0 of a plan run by a held node: its code given, or (when the node ended before it could
 * be used: -ECHILD) the step run as it is. */
static int run_step(sbx_session *sx, sbx_held *held, const sbx_plan *req, uint32_t i, const sbx_session_call *c,
                    sbx_result *sr, hull_error *e) {
        const char *code;
        size_t len;
        if (i == 0 && held && held->in_fd >= 0 && sbx_plan_js_code(req, &code, &len)) {
                int r = sbx_session_held_run(sx, held, code, len, c, sr, e);
                if (r != -ECHILD)
                        return r;
                if ((r = sbx_session_held_drop(sx, held, e)) < 0)
                        return r;
        }
        return sbx_session_run(sx, c, sr, e);
}

static int plan_run(sbx_session *sx, sbx_held *held, uid_t fs_uid, gid_t fs_gid, const sbx_cgroup *cg, int cancel_fd,
                    const sbx_plan *req, sbx_plan_result *res, hull_error *e);

int sbx_plan_run_in_session(sbx_session *sx, uid_t fs_uid, gid_t fs_gid, const sbx_cgroup *cg, int cancel_fd,
                            const sbx_plan *req, sbx_plan_result *res, hull_error *e) {
        return sbx_plan_run_held(sx, NULL, fs_uid, fs_gid, cg, cancel_fd, req, res, e);
}

int sbx_plan_run_held(sbx_session *sx, sbx_held *held, uid_t fs_uid, gid_t fs_gid, const sbx_cgroup *cg, int cancel_fd,
                      const sbx_plan *req, sbx_plan_result *res, hull_error *e) {
        const char *code;
        size_t len;
        if (held && held->in_fd >= 0 && !sbx_plan_js_code(req, &code, &len)) {
                /* not a run for it: it goes first (the init runs one command at a time) */
                int r = sbx_session_held_drop(sx, held, e);
                if (r < 0) {
                        res->outcome = SBX_PLAN_ERROR;
                        sbx_plan_set_detail(res, "%s", e->msg);
                        return r;
                }
        }
        int r = plan_run(sx, held, fs_uid, fs_gid, cg, cancel_fd, req, res, e);
        if (held && (held->in_fd >= 0 || held->out_fd >= 0)) { /* not used: nothing of it outlives the run */
                hull_error de = {0};
                (void) sbx_session_held_drop(sx, held, &de);
        }
        return r;
}

static int plan_run(sbx_session *sx, sbx_held *held, uid_t fs_uid, gid_t fs_gid, const sbx_cgroup *cg, int cancel_fd,
                    const sbx_plan *req, sbx_plan_result *res, hull_error *e) {
        if (!res->steps)
                res->steps = calloc(MAX(req->n_steps, 1U), sizeof(sbx_step_result));
        if (!res->artifacts)
                res->artifacts = calloc(MAX(req->n_artifacts, 1U), sizeof(sbx_plan_file));
        if (!res->steps || !res->artifacts)
                return hull_err(e, -ENOMEM, "broker: out of memory");
        res->outcome = SBX_PLAN_COMPLETED;
        sbx_session_fs_enter(fs_uid, fs_gid);
        for (uint32_t i = 0; i < req->n_files; i++) {
                hull_error we = {0};
                if (ws_write(sx->ws_fd, req->files[i].path, req->files[i].data, req->files[i].len, WS_WRITE_MKDIRS,
                             &we) < 0) {
                        sbx_session_fs_leave();
                        res->outcome = SBX_PLAN_SETUP_FAILED;
                        sbx_plan_set_detail(res, "cannot write %s: %s", req->files[i].path, we.msg);
                        return 0;
                }
        }
        sbx_session_fs_leave();
        uint64_t deadline = now_mono_ms() + req->timeout_ms;
        bool oom_before = false;
        if (cg) {
                sbx_cgroup_stats st;
                sbx_cgroup_read_stats(cg, &st);
                oom_before = st.oom_killed;
        }
        for (uint32_t i = 0; i < req->n_steps; i++) {
                uint64_t now = now_mono_ms();
                if (fd_readable(cancel_fd)) {
                        res->outcome = SBX_PLAN_CANCELLED;
                        sbx_plan_set_detail(res, "stopped before step %u: hull serve is shutting down", i + 1);
                        return 0;
                }
                if (now >= deadline) {
                        res->outcome = SBX_PLAN_TIMED_OUT;
                        sbx_plan_set_detail(res, "the run's %" PRIu64 " ms ran out before step %u", req->timeout_ms,
                                            i + 1);
                        return 0;
                }
                sbx_session_call c = {.argv = req->steps[i].argv,
                                      .timeout_ms = deadline - now,
                                      .output_bytes = req->output_bytes,
                                      .cancel_fd = cancel_fd};
                sbx_result sr;
                int r = run_step(sx, held, req, i, &c, &sr, e);
                if (r < 0) {
                        res->outcome = SBX_PLAN_ERROR;
                        sbx_plan_set_detail(res, "step %u: %s", i + 1, e->msg);
                        return r;
                }
                if (cg) {
                        sbx_cgroup_stats st;
                        sbx_cgroup_read_stats(cg, &st);
                        sr.oom_killed = st.oom_killed && !oom_before;
                        oom_before = st.oom_killed;
                }
                sbx_step_result *st = &res->steps[res->n_steps++];
                sbx_step_from_result(st, &sr);
                sbx_result_done(&sr);
                if (st->flags & SBX_STEP_INTERRUPTED) {
                        res->outcome = SBX_PLAN_CANCELLED;
                        sbx_plan_set_detail(res, "step %u was stopped: hull serve is shutting down", i + 1);
                        return 0;
                }
                if (st->flags & SBX_STEP_TIMED_OUT) {
                        res->outcome = SBX_PLAN_TIMED_OUT;
                        sbx_plan_set_detail(res, "step %u used up the run's %" PRIu64 " ms", i + 1, req->timeout_ms);
                        break;
                }
                if ((req->flags & SBX_PLAN_STOP_ON_FAILURE) && st->status != 0)
                        break;
        }
        /* Artifacts: only those that exist and fit the budget. */
        sbx_session_fs_enter(fs_uid, fs_gid);
        size_t budget = req->artifact_bytes;
        for (uint32_t i = 0; i < req->n_artifacts; i++) {
                ws_read_result rr = {0};
                hull_error re = {0};
                size_t limit = MIN(budget, (size_t) WS_READ_MAX_BYTES);
                if (ws_read(sx->ws_fd, req->artifacts[i], 0, limit ? limit : 1, &rr, &re) < 0)
                        continue;
                if (!rr.eof || rr.len > budget) {
                        res->artifacts_truncated = true;
                        ws_read_result_done(&rr);
                        continue;
                }
                sbx_plan_file *a = &res->artifacts[res->n_artifacts];
                a->path = strdup(req->artifacts[i]);
                if (!a->path) {
                        ws_read_result_done(&rr);
                        continue;
                }
                a->data = TAKE_PTR(rr.data);
                a->len = rr.len;
                budget -= rr.len;
                res->n_artifacts++;
        }
        sbx_session_fs_leave();
        return 0;
}
