/* tool-run.c: the one tool-call runner (tool-run.h): claim, watch, deadline, run, spill, record,
 * release. The watch (watch.h) drives the caller's progress sink on its ticks; a tool's own notes
 * reach the sink under the watch's lock. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "limits.h"
#include "macro.h"
#include "schema.h"
#include "ss.h"
#include "time-util.h"
#include "tool-run.h"
#include "watch.h"

/* The watch of one running call and its progress state. */
typedef struct runner {
        watch *w;  /* the caller's kept watch (tool_run_ctx.watch), or own */
        watch own; /* a watch for this call alone */
        const tool_run_ctx *c;
        uint64_t started_ms, last_progress_ms;
        char pending[BUS_NOTE_MAX];      /* TOOL_RUN_NOTE_NEXT: a note that waits for the next tick */
        char note[AGENT_ERROR_TEXT_MAX]; /* TOOL_RUN_NOTE_KEEP: the last note */
} runner;

uint64_t tool_run_timeout(const tool_def *d) {
        return d->timeout_ms ? d->timeout_ms : AGENT_TOOL_TIMEOUT_MS;
}

static void result_error(call_result *res, const char *fmt, ...) _printf_(2, 3);
static void result_error(call_result *res, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&res->text, fmt, ap);
        va_end(ap);
        if (k < 0)
                res->text = NULL;
        res->is_error = true;
}

int tool_run_validate(const json_t *schema, const json_t *input, const char *where, const char *name,
                      call_result *res) {
        _cleanup_free_ char *problems = NULL;
        if (schema_validate(schema, input, where, &problems) >= 0)
                return 0;
        result_error(res, "invalid arguments for %s; it did not run:\n%s", name, problems ? problems : "out of memory");
        return -EINVAL;
}

/* ---- the watch and progress ---- */

/* A report if one is due (under the watch's lock). */
static void report_locked(runner *w, uint64_t now, const char *note) {
        const tool_run_ctx *c = w->c;
        if (c->progress(c->ud, now - w->started_ms, note))
                w->last_progress_ms = now;
}

static void watch_tick(void *ud, uint64_t now) {
        runner *w = ud;
        if (!w->c->progress || now - w->last_progress_ms < w->c->progress_ms)
                return;
        if (w->c->notes == TOOL_RUN_NOTE_KEEP)
                report_locked(w, now, w->note);
        else {
                report_locked(w, now, w->pending[0] ? w->pending : NULL);
                w->pending[0] = '\0';
        }
}

/* A tool's note on how it goes (tool_ctx.progress). */
static void tool_note(void *ud, const char *note) {
        runner *w = ud;
        const tool_run_ctx *c = w->c;
        watch_lock(w->w);
        uint64_t now = now_mono_ms();
        bool due = c->progress && now - w->last_progress_ms >= c->progress_ms;
        if (c->notes == TOOL_RUN_NOTE_KEEP) {
                snprintf(w->note, sizeof(w->note), "%s", note ? note : "");
                if (due)
                        report_locked(w, now, w->note);
        } else if (due) {
                report_locked(w, now, note);
                w->pending[0] = '\0';
        } else if (note)
                snprintf(w->pending, sizeof(w->pending), "%s", note);
        watch_unlock(w->w);
}

static bool watch_should_fire(void *ud) {
        runner *w = ud;
        return w->c->should_fire(w->c->ud);
}

static int runner_start(runner *w, const tool_run_ctx *c, uint64_t deadline_ms) {
        *w = (runner){.c = c, .started_ms = now_mono_ms(), .own = {.efd = -1}};
        w->last_progress_ms = w->started_ms;
        watch_config wc = {.interrupt = c->interrupt,
                           .cancel_at_ms = deadline_ms + AGENT_TOOL_GRACE_MS,
                           .should_fire = c->should_fire ? watch_should_fire : NULL,
                           .tick = watch_tick,
                           .ud = w};
        w->w = c->watch ? c->watch : &w->own; /* the agent's kept watch, or one for this call */
        int r = c->watch ? 0 : watch_init(w->w);
        if (r >= 0)
                r = watch_arm(w->w, &wc);
        if (w->w->efd >= 0 && c->cancel_fd)
                c->cancel_fd(c->ud, w->w->efd);
        return r;
}

static void runner_stop(runner *w) {
        if (w->w->efd >= 0 && w->c->cancel_fd)
                w->c->cancel_fd(w->c->ud, -1);
        if (w->w == &w->own)
                watch_done(w->w);
        else
                watch_disarm(w->w);
}

/* ---- the record ---- */

/* A read-only call on the record (tool_def.record_kind), inside its claim: its arguments as
 * received and the answer it is about to get, or, when the reader cancelled it, nothing answered
 * (version 3, "canceled"). The record settles it: a cancellation that comes later does not stop
 * the answer. */
static void record_call(const tool_run_ctx *c, const tool_def *d, const json_t *input, const call_result *res,
                        uint64_t started_unix_ms, tool_run_record *rec) {
        bool cancelled = c->cancelled && c->cancelled(c->ud);
        json_auto_t *ids = json_array(), *result = NULL;
        size_t k;
        json_t *h;
        json_array_foreach(res->handles, k, h) {
                const json_t *id = json_object_get(h, "id");
                if (ids && json_is_string(id))
                        json_array_append(ids, (json_t *) id);
        }
        if (!cancelled && ids)
                result = json_pack("{s:s, s:b, s:O}", "text", res->text ? res->text : TOOL_RUN_LOST_TEXT, "isError",
                                   res->is_error, "handles", ids);
        rec->made = true;
        rec->cancelled = cancelled;
        if (!cancelled && !result)
                rec->error =
                        hull_fail(&rec->e, -ENOMEM, "the answer could not be made JSON (not UTF-8, or out of memory)");
        else {
                int r = ss_record_read_only(c->ss, c->session, d->record_kind, input, result,
                                            cancelled ? "canceled" : NULL, started_unix_ms, NULL, &rec->e);
                rec->error = r < 0 ? r : 0;
        }
}

/* ---- the call ---- */

void tool_run_call(const tool_run_ctx *c, const tool_def *d, const json_t *input, call_result *res,
                   tool_run_record *ret_record) {
        uint64_t started = now_mono_ms(), started_unix = now_unix_ms();
        uint64_t deadline = started + tool_run_timeout(d);
        tool_run_record rec = {0};
        hull_error ce = {0}, te = {0};
        bool claimed = false;
        atomic_bool never;

        atomic_init(&never, false);
        if (c->deadline_mono_ms && c->deadline_mono_ms < deadline)
                deadline = c->deadline_mono_ms;
        if (ret_record)
                *ret_record = rec;
        if (d->needs_session) {
                if (!c->ss || !c->session) {
                        result_error(res, "%s needs the session's sandbox, and this %s has none", d->name, c->who);
                        return;
                }
                if (ss_call_begin(c->ss, c->session, -1, &ce) < 0) {
                        result_error(res, "%s could not run: %s", d->name, ce.msg);
                        return;
                }
                claimed = true;
        }
        runner w;
        tool_output out = {0};
        int r = runner_start(&w, c, deadline);
        if (r >= 0) {
                tool_ctx ctx = {.ss = c->ss,
                                .session = d->needs_session ? c->session : NULL,
                                .cancel = c->interrupt ? c->interrupt : &never,
                                .cancel_fd = w.w->efd,
                                .deadline_mono_ms = deadline,
                                .progress = tool_note,
                                .progress_ud = &w,
                                .env = d->env};
                r = d->run(&ctx, input, &out, &te);
        } else
                hull_err(&te, r, "%s: cannot watch the tool call", c->who);
        runner_stop(&w);
        /* A limited network's connections during the call (those that ended), while claimed. */
        if (claimed && c->take_net_log &&
            ss_net_log_take(c->session, SERVE_NET_LOG_ANSWER_MAX, &res->net_log, &res->net_log_len) < 0)
                res->net_log = NULL;
        uint64_t now = now_mono_ms();
        if (r < 0) {
                if (c->interrupt && atomic_load(c->interrupt))
                        result_error(res, "%s was %s", d->name, c->stopped);
                else if (r == -ETIMEDOUT || now >= deadline)
                        result_error(res, "%s timed out after %" PRIu64 " ms%s%s", d->name, now - started,
                                     te.msg[0] ? ": " : "", te.msg);
                else
                        result_error(res, "%s failed: %s", d->name, te.msg[0] ? te.msg : "unknown error");
        } else
                spill_shape(c->ss, c->session, &claimed, c->spill_bytes, d->name, &out, res);
        if (claimed && c->after)
                c->after(c->after_ud, c->ss, c->session, res);
        if (claimed && c->record && d->record_kind) {
                record_call(c, d, input, res, started_unix, &rec);
                if (ret_record)
                        *ret_record = rec;
        }
        if (claimed)
                ss_call_end(c->ss, c->session);
        tool_output_done(&out);
}
