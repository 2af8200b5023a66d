/* broker.c: the sandbox broker process, its workers, and the daemon's side of a run.
 *
 * daemon thread                      broker (single-threaded)            worker (one per run)
 * socketpair(a, b)
 * ctl: "run" + SCM_RIGHTS(b) ──────► start a worker (or queue b) ──fork──► PDEATHSIG; signalfd
 *                                                                          (SIGTERM = cancel)
 * wait for "ready" on a ◄──────────────────────────────────────────────── empty frame on b
 * request frame ─────────────────────────────────────────────────────────► files, steps
 *                                                                          (sbx_run), artifacts
 * result frame ◄───────────────────────────────────────────────────────── result; exit
 *
 * The daemon sends the request only once a worker asked for it, so a refused or dropped run
 * provably ran nothing: the broker answers it with a SBX_PLAN_NOT_STARTED result instead. */
#include "broker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/close_range.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "env-layer.h"
#include "fs-util.h"
#include "limits.h"
#include "macro.h"
#include "plimsoll.h"
#include "sbx.h"
#include "sbx-net.h"
#include "sbx-session.h"
#include "sock-util.h"
#include "sbx-workspace.h"
#include "time-util.h"
#include "broker-internal.h"

struct brk_broker {
        pid_t pid;
        int ctl; /* SOCK_SEQPACKET to the broker */
        int pidfd;
        pthread_mutex_t lock; /* one sendmsg on ctl at a time */
        bool reaped;
};

/* ---- the broker's loop ---- */

typedef struct broker_state {
        const brk_config *cfg;
        int ctl, sfd;
        pid_t workers[SERVE_RUNS_MAX];
        int run_fds[SERVE_RUNS_MAX]; /* each worker's run socket, watched for the daemon's
                                      * hang-up (its caller went away); -1 once seen */
        unsigned n_workers;
        int queue[SERVE_RUN_QUEUE_MAX]; /* fds of runs waiting for a worker, oldest first */
        unsigned n_queued;
        pid_t keepers[SERVE_SESSIONS_MAX]; /* one per open session */
        unsigned n_keepers;
        pid_t spare;    /* the spare worker (its sandbox set up in advance), 0: none */
        int spare_sock; /* to it: "R" when ready, then the run's fd */
        bool spare_ready;
        bool warm_js;            /* the last run was javascript: the next spare warms a node */
        uint64_t spare_born;     /* when the spare was forked (now_mono_ms) */
        unsigned spare_failures; /* spares that died unused in a row; at the cap, no more */
        bool refusing;           /* CTL_CANCEL, SIGTERM or EOF: no new runs */
        uint64_t kill_at;        /* when workers still running get SIGKILL; 0: not yet */
} broker_state;

/* Fork a child of the broker (a worker, a keeper, the spare): in the child, close what is the
 * broker's alone, die with the broker, take name, and get SIGTERM as *ret_term_fd (a signalfd;
 * the broker's mask already blocks it). Returns the pid in the parent, 0 in the child, or -1. */
static pid_t fork_child(broker_state *s, const char *name, int *ret_term_fd) {
        pid_t broker = getpid();
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        sigset_t term;
        safe_close(s->ctl);
        safe_close(s->sfd);
        for (unsigned i = 0; i < s->n_queued; i++)
                safe_close(s->queue[i]);
        for (unsigned i = 0; i < s->n_workers; i++)
                safe_close(s->run_fds[i]);
        safe_close(s->spare_sock); /* the broker's end to its spare: not the child's */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != broker)
                _exit(1);
        (void) prctl(PR_SET_NAME, name);
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        *ret_term_fd = signalfd(-1, &term, SFD_CLOEXEC | SFD_NONBLOCK);
        if (*ret_term_fd < 0)
                _exit(1);
        return 0;
}

static void spawn_worker(broker_state *s, int fd) {
        int cancel_fd;
        pid_t pid = fork_child(s, "hull-worker", &cancel_fd);
        if (pid < 0) {
                brk_refuse_run(fd, "the broker cannot fork a worker");
                return;
        }
        if (pid == 0) {
                brk_worker_run(s->cfg, fd, cancel_fd, NULL, NULL);
                _exit(0);
        }
        s->run_fds[s->n_workers] = fd;
        s->workers[s->n_workers++] = pid;
}

static void spawn_keeper(broker_state *s, int fd) {
        if (s->n_keepers >= ELEMENTSOF(s->keepers)) {
                safe_close(fd);
                return;
        }
        int term_fd;
        pid_t pid = fork_child(s, "hull-keeper", &term_fd);
        if (pid < 0) {
                safe_close(fd);
                return;
        }
        if (pid == 0) {
                brk_keeper_run(s->cfg, fd, term_fd);
                _exit(0);
        }
        safe_close(fd);
        s->keepers[s->n_keepers++] = pid;
}

/* The spare worker: sets a sandbox up, says "R", waits for a run's fd, runs it like a worker
 * (or ends the sandbox on SIGTERM or EOF). */
static _noreturn_ void spare_main(const brk_config *cfg, int sock, int cancel_fd, bool warm_js) {
        sbx_session_box box = {.pid = -1, .pidfd = -1, .ctl_fd = -1, .ws_fd = -1, .bpf_fd = -1, .cg_dir_fd = -1};
        sbx_session_spec spec = {.memory_bytes = cfg->spare_memory_bytes,
                                 .pids = cfg->spare_pids,
                                 .tmp_bytes = cfg->spare_tmp_bytes,
                                 .use_cgroups = cfg->use_cgroups};
        hull_error e = {0};
        if (sbx_session_start(&spec, &box, &e) < 0) {
                (void) send(sock, "F", 1, MSG_NOSIGNAL);
                _exit(1);
        }
        /* Only the workspace and control fds are used here. */
        box.bpf_fd = safe_close(box.bpf_fd);
        for (size_t i = 0; i < box.n_cg_fds; i++)
                safe_close(box.cg_fds[i]);
        box.n_cg_fds = 0;
        sbx_held held = {.in_fd = -1, .out_fd = -1, .err_fd = -1};
        if (warm_js) { /* its failure leaves none: the run starts its node itself */
                sbx_session sx;
                hull_error he = {0};
                sbx_session_init(&sx, box.ctl_fd, box.ws_fd, -1, -1, NULL, 0, -1);
                (void) sbx_session_hold(&sx, (char *const *) plim_js_warm_argv, &held, &he);
        }
        int fd = -1;
        if (send(sock, "R", 1, MSG_NOSIGNAL) == 1) {
                struct pollfd p[3] = {{.fd = sock, .events = POLLIN},
                                      {.fd = cancel_fd, .events = POLLIN},
                                      {.fd = box.pidfd, .events = POLLIN}};
                while (poll(p, 3, -1) < 0 && errno == EINTR)
                        ;
                if (p[0].revents & POLLIN) {
                        char c;
                        size_t nfds = 0;
                        if (sock_recv_fds(sock, &c, 1, 0, &fd, 1, &nfds, NULL) != 1 || nfds != 1)
                                fd = safe_close(fd);
                }
        }
        if (fd >= 0)
                brk_worker_run(cfg, fd, cancel_fd, &box, &held);
        (void) sbx_session_box_end(&box, NULL, &e);
        _exit(0);
}

static void spawn_spare(broker_state *s) {
        int sv[2];
        if (s->spare || s->refusing || !s->cfg->spare_memory_bytes || s->spare_failures >= BRK_SPARE_FAILURES_MAX)
                return;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return;
        int cancel_fd;
        pid_t pid = fork_child(s, "hull-spare", &cancel_fd);
        if (pid < 0) {
                safe_close(sv[0]);
                safe_close(sv[1]);
                return;
        }
        if (pid == 0) {
                safe_close(sv[0]);
                spare_main(s->cfg, sv[1], cancel_fd, s->warm_js && s->cfg->warm_javascript);
        }
        safe_close(sv[1]);
        s->spare = pid;
        s->spare_sock = sv[0];
        s->spare_ready = false;
        s->spare_born = now_mono_ms();
}

static bool use_spare(broker_state *s, int fd);

/* A spare on its way (forked a moment ago, not ready yet): a run waits for it in the queue
 * rather than have a worker of its own set a sandbox up beside it. */
static bool spare_coming(const broker_state *s) {
        return s->spare && !s->spare_ready && s->spare_sock >= 0 && now_mono_ms() < s->spare_born + BRK_SPARE_WAIT_MS;
}

/* Start queued runs while slots are free: on the spare, or (no spare coming) a new worker. */
static void dispatch_queue(broker_state *s) {
        while (!s->refusing && s->n_queued > 0 && s->n_workers < s->cfg->max_runs) {
                int fd = s->queue[0];
                if (!s->spare_ready && spare_coming(s))
                        return;
                memmove(s->queue, s->queue + 1, (s->n_queued - 1) * sizeof(int));
                s->n_queued--;
                if (!use_spare(s, fd))
                        spawn_worker(s, fd);
        }
}

/* Hand the run's fd to the spare, which becomes a worker. False: no spare was ready. */
static bool use_spare(broker_state *s, int fd) {
        if (!s->spare || !s->spare_ready)
                return false;
        if (sock_send_fds(s->spare_sock, "r", 1, &fd, 1, MSG_DONTWAIT) < 0)
                return false;
        s->run_fds[s->n_workers] = fd;
        s->workers[s->n_workers++] = s->spare;
        s->spare = 0;
        s->spare_sock = safe_close(s->spare_sock);
        s->spare_ready = false;
        s->spare_failures = 0;
        spawn_spare(s);
        return true;
}

static void on_spare(broker_state *s) {
        char c;
        ssize_t n = recv(s->spare_sock, &c, 1, MSG_DONTWAIT);
        if (n == 1 && c == 'R') {
                s->spare_ready = true;
                dispatch_queue(s);
                return;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        /* "F" or EOF: this spare is of no use; reap() counts it when it exits. */
        s->spare_sock = safe_close(s->spare_sock);
        s->spare_ready = false;
        dispatch_queue(s); /* what waited for it gets a worker of its own */
}

static void stop_everything(broker_state *s) {
        if (!s->refusing) {
                s->refusing = true;
                s->kill_at = now_mono_ms() + BRK_STOP_GRACE_MS;
        }
        for (unsigned i = 0; i < s->n_queued; i++)
                brk_refuse_run(s->queue[i], "dropped: hull serve is shutting down");
        s->n_queued = 0;
        for (unsigned i = 0; i < s->n_workers; i++)
                kill(s->workers[i], SIGTERM);
        for (unsigned i = 0; i < s->n_keepers; i++)
                kill(s->keepers[i], SIGTERM);
        if (s->spare)
                kill(s->spare, SIGTERM);
}

static void on_ctl(broker_state *s) {
        uint32_t type = 0;
        char cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = {.iov_base = &type, .iov_len = sizeof(type)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        ssize_t n = recvmsg(s->ctl, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0) { /* the daemon is gone */
                s->ctl = safe_close(s->ctl);
                stop_everything(s);
                return;
        }
        int fd = -1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (n != (ssize_t) sizeof(type) || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
                safe_close(fd);
                return;
        }
        if (type == CTL_CANCEL) {
                safe_close(fd);
                stop_everything(s);
                return;
        }
        if (type == CTL_SESSION && fd >= 0) {
                if (s->refusing)
                        safe_close(fd); /* the daemon reads EOF: not started */
                else
                        spawn_keeper(s, fd);
                return;
        }
        if ((type != CTL_RUN && type != CTL_RUN_JS) || fd < 0) {
                safe_close(fd);
                return;
        }
        s->warm_js = type == CTL_RUN_JS; /* the spare made next is for a run like this one */
        if (s->refusing)
                brk_refuse_run(fd, "refused: hull serve is shutting down");
        else if (s->n_workers < s->cfg->max_runs && s->n_queued == 0) {
                if (use_spare(s, fd))
                        return;
                if (spare_coming(s) && s->cfg->queue_max > 0)
                        s->queue[s->n_queued++] = fd; /* sooner than a worker setting a sandbox up */
                else
                        spawn_worker(s, fd);
        } else if (s->n_queued < s->cfg->queue_max)
                s->queue[s->n_queued++] = fd;
        else
                brk_refuse_run(fd, "refused: every run slot and the queue are full");
}

static void reap(broker_state *s) {
        for (;;) {
                pid_t pid = waitpid(-1, NULL, WNOHANG);
                if (pid <= 0)
                        break;
                for (unsigned i = 0; i < s->n_workers; i++)
                        if (s->workers[i] == pid) {
                                safe_close(s->run_fds[i]);
                                s->n_workers--;
                                s->workers[i] = s->workers[s->n_workers];
                                s->run_fds[i] = s->run_fds[s->n_workers];
                                break;
                        }
                for (unsigned i = 0; i < s->n_keepers; i++)
                        if (s->keepers[i] == pid) {
                                s->keepers[i] = s->keepers[--s->n_keepers];
                                break;
                        }
                if (s->spare && pid == s->spare) {
                        s->spare = 0;
                        s->spare_sock = safe_close(s->spare_sock);
                        s->spare_ready = false;
                        s->spare_failures++;
                        spawn_spare(s);
                }
        }
        dispatch_queue(s);
}

static _noreturn_ void broker_main(const brk_config *cfg, int ctl, pid_t daemon) {
        broker_state s = {.cfg = cfg, .ctl = ctl, .sfd = -1, .spare_sock = -1};
        sigset_t mask;

        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != daemon)
                _exit(1);
        (void) prctl(PR_SET_NAME, "hull-broker");
        /* A terminal's Ctrl-C reaches the whole process group; the daemon decides what it means. */
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 || (s.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
                _exit(1);
        /* Nothing else the daemon had open belongs here. */
        int keep_lo = MIN(ctl, s.sfd), keep_hi = MAX(ctl, s.sfd);
        (void) syscall(SYS_close_range, 3U, (unsigned) keep_lo - 1, 0U);
        if (keep_hi > keep_lo + 1)
                (void) syscall(SYS_close_range, (unsigned) keep_lo + 1, (unsigned) keep_hi - 1, 0U);
        (void) syscall(SYS_close_range, (unsigned) keep_hi + 1, ~0U, 0U);

        spawn_spare(&s);
        for (;;) {
                if (s.refusing && s.n_workers == 0 && s.n_keepers == 0 && s.spare == 0)
                        _exit(0);
                int timeout = -1;
                if (s.kill_at) {
                        uint64_t now = now_mono_ms();
                        if (now >= s.kill_at) {
                                for (unsigned i = 0; i < s.n_workers; i++)
                                        kill(s.workers[i], SIGKILL);
                                for (unsigned i = 0; i < s.n_keepers; i++)
                                        kill(s.keepers[i], SIGKILL);
                                if (s.spare)
                                        kill(s.spare, SIGKILL);
                                s.kill_at = 0;
                        } else
                                timeout = (int) (s.kill_at - now);
                }
                /* The daemon hangs up a run's socket when it stops waiting (its caller went
                 * away, or the queue took too long): a queued run leaves the queue, a running
                 * one is stopped as at shutdown. The daemon's end never hangs up otherwise
                 * before the worker has sent its result. */
                struct pollfd p[3 + SERVE_RUN_QUEUE_MAX + SERVE_RUNS_MAX] = {{.fd = s.ctl, .events = POLLIN},
                                                                             {.fd = s.sfd, .events = POLLIN}};
                unsigned n_queued = s.n_queued, n_workers = s.n_workers;
                for (unsigned i = 0; i < n_queued; i++)
                        p[2 + i] = (struct pollfd){.fd = s.queue[i], .events = POLLRDHUP};
                for (unsigned i = 0; i < n_workers; i++)
                        p[2 + n_queued + i] = (struct pollfd){.fd = s.run_fds[i], .events = POLLRDHUP};
                unsigned i_spare = 2 + n_queued + n_workers;
                p[i_spare] = (struct pollfd){.fd = s.spare_sock, .events = POLLIN};
                if (s.n_queued > 0 && s.n_workers < cfg->max_runs && spare_coming(&s)) { /* its wait ends */
                        int left = (int) (s.spare_born + BRK_SPARE_WAIT_MS - now_mono_ms()) + 1;
                        timeout = timeout < 0 ? left : MIN(timeout, left);
                }
                int n = poll(p, i_spare + 1, timeout);
                if (n < 0 && errno != EINTR)
                        _exit(1);
                if (n <= 0) {
                        dispatch_queue(&s); /* a wait for the spare may have ended */
                        continue;
                }
                for (unsigned i = 0; i < n_workers; i++)
                        if (p[2 + n_queued + i].revents) {
                                kill(s.workers[i], SIGTERM);
                                s.run_fds[i] = safe_close(s.run_fds[i]);
                        }
                for (unsigned i = n_queued; i-- > 0;)
                        if (p[2 + i].revents) {
                                safe_close(s.queue[i]);
                                memmove(s.queue + i, s.queue + i + 1, (s.n_queued - i - 1) * sizeof(int));
                                s.n_queued--;
                        }
                if (p[1].revents) {
                        struct signalfd_siginfo si;
                        bool term = false;
                        while (read(s.sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                if (si.ssi_signo == SIGTERM)
                                        term = true;
                        if (term)
                                stop_everything(&s);
                        reap(&s);
                }
                if (p[i_spare].revents && s.spare_sock >= 0 && s.spare_sock == p[i_spare].fd)
                        on_spare(&s);
                if (p[0].revents)
                        on_ctl(&s);
                dispatch_queue(&s);
        }
}

/* ---- the daemon's side ---- */

int brk_start(const brk_config *cfg, brk_broker **ret, hull_error *e) {
        _cleanup_close_pair_ int sv[2] = {-1, -1};
        if (cfg->max_runs == 0 || cfg->max_runs > SERVE_RUNS_MAX || cfg->queue_max > SERVE_RUN_QUEUE_MAX)
                return hull_err(e, -EINVAL, "broker: max runs must be 1 to %u and the queue at most %u", SERVE_RUNS_MAX,
                                SERVE_RUN_QUEUE_MAX);
        brk_broker *b = calloc(1, sizeof(*b));
        if (!b)
                return hull_err(e, -ENOMEM, "broker: out of memory");
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                free(b);
                return hull_err(e, negative_errno(), "broker: cannot create the control socket");
        }
        pid_t daemon = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                free(b);
                return hull_err(e, negative_errno(), "broker: cannot fork");
        }
        if (pid == 0) {
                sv[0] = safe_close(sv[0]);
                broker_main(cfg, sv[1], daemon);
        }
        b->pid = pid;
        b->ctl = TAKE_FD(sv[0]);
        b->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        pthread_mutex_init(&b->lock, NULL);
        if (b->pidfd < 0) {
                int r = negative_errno();
                brk_stop(b);
                return hull_err(e, r, "broker: cannot open a pidfd for the broker");
        }
        *ret = b;
        return 0;
}

static int ctl_send(brk_broker *b, uint32_t type, int fd) {
        char cbuf[CMSG_SPACE(sizeof(int))] = {0};
        struct iovec iov = {.iov_base = &type, .iov_len = sizeof(type)};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (fd >= 0) {
                mh.msg_control = cbuf;
                mh.msg_controllen = sizeof(cbuf);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        pthread_mutex_lock(&b->lock);
        ssize_t n;
        do
                n = b->ctl >= 0 ? sendmsg(b->ctl, &mh, MSG_NOSIGNAL) : (errno = EPIPE, -1);
        while (n < 0 && errno == EINTR);
        int r = n < 0 ? negative_errno() : 0;
        pthread_mutex_unlock(&b->lock);
        return r;
}

/* Wait until fd is readable (0), watch_fd's peer has hung up (-ECANCELED; sock_hung_up: a
 * half-close is not a hang-up) or the deadline passes (-ETIMEDOUT). watch_fd -1: fd alone. */
static int wait_watched(int fd, int watch_fd, uint64_t deadline_ms) {
        for (;;) {
                uint64_t now = now_mono_ms();
                if (now >= deadline_ms)
                        return -ETIMEDOUT;
                struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = watch_fd, .events = SOCK_HANGUP_EVENTS}};
                uint64_t left = deadline_ms - now;
                int n = poll(p, 2, left > INT32_MAX ? INT32_MAX : (int) left);
                if (n > 0 && sock_hung_up(p[1].revents))
                        return -ECANCELED;
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return negative_errno();
        }
}

static int not_started(sbx_plan_result *ret, const char *why) {
        *ret = (sbx_plan_result){.outcome = SBX_PLAN_NOT_STARTED, .detail = strdup(why)};
        return ret->detail ? 0 : -ENOMEM;
}

int brk_call(brk_broker *b, const sbx_plan *req, uint64_t wait_ms, int watch_fd, sbx_plan_result *ret, hull_error *e) {
        _cleanup_close_pair_ int sv[2] = {-1, -1};
        _cleanup_free_ char *buf = NULL, *ans = NULL;
        size_t len = 0, ans_len = 0;
        uint64_t deadline = now_mono_ms() + BRK_QUEUE_WAIT_MS;
        int r;

        r = brk_plan_encode(req, &buf, &len);
        if (r < 0)
                return hull_err(e, r, "broker: cannot encode the run request");
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return hull_err(e, negative_errno(), "broker: cannot create a socket for the run");
        if (ctl_send(b, (req->flags & SBX_PLAN_JAVASCRIPT) ? CTL_RUN_JS : CTL_RUN, sv[1]) < 0)
                return not_started(ret, "the sandbox broker is not running");
        sv[1] = safe_close(sv[1]);

        /* The first frame: "ready" (empty) from a worker, or the broker's refusal. */
        r = wait_watched(sv[0], watch_fd, deadline);
        if (r == -ECANCELED) /* closing our end takes the run out of the broker's queue */
                return hull_err(e, -ECANCELED, "broker: the caller hung up before the run started; nothing ran");
        if (r == 0)
                r = brk_frame_recv(sv[0], BRK_RESULT_MAX, deadline, &ans, &ans_len);
        if (r == -ETIMEDOUT) /* closing our end (cleanup) takes the run out of the broker's queue */
                return not_started(ret, "no run slot became free in time");
        if (r < 0)
                return not_started(ret, "the sandbox broker ended before the run started");
        if (ans_len > 0) { /* nothing was sent, so nothing ran, whatever this says */
                sbx_plan_result res = {0};
                if (brk_plan_result_decode(ans, ans_len, &res) < 0 || res.outcome != SBX_PLAN_NOT_STARTED) {
                        sbx_plan_result_done(&res);
                        return not_started(ret, "the sandbox broker answered out of turn");
                }
                *ret = res;
                return 0;
        }

        /* A worker asked: the run's own time starts now, however long it queued. */
        deadline = now_mono_ms() + wait_ms;
        r = brk_frame_send(sv[0], buf, len, deadline);
        if (r < 0)
                return hull_err(e, r == -EPIPE ? -EPROTO : r, "broker: cannot hand the run to its worker");
        free(TAKE_PTR(ans));
        r = wait_watched(sv[0], watch_fd, deadline);
        if (r == -ECANCELED) /* closing our end tells the worker to stop the run */
                return hull_err(e, -ECANCELED, "broker: the caller hung up; the run was stopped");
        if (r == 0)
                r = brk_frame_recv(sv[0], BRK_RESULT_MAX, deadline, &ans, &ans_len);
        if (r == -EPIPE)
                return hull_err(e, -EPROTO, "broker: the worker ended without a result");
        if (r < 0)
                return hull_err(e, r, "broker: no result from the worker");
        r = brk_plan_result_decode(ans, ans_len, ret);
        if (r < 0)
                return hull_err(e, r, "broker: the worker's result is malformed");
        return 0;
}

void brk_cancel_all(brk_broker *b) {
        (void) ctl_send(b, CTL_CANCEL, -1);
}

int brk_pidfd(const brk_broker *b) {
        return b->pidfd;
}

bool brk_alive(brk_broker *b) {
        struct pollfd p = {.fd = b->pidfd, .events = POLLIN};
        return b->pidfd >= 0 && poll(&p, 1, 0) == 0;
}

void brk_stop(brk_broker *b) {
        if (!b)
                return;
        pthread_mutex_lock(&b->lock);
        b->ctl = safe_close(b->ctl);
        pthread_mutex_unlock(&b->lock);
        /* Its workers get SIGTERM, then SIGKILL after BRK_STOP_GRACE_MS; allow for their reaping. */
        if (b->pidfd >= 0 && brk_wait_fd(b->pidfd, POLLIN, now_mono_ms() + BRK_STOP_GRACE_MS + BRK_STOP_SLACK_MS) < 0)
                kill(b->pid, SIGKILL);
        else if (b->pidfd < 0)
                kill(b->pid, SIGKILL);
        while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        safe_close(b->pidfd);
        pthread_mutex_destroy(&b->lock);
        free(b);
}

/* ---- sessions, the daemon's side ---- */

int brk_session_open(brk_broker *b, const brk_session_spec *spec, brk_session *ret, hull_error *e) {
        _cleanup_close_pair_ int sv[2] = {-1, -1};
        _cleanup_free_ keeper_req *rq = calloc(1, sizeof(*rq));
        keeper_reply rep;
        int r, log_fd = -1;

        if (!rq)
                return hull_err(e, -ENOMEM, "session: out of memory");
        *rq = (keeper_req){.magic = KEEPER_MAGIC,
                           .memory_bytes = spec->memory_bytes,
                           .pids = spec->pids,
                           .millicpus = spec->millicpus,
                           .tmp_bytes = spec->tmp_bytes,
                           .net = (uint32_t) spec->net,
                           .tier = (uint32_t) spec->tier};
        if (spec->handles_dir && (size_t) snprintf(rq->handles_dir, sizeof(rq->handles_dir), "%s", spec->handles_dir) >=
                                         sizeof(rq->handles_dir))
                return hull_err(e, -ENAMETOOLONG, "session: the handle store path is too long");
        if (spec->layer_dir &&
            (size_t) snprintf(rq->layer_dir, sizeof(rq->layer_dir), "%s", spec->layer_dir) >= sizeof(rq->layer_dir))
                return hull_err(e, -ENAMETOOLONG, "session: the layer path is too long");
        if (spec->skills_dir &&
            (size_t) snprintf(rq->skills_dir, sizeof(rq->skills_dir), "%s", spec->skills_dir) >= sizeof(rq->skills_dir))
                return hull_err(e, -ENAMETOOLONG, "session: the skills path is too long");
        if (spec->mnt_dir &&
            (size_t) snprintf(rq->mnt_dir, sizeof(rq->mnt_dir), "%s", spec->mnt_dir) >= sizeof(rq->mnt_dir))
                return hull_err(e, -ENAMETOOLONG, "session: the resources' path is too long");
        if (spec->net >= _SBX_NET_MODE_MAX)
                return hull_err(e, -EINVAL, "session: no such network mode");
        if (spec->net == SBX_NET_LIMITED) {
                const sbx_net_policy *pol = spec->net_policy;
                if (!pol)
                        return hull_err(e, -EINVAL, "session: a limited network needs a policy");
                for (char *const *h = pol->allowed_hosts; h && *h; h++) {
                        if (rq->n_hosts >= SBX_NET_ALLOW_MAX || strlen(*h) > EGRESS_HOST_MAX)
                                return hull_err(e, -E2BIG, "session: more than %u allowed hosts, or one too long",
                                                SBX_NET_ALLOW_MAX);
                        memcpy(rq->hosts[rq->n_hosts++], *h, strlen(*h) + 1);
                }
                for (char *const *c = pol->allow_cidrs; c && *c; c++) {
                        if (rq->n_cidrs >= BRK_NET_CIDRS_MAX || strlen(*c) >= BRK_NET_CIDR_TEXT)
                                return hull_err(e, -E2BIG, "session: more than %u allowed CIDRs, or one too long",
                                                BRK_NET_CIDRS_MAX);
                        memcpy(rq->cidrs[rq->n_cidrs++], *c, strlen(*c) + 1);
                }
                rq->allow_package_managers = pol->allow_package_managers;
                rq->allow_loopback = pol->allow_loopback;
                log_fd = pol->log_fd;
                rq->has_log = log_fd >= 0;
        }

        *ret = (brk_session){.keeper_fd = -1, .ctl_fd = -1, .ws_fd = -1, .pidfd = -1, .bpf_fd = -1, .cg_dir_fd = -1};
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return hull_err(e, negative_errno(), "session: cannot create a socket to the broker");
        r = ctl_send(b, CTL_SESSION, sv[1]);
        if (r < 0)
                return hull_err(e, r, "session: the sandbox broker is gone");
        sv[1] = safe_close(sv[1]);
        r = sock_send_fds(sv[0], rq, sizeof(*rq), &log_fd, log_fd >= 0 ? 1 : 0, MSG_NOSIGNAL);
        if (r < 0)
                return hull_err(e, r, "session: the sandbox broker refused the session");
        r = wait_watched(sv[0], -1,
                         now_mono_ms() +
                                 (spec->tier == SBX_TIER_KERNEL ? SBX_KERNEL_START_TIMEOUT_MS + SBX_KERNEL_WARM_MS
                                                                : SBX_START_TIMEOUT_MS) +
                                 BRK_IO_TIMEOUT_MS);
        if (r < 0)
                return hull_err(e, r, "session: no answer from the sandbox broker");
        int fds[8], truncated = 0;
        size_t nfds = 0;
        ssize_t n = sock_recv_fds(sv[0], &rep, sizeof(rep), 0, fds, ELEMENTSOF(fds), &nfds, &truncated);
        if (n != (ssize_t) sizeof(rep) || rep.magic != KEEPER_MAGIC || truncated) {
                for (size_t i = 0; i < nfds; i++)
                        safe_close(fds[i]);
                return hull_err(e, n == 0 ? -EAGAIN : -EPROTO,
                                n == 0 ? "session: the sandbox broker refused the session (shutting down or full)"
                                       : "session: malformed answer from the sandbox broker");
        }
        size_t want = rep.kernel ? 3 : 4; /* the kernel tier has no seccomp memfd (no zygote) */
        if (rep.err < 0 || nfds != want + rep.n_cg_fds + (rep.has_cg_dir ? 1 : 0) ||
            rep.n_cg_fds > ELEMENTSOF(ret->cg_fds) || (rep.kernel && (rep.n_cg_fds || rep.has_cg_dir))) {
                for (size_t i = 0; i < nfds; i++)
                        safe_close(fds[i]);
                rep.msg[sizeof(rep.msg) - 1] = '\0';
                return hull_err(e, rep.err < 0 ? rep.err : -EPROTO, "%s",
                                rep.err < 0 ? rep.msg : "session: malformed answer from the sandbox broker");
        }
        ret->ctl_fd = fds[0];
        ret->ws_fd = fds[1];
        ret->pidfd = fds[2];
        ret->bpf_fd = rep.kernel ? -1 : fds[3];
        for (size_t i = 0; i < rep.n_cg_fds; i++)
                ret->cg_fds[ret->n_cg_fds++] = fds[4 + i];
        if (rep.has_cg_dir)
                ret->cg_dir_fd = fds[4 + rep.n_cg_fds];
        ret->host_uid = rep.host_uid;
        ret->host_gid = rep.host_gid;
        ret->keeper_fd = TAKE_FD(sv[0]);
        return 0;
}

int brk_session_ended(brk_session *s, bool *ret_oom) {
        keeper_end end;
        *ret_oom = false;
        if (s->keeper_fd < 0)
                return 1;
        ssize_t n = recv(s->keeper_fd, &end, sizeof(end), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n == (ssize_t) sizeof(end) && end.magic == KEEPER_MAGIC)
                *ret_oom = end.oom != 0;
        return 1;
}

void brk_session_close(brk_session *s) {
        s->keeper_fd = safe_close(s->keeper_fd);
        s->ctl_fd = safe_close(s->ctl_fd);
        s->ws_fd = safe_close(s->ws_fd);
        s->pidfd = safe_close(s->pidfd);
        s->bpf_fd = safe_close(s->bpf_fd);
        for (size_t i = 0; i < s->n_cg_fds; i++)
                safe_close(s->cg_fds[i]);
        s->n_cg_fds = 0;
        s->cg_dir_fd = safe_close(s->cg_dir_fd);
}
