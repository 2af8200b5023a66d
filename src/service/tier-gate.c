/* tier-gate.c: the kernel tier's self-check in the background (tier-gate.h): the prober process,
 * its result over a pipe, and the evidence it publishes under a lock. */
#include "tier-gate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "limits.h"
#include "macro.h"
#include "sbx-session.h"
#include "sbx-oci.h"
#include "time-util.h"

/* What the prober writes: one fixed-size record. */
typedef struct probe_result {
        int32_t status; /* 0: passed; else a negative errno */
        sbx_oci_runtime rt;
        char msg[HULL_ERROR_MSG_MAX];
} probe_result;

struct tg_gate {
        pthread_mutex_t mu;
        pthread_cond_t settled_cv;
        bool settled;
        plim_evidence ev;
        char kernel_evidence[HULL_ERROR_MSG_MAX / 2]; /* "gVisor runsc VERSION, platform P" */
        char platform[SBX_OCI_PLATFORM_MAX];          /* the platform the check chose */
        const char *_Atomic published;                /* kernel_evidence once written; else NULL */
        int fd;                                       /* the prober's pipe; -1 once settled */
        int go_fd;                                    /* a byte: run the check now; EOF: never */
        atomic_bool went;                             /* the byte was written */
        pid_t pid;                                    /* the prober; -1 once reaped */
};

/* The prober: at a lower priority than the daemon, and TG_PROBE_DELAY_MS after the start unless
 * told to go earlier (the check must not slow the first calls); told nothing (the daemon ended
 * first), it ends without running runsc. */
static _Noreturn void prober_main(int wfd, int gofd) {
        probe_result res = {0};
        hull_error ke = {0};
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        (void) setpriority(PRIO_PROCESS, 0, TG_PROBE_NICE);
        /* only the pipes stay, as 3 (the answer) and 4 (the go): the daemon's fds (the zygote's
         * socket, the store) must see their ends when the daemon closes them, not when this ends */
        int w = fcntl(wfd, F_DUPFD_CLOEXEC, 10), g = fcntl(gofd, F_DUPFD_CLOEXEC, 10);
        if (w < 0 || g < 0 || dup3(w, 3, O_CLOEXEC) != 3 || dup3(g, 4, O_CLOEXEC) != 4)
                _exit(1);
        (void) syscall(SYS_close_range, 5U, ~0U, 0);
        wfd = 3;
        struct pollfd p = {.fd = 4, .events = POLLIN};
        char go;
        if (poll(&p, 1, TG_PROBE_DELAY_MS) > 0 && read(4, &go, 1) != 1)
                _exit(0);
        int r = sbx_oci_runtime_find(&res.rt, &ke);
        if (r >= 0)
                r = sbx_oci_runtime_probe(&res.rt, &ke);
        res.status = r < 0 ? r : 0;
        snprintf(res.msg, sizeof(res.msg), "%s", r < 0 ? ke.msg : "");
        _exit(write(wfd, &res, sizeof(res)) == (ssize_t) sizeof(res) ? 0 : 1);
}

int tg_start(const plim_evidence *base, bool want_kernel, tg_gate **ret, hull_error *e) {
        tg_gate *g = calloc(1, sizeof(*g));
        if (!g)
                return hull_err(e, -ENOMEM, "serve: out of memory");
        pthread_mutex_init(&g->mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g->settled_cv, &ca);
        pthread_condattr_destroy(&ca);
        g->ev = *base;
        g->fd = -1;
        g->go_fd = -1;
        g->pid = -1;
        g->settled = !want_kernel;
        if (want_kernel) {
                int p[2], go[2];
                if (pipe2(p, O_CLOEXEC) < 0) {
                        int r = hull_err(e, negative_errno(), "serve: cannot make the kernel check's pipe");
                        tg_free(g);
                        return r;
                }
                if (pipe2(go, O_CLOEXEC) < 0) {
                        int r = hull_err(e, negative_errno(), "serve: cannot make the kernel check's pipe");
                        close(p[0]);
                        close(p[1]);
                        tg_free(g);
                        return r;
                }
                pid_t pid = fork();
                if (pid == 0) {
                        close(p[0]);
                        close(go[1]);
                        prober_main(p[1], go[0]);
                }
                close(p[1]);
                close(go[0]);
                if (pid < 0) {
                        int r = hull_err(e, negative_errno(), "serve: cannot fork the kernel check");
                        close(p[0]);
                        close(go[1]);
                        tg_free(g);
                        return r;
                }
                g->fd = p[0];
                g->go_fd = go[1];
                g->pid = pid;
        }
        *ret = g;
        return 0;
}

int tg_fd(const tg_gate *g) {
        return g->fd;
}

static void reap(tg_gate *g) {
        if (g->pid > 0)
                (void) waitpid(g->pid, NULL, 0);
        g->pid = -1;
}

void tg_settle(tg_gate *g, const dlog *log) {
        probe_result res = {.status = -EPROTO};
        char clean[HULL_ERROR_MSG_MAX];
        hull_error ke = {0};
        if (g->fd < 0)
                return;
        ssize_t n = read(g->fd, &res, sizeof(res));
        g->fd = safe_close(g->fd);
        reap(g);
        if (n != (ssize_t) sizeof(res)) {
                res.status = -EPROTO;
                snprintf(res.msg, sizeof(res.msg), "kernel: the self-check's process ended without an answer");
        }
        res.msg[sizeof(res.msg) - 1] = '\0';
        pthread_mutex_lock(&g->mu);
        if (res.status == 0) {
                sbx_oci_runtime_evidence(&res.rt, g->kernel_evidence, sizeof(g->kernel_evidence));
                snprintf(g->platform, sizeof(g->platform), "%s", res.rt.platform);
                g->ev.isolation = "kernel";
                g->ev.session_isolation = "container";
                g->ev.kernel_evidence = g->kernel_evidence;
                atomic_store(&g->published, g->kernel_evidence);
                g->ev.kernel_platform = g->platform;
                /* sessions of the kernel tier too (a floor of kernel asks for one; they need root) */
                g->ev.kernel_sessions = g->ev.sessions && sbx_session_kernel_available(&ke) == 0;
        }
        g->settled = true;
        pthread_cond_broadcast(&g->settled_cv);
        pthread_mutex_unlock(&g->mu);
        if (res.status == 0)
                dlog_log(log, DLOG_INFO, "event=kernel-tier evidence=\"%s\"", g->kernel_evidence);
        else {
                /* one line a person reads: the quoted value keeps its spaces (dlog_clean maps byte
                 * for byte) */
                dlog_clean(res.msg, clean, sizeof(clean));
                for (size_t i = 0; clean[i] && res.msg[i]; i++)
                        if (res.msg[i] == ' ')
                                clean[i] = ' ';
                dlog_log(log, DLOG_WARN,
                         "event=kernel-tier-unavailable error=\"%s\" msg=\"container is the highest tier\"", clean);
        }
}

bool tg_settled(tg_gate *g) {
        pthread_mutex_lock(&g->mu);
        bool settled = g->settled;
        pthread_mutex_unlock(&g->mu);
        return settled;
}

plim_evidence tg_evidence(tg_gate *g, bool wait) {
        pthread_mutex_lock(&g->mu);
        if (wait && !g->settled) {
                if (g->go_fd >= 0 && !atomic_exchange(&g->went, true)) /* the check now, not after its delay */
                        (void) !write(g->go_fd, "g", 1);
                struct timespec until;
                clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_sec += TG_WAIT_MS / 1000;
                while (!g->settled && pthread_cond_timedwait(&g->settled_cv, &g->mu, &until) != ETIMEDOUT)
                        ;
        }
        plim_evidence ev = g->ev;
        pthread_mutex_unlock(&g->mu);
        return ev;
}

const char *_Atomic const *tg_kernel_evidence(const tg_gate *g) {
        return &g->published;
}

void tg_free(tg_gate *g) {
        if (!g)
                return;
        safe_close(g->go_fd); /* a prober still waiting to start ends at once */
        safe_close(g->fd);
        reap(g);
        pthread_cond_destroy(&g->settled_cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
}
