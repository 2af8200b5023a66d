/* sessions.c: hull serve's session table and the procedures on sessions (see sessions.h).
 *
 * Locking: m->lock guards the table and every session's bookkeeping (refs, inflight, ended,
 * last use); a session's `call` mutex is held for the whole of one call, so the engine (its
 * sbx_session), its chain and its audit log are used by one thread at a time. A call never takes
 * m->lock while waiting for the sandbox. Ending a session only shuts its keeper socket down (the
 * keeper then kills the sandbox): its fds stay valid until the last reference goes. */
#include "sessions.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "limits.h"
#include "macro.h"
#include "sbx-record.h"
#include "sbx-session.h"
#include "sbx-workspace.h"
#include "time-util.h"

typedef struct hs_session hs_session;
struct hs_session {
        hs_session *next;
        unsigned refs;                   /* the table's, plus one per thread using it */
        char id[PLIM_SESSION_ID_MAX + 1];
        char principal[SERVE_SHORT_STR_MAX];
        char owner[PLIM_OWNER_MAX + 1];
        char rule_id[REC_RULE_ID_SIZE];
        uint64_t opened_unix_ms, expires_unix_ms, expires_mono_ms;
        uint64_t idle_ms;
        uint64_t last_used_mono_ms;
        bool claimed;                    /* a request named it since it opened */
        unsigned inflight;               /* calls running or waiting */
        plim_session_end ended;
        char end_detail[PLIM_END_DETAIL_MAX];
        uint64_t ended_mono_ms;
        uint64_t calls_seen;             /* the chain's count, readable under m->lock */
        pthread_mutex_t call;
        brk_session box;
        sbx_session sx;
        plim_chain chain;
        char log_name[SERVE_SHORT_STR_MAX];
};

struct hs_manager {
        hs_config cfg;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        hs_session *head;
        unsigned opening;                /* OpenSessions between their admission and the table */
        bool stopping;
        bool reaper_running;
        pthread_t reaper;
        int audit_fd;                    /* -1: no audit logs */
};

/* ---- the table ---- */

static unsigned open_count_locked(hs_manager *m) {
        unsigned n = m->opening;
        for (hs_session *s = m->head; s; s = s->next)
                if (s->ended == PLIM_SESSION_END_UNSPECIFIED)
                        n++;
        return n;
}

unsigned hs_open_count(hs_manager *m) {
        pthread_mutex_lock(&m->lock);
        unsigned n = open_count_locked(m);
        pthread_mutex_unlock(&m->lock);
        return n;
}

static void session_free(hs_session *s) {
        sbx_session_done(&s->sx);
        brk_session_close(&s->box);
        pthread_mutex_destroy(&s->call);
        free(s);
}

static void unref_locked(hs_session *s) {
        if (--s->refs == 0)
                session_free(s);
}

static void unref(hs_manager *m, hs_session *s) {
        pthread_mutex_lock(&m->lock);
        unref_locked(s);
        pthread_mutex_unlock(&m->lock);
}

/* End s (once): its keeper kills the sandbox. */
static void end_locked(hs_manager *m, hs_session *s, plim_session_end why, const char *detail) {
        if (s->ended != PLIM_SESSION_END_UNSPECIFIED)
                return;
        s->ended = why;
        snprintf(s->end_detail, sizeof(s->end_detail), "%s", detail ? detail : "");
        s->ended_mono_ms = now_mono_ms();
        metrics_session_ended(m->cfg.metrics, why);
        if (s->box.keeper_fd >= 0)
                (void) shutdown(s->box.keeper_fd, SHUT_RDWR);
        char fp[16];
        snprintf(fp, sizeof(fp), "%.12s", s->chain.session);
        dlog_log(m->cfg.log, DLOG_INFO, "event=session-ended session=%s reason=%s calls=%" PRIu64, fp,
                 plim_session_end_to_string(why), s->calls_seen);
}

/* The session id names, if the caller opened it; with a reference. */
static hs_session *lookup(hs_manager *m, const char *id, const char *principal) {
        hs_session *found = NULL;
        pthread_mutex_lock(&m->lock);
        for (hs_session *s = m->head; s; s = s->next)
                if (strcmp(s->id, id) == 0 && strcmp(s->principal, principal) == 0) {
                        s->refs++;
                        found = s;
                        break;
                }
        pthread_mutex_unlock(&m->lock);
        return found;
}

/* Take the session for one call: refused when it ended, or when one call runs and another waits. */
static int call_begin(hs_manager *m, hs_session *s, plim_error *f) {
        pthread_mutex_lock(&m->lock);
        /* The reaper looks every SERVE_SESSION_TICK_MS; a call must not slip in between. */
        uint64_t now = now_mono_ms();
        if (s->ended == PLIM_SESSION_END_UNSPECIFIED && now >= s->expires_mono_ms)
                end_locked(m, s, PLIM_SESSION_END_EXPIRED, "the session's lifetime is over");
        else if (s->ended == PLIM_SESSION_END_UNSPECIFIED && s->inflight == 0 && now - s->last_used_mono_ms >= s->idle_ms)
                end_locked(m, s, s->claimed ? PLIM_SESSION_END_EXPIRED : PLIM_SESSION_END_UNCLAIMED,
                           s->claimed ? "idle for longer than the idle timeout" : "never used before the idle timeout");
        if (s->ended != PLIM_SESSION_END_UNSPECIFIED) {
                plim_session_end why = s->ended;
                char detail[PLIM_END_DETAIL_MAX];
                memcpy(detail, s->end_detail, sizeof(detail));
                pthread_mutex_unlock(&m->lock);
                return plim_fail_session_ended(f, why, detail);
        }
        if (s->inflight >= 2) {
                pthread_mutex_unlock(&m->lock);
                return plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                                 "the session runs one call and has one waiting; retry when one ends; nothing ran");
        }
        s->inflight++;
        s->claimed = true;
        pthread_mutex_unlock(&m->lock);
        metrics_session_call(m->cfg.metrics);
        pthread_mutex_lock(&s->call);
        pthread_mutex_lock(&m->lock);
        if (s->ended != PLIM_SESSION_END_UNSPECIFIED) {
                plim_session_end why = s->ended;
                char detail[PLIM_END_DETAIL_MAX];
                memcpy(detail, s->end_detail, sizeof(detail));
                s->inflight--;
                pthread_mutex_unlock(&m->lock);
                pthread_mutex_unlock(&s->call);
                return plim_fail_session_ended(f, why, detail);
        }
        pthread_mutex_unlock(&m->lock);
        return 0;
}

static void call_end(hs_manager *m, hs_session *s) {
        pthread_mutex_lock(&m->lock);
        if (s->sx.dead)
                end_locked(m, s, PLIM_SESSION_END_MAIN_PROCESS_ENDED, "the sandbox ended");
        s->inflight--;
        s->calls_seen = s->chain.calls;
        s->last_used_mono_ms = now_mono_ms();
        pthread_mutex_unlock(&m->lock);
        pthread_mutex_unlock(&s->call);
}

/* ---- the reaper: idle, lifetime, sandboxes that ended, old summaries ---- */

static void reap_locked(hs_manager *m) {
        uint64_t now = now_mono_ms();
        for (hs_session **pp = &m->head; *pp;) {
                hs_session *s = *pp;
                if (s->ended == PLIM_SESSION_END_UNSPECIFIED) {
                        bool oom = false;
                        struct pollfd p = { .fd = s->box.keeper_fd, .events = POLLIN };
                        if (poll(&p, 1, 0) > 0 && brk_session_ended(&s->box, &oom) > 0)
                                end_locked(m, s, oom ? PLIM_SESSION_END_BOUNDARY_FAILED : PLIM_SESSION_END_MAIN_PROCESS_ENDED,
                                           oom ? "the sandbox's init was killed by its memory limit" : "the sandbox ended");
                        else if (now >= s->expires_mono_ms)
                                end_locked(m, s, PLIM_SESSION_END_EXPIRED, "the session's lifetime is over");
                        else if (s->inflight == 0 && now - s->last_used_mono_ms >= s->idle_ms)
                                end_locked(m, s, s->claimed ? PLIM_SESSION_END_EXPIRED : PLIM_SESSION_END_UNCLAIMED,
                                           s->claimed ? "idle for longer than the idle timeout" : "never used before the idle timeout");
                } else if (now - s->ended_mono_ms >= SERVE_SESSION_SUMMARY_MS && s->inflight == 0) {
                        *pp = s->next;
                        unref_locked(s);
                        continue;
                }
                pp = &s->next;
        }
}

static void *reaper_main(void *arg) {
        hs_manager *m = arg;
        pthread_mutex_lock(&m->lock);
        while (!m->stopping) {
                reap_locked(m);
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += (long) SERVE_SESSION_TICK_MS * 1000000L;
                ts.tv_sec += ts.tv_nsec / 1000000000L;
                ts.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&m->wake, &m->lock, &ts);
        }
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

int hs_new(const hs_config *cfg, hs_manager **ret, hull_error *e) {
        hs_manager *m = calloc(1, sizeof(*m));
        if (!m)
                return hull_err(e, -ENOMEM, "sessions: out of memory");
        m->cfg = *cfg;
        m->audit_fd = -1;
        pthread_mutex_init(&m->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&m->wake, &ca);
        pthread_condattr_destroy(&ca);
        if (cfg->audit_dir) {
                m->audit_fd = open(cfg->audit_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (m->audit_fd < 0) {
                        int r = negative_errno();
                        hs_free(m);
                        return hull_err_hint(e, r, "create it, or pass another --audit-dir", "sessions: cannot open the audit directory %s",
                                             cfg->audit_dir);
                }
        }
        if (pthread_create(&m->reaper, NULL, reaper_main, m) != 0) {
                hs_free(m);
                return hull_err(e, -EAGAIN, "sessions: cannot start the reaper thread");
        }
        m->reaper_running = true;
        *ret = m;
        return 0;
}

void hs_shutdown(hs_manager *m, uint64_t wait_ms) {
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        for (hs_session *s = m->head; s; s = s->next)
                end_locked(m, s, PLIM_SESSION_END_SHUTDOWN, "hull serve is shutting down");
        pthread_mutex_unlock(&m->lock);
        uint64_t until = now_mono_ms() + wait_ms;
        for (;;) {
                unsigned busy = 0;
                pthread_mutex_lock(&m->lock);
                for (hs_session *s = m->head; s; s = s->next)
                        busy += s->inflight;
                busy += m->opening;
                pthread_mutex_unlock(&m->lock);
                if (busy == 0 || now_mono_ms() >= until)
                        break;
                struct timespec ts = { 0, 20 * 1000000L };
                nanosleep(&ts, NULL);
        }
}

void hs_free(hs_manager *m) {
        if (!m)
                return;
        if (m->reaper_running) {
                pthread_mutex_lock(&m->lock);
                m->stopping = true;
                pthread_cond_signal(&m->wake);
                pthread_mutex_unlock(&m->lock);
                pthread_join(m->reaper, NULL);
        }
        while (m->head) {
                hs_session *s = m->head;
                m->head = s->next;
                unref_locked(s);
        }
        safe_close(m->audit_fd);
        pthread_cond_destroy(&m->wake);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

/* ---- helpers ---- */

/* An infrastructure fault: the detail (paths, errno) goes to the log only. */
static int fail_internal(plim_error *f, const hs_manager *m, const char *what, const hull_error *e) {
        char clean[HULL_ERROR_MSG_MAX];
        dlog_log(m->cfg.log, DLOG_ERROR, "event=session-error what=%s error=\"%s\"", what, dlog_clean(e->msg, clean, sizeof(clean)));
        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "internal error in %s (hull serve's log has the detail)", what);
}

/* A workspace operation's error: what was wrong with the request, or the server's fault. */
static int fail_ws(plim_error *f, int r, const hull_error *e) {
        switch (-r) {
        case ENOENT:
                return plim_fail(f, PLIM_CODE_NOT_FOUND, PLIM_REASON_REQUEST, "%s", e->msg);
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
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s", e->msg);
        default:
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "internal error in a workspace operation (%s)", strerror(-r));
        }
}

/* Files the host makes in a session's workspace must belong to the sandbox user: the workspace
 * is a tmpfs of the session's user namespace, where hull's own uid may not exist (EOVERFLOW), and
 * the sandbox user must be able to change them. The file-system ids are per thread. */
static void fs_enter(const hs_session *s) {
        if (geteuid() == 0) {
                (void) setfsgid(s->box.host_gid);
                (void) setfsuid(s->box.host_uid);
        }
}

static void fs_leave(void) {
        if (geteuid() == 0) {
                (void) setfsuid(0);
                (void) setfsgid(getegid());
        }
}

static void step_from_result(brk_step_result *s, sbx_result *sr) {
        s->status = sbx_result_exit_status(sr);
        s->term_signal = sr->term_signal;
        s->flags = (sr->exited ? BRK_STEP_EXITED : 0) | (sr->timed_out ? BRK_STEP_TIMED_OUT : 0) |
                   (sr->oom_killed ? BRK_STEP_OOM : 0) | (sr->out_dropped ? BRK_STEP_OUT_TRUNCATED : 0) |
                   (sr->err_dropped ? BRK_STEP_ERR_TRUNCATED : 0) | (sr->interrupted_signal ? BRK_STEP_INTERRUPTED : 0);
        s->wall_us = sr->wall_us;
        s->out = TAKE_PTR(sr->out);
        s->out_len = sr->out_len;
        s->err = TAKE_PTR(sr->err);
        s->err_len = sr->err_len;
}

static void audit_append(hs_manager *m, hs_session *s, const plim_call_record *rec) {
        if (m->audit_fd < 0 || !rec->record)
                return;
        json_t *entry = NULL;
        hull_error e = { 0 };
        if (rec_log_entry_new(rec->record, rec->request, rec->result, &entry, &e) < 0 ||
            rec_log_append(m->audit_fd, s->log_name, entry, 0, &e) < 0) {
                char clean[HULL_ERROR_MSG_MAX];
                dlog_log(m->cfg.log, DLOG_ERROR, "event=audit-log-failed log=%s error=\"%s\"", s->log_name,
                         dlog_clean(e.msg, clean, sizeof(clean)));
        }
        json_decref(entry);
}

/* Run a plan (javascript or project, from plim_plan) in the session's sandbox. Returns 0 with
 * *res (an answer, as a broker worker's), or a negative errno with *e when the session broke. */
static int exec_plan(hs_session *s, const brk_request *req, brk_result *res, hull_error *e) {
        *res = (brk_result){ .outcome = BRK_OUTCOME_COMPLETED, .started_unix_ms = now_unix_ms() };
        res->steps = calloc(MAX(req->n_steps, 1U), sizeof(brk_step_result));
        res->artifacts = calloc(MAX(req->n_artifacts, 1U), sizeof(brk_file));
        if (!res->steps || !res->artifacts)
                return hull_err(e, -ENOMEM, "session: out of memory");
        for (uint32_t i = 0; i < req->n_files; i++) {
                hull_error we = { 0 };
                fs_enter(s);
                int r = ws_write(s->sx.ws_fd, req->files[i].path, req->files[i].data, req->files[i].len, WS_WRITE_MKDIRS, &we);
                fs_leave();
                if (r < 0) {
                        res->outcome = BRK_OUTCOME_SETUP_FAILED;
                        res->detail = strdup(we.msg);
                        res->ended_unix_ms = now_unix_ms();
                        return res->detail ? 0 : hull_err(e, -ENOMEM, "session: out of memory");
                }
        }
        uint64_t deadline = now_mono_ms() + req->timeout_ms;
        for (uint32_t i = 0; i < req->n_steps; i++) {
                uint64_t now = now_mono_ms();
                if (now >= deadline) {
                        res->outcome = BRK_OUTCOME_TIMED_OUT;
                        break;
                }
                sbx_result sr;
                sbx_session_call c = { .argv = req->steps[i].argv, .timeout_ms = deadline - now,
                                       .output_bytes = req->output_bytes, .cancel_fd = -1 };
                int r = sbx_session_run(&s->sx, &c, &sr, e);
                if (r < 0)
                        return r;
                step_from_result(&res->steps[res->n_steps++], &sr);
                sbx_result_done(&sr);
                if (sr.timed_out) {
                        res->outcome = BRK_OUTCOME_TIMED_OUT;
                        break;
                }
                if ((req->flags & BRK_STOP_ON_FAILURE) && res->steps[res->n_steps - 1].status != 0)
                        break;
        }
        size_t budget = req->artifact_bytes;
        for (uint32_t i = 0; i < req->n_artifacts; i++) {
                ws_read_result rr = { 0 };
                hull_error re = { 0 };
                fs_enter(s);
                int r = ws_read(s->sx.ws_fd, req->artifacts[i], 0, WS_READ_MAX_BYTES, &rr, &re);
                fs_leave();
                if (r < 0)
                        continue; /* only those that exist are returned */
                if (!rr.eof || rr.len > budget) {
                        res->artifacts_truncated = true;
                        ws_read_result_done(&rr);
                        continue;
                }
                brk_file *a = &res->artifacts[res->n_artifacts];
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
        res->ended_unix_ms = now_unix_ms();
        if (!res->detail)
                res->detail = strdup("");
        return res->detail ? 0 : hull_err(e, -ENOMEM, "session: out of memory");
}

/* ---- OpenSession ---- */

static void do_open(hs_manager *m, const char *principal, const char *body, size_t len, hs_answer *ret) {
        plim_open_request req = { 0 };
        plim_error *f = &ret->f;
        hull_error e = { 0 };

        if (plim_open_parse(body, len, &req, f) < 0)
                return;
        if (plim_open_admit(&req, m->cfg.evidence, f) < 0)
                goto out;
        pthread_mutex_lock(&m->lock);
        if (m->stopping || open_count_locked(m) >= m->cfg.max_sessions) {
                pthread_mutex_unlock(&m->lock);
                plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                          "hull serve has %u sessions open, its maximum; close one or retry later; nothing ran", m->cfg.max_sessions);
                goto out;
        }
        /* At the owner's cap, its least recently used idle session makes room. */
        unsigned mine = 0;
        hs_session *lru = NULL;
        for (hs_session *s = m->head; s; s = s->next)
                if (s->ended == PLIM_SESSION_END_UNSPECIFIED && strcmp(s->principal, principal) == 0 &&
                    strcmp(s->owner, req.owner) == 0) {
                        mine++;
                        if (s->inflight == 0 && (!lru || s->last_used_mono_ms < lru->last_used_mono_ms))
                                lru = s;
                }
        if (m->cfg.max_per_owner && mine >= m->cfg.max_per_owner) {
                if (!lru) {
                        pthread_mutex_unlock(&m->lock);
                        plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                                  "every one of this owner's %u sessions is busy; retry later; nothing ran", m->cfg.max_per_owner);
                        goto out;
                }
                end_locked(m, lru, PLIM_SESSION_END_REPLACED, "replaced by a newer session of the same owner");
        }
        m->opening++;
        pthread_mutex_unlock(&m->lock);

        hs_session *s = calloc(1, sizeof(*s));
        brk_session_spec spec = { .memory_bytes = m->cfg.memory_bytes, .pids = m->cfg.pids, .tmp_bytes = m->cfg.tmp_bytes };
        uint8_t rnd[16];
        int r = s ? 0 : -ENOMEM;
        if (r == 0 && getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                r = -EIO;
        if (r < 0) {
                free(s);
                pthread_mutex_lock(&m->lock);
                m->opening--;
                pthread_mutex_unlock(&m->lock);
                hull_err(&e, r, "cannot make a session id");
                fail_internal(f, m, "open", &e);
                goto out;
        }
        for (size_t i = 0; i < sizeof(rnd); i++)
                snprintf(s->id + 2 * i, 3, "%02x", rnd[i]);
        r = brk_session_open(m->cfg.broker, &spec, &s->box, &e);
        if (r >= 0)
                r = plim_chain_init(&s->chain, s->id);
        if (r < 0) {
                brk_session_close(&s->box);
                free(s);
                pthread_mutex_lock(&m->lock);
                m->opening--;
                pthread_mutex_unlock(&m->lock);
                if (r == -EAGAIN)
                        plim_fail(f, PLIM_CODE_UNAVAILABLE, PLIM_REASON_CAPACITY, "%s; nothing ran", e.msg);
                else
                        fail_internal(f, m, "open", &e);
                goto out;
        }
        pthread_mutex_init(&s->call, NULL);
        sbx_session_init(&s->sx, s->box.ctl_fd, s->box.ws_fd, s->box.pidfd, s->box.bpf_fd, s->box.cg_fds, s->box.n_cg_fds,
                         m->cfg.zygote_fd);
        snprintf(s->principal, sizeof(s->principal), "%s", principal);
        snprintf(s->owner, sizeof(s->owner), "%s", req.owner ? req.owner : "");
        memcpy(s->rule_id, req.software_rule_id, sizeof(s->rule_id));
        snprintf(s->log_name, sizeof(s->log_name), "session-%s.jsonl", s->chain.session);
        uint64_t lifetime = m->cfg.lifetime_ms, idle = m->cfg.idle_ms;
        if (req.lifetime_ms && req.lifetime_ms < lifetime)
                lifetime = req.lifetime_ms;
        if (req.idle_timeout_ms && req.idle_timeout_ms < idle)
                idle = MAX((uint64_t) req.idle_timeout_ms, SERVE_SESSION_IDLE_MS_MIN);
        s->idle_ms = idle;
        s->opened_unix_ms = now_unix_ms();
        s->expires_unix_ms = s->opened_unix_ms + lifetime;
        s->expires_mono_ms = now_mono_ms() + lifetime;
        s->last_used_mono_ms = now_mono_ms();
        s->refs = 1;

        r = plim_open_answer(s->id, m->cfg.evidence, s->expires_unix_ms, (uint32_t) idle, &ret->body, &ret->len);
        pthread_mutex_lock(&m->lock);
        m->opening--;
        if (r < 0) {
                pthread_mutex_unlock(&m->lock);
                session_free(s);
                plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                goto out;
        }
        s->next = m->head;
        m->head = s;
        pthread_mutex_unlock(&m->lock);
        metrics_session_opened(m->cfg.metrics);
        ret->ok = true;
        snprintf(ret->note, sizeof(ret->note), "session=%.12s", s->chain.session);
        dlog_log(m->cfg.log, DLOG_INFO, "event=session-opened session=%.12s owner=%s idle_ms=%" PRIu64 " lifetime_ms=%" PRIu64,
                 s->chain.session, s->owner[0] ? s->owner : "-", idle, lifetime);
out:
        plim_open_request_done(&req);
}

/* ---- SessionRun ---- */

static void do_session_run(hs_manager *m, const char *principal, const char *body, size_t len, uint64_t received,
                           hs_answer *ret) {
        plim_request req = { 0 };
        plim_error *f = &ret->f;
        hull_error e = { 0 };
        brk_request plan = { 0 };
        brk_result res = { 0 };
        plim_call_record rec = { 0 };
        hs_session *s = NULL;
        bool in_call = false;

        if (plim_session_run_parse(body, len, &req, f) < 0)
                return;
        s = lookup(m, req.session_id, principal);
        if (!s) {
                plim_fail_session_not_found(f);
                goto out;
        }
        if (plim_run_admit(&req, m->cfg.evidence, f) < 0)
                goto out;
        if (strcmp(req.software_rule_id, s->rule_id) != 0) {
                plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT,
                          "the call's software rule is not the one the session was opened with; nothing ran");
                goto out;
        }
        if (call_begin(m, s, f) < 0)
                goto out;
        in_call = true;

        int r;
        sbx_cell_result cell = { 0 };
        bool is_cell = req.kind == PLIM_KIND_CELL;
        if (is_cell) {
                sbx_lang lang = SBX_LANG_PYTHON;
                (void) sbx_lang_from_string(req.cell_language, &lang);
                r = 0;
                for (size_t i = 0; i < req.n_files && r >= 0; i++) {
                        hull_error we = { 0 };
                        fs_enter(s);
                        int wr = ws_write(s->sx.ws_fd, req.files[i].path, req.files[i].content, req.files[i].content_len,
                                          WS_WRITE_MKDIRS, &we);
                        fs_leave();
                        if (wr < 0) {
                                /* Nothing of the cell ran: a refusal, not counted. */
                                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "cannot write %s: %s; the cell did not run",
                                          req.files[i].path, we.msg);
                                goto out;
                        }
                }
                r = sbx_session_cell(&s->sx, lang, req.code, req.code_len, req.effective_timeout_ms, PLIM_JS_OUTPUT_BYTES, -1, &cell,
                                     &e);
        } else {
                r = plim_plan(&req, m->cfg.evidence, &plan);
                char js_name[40] = "";
                if (r >= 0 && req.kind == PLIM_KIND_JAVASCRIPT && plan.n_files == 1) {
                        /* Not main.mjs: that may be the agent's own file. A private name at the
                         * top (so relative imports resolve as from main.mjs), removed after. */
                        uint8_t rnd[8];
                        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                                memset(rnd, 0, sizeof(rnd));
                        snprintf(js_name, sizeof(js_name), ".hull-run-%02x%02x%02x%02x%02x%02x%02x%02x.mjs", rnd[0], rnd[1], rnd[2],
                                 rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
                        plan.files[0].path = js_name;
                        plan.steps[0].argv[1] = js_name;
                }
                if (r < 0)
                        hull_err(&e, r, "session: out of memory for the plan");
                else
                        r = exec_plan(s, &plan, &res, &e);
                if (js_name[0]) {
                        plan.steps[0].argv[1] = NULL; /* borrowed; plim_plan_done frees the argv array */
                        fs_enter(s);
                        (void) unlinkat(s->sx.ws_fd, js_name, 0);
                        fs_leave();
                }
        }
        uint64_t ended = now_unix_ms();
        if (r < 0) {
                /* The call may have run: answer with an UnansweredCall record, counted. */
                if (s->sx.dead) {
                        pthread_mutex_lock(&m->lock);
                        end_locked(m, s, PLIM_SESSION_END_MAIN_PROCESS_ENDED, "the sandbox ended during the call");
                        pthread_mutex_unlock(&m->lock);
                }
                pthread_mutex_lock(&m->lock);
                plim_session_end why = s->ended;
                char detail[PLIM_END_DETAIL_MAX];
                memcpy(detail, s->end_detail, sizeof(detail));
                pthread_mutex_unlock(&m->lock);
                /* A session ended on purpose (closed, expired, replaced) cuts its call: not a fault. */
                char clean[HULL_ERROR_MSG_MAX];
                dlog_log(m->cfg.log, why == PLIM_SESSION_END_UNSPECIFIED || why == PLIM_SESSION_END_MAIN_PROCESS_ENDED ? DLOG_ERROR : DLOG_INFO,
                         "event=session-call-failed session=%.12s ended=%s error=\"%s\"", s->chain.session,
                         plim_session_end_to_string(why), dlog_clean(e.msg, clean, sizeof(clean)));
                if (why != PLIM_SESSION_END_UNSPECIFIED)
                        plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the session ended during the call (%s: %s)",
                                  plim_session_end_to_string(why), detail);
                else
                        plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the call failed: internal error (hull serve's log has the detail)");
                if (why != PLIM_SESSION_END_UNSPECIFIED)
                        plim_error_session_ended(f, why, detail);
                if (plim_unanswered_error(&req, m->cfg.evidence, &s->chain, received, ended, f, &rec) == 0) {
                        audit_append(m, s, &rec);
                        plim_chain_advance(&s->chain, &rec);
                }
                sbx_cell_result_done(&cell);
                goto out;
        }
        if (s->sx.warning[0]) {
                char clean[HULL_ERROR_MSG_MAX];
                dlog_log(m->cfg.log, DLOG_WARN, "event=zygote-fallback session=%.12s error=\"%s\"", s->chain.session,
                         dlog_clean(s->sx.warning, clean, sizeof(clean)));
                s->sx.warning[0] = '\0';
        }
        plim_cell_result pc = { 0 };
        if (is_cell)
                pc = (plim_cell_result){ .exit_code = cell.exit_code, .timed_out = cell.timed_out, .out = cell.out, .err = cell.err,
                                         .out_len = cell.out_len, .err_len = cell.err_len, .out_truncated = cell.out_truncated,
                                         .err_truncated = cell.err_truncated, .interpreter_started = cell.interpreter_started,
                                         .interpreter_ended = cell.interpreter_ended, .wall_us = cell.wall_us };
        plim_session_end why = PLIM_SESSION_END_UNSPECIFIED;
        char detail[PLIM_END_DETAIL_MAX] = "";
        pthread_mutex_lock(&m->lock);
        if (s->sx.dead)
                end_locked(m, s, PLIM_SESSION_END_MAIN_PROCESS_ENDED, "the sandbox ended");
        why = s->ended;
        memcpy(detail, s->end_detail, sizeof(detail));
        pthread_mutex_unlock(&m->lock);
        r = plim_session_run_answer(&req, is_cell ? NULL : &res, is_cell ? &pc : NULL, m->cfg.evidence, &s->chain, received, ended, why,
                                    detail, &ret->body, &ret->len, &rec, f);
        sbx_cell_result_done(&cell);
        if (r == -ENOMEM)
                plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        if (r < 0) {
                if (f->reason == PLIM_REASON_NONE && plim_unanswered_error(&req, m->cfg.evidence, &s->chain, received, ended, f, &rec) == 0) {
                        audit_append(m, s, &rec);
                        plim_chain_advance(&s->chain, &rec);
                }
                goto out;
        }
        audit_append(m, s, &rec);
        plim_chain_advance(&s->chain, &rec);
        ret->ok = true;
        snprintf(ret->note, sizeof(ret->note), "session=%.12s call=%" PRIu64 " kind=%s", s->chain.session, s->chain.calls,
                 plim_kind_to_string(req.kind));
out:
        if (in_call)
                call_end(m, s);
        if (s)
                unref(m, s);
        plim_call_record_done(&rec);
        brk_result_done(&res);
        plim_plan_done(&plan);
        plim_request_done(&req);
}

/* ---- CloseSession ---- */

static void do_close(hs_manager *m, const char *principal, const char *body, size_t len, hs_answer *ret) {
        char id[PLIM_SESSION_ID_MAX + 1];
        if (plim_close_parse(body, len, id, &ret->f) < 0)
                return;
        hs_session *s = lookup(m, id, principal);
        if (!s) {
                plim_fail_session_not_found(&ret->f);
                return;
        }
        pthread_mutex_lock(&m->lock);
        end_locked(m, s, PLIM_SESSION_END_CLOSED, "closed by the client");
        pthread_mutex_unlock(&m->lock);
        /* A call in flight ends with the sandbox; then the chain is whole. */
        pthread_mutex_lock(&s->call);
        pthread_mutex_lock(&m->lock);
        plim_session_end why = s->ended;
        pthread_mutex_unlock(&m->lock);
        int r = plim_close_answer(s->chain.session, s->chain.calls, s->chain.last_sha256, why, &ret->body, &ret->len);
        pthread_mutex_unlock(&s->call);
        if (r < 0)
                plim_fail(&ret->f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        else {
                ret->ok = true;
                snprintf(ret->note, sizeof(ret->note), "session=%.12s calls=%" PRIu64, s->chain.session, s->chain.calls);
        }
        unref(m, s);
}

/* ---- hull's own procedures ---- */

static void do_list(hs_manager *m, const char *principal, hs_answer *ret) {
        pthread_mutex_lock(&m->lock);
        size_t n = 0;
        for (hs_session *s = m->head; s; s = s->next)
                n += s->ended == PLIM_SESSION_END_UNSPECIFIED && strcmp(s->principal, principal) == 0;
        hull_api_session_info *v = calloc(MAX(n, 1U), sizeof(*v));
        size_t k = 0;
        for (hs_session *s = m->head; v && s; s = s->next)
                if (s->ended == PLIM_SESSION_END_UNSPECIFIED && strcmp(s->principal, principal) == 0)
                        v[k++] = (hull_api_session_info){ .session_id = s->id, .fingerprint = s->chain.session, .owner = s->owner,
                                                          .opened_unix_ms = s->opened_unix_ms, .expires_unix_ms = s->expires_unix_ms,
                                                          .idle_timeout_ms = (uint32_t) s->idle_ms, .calls = s->calls_seen };
        int r = v ? hull_api_list_answer(v, k, &ret->body, &ret->len) : -ENOMEM;
        pthread_mutex_unlock(&m->lock);
        free(v);
        if (r < 0)
                plim_fail(&ret->f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        else
                ret->ok = true;
}

static void do_workspace(hs_manager *m, hull_api_procedure p, const char *principal, const char *body, size_t len, hs_answer *ret) {
        hull_api_request req = { 0 };
        plim_error *f = &ret->f;
        hull_error e = { 0 };
        int r = -EINVAL;

        if (hull_api_parse(p, body, len, &req, f) < 0)
                return;
        if (p == HULL_API_SESSIONS_LIST) {
                do_list(m, principal, ret);
                hull_api_request_done(&req);
                return;
        }
        hs_session *s = lookup(m, req.session_id, principal);
        if (!s) {
                plim_fail_session_not_found(f);
                hull_api_request_done(&req);
                return;
        }
        if (call_begin(m, s, f) < 0) {
                unref(m, s);
                hull_api_request_done(&req);
                return;
        }
        int ws = s->sx.ws_fd;
        fs_enter(s);
        switch (p) {
        case HULL_API_EXEC: {
                char **env = calloc(req.exec.n_env + 1, sizeof(char *));
                r = env ? 0 : -ENOMEM;
                for (size_t i = 0; r == 0 && i < req.exec.n_env; i++)
                        if (asprintf(&env[i], "%s=%s", req.exec.env[i].name, req.exec.env[i].value) < 0)
                                r = -ENOMEM;
                sbx_result sr = { 0 };
                if (r == 0)
                        r = sbx_session_shell(&s->sx, req.exec.command, env, req.exec.timeout_ms, PLIM_JS_OUTPUT_BYTES, -1, &sr, &e);
                else
                        hull_err(&e, r, "out of memory");
                for (size_t i = 0; env && i < req.exec.n_env; i++)
                        free(env[i]);
                free(env);
                if (r < 0) {
                        pthread_mutex_lock(&m->lock);
                        if (s->sx.dead)
                                end_locked(m, s, PLIM_SESSION_END_MAIN_PROCESS_ENDED, "the sandbox ended");
                        plim_session_end why = s->ended;
                        char detail[PLIM_END_DETAIL_MAX];
                        memcpy(detail, s->end_detail, sizeof(detail));
                        pthread_mutex_unlock(&m->lock);
                        if (r == -E2BIG || r == -EINVAL)
                                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s", e.msg);
                        else if (why != PLIM_SESSION_END_UNSPECIFIED) {
                                plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the session ended during the call (%s: %s)",
                                          plim_session_end_to_string(why), detail);
                                plim_error_session_ended(f, why, detail);
                        } else
                                fail_internal(f, m, "exec", &e);
                        break;
                }
                brk_step_result st = { 0 };
                step_from_result(&st, &sr);
                sbx_result_done(&sr);
                r = hull_api_exec_answer(&st, &ret->body, &ret->len);
                free(st.out);
                free(st.err);
                if (r < 0)
                        plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                else
                        snprintf(ret->note, sizeof(ret->note), "session=%.12s exit=%d", s->chain.session, (int) st.status);
                break;
        }
        case HULL_API_READ: {
                ws_read_result rr = { 0 };
                r = ws_read(ws, req.read.path, req.read.offset, req.read.limit, &rr, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_read_answer(&rr, &ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                ws_read_result_done(&rr);
                break;
        }
        case HULL_API_WRITE: {
                if (req.write.append) {
                        /* Append: read what is there (bounded), then replace atomically. */
                        ws_read_result rr = { 0 };
                        r = ws_read(ws, req.write.path, 0, WS_READ_MAX_BYTES, &rr, &e);
                        if (r == -ENOENT) {
                                r = ws_write(ws, req.write.path, req.write.content, req.write.content_len, WS_WRITE_MKDIRS, &e);
                        } else if (r >= 0 && !rr.eof) {
                                r = hull_err(&e, -EFBIG, "%s is too large to append to", req.write.path);
                        } else if (r >= 0) {
                                char *buf = malloc(rr.len + req.write.content_len + 1);
                                if (!buf)
                                        r = hull_err(&e, -ENOMEM, "out of memory");
                                else {
                                        memcpy(buf, rr.data, rr.len);
                                        memcpy(buf + rr.len, req.write.content, req.write.content_len);
                                        r = ws_write(ws, req.write.path, buf, rr.len + req.write.content_len, WS_WRITE_MKDIRS, &e);
                                        free(buf);
                                }
                        }
                        ws_read_result_done(&rr);
                } else
                        r = ws_write(ws, req.write.path, req.write.content, req.write.content_len, WS_WRITE_MKDIRS, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_write_answer(req.write.content_len, &ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                break;
        }
        case HULL_API_EDIT:
                r = ws_edit(ws, req.edit.path, req.edit.old_text, req.edit.old_len, req.edit.new_text, req.edit.new_len, 0, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_edit_answer(&ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                break;
        case HULL_API_GLOB: {
                ws_glob_result gr = { 0 };
                ws_glob_opts go = { .hidden = req.glob.hidden };
                r = ws_glob(ws, req.glob.pattern, &go, &gr, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_glob_answer(&gr, &ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                ws_glob_result_done(&gr);
                break;
        }
        case HULL_API_GREP: {
                ws_grep_result gr = { 0 };
                ws_grep_opts go;
                hull_api_grep_opts(&req, &go);
                r = ws_grep(ws, req.grep.pattern, &go, &gr, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_grep_answer(&gr, &ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                ws_grep_result_done(&gr);
                break;
        }
        case HULL_API_PERSIST: {
                void *buf = NULL;
                size_t blen = 0;
                ws_tar_stats st = { 0 };
                ws_tar_limits lim = { .bytes_max = HULL_API_PERSIST_BYTES_MAX };
                r = ws_persist_mem(ws, &lim, &buf, &blen, &st, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_persist_answer(buf, blen, &ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                free(buf);
                break;
        }
        case HULL_API_HYDRATE: {
                ws_tar_stats st = { 0 };
                ws_tar_limits lim = { 0 };
                r = ws_hydrate_mem(ws, req.hydrate.archive, req.hydrate.archive_len, &lim, &st, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_hydrate_answer(&st, &ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                break;
        }
        case HULL_API_NONE:
        case HULL_API_UNKNOWN:
        case HULL_API_SESSIONS_LIST:
        case _HULL_API_PROCEDURE_MAX:
                r = plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "no such procedure; nothing ran");
                break;
        }
        fs_leave();
        ret->ok = r >= 0 && ret->body;
        call_end(m, s);
        unref(m, s);
        hull_api_request_done(&req);
}

void hs_rpc(hs_manager *m, plim_procedure proc, hull_api_procedure hproc, const char *principal, const char *body, size_t len,
            uint64_t received_unix_ms, hs_answer *ret) {
        *ret = (hs_answer){ 0 };
        if (!m || m->cfg.max_sessions == 0) {
                if (proc != PLIM_PROC_NONE)
                        plim_session_refuse(body, len, proc, &ret->f);
                else
                        plim_fail(&ret->f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "sessions are off on this daemon; nothing ran");
                return;
        }
        switch (proc) {
        case PLIM_PROC_OPEN_SESSION:
                do_open(m, principal, body, len, ret);
                return;
        case PLIM_PROC_SESSION_RUN:
                do_session_run(m, principal, body, len, received_unix_ms, ret);
                return;
        case PLIM_PROC_CLOSE_SESSION:
                do_close(m, principal, body, len, ret);
                return;
        case PLIM_PROC_NONE:
                do_workspace(m, hproc, principal, body, len, ret);
                return;
        case PLIM_PROC_UNKNOWN:
        case PLIM_PROC_DESCRIBE:
        case PLIM_PROC_RUN:
                break;
        }
        plim_fail(&ret->f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "no such procedure; nothing ran");
}

void hs_audit_run(hs_manager *m, const json_t *request, const char *answer, size_t len) {
        if (!m || m->audit_fd < 0 || !request)
                return;
        json_t *ans = json_loadb(answer, len, 0, NULL);
        json_t *record = json_object_get(ans, "record"), *result = json_object();
        const char *kinds[] = { "javascript", "project", "module", "cell" };
        for (size_t i = 0; result && i < ELEMENTSOF(kinds); i++) {
                json_t *v = json_object_get(ans, kinds[i]);
                if (v)
                        json_object_set(result, kinds[i], v);
        }
        json_t *entry = NULL;
        hull_error e = { 0 };
        if (!record || !result || rec_log_entry_new(record, request, result, &entry, &e) < 0 ||
            rec_log_append(m->audit_fd, "runs.jsonl", entry, 0, &e) < 0) {
                char clean[HULL_ERROR_MSG_MAX];
                dlog_log(m->cfg.log, DLOG_ERROR, "event=audit-log-failed log=runs.jsonl error=\"%s\"",
                         dlog_clean(e.msg[0] ? e.msg : "malformed answer", clean, sizeof(clean)));
        }
        json_decref(entry);
        json_decref(result);
        json_decref(ans);
}

