/* sessions.c: hull serve's session table and the procedures on sessions (see sessions.h).
 *
 * Locking: m->lock guards the table and every session's bookkeeping (refs, inflight, ended,
 * last use); a session's `call` mutex is held for the whole of one call, so the engine (its
 * sbx_session), its chain and its audit log are used by one thread at a time. A call never takes
 * m->lock while waiting for the sandbox. Ending a session only shuts its keeper socket down (the
 * keeper then kills the sandbox): its fds stay valid until the last reference goes. */
#include "sessions.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "sha256.h"
#include "fs-util.h"
#include "hd-exchange.h"
#include "hd-store.h"
#include "runtime-embed.h"
#include "time-util.h"

typedef struct hs_session hs_session;
struct hs_session {
        hs_session *next;
        unsigned refs; /* the table's, plus one per thread using it */
        char id[PLIM_SESSION_ID_MAX + 1];
        char principal[SERVE_SHORT_STR_MAX];
        char owner[PLIM_OWNER_MAX + 1];
        char rule_id[REC_RULE_ID_SIZE];
        uint64_t opened_unix_ms, expires_unix_ms, expires_mono_ms;
        uint64_t idle_ms;
        uint64_t last_used_mono_ms;
        bool claimed;      /* a request named it since it opened */
        unsigned inflight; /* calls running or waiting */
        plim_session_end ended;
        char end_detail[PLIM_END_DETAIL_MAX];
        uint64_t ended_mono_ms;
        uint64_t calls_seen; /* the chain's count, readable under m->lock */
        pthread_mutex_t call;
        brk_session box;
        sbx_session sx;
        plim_chain chain;
        char log_name[SERVE_SHORT_STR_MAX];
        hd_store *store; /* the session's handles; NULL without a store */
        int store_fd;
        char store_path[SBX_PATH_MAX];
};

struct hs_manager {
        hs_config cfg;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        hs_session *head;
        unsigned opening; /* OpenSessions between their admission and the table */
        bool stopping;
        bool reaper_running;
        pthread_t reaper;
        int audit_fd;                  /* -1: no audit logs */
        char stores_dir[SBX_PATH_MAX]; /* handles_dir/serve-PID, "" without handles */
        hs_session *grave;             /* sessions without references, to free outside the lock */
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
        hd_store_free(s->store);
        safe_close(s->store_fd);
        if (s->store_path[0])
                (void) rm_rf_at(AT_FDCWD, s->store_path);
        pthread_mutex_destroy(&s->call);
        free(s);
}

/* The last reference gone: the session waits in the grave until bury() frees it, outside
 * m->lock (removing a store of many files must not hold up every other session). */
static void unref_locked(hs_manager *m, hs_session *s) {
        if (--s->refs == 0) {
                s->next = m->grave;
                m->grave = s;
        }
}

static void bury(hs_manager *m) {
        pthread_mutex_lock(&m->lock);
        hs_session *g = m->grave;
        m->grave = NULL;
        pthread_mutex_unlock(&m->lock);
        while (g) {
                hs_session *next = g->next;
                session_free(g);
                g = next;
        }
}

static void unref(hs_manager *m, hs_session *s) {
        pthread_mutex_lock(&m->lock);
        unref_locked(m, s);
        pthread_mutex_unlock(&m->lock);
        bury(m);
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
        else if (s->ended == PLIM_SESSION_END_UNSPECIFIED && s->inflight == 0 &&
                 now - s->last_used_mono_ms >= s->idle_ms)
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

/* How the session stands after a call (a broken control socket ends it now): its end reason,
 * UNSPECIFIED while open, and the detail. */
static plim_session_end end_now(hs_manager *m, hs_session *s, char detail[PLIM_END_DETAIL_MAX]) {
        pthread_mutex_lock(&m->lock);
        if (s->sx.dead)
                end_locked(m, s, PLIM_SESSION_END_MAIN_PROCESS_ENDED, "the sandbox ended");
        plim_session_end why = s->ended;
        memcpy(detail, s->end_detail, PLIM_END_DETAIL_MAX);
        pthread_mutex_unlock(&m->lock);
        return why;
}

/* A call the session's end cut: internal (it may have run) with SessionEnded. */
static int fail_cut(plim_error *f, plim_session_end why, const char *detail) {
        plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the session ended during the call (%s: %s)",
                  plim_session_end_to_string(why), detail);
        plim_error_session_ended(f, why, detail);
        return -1;
}

static void call_end(hs_manager *m, hs_session *s) {
        s->sx.hangup_fd = -1;
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
                        struct pollfd p = {.fd = s->box.keeper_fd, .events = POLLIN};
                        if (poll(&p, 1, 0) > 0 && brk_session_ended(&s->box, &oom) > 0)
                                end_locked(m, s,
                                           oom ? PLIM_SESSION_END_BOUNDARY_FAILED : PLIM_SESSION_END_MAIN_PROCESS_ENDED,
                                           oom ? "the sandbox's init was killed by its memory limit"
                                               : "the sandbox ended");
                        else if (now >= s->expires_mono_ms)
                                end_locked(m, s, PLIM_SESSION_END_EXPIRED, "the session's lifetime is over");
                        else if (s->inflight == 0 && now - s->last_used_mono_ms >= s->idle_ms)
                                end_locked(m, s, s->claimed ? PLIM_SESSION_END_EXPIRED : PLIM_SESSION_END_UNCLAIMED,
                                           s->claimed ? "idle for longer than the idle timeout"
                                                      : "never used before the idle timeout");
                } else if (now - s->ended_mono_ms >= SERVE_SESSION_SUMMARY_MS && s->inflight == 0) {
                        *pp = s->next;
                        unref_locked(m, s);
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
                if (m->grave) {
                        pthread_mutex_unlock(&m->lock);
                        bury(m);
                        pthread_mutex_lock(&m->lock);
                }
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

/* Stores never outlive their daemon: each daemon keeps its sessions' stores in
 * handles_dir/serve-PID; at start, the directories of daemons no longer running (a kill -9) are
 * removed, then this daemon's own is made (mode 0711: the sandbox user passes through it). */
static int stores_prepare(hs_manager *m, hull_error *e) {
        _cleanup_close_ int dfd = open(m->cfg.handles_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return hull_err(e, negative_errno(), "sessions: cannot open the handle stores' directory %s",
                                m->cfg.handles_dir);
        DIR *d = fdopendir(fcntl(dfd, F_DUPFD_CLOEXEC, 3));
        unsigned removed = 0;
        struct dirent *de;
        while (d && (de = readdir(d))) {
                char *end;
                if (strncmp(de->d_name, "serve-", 6) != 0)
                        continue;
                errno = 0;
                long pid = strtol(de->d_name + 6, &end, 10);
                if (errno || *end || pid <= 0 || pid > INT32_MAX || (kill((pid_t) pid, 0) == 0 || errno != ESRCH))
                        continue;
                if (rm_rf_at(dfd, de->d_name) >= 0)
                        removed++;
        }
        if (d)
                closedir(d);
        if (removed)
                dlog_log(m->cfg.log, DLOG_INFO, "event=stale-stores-removed count=%u", removed);
        if ((size_t) snprintf(m->stores_dir, sizeof(m->stores_dir), "%s/serve-%d", m->cfg.handles_dir,
                              (int) getpid()) >= sizeof(m->stores_dir))
                return hull_err(e, -ENAMETOOLONG, "sessions: the handle stores' path is too long");
        (void) rm_rf_at(AT_FDCWD, m->stores_dir); /* a reused pid's */
        if (mkdir(m->stores_dir, 0711) < 0 || chmod(m->stores_dir, 0711) < 0)
                return hull_err(e, negative_errno(), "sessions: cannot create %s", m->stores_dir);
        return 0;
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
                        return hull_err_hint(e, r, "create it, or pass another --audit-dir",
                                             "sessions: cannot open the audit directory %s", cfg->audit_dir);
                }
        }
        if (cfg->handles_dir) {
                int r = stores_prepare(m, e);
                if (r < 0) {
                        hs_free(m);
                        return r;
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
                struct timespec ts = {0, 20 * 1000000L};
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
                unref_locked(m, s);
        }
        bury(m);
        safe_close(m->audit_fd);
        if (m->stores_dir[0])
                (void) rm_rf_at(AT_FDCWD, m->stores_dir);
        pthread_cond_destroy(&m->wake);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

/* ---- helpers ---- */

/* An infrastructure fault: the detail (paths, errno) goes to the log only. */
static int fail_internal(plim_error *f, const hs_manager *m, const char *what, const hull_error *e) {
        char clean[HULL_ERROR_MSG_MAX];
        dlog_log(m->cfg.log, DLOG_ERROR, "event=session-error what=%s error=\"%s\"", what,
                 dlog_clean(e->msg, clean, sizeof(clean)));
        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE,
                         "internal error in %s (hull serve's log has the detail)", what);
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
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE,
                                 "internal error in a workspace operation (%s)", strerror(-r));
        }
}

/* Workspace files as the sandbox user (see sbx_session_fs_enter). */
static void fs_enter(const hs_session *s) {
        sbx_session_fs_enter(s->box.host_uid, s->box.host_gid);
}

static void fs_leave(void) {
        sbx_session_fs_leave();
}

static void audit_append(hs_manager *m, hs_session *s, const plim_call_record *rec) {
        if (m->audit_fd < 0 || !rec->record)
                return;
        json_t *entry = NULL;
        hull_error e = {0};
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
static int exec_plan(hs_session *s, const sbx_plan *req, sbx_plan_result *res, hull_error *e) {
        *res = (sbx_plan_result){.started_unix_ms = now_unix_ms()};
        int r = sbx_plan_run_in_session(&s->sx, s->box.host_uid, s->box.host_gid, NULL, -1, req, res, e);
        res->ended_unix_ms = now_unix_ms();
        if (r < 0)
                return r;
        if (!res->detail)
                res->detail = strdup("");
        return res->detail ? 0 : hull_err(e, -ENOMEM, "session: out of memory");
}

/* ---- the session's handle store ---- */

/* A fresh directory below handles_dir named by the fingerprint (mode 0755: the sandbox user reads
 * it through the read-only bind at /handles), and the store in it. */
static int store_open(hs_manager *m, hs_session *s, hull_error *e) {
        if ((size_t) snprintf(s->store_path, sizeof(s->store_path), "%s/%s", m->stores_dir, s->chain.session) >=
            sizeof(s->store_path)) {
                s->store_path[0] = '\0';
                return hull_err(e, -ENAMETOOLONG, "the handle store's path is too long");
        }
        if (mkdir(s->store_path, 0755) < 0) {
                int r = negative_errno();
                s->store_path[0] = '\0';
                return hull_err(e, r, "cannot create the session's handle store");
        }
        (void) chmod(s->store_path, 0755);
        s->store_fd = open(s->store_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s->store_fd < 0)
                return hull_err(e, negative_errno(), "cannot open the session's handle store");
        /* The hull module, for any python in the session: PYTHONPATH=/handles (never a handle's
         * name: those end in .json, .txt, .sqlite or .bin). */
        _cleanup_close_ int mod =
                openat(s->store_fd, "hull.py", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (mod < 0 || loop_write(mod, hull_runtime_hull_py, hull_runtime_hull_py_len) < 0)
                return hull_err(e, mod < 0 ? negative_errno() : -EIO,
                                "cannot write the hull module into the handle store");
        return hd_store_open(s->store_fd, NULL, &s->store, e);
}

static hd_format format_of_kind(const char *kind) {
        if (strcmp(kind, "table") == 0)
                return HD_FORMAT_SQLITE;
        if (strcmp(kind, "json") == 0)
                return HD_FORMAT_JSON;
        if (strcmp(kind, "text") == 0)
                return HD_FORMAT_TEXT;
        return HD_FORMAT_BINARY;
}

/* Bytes the session's handles hold (the manifest's sizes). */
static uint64_t store_bytes(hs_session *s) {
        json_t *arr = NULL;
        hull_error e = {0};
        uint64_t total = 0;
        if (hd_list(s->store, &arr, &e) < 0)
                return 0;
        for (size_t i = 0; i < json_array_size(arr); i++)
                total += (uint64_t) json_integer_value(json_object_get(json_array_get(arr, i), "bytes"));
        json_decref(arr);
        return total;
}

/* Append n bytes to a NUL-terminated buffer of *len bytes, best effort (out of memory: dropped). */
static void append(char **buf, size_t *len, const char *add, size_t n) {
        if (n == 0)
                return;
        char *b = realloc(*buf, *len + n + 1);
        if (!b)
                return;
        memcpy(b + *len, add, n);
        *len += n;
        b[*len] = '\0';
        *buf = b;
}

/* A growing, bounded list of note lines for the call's stderr (or its emitted values, for stdout). */
typedef struct notes {
        char *buf;
        size_t len;
} notes;

static void note(notes *n, const char *fmt, ...) _printf_(2, 3);
static void note(notes *n, const char *fmt, ...) {
        char line[HULL_ERROR_MSG_MAX + 64];
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        if (k < 0 || n->len > HS_NOTES_MAX)
                return;
        size_t add = MIN((size_t) k, sizeof(line) - 2);
        line[add++] = '\n';
        append(&n->buf, &n->len, line, add);
}

/* After a call that had exchange directory rel: adopt what the hull module saved, keep a large
 * emit as a handle, deliver publish requests as binary handles, and say what happened (and what
 * was refused) in notes; inline emits are appended to *out. The directory is removed. */
static void exchange_collect(hs_manager *m, hs_session *s, const char *rel, notes *n, notes *out) {
        hd_exchange x;
        hull_error e = {0};
        hd_exchange_limits lim = {
                .new_handles_bytes_max = HD_EXCHANGE_NEW_HANDLES_BYTES_MAX,
                .adopt_max = HD_EXCHANGE_ADOPT_MAX,
                .emit_inline_max = HD_EXCHANGE_EMIT_INLINE_MAX,
                .payload_bytes_max = HD_EXCHANGE_PAYLOAD_MAX,
                .publish_bytes_max = HD_EXCHANGE_PUBLISH_BYTES_MAX,
                .publish_max = HD_EXCHANGE_PUBLISH_MAX,
        };
        hd_exchange_init(&x);
        fs_enter(s);
        int r = hd_exchange_read(s->sx.ws_fd, rel, &lim, &x, &e);
        fs_leave();
        if (r < 0)
                note(n, "[hull] the call's handles could not be read: %s", e.msg);
        /* The store's size only when something is to be stored (it walks every handle). */
        uint64_t used = r >= 0 && (x.n_handles || x.emit_too_large || x.n_publish) ? store_bytes(s) : 0;
        for (size_t i = 0; r >= 0 && i < x.n_handles; i++) {
                json_t *sum = NULL;
                hull_error ae = {0};
                if (used + x.handles[i].size > HS_STORE_BYTES_MAX) {
                        note(n,
                             "[hull] handle %s was not saved: the session's handles would exceed %llu bytes; query or "
                             "delete data first",
                             x.handles[i].id, (unsigned long long) HS_STORE_BYTES_MAX);
                        continue;
                }
                if (hd_adopt_fd(s->store, x.handles[i].fd, x.handles[i].id, format_of_kind(x.handles[i].kind),
                                x.handles[i].source, &sum, &ae) < 0)
                        note(n, "[hull] handle %s was not saved: %s", x.handles[i].id, ae.msg);
                else /* what was really stored: the file may have grown after it was opened */
                        used += (uint64_t) json_integer_value(json_object_get(sum, "bytes"));
                json_decref(sum);
        }
        if (r >= 0 && x.emit_too_large && used + x.emit_size > HS_STORE_BYTES_MAX)
                note(n,
                     "[hull] the emitted value (over 1 MiB) was not kept: the session's handles would exceed %llu "
                     "bytes",
                     (unsigned long long) HS_STORE_BYTES_MAX);
        else if (r >= 0 && x.emit_too_large) {
                json_t *sum = NULL;
                hull_error ae = {0};
                if (hd_adopt_fd(s->store, x.emit_fd, NULL, HD_FORMAT_JSON, "emit", &sum, &ae) < 0)
                        note(n, "[hull] the emitted value (over 1 MiB) could not be kept: %s", ae.msg);
                else {
                        note(n, "[hull] the emitted value was over 1 MiB: kept as handle %s",
                             json_string_value(json_object_get(sum, "id")));
                        used += (uint64_t) json_integer_value(json_object_get(sum, "bytes"));
                }
                json_decref(sum);
        } else if (r >= 0 && x.emit) {
                if (out->len + x.emit_len + 1 <= HD_EXCHANGE_EMIT_INLINE_MAX + 1) {
                        append(&out->buf, &out->len, x.emit, x.emit_len);
                        append(&out->buf, &out->len, "\n", 1);
                }
        }
        for (size_t i = 0; r >= 0 && i < x.n_publish; i++) {
                /* Delivered from the sandbox user's view: the jail, a regular file, capped. */
                hull_error pe = {0};
                fs_enter(s);
                int fd = ws_open(s->sx.ws_fd, x.publish[i].path, O_RDONLY | O_NONBLOCK, 0, &pe);
                fs_leave();
                struct stat st;
                if (fd >= 0 &&
                    (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size > HD_EXCHANGE_PAYLOAD_MAX)) {
                        hull_err(&pe, -EINVAL, "%s is not a regular file of at most %llu bytes", x.publish[i].path,
                                 (unsigned long long) HD_EXCHANGE_PAYLOAD_MAX);
                        fd = safe_close(fd);
                }
                if (fd >= 0 && used + (uint64_t) st.st_size > HS_STORE_BYTES_MAX) {
                        hull_err(&pe, -EFBIG, "the session's handles would exceed %llu bytes",
                                 (unsigned long long) HS_STORE_BYTES_MAX);
                        fd = safe_close(fd);
                }
                if (fd < 0) {
                        note(n, "[hull] %s was not published: %s", x.publish[i].path, pe.msg);
                        continue;
                }
                char source[HD_SOURCE_MAX];
                snprintf(source, sizeof(source), "published %s%s%s", x.publish[i].path,
                         x.publish[i].description[0] ? ": " : "", x.publish[i].description);
                json_t *sum = NULL;
                if (hd_adopt_fd(s->store, fd, NULL, HD_FORMAT_BINARY, source, &sum, &pe) < 0)
                        note(n, "[hull] %s was not published: %s", x.publish[i].path, pe.msg);
                else {
                        note(n, "[hull] published %s as handle %s", x.publish[i].path,
                             json_string_value(json_object_get(sum, "id")));
                        used += (uint64_t) json_integer_value(json_object_get(sum, "bytes"));
                }
                json_decref(sum);
                safe_close(fd);
        }
        for (size_t i = 0; i < x.n_errors; i++)
                note(n, "[hull] %s", x.errors[i]);
        if (x.errors_dropped)
                note(n, "[hull] ... and %zu more problems with the call's handles", x.errors_dropped);
        hd_exchange_done(&x);
        fs_enter(s);
        (void) hd_exchange_remove(s->sx.ws_fd, rel, &e);
        fs_leave();
        dlog_log(m->cfg.log, DLOG_DEBUG, "event=exchange session=%.12s", s->chain.session);
}

/* ---- OpenSession ---- */

static void do_open(hs_manager *m, const char *principal, const char *body, size_t len, hs_answer *ret) {
        plim_open_request req = {0};
        plim_error *f = &ret->f;
        hull_error e = {0};

        if (plim_open_parse(body, len, &req, f) < 0)
                return;
        if (plim_open_admit(&req, m->cfg.evidence, f) < 0)
                goto out;
        pthread_mutex_lock(&m->lock);
        /* At the owner's cap, its least recently used idle session makes room — ended only once
         * the new one is open, so a failed open loses nothing. */
        unsigned mine = 0, callers = 0;
        hs_session *lru = NULL;
        for (hs_session *s = m->head; s; s = s->next)
                if (s->ended == PLIM_SESSION_END_UNSPECIFIED && strcmp(s->principal, principal) == 0) {
                        callers++;
                        if (strcmp(s->owner, req.owner) != 0)
                                continue;
                        mine++;
                        if (s->inflight == 0 && (!lru || s->last_used_mono_ms < lru->last_used_mono_ms))
                                lru = s;
                }
        bool replace = m->cfg.max_per_owner && mine >= m->cfg.max_per_owner;
        /* A caller is bounded whatever owners it names, or one token could take every session. */
        if (!replace && m->cfg.max_per_caller && callers >= m->cfg.max_per_caller) {
                pthread_mutex_unlock(&m->lock);
                plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                          "this caller has %u sessions open, its maximum; close one or retry later; nothing ran",
                          m->cfg.max_per_caller);
                goto out;
        }
        if (replace && !lru) {
                pthread_mutex_unlock(&m->lock);
                plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                          "every one of this owner's %u sessions is busy; retry later; nothing ran",
                          m->cfg.max_per_owner);
                goto out;
        }
        if (m->stopping || (!replace && open_count_locked(m) >= m->cfg.max_sessions)) {
                pthread_mutex_unlock(&m->lock);
                plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                          "hull serve has %u sessions open, its maximum; close one or retry later; nothing ran",
                          m->cfg.max_sessions);
                goto out;
        }
        hs_session *victim = replace ? lru : NULL;
        if (victim)
                victim->refs++;
        m->opening++;
        pthread_mutex_unlock(&m->lock);

        hs_session *s = calloc(1, sizeof(*s));
        brk_session_spec spec = {
                .memory_bytes = m->cfg.memory_bytes, .pids = m->cfg.pids, .tmp_bytes = m->cfg.tmp_bytes};
        uint8_t rnd[16];
        int r = s ? 0 : -ENOMEM;
        if (r == 0 && getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                r = -EIO;
        if (r < 0) {
                free(s);
                pthread_mutex_lock(&m->lock);
                m->opening--;
                if (victim)
                        unref_locked(m, victim);
                pthread_mutex_unlock(&m->lock);
                hull_err(&e, r, "cannot make a session id");
                fail_internal(f, m, "open", &e);
                goto out;
        }
        for (size_t i = 0; i < sizeof(rnd); i++)
                snprintf(s->id + 2 * i, 3, "%02x", rnd[i]);
        s->store_fd = -1;
        s->box = (brk_session){.keeper_fd = -1, .ctl_fd = -1, .ws_fd = -1, .pidfd = -1, .bpf_fd = -1};
        r = plim_chain_init(&s->chain, s->id);
        if (r < 0)
                hull_err(&e, r, "cannot make the session's fingerprint");
        if (r >= 0 && m->cfg.handles_dir)
                r = store_open(m, s, &e);
        if (r >= 0) {
                spec.handles_dir = s->store_path[0] ? s->store_path : NULL;
                r = brk_session_open(m->cfg.broker, &spec, &s->box, &e);
        }
        if (r < 0) {
                brk_session_close(&s->box);
                hd_store_free(s->store);
                safe_close(s->store_fd);
                if (s->store_path[0])
                        (void) rm_rf_at(AT_FDCWD, s->store_path);
                free(s);
                pthread_mutex_lock(&m->lock);
                m->opening--;
                if (victim)
                        unref_locked(m, victim);
                pthread_mutex_unlock(&m->lock);
                if (r == -EAGAIN)
                        plim_fail(f, PLIM_CODE_UNAVAILABLE, PLIM_REASON_CAPACITY, "%s; nothing ran", e.msg);
                else
                        fail_internal(f, m, "open", &e);
                goto out;
        }
        pthread_mutex_init(&s->call, NULL);
        sbx_session_init(&s->sx, s->box.ctl_fd, s->box.ws_fd, s->box.pidfd, s->box.bpf_fd, s->box.cg_fds,
                         s->box.n_cg_fds, m->cfg.zygote_fd);
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
                if (victim)
                        unref_locked(m, victim);
                pthread_mutex_unlock(&m->lock);
                session_free(s);
                plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                goto out;
        }
        s->next = m->head;
        m->head = s;
        if (victim) {
                end_locked(m, victim, PLIM_SESSION_END_REPLACED, "replaced by a newer session of the same owner");
                unref_locked(m, victim);
        }
        pthread_mutex_unlock(&m->lock);
        metrics_session_opened(m->cfg.metrics);
        ret->ok = true;
        snprintf(ret->note, sizeof(ret->note), "session=%.12s", s->chain.session);
        dlog_log(m->cfg.log, DLOG_INFO,
                 "event=session-opened session=%.12s owner=%s idle_ms=%" PRIu64 " lifetime_ms=%" PRIu64,
                 s->chain.session, s->owner[0] ? s->owner : "-", idle, lifetime);
out:
        plim_open_request_done(&req);
}

/* ---- SessionRun ---- */

static void do_session_run(hs_manager *m, const char *principal, const char *body, size_t len, uint64_t received,
                           int watch_fd, hs_answer *ret) {
        plim_request req = {0};
        plim_error *f = &ret->f;
        hull_error e = {0};
        sbx_plan plan = {0};
        sbx_plan_result res = {0};
        plim_call_record rec = {0};
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
        s->sx.hangup_fd = watch_fd;

        int r;
        sbx_cell_result cell = {0};
        bool is_cell = req.kind == PLIM_KIND_CELL;
        if (is_cell) {
                sbx_lang lang = SBX_LANG_PYTHON;
                (void) sbx_lang_from_string(req.cell_language, &lang);
                r = 0;
                for (size_t i = 0; i < req.n_files && r >= 0; i++) {
                        hull_error we = {0};
                        fs_enter(s);
                        int wr = ws_write(s->sx.ws_fd, req.files[i].path, req.files[i].content,
                                          req.files[i].content_len, WS_WRITE_MKDIRS, &we);
                        fs_leave();
                        if (wr < 0) {
                                /* Nothing of the cell ran: a refusal, not counted. */
                                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                          "cannot write %s: %s; the cell did not run", req.files[i].path, we.msg);
                                goto out;
                        }
                }
                char xrel[HD_EXCHANGE_REL_SIZE] = "", xpath[HD_EXCHANGE_REL_SIZE + 16] = "";
                if (s->store && lang == SBX_LANG_PYTHON) {
                        hull_error xe = {0};
                        fs_enter(s);
                        if (hd_exchange_create(s->sx.ws_fd, xrel, &xe) < 0) {
                                xrel[0] = '\0';
                                dlog_log(m->cfg.log, DLOG_WARN, "event=exchange-failed session=%.12s error=\"%s\"",
                                         s->chain.session, xe.msg);
                        }
                        fs_leave();
                        if (xrel[0])
                                snprintf(xpath, sizeof(xpath), "/workspace/%s", xrel);
                }
                r = sbx_session_cell_x(&s->sx, lang, req.code, req.code_len, xpath[0] ? xpath : NULL,
                                       req.effective_timeout_ms, PLIM_JS_OUTPUT_BYTES, -1, &cell, &e);
                if (xrel[0] && !s->sx.dead) {
                        notes errs = {0}, outs = {0};
                        exchange_collect(m, s, xrel, &errs, &outs);
                        if (r >= 0) {
                                append(&cell.out, &cell.out_len, outs.buf, outs.len);
                                append(&cell.err, &cell.err_len, errs.buf, errs.len);
                        }
                        free(errs.buf);
                        free(outs.buf);
                }
        } else {
                r = plim_plan(&req, m->cfg.evidence, &plan);
                char js_name[40] = "";
                if (r >= 0 && req.kind == PLIM_KIND_JAVASCRIPT && plan.n_files == 1) {
                        /* Not main.mjs: that may be the agent's own file. A private name at the
                         * top (so relative imports resolve as from main.mjs), removed after. */
                        uint8_t rnd[8];
                        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                                memset(rnd, 0, sizeof(rnd));
                        snprintf(js_name, sizeof(js_name), ".hull-run-%02x%02x%02x%02x%02x%02x%02x%02x.mjs", rnd[0],
                                 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
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
                char detail[PLIM_END_DETAIL_MAX];
                plim_session_end why = end_now(m, s, detail);
                /* A session ended on purpose (closed, expired, replaced) cuts its call: not a fault. */
                char clean[HULL_ERROR_MSG_MAX];
                dlog_log(m->cfg.log,
                         why == PLIM_SESSION_END_UNSPECIFIED || why == PLIM_SESSION_END_MAIN_PROCESS_ENDED ? DLOG_ERROR
                                                                                                           : DLOG_INFO,
                         "event=session-call-failed session=%.12s ended=%s error=\"%s\"", s->chain.session,
                         plim_session_end_to_string(why), dlog_clean(e.msg, clean, sizeof(clean)));
                if (why != PLIM_SESSION_END_UNSPECIFIED)
                        fail_cut(f, why, detail);
                else
                        plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE,
                                  "the call failed: internal error (hull serve's log has the detail)");
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
        plim_cell_result pc = {0};
        if (is_cell)
                pc = (plim_cell_result){.exit_code = cell.exit_code,
                                        .timed_out = cell.timed_out,
                                        .out = cell.out,
                                        .err = cell.err,
                                        .out_len = cell.out_len,
                                        .err_len = cell.err_len,
                                        .out_truncated = cell.out_truncated,
                                        .err_truncated = cell.err_truncated,
                                        .interpreter_started = cell.interpreter_started,
                                        .interpreter_ended = cell.interpreter_ended,
                                        .wall_us = cell.wall_us};
        char detail[PLIM_END_DETAIL_MAX];
        plim_session_end why = end_now(m, s, detail);
        r = plim_session_run_answer(&req, is_cell ? NULL : &res, is_cell ? &pc : NULL, m->cfg.evidence, &s->chain,
                                    received, ended, why, detail, &ret->body, &ret->len, &rec, f);
        sbx_cell_result_done(&cell);
        if (r == -ENOMEM)
                plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        if (r < 0) {
                if (f->reason == PLIM_REASON_NONE &&
                    plim_unanswered_error(&req, m->cfg.evidence, &s->chain, received, ended, f, &rec) == 0) {
                        audit_append(m, s, &rec);
                        plim_chain_advance(&s->chain, &rec);
                }
                goto out;
        }
        audit_append(m, s, &rec);
        plim_chain_advance(&s->chain, &rec);
        ret->ok = true;
        snprintf(ret->note, sizeof(ret->note), "session=%.12s call=%" PRIu64 " kind=%s", s->chain.session,
                 s->chain.calls, plim_kind_to_string(req.kind));
out:
        if (in_call)
                call_end(m, s);
        if (s)
                unref(m, s);
        plim_call_record_done(&rec);
        sbx_plan_result_done(&res);
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
                snprintf(ret->note, sizeof(ret->note), "session=%.12s calls=%" PRIu64, s->chain.session,
                         s->chain.calls);
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
                        v[k++] = (hull_api_session_info){.session_id = s->id,
                                                         .fingerprint = s->chain.session,
                                                         .owner = s->owner,
                                                         .opened_unix_ms = s->opened_unix_ms,
                                                         .expires_unix_ms = s->expires_unix_ms,
                                                         .idle_timeout_ms = (uint32_t) s->idle_ms,
                                                         .calls = s->calls_seen};
        int r = v ? hull_api_list_answer(v, k, &ret->body, &ret->len) : -ENOMEM;
        pthread_mutex_unlock(&m->lock);
        free(v);
        if (r < 0)
                plim_fail(&ret->f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        else
                ret->ok = true;
}

/* ---- /hull.v1.Handles ---- */

static int fail_store(plim_error *f, int r, const hull_error *e) {
        switch (-r) {
        case ENOENT:
                return plim_fail(f, PLIM_CODE_NOT_FOUND, PLIM_REASON_REQUEST, "%s", e->msg);
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

/* A display name from an upload: its last path segment, without control characters. */
static void clean_name(const char *name, char *ret, size_t size) {
        const char *base = name;
        for (const char *c = name; *c; c++)
                if (*c == '/' || *c == '\\')
                        base = c + 1;
        size_t k = 0;
        for (const char *c = base; *c && k + 1 < size; c++)
                if ((unsigned char) *c >= 0x20 && *c != 0x7f)
                        ret[k++] = *c;
        ret[k] = '\0';
        if (k == 0 || strcmp(ret, ".") == 0 || strcmp(ret, "..") == 0)
                snprintf(ret, size, "file");
}

/* Handles/Read of a binary handle (an input, a published file): a slice of its bytes, base64,
 * after hd_summary() has checked the file against its digest; and the whole file's SHA-256. */
static int read_binary(hs_session *s, const hull_api_request *req, json_t **ret, hull_error *e) {
        json_t *sum = NULL;
        int r = hd_summary(s->store, req->handles.id, &sum, e);
        if (r < 0)
                return r;
        const char *kind = json_string_value(json_object_get(sum, "kind"));
        const char *path = json_string_value(json_object_get(sum, "path"));
        if (!kind || strcmp(kind, "binary") != 0 || !path) {
                json_decref(sum);
                return hull_err(e, -EMEDIUMTYPE, "handle %s is a table: use Inspect or Query", req->handles.id);
        }
        _cleanup_close_ int fd = openat(s->store_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        json_decref(sum);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_err(e, -EIO, "handle %s: its file cannot be read", req->handles.id);
        uint64_t limit = req->handles.limit ? MIN(req->handles.limit, (uint64_t) HULL_API_BINARY_READ_MAX)
                                            : HULL_API_BINARY_READ_MAX;
        uint64_t size = (uint64_t) st.st_size, off = MIN(req->handles.offset, size);
        size_t n = (size_t) MIN(limit, size - off);
        _cleanup_free_ char *buf = malloc(n + 1);
        char hex[SHA256_HEX_SIZE];
        _cleanup_sha256_ sha256_ctx c = {0};
        if (!buf || sha256_init(&c) < 0)
                return hull_err(e, -ENOMEM, "out of memory");
        /* A slice that is the whole file also gets its SHA-256 (a partial one does not: reading a
         * large file in pieces must not hash it whole each time). */
        bool whole = off == 0 && n == size;
        if (!whole) {
                ssize_t k = n ? pread(fd, buf, n, (off_t) off) : 0;
                if (k < 0 || (size_t) k != n)
                        return hull_err(e, -EIO, "handle %s: short read", req->handles.id);
                json_t *content = plim_json_base64(buf, n);
                *ret = content ? json_pack("{s:s,s:I,s:I,s:I,s:b,s:o}", "id", req->handles.id, "offset",
                                           (json_int_t) off, "length", (json_int_t) n, "total_bytes", (json_int_t) size,
                                           "eof", off + n >= size, "content", content)
                               : NULL;
                return *ret ? 0 : hull_err(e, -ENOMEM, "out of memory");
        }
        char chunk[SBX_READ_CHUNK];
        for (uint64_t at = 0; at < size;) {
                ssize_t k = pread(fd, chunk, (size_t) MIN((uint64_t) sizeof(chunk), size - at), (off_t) at);
                if (k <= 0)
                        return hull_err(e, -EIO, "handle %s: short read", req->handles.id);
                if (sha256_update(&c, chunk, (size_t) k) < 0)
                        return hull_err(e, -EIO, "handle %s: cannot hash", req->handles.id);
                if (at + (uint64_t) k > off && at < off + n) {
                        uint64_t from = MAX(at, off), to = MIN(at + (uint64_t) k, off + n);
                        memcpy(buf + (from - off), chunk + (from - at), (size_t) (to - from));
                }
                at += (uint64_t) k;
        }
        if (sha256_final_hex(&c, hex) < 0)
                return hull_err(e, -EIO, "handle %s: cannot hash", req->handles.id);
        json_t *content = plim_json_base64(buf, n);
        *ret = content ? json_pack("{s:s,s:I,s:I,s:I,s:b,s:o,s:s}", "id", req->handles.id, "offset", (json_int_t) off,
                                   "length", (json_int_t) n, "total_bytes", (json_int_t) size, "eof", off + n >= size,
                                   "content", content, "sha256", hex)
                       : NULL;
        return *ret ? 0 : hull_err(e, -ENOMEM, "out of memory");
}

/* An input also appears under /workspace/inputs/<inputId>/<name>, as a link to its read-only file
 * in /handles (resolved inside the sandbox; the bytes stay in the store, whatever sandboxed code
 * does to the link). Made as the sandbox user, never through a link: best effort. */
static void input_link(hs_session *s, const char *id, const char *name, const char *store_path) {
        char target[SBX_PATH_MAX];
        if (!store_path || (size_t) snprintf(target, sizeof(target), "/handles/%s", store_path) >= sizeof(target))
                return;
        hull_error e = {0};
        fs_enter(s);
        (void) mkdirat(s->sx.ws_fd, "inputs", 0755);
        _cleanup_close_ int dir = ws_open(s->sx.ws_fd, "inputs", O_RDONLY | O_DIRECTORY, 0, &e);
        if (dir >= 0 && (mkdirat(dir, id, 0755) == 0 || errno == EEXIST)) {
                _cleanup_close_ int sub = openat(dir, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0)
                        (void) symlinkat(target, sub, name);
        }
        fs_leave();
}

static int do_handles(hs_manager *m, hs_session *s, hull_api_procedure p, const hull_api_request *req, hs_answer *ret) {
        plim_error *f = &ret->f;
        hull_error e = {0};
        json_t *j = NULL;
        int r;
        (void) m;
        if (!s->store)
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                 "this hull serve keeps no handle store; nothing ran");
        switch (p) {
        case HULL_API_HANDLES_LIST: {
                /* Full summaries (checked against their digests; derived once, then cached). */
                json_t *arr = NULL, *full = json_array();
                r = full ? hd_list(s->store, &arr, &e) : hull_err(&e, -ENOMEM, "out of memory");
                for (size_t i = 0; r >= 0 && i < json_array_size(arr); i++) {
                        json_t *sum = NULL;
                        hull_error se = {0};
                        const char *id = json_string_value(json_object_get(json_array_get(arr, i), "id"));
                        if (id && hd_summary(s->store, id, &sum, &se) >= 0)
                                json_array_append_new(full, sum);
                        else { /* a tampered or unreadable handle: listed with what the manifest says, and why */
                                json_t *h = json_deep_copy(json_array_get(arr, i));
                                if (h) {
                                        json_object_set_new(h, "error", json_string(se.msg));
                                        json_array_append_new(full, h);
                                }
                        }
                }
                json_decref(arr);
                if (r >= 0)
                        j = json_pack("{s:o}", "handles", full);
                else
                        json_decref(full);
                break;
        }
        case HULL_API_HANDLES_INSPECT: {
                hd_inspect_opts o = {.head = req->handles.head, .tail = req->handles.tail, .stats = req->handles.stats};
                r = hd_inspect(s->store, req->handles.id, &o, &j, &e);
                break;
        }
        case HULL_API_HANDLES_QUERY: {
                hd_query_opts o = {.max_rows = req->handles.max_rows};
                const char **ids = req->handles.ids;
                size_t n = req->handles.n_ids;
                _cleanup_free_ const char **all = NULL;
                json_t *list = NULL;
                if (n == 0) { /* every table handle of the session */
                        r = hd_list(s->store, &list, &e);
                        if (r >= 0) {
                                all = calloc(json_array_size(list) + 1, sizeof(char *));
                                for (size_t i = 0; all && i < json_array_size(list) && n < HULL_API_QUERY_HANDLES_MAX;
                                     i++) {
                                        json_t *h = json_array_get(list, i);
                                        const char *kind = json_string_value(json_object_get(h, "kind"));
                                        if (kind && strcmp(kind, "table") == 0)
                                                all[n++] = json_string_value(json_object_get(h, "id"));
                                }
                                ids = all;
                        }
                }
                r = hd_query(s->store, req->handles.sql, ids, n, &o, &j, &e);
                json_decref(list);
                break;
        }
        case HULL_API_HANDLES_READ: {
                json_t *sum = NULL;
                r = hd_summary(s->store, req->handles.id, &sum, &e);
                const char *kind = r >= 0 ? json_string_value(json_object_get(sum, "kind")) : NULL;
                if (r >= 0 && kind && strcmp(kind, "binary") == 0)
                        r = read_binary(s, req, &j, &e);
                else if (r >= 0)
                        r = hd_read(s->store, req->handles.id, req->handles.offset, req->handles.limit, &j, &e);
                json_decref(sum);
                break;
        }
        case HULL_API_HANDLES_ADD_INPUT: {
                char name[HULL_API_INPUT_NAME_MAX + 1], source[HD_SOURCE_MAX];
                clean_name(req->handles.name, name, sizeof(name));
                snprintf(source, sizeof(source), "input %s", name);
                r = hd_summary(s->store, req->handles.input_id, &j, &e);
                if (r >= 0) { /* idempotent by input id: the same upload answers the same handle */
                        const char *src = json_string_value(json_object_get(j, "source"));
                        const char *path = json_string_value(json_object_get(j, "path"));
                        json_int_t bytes = json_integer_value(json_object_get(j, "bytes"));
                        bool same =
                                src && path && strcmp(src, source) == 0 && (uint64_t) bytes == req->handles.content_len;
                        if (same) { /* and the same bytes */
                                _cleanup_close_ int fd =
                                        openat(s->store_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                                _cleanup_free_ char *have = malloc(req->handles.content_len + 1);
                                same = fd >= 0 && have &&
                                       loop_read(fd, have, req->handles.content_len + 1) ==
                                               (ssize_t) req->handles.content_len &&
                                       memcmp(have, req->handles.content, req->handles.content_len) == 0;
                        }
                        if (!same) {
                                json_decref(j);
                                j = NULL;
                                return plim_fail(f, PLIM_CODE_ALREADY_EXISTS, PLIM_REASON_REQUEST,
                                                 "handle %s already exists with other content; pick another inputId; "
                                                 "nothing changed",
                                                 req->handles.input_id);
                        }
                        break;
                }
                json_decref(j);
                j = NULL;
                if (store_bytes(s) + req->handles.content_len > HS_STORE_BYTES_MAX)
                        return plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                                         "the session's handles would exceed %llu bytes; nothing changed",
                                         (unsigned long long) HS_STORE_BYTES_MAX);
                r = hd_put(s->store, req->handles.input_id, HD_FORMAT_BINARY, source, req->handles.content,
                           req->handles.content_len, &j, &e);
                if (r >= 0)
                        input_link(s, req->handles.input_id, name, json_string_value(json_object_get(j, "path")));
                break;
        }
        case HULL_API_NONE:
        case HULL_API_UNKNOWN:
        case HULL_API_EXEC:
        case HULL_API_READ:
        case HULL_API_WRITE:
        case HULL_API_EDIT:
        case HULL_API_GLOB:
        case HULL_API_GREP:
        case HULL_API_PERSIST:
        case HULL_API_HYDRATE:
        case HULL_API_SESSIONS_LIST:
        case _HULL_API_PROCEDURE_MAX:
        default:
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "no such procedure; nothing ran");
        }
        if (r < 0) {
                json_decref(j);
                return fail_store(f, r, &e);
        }
        r = j ? plim_json_dump(j, &ret->body, &ret->len) : -ENOMEM;
        if (r < 0)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        return 0;
}

static void do_workspace(hs_manager *m, hull_api_procedure p, const char *principal, const char *body, size_t len,
                         int watch_fd, hs_answer *ret) {
        hull_api_request req = {0};
        plim_error *f = &ret->f;
        hull_error e = {0};
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
        s->sx.hangup_fd = watch_fd;
        int ws = s->sx.ws_fd;
        fs_enter(s);
        switch (p) {
        case HULL_API_EXEC: {
                /* With a store: `import hull` works (PYTHONPATH=/handles holds hull.py), and the
                 * call has an exchange directory for save/emit/publish ($HULL_EXCHANGE). The
                 * call's own variables come after, so they win. */
                char xrel[HD_EXCHANGE_REL_SIZE] = "";
                if (s->store) {
                        hull_error xe = {0};
                        if (hd_exchange_create(ws, xrel, &xe) < 0) {
                                xrel[0] = '\0';
                                dlog_log(m->cfg.log, DLOG_WARN, "event=exchange-failed session=%.12s error=\"%s\"",
                                         s->chain.session, xe.msg);
                        }
                }
                size_t n_env = 0;
                char **env = calloc(req.exec.n_env + 3, sizeof(char *));
                r = env ? 0 : -ENOMEM;
                if (r == 0 && s->store && !(env[n_env++] = strdup("PYTHONPATH=/handles")))
                        r = -ENOMEM;
                if (r == 0 && xrel[0] && asprintf(&env[n_env++], "HULL_EXCHANGE=/workspace/%s", xrel) < 0)
                        r = -ENOMEM;
                for (size_t i = 0; r == 0 && i < req.exec.n_env; i++)
                        if (asprintf(&env[n_env++], "%s=%s", req.exec.env[i].name, req.exec.env[i].value) < 0)
                                r = -ENOMEM;
                sbx_result sr = {0};
                if (r == 0)
                        r = sbx_session_shell(&s->sx, req.exec.command, env, req.exec.timeout_ms, PLIM_JS_OUTPUT_BYTES,
                                              -1, &sr, &e);
                else
                        hull_err(&e, r, "out of memory");
                for (size_t i = 0; env && i < n_env; i++)
                        free(env[i]);
                free(env);
                if (xrel[0] && !s->sx.dead) {
                        notes errs = {0}, outs = {0};
                        fs_leave();
                        exchange_collect(m, s, xrel, &errs, &outs);
                        fs_enter(s);
                        if (r >= 0) {
                                append(&sr.out, &sr.out_len, outs.buf, outs.len);
                                append(&sr.err, &sr.err_len, errs.buf, errs.len);
                        }
                        free(errs.buf);
                        free(outs.buf);
                }
                if (r < 0) {
                        char detail[PLIM_END_DETAIL_MAX];
                        plim_session_end why = end_now(m, s, detail);
                        if (r == -E2BIG || r == -EINVAL)
                                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s", e.msg);
                        else if (why != PLIM_SESSION_END_UNSPECIFIED)
                                fail_cut(f, why, detail);
                        else
                                fail_internal(f, m, "exec", &e);
                        break;
                }
                sbx_step_result st = {0};
                sbx_step_from_result(&st, &sr);
                sbx_result_done(&sr);
                r = hull_api_exec_answer(&st, &ret->body, &ret->len);
                free(st.out);
                free(st.err);
                if (r < 0)
                        plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                else
                        snprintf(ret->note, sizeof(ret->note), "session=%.12s exit=%d", s->chain.session,
                                 (int) st.status);
                break;
        }
        case HULL_API_READ: {
                ws_read_result rr = {0};
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
                        ws_read_result rr = {0};
                        r = ws_read(ws, req.write.path, 0, WS_READ_MAX_BYTES, &rr, &e);
                        if (r == -ENOENT) {
                                r = ws_write(ws, req.write.path, req.write.content, req.write.content_len,
                                             WS_WRITE_MKDIRS, &e);
                        } else if (r >= 0 && !rr.eof) {
                                r = hull_err(&e, -EFBIG, "%s is too large to append to", req.write.path);
                        } else if (r >= 0) {
                                char *buf = malloc(rr.len + req.write.content_len + 1);
                                if (!buf)
                                        r = hull_err(&e, -ENOMEM, "out of memory");
                                else {
                                        memcpy(buf, rr.data, rr.len);
                                        memcpy(buf + rr.len, req.write.content, req.write.content_len);
                                        r = ws_write(ws, req.write.path, buf, rr.len + req.write.content_len,
                                                     WS_WRITE_MKDIRS, &e);
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
                r = ws_edit(ws, req.edit.path, req.edit.old_text, req.edit.old_len, req.edit.new_text, req.edit.new_len,
                            0, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_edit_answer(&ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                break;
        case HULL_API_GLOB: {
                ws_glob_result gr = {0};
                ws_glob_opts go = {.hidden = req.glob.hidden};
                r = ws_glob(ws, req.glob.pattern, &go, &gr, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_glob_answer(&gr, &ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                ws_glob_result_done(&gr);
                break;
        }
        case HULL_API_GREP: {
                ws_grep_result gr = {0};
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
                ws_tar_stats st = {0};
                ws_tar_limits lim = {.bytes_max = HULL_API_PERSIST_BYTES_MAX};
                r = ws_persist_mem(ws, &lim, &buf, &blen, &st, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_persist_answer(buf, blen, &ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                free(buf);
                break;
        }
        case HULL_API_HYDRATE: {
                ws_tar_stats st = {0};
                ws_tar_limits lim = {0};
                r = ws_hydrate_mem(ws, req.hydrate.archive, req.hydrate.archive_len, &lim, &st, &e);
                if (r < 0)
                        fail_ws(f, r, &e);
                else if (hull_api_hydrate_answer(&st, &ret->body, &ret->len) < 0)
                        r = plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                break;
        }
        case HULL_API_HANDLES_LIST:
        case HULL_API_HANDLES_INSPECT:
        case HULL_API_HANDLES_QUERY:
        case HULL_API_HANDLES_READ:
        case HULL_API_HANDLES_ADD_INPUT:
                fs_leave(); /* the store is hull's own, not the sandbox user's */
                r = do_handles(m, s, p, &req, ret);
                fs_enter(s);
                break;
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
                do_workspace(m, hproc, principal, body, len, watch_fd, ret);
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
        const char *kinds[] = {"javascript", "project", "module", "cell"};
        for (size_t i = 0; result && i < ELEMENTSOF(kinds); i++) {
                json_t *v = json_object_get(ans, kinds[i]);
                if (v)
                        json_object_set(result, kinds[i], v);
        }
        json_t *entry = NULL;
        hull_error e = {0};
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
