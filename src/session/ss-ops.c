/* ss-ops.c: the operations on a claimed session: a shell command, a cell, a plan, and the
 * workspace's files. Each takes plain arguments, runs against the session's sandbox (files as
 * the sandbox user), collects what sandboxed code handed back through the call's exchange, and
 * appends the run record of what ran or changed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ss-internal.h"
#include "time-util.h"

void ss_output_done(ss_output *o) {
        free(o->out);
        free(o->err);
        json_decref(o->record);
        json_decref(o->handles);
        *o = (ss_output){0};
}

/* Append what the exchange left (notes, inline emits) to a call's captured output. */
static void output_append(char **buf, size_t *len, dynbuf *add) {
        if (add->len == 0)
                return;
        char *b = realloc(*buf, *len + add->len + 1);
        if (!b)
                return; /* best effort: the call's own output stands */
        memcpy(b + *len, add->buf, add->len);
        *len += add->len;
        b[*len] = '\0';
        *buf = b;
}

ss_fault ss_fault_of(int err) {
        switch (-err) {
        case ENOENT:
                return SS_FAULT_NOT_FOUND;
        case EINVAL:
        case ELOOP:
        case ENAMETOOLONG:
        case EXDEV:
        case EISDIR:
        case ENOTDIR:
        case EFBIG:
        case ENODATA:
        case ENOTUNIQ:
        case EPERM:
        case EACCES:
        case EEXIST:
        case ENOSPC:
        case EDQUOT:
        case E2BIG:
                return SS_FAULT_REQUEST;
        default:
                return SS_FAULT_SERVER;
        }
}

/* The Connect code an answer gives an operation that failed with r. */
static const char *unanswered_code(int r) {
        static const char *const codes[] = {[SS_FAULT_REQUEST] = "invalid_argument",
                                            [SS_FAULT_NOT_FOUND] = "not_found",
                                            [SS_FAULT_SERVER] = "internal"};
        return codes[ss_fault_of(r)];
}

/* A call failed after it may have run (or changed the workspace): record it as unanswered, with
 * the Connect code its answer gives. exec: unless it was refused before anything ran (-E2BIG,
 * -EINVAL). */
static void record_unanswered(ss_manager *m, ss_session *s, const char *operation, const json_t *request, int r,
                              uint64_t started) {
        hull_error re = {0};
        if ((strcmp(operation, "exec") == 0 && (r == -E2BIG || r == -EINVAL)) || !request)
                return;
        if (ss_record_hull(m, s, operation, request, NULL, unanswered_code(r), started, NULL, &re) < 0)
                ss_log(m, DLOG_ERROR, "event=record-failed session=%.12s operation=%s error=\"%s\"", s->chain.session,
                       operation, re.msg);
}

static json_t *output_json(const ss_output *o) {
        return json_pack("{s:i, s:b, s:o, s:o, s:b, s:b, s:o}", "exitCode", o->exit_code, "timedOut", o->timed_out,
                         "stdout", pj_new_bytes(o->out, o->out_len), "stderr", pj_new_bytes(o->err, o->err_len),
                         "stdoutTruncated", o->out_truncated, "stderrTruncated", o->err_truncated, "durationMs",
                         pj_new_uint64(o->wall_us / 1000));
}

/* ---- exec ---- */

static json_t *exec_request(const ss_exec_args *a) {
        json_t *env = json_array();
        for (size_t i = 0; env && i < a->n_env; i++)
                if (json_array_append_new(
                            env, json_pack("{s:s, s:s}", "name", a->env[i].name, "value", a->env[i].value)) < 0) {
                        json_decref(env);
                        return NULL;
                }
        return env ? json_pack("{s:s, s:o, s:I}", "command", a->command, "env", env, "timeoutMs",
                               (json_int_t) a->timeout_ms)
                   : NULL;
}

int ss_exec(ss_manager *m, ss_session *s, const ss_exec_args *a, ss_output *ret, hull_error *e) {
        uint64_t started = now_unix_ms();
        json_auto_t *request = exec_request(a);
        /* With a store: `import hull` works (PYTHONPATH=/handles holds hull.py), and the call has
         * an exchange directory for save/emit/publish ($HULL_EXCHANGE: named here, made by hull.py
         * on first use). The call's own variables come after, so they win. */
        char xrel[HD_EXCHANGE_REL_SIZE] = "";
        ss_exchange_name(m, s, xrel);
        size_t n_env = 0;
        char **env = calloc(a->n_env + 3, sizeof(char *));
        int r = env ? 0 : -ENOMEM;
        if (r == 0 && s->store && !(env[n_env++] = strdup("PYTHONPATH=/handles")))
                r = -ENOMEM;
        if (r == 0 && xrel[0] && asprintf(&env[n_env++], "HULL_EXCHANGE=/workspace/%s", xrel) < 0)
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < a->n_env; i++)
                if (asprintf(&env[n_env++], "%s=%s", a->env[i].name, a->env[i].value) < 0)
                        r = -ENOMEM;
        sbx_result sr = {0};
        if (r == 0) {
                ss_fs_enter(s);
                r = sbx_session_shell(&s->sx, a->command, env, a->timeout_ms, a->output_bytes,
                                      a->cancel_fd > 0 ? a->cancel_fd : -1, &sr, e);
                ss_fs_leave();
        } else
                hull_err(e, r, "out of memory");
        for (size_t i = 0; env && i < n_env; i++)
                free(env[i]);
        free(env);
        _cleanup_dynbuf_ dynbuf errs, outs;
        dynbuf_init(&errs, HS_NOTES_MAX);
        dynbuf_init(&outs, HD_EXCHANGE_EMIT_INLINE_MAX + 1);
        json_auto_t *made = json_array();
        if (xrel[0] && !s->sx.dead)
                ss_exchange_collect(m, s, xrel, &errs, &outs, made);
        if (r < 0) {
                record_unanswered(m, s, "exec", request, r, started);
                return r;
        }
        *ret = (ss_output){.exit_code = sbx_result_exit_status(&sr),
                           .timed_out = sr.timed_out,
                           .out = TAKE_PTR(sr.out),
                           .out_len = sr.out_len,
                           .err = TAKE_PTR(sr.err),
                           .err_len = sr.err_len,
                           .out_truncated = sr.out_dropped > 0,
                           .err_truncated = sr.err_dropped > 0,
                           .wall_us = sr.wall_us};
        sbx_result_done(&sr);
        output_append(&ret->out, &ret->out_len, &outs);
        output_append(&ret->err, &ret->err_len, &errs);
        if (json_array_size(made) > 0)
                ret->handles = TAKE_PTR(made);
        json_auto_t *result = output_json(ret);
        ss_record_or_log(m, s, "exec", request, result, started, &ret->record);
        return 0;
}

/* ---- cells ---- */

int ss_cell(ss_manager *m, ss_session *s, const ss_cell_args *a, ss_cell_output *ret, hull_error *e) {
        uint64_t started = now_unix_ms();
        for (size_t i = 0; i < a->n_files; i++) {
                hull_error we = {0};
                ss_fs_enter(s);
                int wr = ws_write(s->sx.ws_fd, a->files[i].path, a->files[i].content, a->files[i].len, WS_WRITE_MKDIRS,
                                  &we);
                ss_fs_leave();
                if (wr < 0) /* nothing of the cell ran: a refusal */
                        return hull_err(e, -EINVAL, "cannot write %s: %s; the cell did not run", a->files[i].path,
                                        we.msg);
        }
        char xrel[HD_EXCHANGE_REL_SIZE] = "", xpath[HD_EXCHANGE_REL_SIZE + 16] = "";
        if (a->lang == SBX_LANG_PYTHON)
                ss_exchange_name(m, s, xrel);
        if (xrel[0])
                snprintf(xpath, sizeof(xpath), "/workspace/%s", xrel);
        sbx_cell_result cell = {0};
        int r = sbx_session_cell_x(&s->sx, a->lang, a->code, a->code_len, xpath[0] ? xpath : NULL, a->timeout_ms,
                                   a->output_bytes, a->cancel_fd > 0 ? a->cancel_fd : -1, &cell, e);
        _cleanup_dynbuf_ dynbuf errs, outs;
        dynbuf_init(&errs, HS_NOTES_MAX);
        dynbuf_init(&outs, HD_EXCHANGE_EMIT_INLINE_MAX + 1);
        json_auto_t *made = json_array();
        if (xrel[0] && !s->sx.dead)
                ss_exchange_collect(m, s, xrel, &errs, &outs, made);
        if (s->sx.warning[0]) {
                char clean[HULL_ERROR_MSG_MAX];
                ss_log(m, DLOG_WARN, "event=zygote-fallback session=%.12s error=\"%s\"", s->chain.session,
                       dlog_clean(s->sx.warning, clean, sizeof(clean)));
                s->sx.warning[0] = '\0';
        }
        if (r < 0) {
                sbx_cell_result_done(&cell);
                return r;
        }
        *ret = (ss_cell_output){.o = {.exit_code = cell.exit_code,
                                      .timed_out = cell.timed_out,
                                      .out = TAKE_PTR(cell.out),
                                      .out_len = cell.out_len,
                                      .err = TAKE_PTR(cell.err),
                                      .err_len = cell.err_len,
                                      .out_truncated = cell.out_truncated,
                                      .err_truncated = cell.err_truncated,
                                      .wall_us = cell.wall_us},
                                .interpreter_started = cell.interpreter_started,
                                .interpreter_ended = cell.interpreter_ended};
        sbx_cell_result_done(&cell);
        size_t before = ret->o.out_len;
        output_append(&ret->o.out, &ret->o.out_len, &outs);
        if (ret->o.out_len > before) {
                ret->emit_at = before;
                ret->emit_len = ret->o.out_len - before;
        }
        output_append(&ret->o.err, &ret->o.err_len, &errs);
        if (json_array_size(made) > 0)
                ret->o.handles = TAKE_PTR(made);
        if (!a->no_record) {
                hull_error re = {0};
                if (ss_record_cell(m, s, a, ret, started, &ret->o.record, &re) < 0)
                        ss_log(m, DLOG_ERROR, "event=record-failed session=%.12s operation=cell error=\"%s\"",
                               s->chain.session, re.msg);
        }
        return 0;
}

int ss_warm(ss_manager *m, ss_session *s, sbx_lang lang, hull_error *e) {
        int r = sbx_session_warm(&s->sx, lang, e);
        if (s->sx.warning[0]) {
                char clean[HULL_ERROR_MSG_MAX];
                ss_log(m, DLOG_WARN, "event=zygote-fallback session=%.12s error=\"%s\"", s->chain.session,
                       dlog_clean(s->sx.warning, clean, sizeof(clean)));
                s->sx.warning[0] = '\0';
        }
        return r;
}

/* ---- plans ---- */

int ss_plan(ss_manager *m, ss_session *s, const sbx_plan *plan, const char *scratch, sbx_plan_result *ret,
            hull_error *e) {
        *ret = (sbx_plan_result){.started_unix_ms = now_unix_ms()};
        int r = sbx_plan_run_in_session(&s->sx, s->box.host_uid, s->box.host_gid, NULL, -1, plan, ret, e);
        ret->ended_unix_ms = now_unix_ms();
        if (scratch) {
                ss_fs_enter(s);
                (void) unlinkat(s->sx.ws_fd, scratch, 0);
                ss_fs_leave();
        }
        if (r < 0)
                return r;
        if (!ret->detail)
                ret->detail = strdup("");
        return ret->detail ? 0 : hull_err(e, -ENOMEM, "session: out of memory");
}

/* ---- files ---- */

int ss_read(ss_manager *m, ss_session *s, const char *path, uint64_t offset, size_t limit, ws_read_result *ret,
            hull_error *e) {
        ss_fs_enter(s);
        int r = ws_read(s->sx.ws_fd, path, offset, limit, ret, e);
        ss_fs_leave();
        return r;
}

/* Append: read what is there (bounded), then replace atomically. */
static int append_file(int ws, const char *path, const void *content, size_t len, hull_error *e) {
        ws_read_result rr = {0};
        int r = ws_read(ws, path, 0, WS_READ_MAX_BYTES, &rr, e);
        if (r == -ENOENT)
                return ws_write(ws, path, content, len, WS_WRITE_MKDIRS, e);
        if (r >= 0 && !rr.eof)
                r = hull_err(e, -EFBIG, "%s is too large to append to", path);
        else if (r >= 0) {
                _cleanup_dynbuf_ dynbuf b;
                dynbuf_init(&b, WS_WRITE_MAX_BYTES);
                r = dynbuf_add(&b, rr.data, rr.len);
                if (r >= 0)
                        r = dynbuf_add(&b, content, len);
                if (r == -E2BIG)
                        r = hull_err(e, -EFBIG, "%s would grow past %llu bytes", path,
                                     (unsigned long long) WS_WRITE_MAX_BYTES);
                else if (r < 0)
                        r = hull_err(e, r, "out of memory");
                else
                        r = ws_write(ws, path, b.buf, b.len, WS_WRITE_MKDIRS, e);
        }
        ws_read_result_done(&rr);
        return r;
}

int ss_write(ss_manager *m, ss_session *s, const char *path, const void *content, size_t len, bool append,
             json_t **ret_record, hull_error *e) {
        uint64_t started = now_unix_ms();
        ss_fs_enter(s);
        int r = append ? append_file(s->sx.ws_fd, path, content, len, e)
                       : ws_write(s->sx.ws_fd, path, content, len, WS_WRITE_MKDIRS, e);
        ss_fs_leave();
        if (r < 0) /* the file is as it was */
                return r;
        json_auto_t *request =
                json_pack("{s:s, s:o, s:b}", "path", path, "content", pj_new_bytes(content, len), "append", append);
        json_auto_t *result = json_pack("{s:o}", "bytes", pj_new_uint64(len));
        ss_record_or_log(m, s, "write", request, result, started, ret_record);
        return 0;
}

int ss_edit(ss_manager *m, ss_session *s, const char *path, const char *old_text, size_t old_len, const char *new_text,
            size_t new_len, json_t **ret_record, hull_error *e) {
        uint64_t started = now_unix_ms();
        ss_fs_enter(s);
        int r = ws_edit(s->sx.ws_fd, path, old_text, old_len, new_text, new_len, 0, e);
        ss_fs_leave();
        if (r < 0)
                return r;
        json_auto_t *request = json_pack("{s:s, s:s%, s:s%}", "path", path, "oldText", old_text, old_len, "newText",
                                         new_text, new_len);
        json_auto_t *result = json_pack("{s:i}", "replaced", 1);
        ss_record_or_log(m, s, "edit", request, result, started, ret_record);
        return 0;
}

int ss_glob(ss_manager *m, ss_session *s, const char *pattern, const ws_glob_opts *o, ws_glob_result *ret,
            hull_error *e) {
        ss_fs_enter(s);
        int r = ws_glob(s->sx.ws_fd, pattern, o, ret, e);
        ss_fs_leave();
        return r;
}

int ss_grep(ss_manager *m, ss_session *s, const char *pattern, const ws_grep_opts *o, ws_grep_result *ret,
            hull_error *e) {
        ss_fs_enter(s);
        int r = ws_grep(s->sx.ws_fd, pattern, o, ret, e);
        ss_fs_leave();
        return r;
}

int ss_persist(ss_manager *m, ss_session *s, uint64_t bytes_max, void **ret, size_t *ret_len, hull_error *e) {
        ws_tar_stats st = {0};
        ws_tar_limits lim = {.bytes_max = bytes_max};
        ss_fs_enter(s);
        int r = ws_persist_mem(s->sx.ws_fd, &lim, ret, ret_len, &st, e);
        ss_fs_leave();
        return r;
}

int ss_hydrate(ss_manager *m, ss_session *s, const void *archive, size_t len, ws_tar_stats *ret_stats,
               json_t **ret_record, hull_error *e) {
        uint64_t started = now_unix_ms();
        ws_tar_stats st = {0};
        ws_tar_limits lim = {0};
        ss_fs_enter(s);
        int r = ws_hydrate_mem(s->sx.ws_fd, archive, len, &lim, &st, e);
        ss_fs_leave();
        json_auto_t *request = json_pack("{s:o}", "archive", pj_new_bytes(archive, len));
        if (r < 0) { /* entries before the refused one stay: the workspace may have changed */
                record_unanswered(m, s, "hydrate", request, r, started);
                return r;
        }
        json_auto_t *result =
                json_pack("{s:o, s:o}", "files", pj_new_uint64(st.files), "bytes", pj_new_uint64(st.bytes));
        ss_record_or_log(m, s, "hydrate", request, result, started, ret_record);
        *ret_stats = st;
        return 0;
}
