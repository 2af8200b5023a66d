/* ss-table.c: the session core's table: opening and finding sessions, their lifetimes (idle,
 * lifetime, per-owner least-recently-used replacement, the sandbox ending by itself), the claim
 * of a session for one call, closing, and the handle stores' directory.
 *
 * Locking: m->lock guards the table and every session's bookkeeping (refs, inflight, ended, last
 * use); a session's `call` mutex is held for the whole of one call, so its sandbox handle, its
 * chain, its store and its audit log are used by one thread at a time. A call never takes
 * m->lock while it waits for the sandbox. Ending a session only asks its provider to kill the
 * sandbox: its fds stay valid until the last reference goes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs-util.h"
#include "runtime-embed.h"
#include "env-layer.h"
#include "ss-internal.h"
#include "time-util.h"

static const char *const end_names[] = {
        [SS_END_NONE] = "SESSION_END_UNSPECIFIED",
        [SS_END_CLOSED] = "SESSION_END_CLOSED",
        [SS_END_EXPIRED] = "SESSION_END_EXPIRED",
        [SS_END_DISK_EXCEEDED] = "SESSION_END_DISK_EXCEEDED",
        [SS_END_MAIN_PROCESS_ENDED] = "SESSION_END_MAIN_PROCESS_ENDED",
        [SS_END_BOUNDARY_FAILED] = "SESSION_END_BOUNDARY_FAILED",
        [SS_END_SANDBOX_CHANGED] = "SESSION_END_SANDBOX_CHANGED",
        [SS_END_SHUTDOWN] = "SESSION_END_SHUTDOWN",
        [SS_END_REPLACED] = "SESSION_END_REPLACED",
        [SS_END_NOT_FOUND] = "SESSION_END_NOT_FOUND",
        [SS_END_UNCLAIMED] = "SESSION_END_UNCLAIMED",
};

/* ---- the table ---- */

static unsigned open_count_locked(ss_manager *m) {
        unsigned n = m->opening;
        for (ss_session *s = m->head; s; s = s->next)
                if (s->ended == SS_END_NONE)
                        n++;
        return n;
}

unsigned ss_open_count(ss_manager *m) {
        pthread_mutex_lock(&m->lock);
        unsigned n = open_count_locked(m);
        pthread_mutex_unlock(&m->lock);
        return n;
}

static void session_free(ss_manager *m, ss_session *s) {
        sbx_session_done(&s->sx);
        json_decref(s->call_record);
        if (s->have_box)
                m->cfg.box.close(m->cfg.box.ctx, &s->box);
        hd_store_free(s->store);
        safe_close(s->store_fd);
        safe_close(s->net_log_fd);
        rec_log_file_done(&s->log);
        if (s->store_path[0])
                (void) rm_rf_at(AT_FDCWD, s->store_path);
        pthread_mutex_destroy(&s->call);
        free(s);
}

/* The last reference gone: the session waits in the grave until bury() frees it, outside
 * m->lock (removing a store of many files must not hold up every other session). */
static void unref_locked(ss_manager *m, ss_session *s) {
        if (--s->refs == 0) {
                s->next = m->grave;
                m->grave = s;
        }
}

static void bury(ss_manager *m) {
        pthread_mutex_lock(&m->lock);
        ss_session *g = m->grave;
        m->grave = NULL;
        pthread_mutex_unlock(&m->lock);
        while (g) {
                ss_session *next = g->next;
                session_free(m, g);
                g = next;
        }
}

void ss_unref(ss_manager *m, ss_session *s) {
        if (!s)
                return;
        pthread_mutex_lock(&m->lock);
        unref_locked(m, s);
        pthread_mutex_unlock(&m->lock);
        bury(m);
}

/* End s (once): its provider kills the sandbox. */
static void end_locked(ss_manager *m, ss_session *s, ss_end why, const char *detail) {
        if (s->ended != SS_END_NONE)
                return;
        s->ended = why;
        snprintf(s->end_detail, sizeof(s->end_detail), "%s", detail ? detail : "");
        s->ended_mono_ms = now_mono_ms();
        if (m->cfg.hooks.ended)
                m->cfg.hooks.ended(m->cfg.hooks.ctx, why);
        if (s->have_box)
                m->cfg.box.kill(m->cfg.box.ctx, &s->box);
        ss_log(m, DLOG_INFO, "event=session-ended session=%.12s reason=%s calls=%" PRIu64, s->chain.session,
               end_names[why], s->calls_seen);
}

int ss_lookup(ss_manager *m, const char *id, const char *principal, ss_session **ret) {
        pthread_mutex_lock(&m->lock);
        for (ss_session *s = m->head; s; s = s->next)
                if (strcmp(s->id, id) == 0 && strcmp(s->principal, principal) == 0) {
                        s->refs++;
                        pthread_mutex_unlock(&m->lock);
                        *ret = s;
                        return 0;
                }
        pthread_mutex_unlock(&m->lock);
        return -ENOENT;
}

/* Has s ended by now? Expiry and idleness are checked here too: the reaper looks only every
 * SERVE_SESSION_TICK_MS, and a call must not slip in between. */
static bool ended_locked(ss_manager *m, ss_session *s) {
        uint64_t now = now_mono_ms();
        if (s->ended == SS_END_NONE && now >= s->expires_mono_ms)
                end_locked(m, s, SS_END_EXPIRED, "the session's lifetime is over");
        else if (s->ended == SS_END_NONE && s->inflight == 0 && now - s->last_used_mono_ms >= s->idle_ms)
                end_locked(m, s, s->claimed ? SS_END_EXPIRED : SS_END_UNCLAIMED,
                           s->claimed ? "idle for longer than the idle timeout" : "never used before the idle timeout");
        return s->ended != SS_END_NONE;
}

static int fail_ended_locked(ss_session *s, hull_error *e) {
        return hull_err(e, -ESHUTDOWN, "the session has ended (%s: %s)", end_names[s->ended], s->end_detail);
}

int ss_call_begin(ss_manager *m, ss_session *s, int hangup_fd, hull_error *e) {
        pthread_mutex_lock(&m->lock);
        if (ended_locked(m, s)) {
                int r = fail_ended_locked(s, e);
                pthread_mutex_unlock(&m->lock);
                return r;
        }
        if (s->inflight >= 2) {
                pthread_mutex_unlock(&m->lock);
                return hull_err(e, -EBUSY, "the session runs one call and has one waiting; retry when one ends");
        }
        s->inflight++;
        s->claimed = true;
        pthread_mutex_unlock(&m->lock);
        if (m->cfg.hooks.call)
                m->cfg.hooks.call(m->cfg.hooks.ctx);
        pthread_mutex_lock(&s->call);
        pthread_mutex_lock(&m->lock);
        if (s->ended != SS_END_NONE) {
                int r = fail_ended_locked(s, e);
                s->inflight--;
                pthread_mutex_unlock(&m->lock);
                pthread_mutex_unlock(&s->call);
                return r;
        }
        pthread_mutex_unlock(&m->lock);
        s->sx.hangup_fd = hangup_fd;
        json_decref(s->call_record);
        s->call_record = NULL;
        return 0;
}

void ss_call_end(ss_manager *m, ss_session *s) {
        s->sx.hangup_fd = -1;
        json_decref(s->call_record);
        s->call_record = NULL;
        pthread_mutex_lock(&m->lock);
        if (s->sx.dead)
                end_locked(m, s, SS_END_MAIN_PROCESS_ENDED, "the sandbox ended");
        s->inflight--;
        s->calls_seen = s->chain.calls;
        s->last_used_mono_ms = now_mono_ms();
        pthread_mutex_unlock(&m->lock);
        pthread_mutex_unlock(&s->call);
}

ss_end ss_end_state(ss_manager *m, ss_session *s, char detail[PLIM_END_DETAIL_MAX]) {
        pthread_mutex_lock(&m->lock);
        if (s->sx.dead)
                end_locked(m, s, SS_END_MAIN_PROCESS_ENDED, "the sandbox ended");
        ss_end why = s->ended;
        if (detail)
                memcpy(detail, s->end_detail, PLIM_END_DETAIL_MAX);
        pthread_mutex_unlock(&m->lock);
        return why;
}

void ss_chain_get(ss_session *s, ss_chain *ret) {
        *ret = s->chain;
}

int ss_net_log_take(ss_session *s, size_t max, char **ret, size_t *ret_len) {
        bool more;
        *ret = NULL;
        *ret_len = 0;
        if (s->net_log_fd < 0)
                return 0;
        return sbx_net_log_read(s->net_log_fd, &s->net_log_off, max, ret, ret_len, &more);
}

json_t *ss_net_log_json(const char *log, size_t len) {
        json_t *a = json_array();
        for (size_t at = 0; a && at < len;) {
                const char *nl = memchr(log + at, '\n', len - at);
                size_t n = nl ? (size_t) (nl - (log + at)) : len - at;
                char line[SBX_NET_LOG_LINE_MAX + 1];
                size_t k = MIN(n, (size_t) SBX_NET_LOG_LINE_MAX);
                for (size_t i = 0; i < k; i++) {
                        unsigned char c = (unsigned char) log[at + i];
                        line[i] = c >= 0x20 && c < 0x7f ? (char) c : '?';
                }
                line[k] = '\0';
                if (k > 0 && json_array_append_new(a, json_string(line)) < 0) {
                        json_decref(a);
                        return NULL;
                }
                at += n + 1;
        }
        return a;
}

const char *ss_environment(ss_session *s) {
        return s->environment;
}

sbx_tier ss_tier(ss_session *s) {
        return s->tier;
}

const char *ss_rule_id(ss_session *s) {
        return s->rule_id;
}

static void info_locked(const ss_session *s, ss_info *ret) {
        *ret = (ss_info){.opened_unix_ms = s->opened_unix_ms,
                         .expires_unix_ms = s->expires_unix_ms,
                         .idle_ms = s->idle_ms,
                         .calls = s->calls_seen};
        memcpy(ret->id, s->id, sizeof(ret->id));
        memcpy(ret->fingerprint, s->chain.session, sizeof(ret->fingerprint));
        memcpy(ret->owner, s->owner, sizeof(ret->owner));
}

void ss_session_info(ss_manager *m, ss_session *s, ss_info *ret) {
        pthread_mutex_lock(&m->lock);
        info_locked(s, ret);
        pthread_mutex_unlock(&m->lock);
}

int ss_list(ss_manager *m, const char *principal, ss_info **ret, size_t *ret_n) {
        pthread_mutex_lock(&m->lock);
        size_t n = 0;
        for (ss_session *s = m->head; s; s = s->next)
                n += s->ended == SS_END_NONE && strcmp(s->principal, principal) == 0;
        ss_info *v = calloc(MAX(n, 1U), sizeof(*v));
        size_t k = 0;
        for (ss_session *s = m->head; v && s; s = s->next)
                if (s->ended == SS_END_NONE && strcmp(s->principal, principal) == 0)
                        info_locked(s, &v[k++]);
        pthread_mutex_unlock(&m->lock);
        if (!v)
                return -ENOMEM;
        *ret = v;
        *ret_n = k;
        return 0;
}

void ss_close(ss_manager *m, ss_session *s, ss_close_info *ret) {
        pthread_mutex_lock(&m->lock);
        end_locked(m, s, SS_END_CLOSED, "closed by the client");
        pthread_mutex_unlock(&m->lock);
        /* A call in flight ends with the sandbox; then the chain is whole. */
        pthread_mutex_lock(&s->call);
        pthread_mutex_lock(&m->lock);
        ret->ended = s->ended;
        pthread_mutex_unlock(&m->lock);
        memcpy(ret->fingerprint, s->chain.session, sizeof(ret->fingerprint));
        ret->calls = s->chain.calls;
        memcpy(ret->last_sha256, s->chain.last_sha256, sizeof(ret->last_sha256));
        pthread_mutex_unlock(&s->call);
}

/* ---- the reaper: idle, lifetime, sandboxes that ended, old summaries ---- */

static void reap_locked(ss_manager *m) {
        uint64_t now = now_mono_ms();
        for (ss_session **pp = &m->head; *pp;) {
                ss_session *s = *pp;
                if (s->ended == SS_END_NONE) {
                        bool oom = false;
                        struct pollfd p = {.fd = s->box.end_fd, .events = POLLIN};
                        if (s->box.end_fd >= 0 && poll(&p, 1, 0) > 0 &&
                            m->cfg.box.ended(m->cfg.box.ctx, &s->box, &oom) > 0)
                                end_locked(m, s, oom ? SS_END_BOUNDARY_FAILED : SS_END_MAIN_PROCESS_ENDED,
                                           oom ? "the sandbox's init was killed by its memory limit"
                                               : "the sandbox ended");
                        else
                                (void) ended_locked(m, s);
                } else if (now - s->ended_mono_ms >= SERVE_SESSION_SUMMARY_MS && s->inflight == 0) {
                        *pp = s->next;
                        unref_locked(m, s);
                        continue;
                }
                pp = &s->next;
        }
}

static void *reaper_main(void *arg) {
        ss_manager *m = arg;
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

/* Stores never outlive their manager: each process keeps its sessions' stores in
 * handles_dir/serve-PID; at start, the directories of processes no longer running (a kill -9)
 * are removed, then this one's own is made (mode 0711: the sandbox user passes through it). */
static int stores_prepare(ss_manager *m, hull_error *e) {
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
                ss_log(m, DLOG_INFO, "event=stale-stores-removed count=%u", removed);
        if ((size_t) snprintf(m->stores_dir, sizeof(m->stores_dir), "%s/serve-%d", m->cfg.handles_dir,
                              (int) getpid()) >= sizeof(m->stores_dir))
                return hull_err(e, -ENAMETOOLONG, "sessions: the handle stores' path is too long");
        (void) rm_rf_at(AT_FDCWD, m->stores_dir); /* a reused pid's */
        if (mkdir(m->stores_dir, 0711) < 0 || chmod(m->stores_dir, 0711) < 0)
                return hull_err(e, negative_errno(), "sessions: cannot create %s", m->stores_dir);
        return 0;
}

int ss_new(const ss_config *cfg, ss_manager **ret, hull_error *e) {
        ss_manager *m = calloc(1, sizeof(*m));
        if (!m)
                return hull_err(e, -ENOMEM, "sessions: out of memory");
        m->cfg = *cfg;
        if (!m->cfg.handle_bytes_max)
                m->cfg.handle_bytes_max = HD_MAX_SPILL_DEFAULT;
        if (!m->cfg.store_bytes_max)
                m->cfg.store_bytes_max = SS_STORE_BYTES_DEFAULT;
        m->audit_fd = -1;
        if (m->cfg.handle_bytes_max > HD_MAX_SPILL_MAX || m->cfg.handle_bytes_max > m->cfg.store_bytes_max) {
                free(m);
                return hull_err(e, -EINVAL,
                                "sessions: a handle may be at most %llu bytes and no larger than a session's "
                                "handles together",
                                (unsigned long long) HD_MAX_SPILL_MAX);
        }
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
                        ss_free(m);
                        return hull_err_hint(e, r, "create it, or pass another --audit-dir",
                                             "sessions: cannot open the audit directory %s", cfg->audit_dir);
                }
        }
        if (cfg->handles_dir) {
                int r = stores_prepare(m, e);
                if (r < 0) {
                        ss_free(m);
                        return r;
                }
        }
        if (!cfg->no_reaper && pthread_create(&m->reaper, NULL, reaper_main, m) != 0) {
                ss_free(m);
                return hull_err(e, -EAGAIN, "sessions: cannot start the reaper thread");
        }
        m->reaper_running = !cfg->no_reaper;
        *ret = m;
        return 0;
}

void ss_shutdown(ss_manager *m, uint64_t wait_ms) {
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        m->stopping_opens = true;
        for (ss_session *s = m->head; s; s = s->next)
                end_locked(m, s, SS_END_SHUTDOWN, "hull serve is shutting down");
        pthread_mutex_unlock(&m->lock);
        uint64_t until = now_mono_ms() + wait_ms;
        for (;;) {
                unsigned busy = 0;
                pthread_mutex_lock(&m->lock);
                for (ss_session *s = m->head; s; s = s->next)
                        busy += s->inflight;
                busy += m->opening;
                pthread_mutex_unlock(&m->lock);
                if (busy == 0 || now_mono_ms() >= until)
                        break;
                struct timespec ts = {0, 20 * 1000000L};
                nanosleep(&ts, NULL);
        }
}

void ss_free(ss_manager *m) {
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
                ss_session *s = m->head;
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

/* ---- opening ---- */

/* A fresh directory below the stores' named by the fingerprint (mode 0755: the sandbox user reads
 * it through the read-only bind at /handles), and the store in it. */
static int store_open(ss_manager *m, ss_session *s, const char *seed, hull_error *e) {
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
        if (seed) {
                _cleanup_close_ int from = open(seed, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (from < 0)
                        return hull_err(e, negative_errno(), "cannot open the handles to start from, %s", seed);
                int r = ss_store_copy(from, s->store_fd, e);
                if (r < 0)
                        return r;
        }
        hd_store_opts opts = {.max_spill_bytes = m->cfg.handle_bytes_max};
        return hd_store_open(s->store_fd, &opts, &s->store, e);
}

/* Room for one more session of o: 0 (with *ret_victim when the owner's least recently used idle
 * session makes room) or -EUSERS. */
static int admit_locked(ss_manager *m, const ss_open_opts *o, ss_session **ret_victim, hull_error *e) {
        unsigned mine = 0, callers = 0;
        ss_session *lru = NULL;
        for (ss_session *s = m->head; s; s = s->next)
                if (s->ended == SS_END_NONE && strcmp(s->principal, o->principal) == 0) {
                        callers++;
                        if (strcmp(s->owner, o->owner) != 0)
                                continue;
                        mine++;
                        if (s->inflight == 0 && (!lru || s->last_used_mono_ms < lru->last_used_mono_ms))
                                lru = s;
                }
        bool replace = m->cfg.max_per_owner && mine >= m->cfg.max_per_owner;
        /* A caller is bounded whatever owners it names, or one caller could take every session. */
        if (!replace && m->cfg.max_per_caller && callers >= m->cfg.max_per_caller)
                return hull_err(e, -EUSERS, "this caller has %u sessions open, its maximum; close one or retry later",
                                m->cfg.max_per_caller);
        if (replace && !lru)
                return hull_err(e, -EUSERS, "every one of this owner's %u sessions is busy; retry later",
                                m->cfg.max_per_owner);
        if (m->stopping_opens || (!replace && open_count_locked(m) >= m->cfg.max_sessions))
                return hull_err(e, -EUSERS, "%u sessions are open, the maximum; close one or retry later",
                                m->cfg.max_sessions);
        *ret_victim = replace ? lru : NULL;
        return 0;
}

/* A new session with its id, fingerprint, store and sandbox. */
static int session_make(ss_manager *m, const ss_open_opts *o, ss_session **ret, hull_error *e) {
        uint8_t rnd[16];
        ss_session *s = calloc(1, sizeof(*s));
        if (!s)
                return hull_err(e, -ENOMEM, "sessions: out of memory");
        s->store_fd = s->net_log_fd = -1;
        s->log = REC_LOG_FILE_INIT;
        s->box = (ss_box){.end_fd = -1, .ctl_fd = -1, .ws_fd = -1, .pidfd = -1, .bpf_fd = -1, .cg_dir_fd = -1};
        pthread_mutex_init(&s->call, NULL);
        int r = getrandom(rnd, sizeof(rnd), 0) == (ssize_t) sizeof(rnd) ? 0 : hull_err(e, -EIO, "no random id");
        for (size_t i = 0; r >= 0 && i < sizeof(rnd); i++)
                snprintf(s->id + 2 * i, 3, "%02x", rnd[i]);
        if (r >= 0 && (r = rec_fingerprint(s->id, strlen(s->id), s->chain.session)) < 0)
                hull_err(e, r, "cannot make the session's fingerprint");
        if (r >= 0 && m->cfg.handles_dir)
                r = store_open(m, s, o->handles_from, e);
        /* A limited network's log: the opener's when it is a file (read from where it ends now,
         * through a copy of the fd), else one the session keeps (a memfd). */
        sbx_net_policy kept;
        const sbx_net_policy *policy = o->net_policy;
        struct stat st;
        int fl = policy && policy->log_fd >= 0 ? fcntl(policy->log_fd, F_GETFL) : -1;
        if (r >= 0 && o->net == SBX_NET_LIMITED && fl >= 0 && (fl & O_ACCMODE) == O_RDWR &&
            fstat(policy->log_fd, &st) == 0 && S_ISREG(st.st_mode)) {
                s->net_log_fd = fcntl(policy->log_fd, F_DUPFD_CLOEXEC, 3);
                s->net_log_off = (uint64_t) st.st_size;
        } else if (r >= 0 && o->net == SBX_NET_LIMITED && policy && policy->log_fd < 0) {
                s->net_log_fd = memfd_create("hull-net-log", MFD_CLOEXEC);
                if (s->net_log_fd < 0)
                        r = hull_err(e, negative_errno(), "session: cannot make its connection log");
                kept = *policy;
                kept.log_fd = s->net_log_fd;
                policy = &kept;
        }
        if (r >= 0) {
                ss_box_spec spec = {.memory_bytes = m->cfg.memory_bytes,
                                    .pids = m->cfg.pids,
                                    .tmp_bytes = m->cfg.tmp_bytes,
                                    .handles_dir = s->store_path[0] ? s->store_path : NULL,
                                    .layer_dir = o->layer_dir,
                                    .skills_dir = o->skills_dir,
                                    .mnt_dir = o->mnt_dir,
                                    .net = o->net,
                                    .net_policy = policy,
                                    .tier = o->tier};
                r = m->cfg.box.open(m->cfg.box.ctx, &spec, &s->box, e);
                s->have_box = r >= 0;
        }
        if (r < 0) {
                session_free(m, s);
                return r;
        }
        sbx_session_init(&s->sx, s->box.ctl_fd, s->box.ws_fd, s->box.pidfd, s->box.bpf_fd, s->box.cg_fds,
                         s->box.n_cg_fds, m->cfg.zygote_fd);
        if (o->layer_dir)
                s->sx.env = env_layer_sandbox_env(); /* for interpreters forked from the zygote */
        s->tier = o->tier;
        s->sx.kernel = o->tier == SBX_TIER_KERNEL;
        s->sx.cg_dir_fd = s->sx.kernel ? -1 : s->box.cg_dir_fd;
        if (s->sx.kernel) { /* no zygote: its forks would enter the shim's namespaces, not gVisor */
                s->sx.pidfd = -1;
                s->sx.bpf_fd = -1;
                s->sx.n_cg_fds = 0;
        }
        s->sx.net_proxy_env = o->net == SBX_NET_LIMITED;
        snprintf(s->principal, sizeof(s->principal), "%s", o->principal);
        snprintf(s->owner, sizeof(s->owner), "%s", o->owner ? o->owner : "");
        snprintf(s->rule_id, sizeof(s->rule_id), "%s", o->rule_id ? o->rule_id : "");
        snprintf(s->environment, sizeof(s->environment), "%s", o->environment ? o->environment : "");
        snprintf(s->log_name, sizeof(s->log_name), "session-%s.jsonl", s->chain.session);
        uint64_t lifetime = m->cfg.lifetime_ms, idle = m->cfg.idle_ms;
        if (o->lifetime_ms && o->lifetime_ms < lifetime)
                lifetime = o->lifetime_ms;
        if (o->idle_ms && o->idle_ms < idle)
                idle = MAX(o->idle_ms, SERVE_SESSION_IDLE_MS_MIN);
        s->idle_ms = idle;
        s->opened_unix_ms = now_unix_ms();
        s->expires_unix_ms = s->opened_unix_ms + lifetime;
        s->expires_mono_ms = now_mono_ms() + lifetime;
        s->last_used_mono_ms = now_mono_ms();
        s->refs = 1;
        *ret = s;
        return 0;
}

int ss_open(ss_manager *m, const ss_open_opts *o, ss_session **ret, hull_error *e) {
        ss_session *victim = NULL, *s = NULL;
        const char *refused = o->tier == SBX_TIER_KERNEL && m->cfg.kernel_refused
                                      ? m->cfg.kernel_refused(m->cfg.kernel_refused_ud)
                                      : NULL;
        if (refused)
                return hull_err_hint(e, -EOPNOTSUPP, "use the container tier, or install runsc and restart hull serve",
                                     "session: %s", refused);
        pthread_mutex_lock(&m->lock);
        if (!m->reaper_running)
                reap_locked(m);
        int r = admit_locked(m, o, &victim, e);
        if (r < 0) {
                pthread_mutex_unlock(&m->lock);
                return r;
        }
        /* The victim is ended only once the new session is open, so a failed open loses nothing. */
        if (victim)
                victim->refs++;
        m->opening++;
        pthread_mutex_unlock(&m->lock);

        r = session_make(m, o, &s, e);

        pthread_mutex_lock(&m->lock);
        m->opening--;
        if (r >= 0) {
                s->refs++; /* the table's and the caller's */
                s->next = m->head;
                m->head = s;
                if (victim)
                        end_locked(m, victim, SS_END_REPLACED, "replaced by a newer session of the same owner");
        }
        if (victim)
                unref_locked(m, victim);
        pthread_mutex_unlock(&m->lock);
        bury(m);
        if (r < 0)
                return r;
        if (m->cfg.hooks.opened)
                m->cfg.hooks.opened(m->cfg.hooks.ctx);
        ss_log(m, DLOG_INFO, "event=session-opened session=%.12s owner=%s idle_ms=%" PRIu64 " lifetime_ms=%" PRIu64,
               s->chain.session, s->owner[0] ? s->owner : "-", s->idle_ms, s->expires_unix_ms - s->opened_unix_ms);
        *ret = s;
        return 0;
}
