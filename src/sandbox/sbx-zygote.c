/* sbx-zygote.c: hull serve's python zygote (runtime/zygote.py, numpy and pandas imported once):
 * started as a child of the caller (for hull serve: a second later or at its first request, at
 * low priority while it warms up), its readiness, and the lift of that priority (sbx-session.h).
 * Its spawn requests are sbx-session.c's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "runtime-embed.h"
#include "sbx-internal.h"
#include "sbx-session.h"

void sbx_zygote_lift(int fd) {
        if (fd >= 0)
                (void) !write(fd, "0", 1); /* a hint: its failure (the zygote gone) changes nothing */
}

int sbx_zygote_start_reaped(pid_t *ret_pid, bool hull_reaper, int *ret_lift_fd, hull_error *e) {
        _cleanup_close_pair_ int sp[2] = {-1, -1};
        if (access(SBX_PYTHON_BIN, X_OK) < 0)
                return hull_err(e, -ENOENT, "zygote: %s is not installed", SBX_PYTHON_BIN);
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return hull_err(e, negative_errno(), "zygote: cannot create its socket");
        /* Its sources on its fd 0 (boot.py puts /dev/null there), not on its command line. */
        const char *src[] = {hull_runtime_zygote_py, hull_runtime_cell_py, hull_runtime_hull_py};
        _cleanup_close_ int src_fd = sbx_sources_memfd(src, ELEMENTSOF(src), e);
        if (src_fd < 0)
                return src_fd;
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0)
                return hull_err(e, negative_errno(), "zygote: fork");
        if (pid == 0) {
                char *argv[] = {(char *) "hull-zygote", (char *) "-c", (char *) hull_runtime_boot_py, NULL};
                char *reaper_env = hull_reaper ? (char *) "HULL_REAPER_FD=4" : NULL;
                char *envp[] = {(char *) "OPENBLAS_NUM_THREADS=1",
                                (char *) "OMP_NUM_THREADS=1",
                                (char *) "MKL_NUM_THREADS=1",
                                (char *) "PATH=/usr/bin:/bin",
                                (char *) "LANG=C.UTF-8",
                                reaper_env,
                                NULL};
                if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
                        _exit(1);
                /* No controlling terminal: hull serve's may be an operator's, and every interpreter
                 * forked from here would inherit it. */
                if (setsid() < 0)
                        _exit(1);
                if (ret_lift_fd) { /* its new session's group: low priority until zygote.py lifts it */
                        int ag = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
                        if (ag >= 0) {
                                (void) !write(ag, SBX_ZYGOTE_WARMUP_NICE, sizeof(SBX_ZYGOTE_WARMUP_NICE) - 1);
                                close(ag);
                        }
                }
                /* fd 4: this binary, as which each interpreter's waiting parent waits (zygote.py) */
                if (dup2(src_fd, 0) < 0 || dup2(sp[1], 3) < 0)
                        _exit(1);
                int self = hull_reaper ? open("/proc/self/exe", O_RDONLY | O_CLOEXEC) : -1; /* 4 or more */
                if (hull_reaper && (self < 0 || (self == 4 ? fcntl(4, F_SETFD, 0) : dup2(self, 4)) < 0))
                        _exit(1);
                /* stdout and stderr stay hull serve's: a traceback of the zygote is visible. */
                if (syscall(SYS_close_range, hull_reaper ? 5U : 4U, ~0U, 0) < 0)
                        _exit(1);
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                /* hull serve's warms up a moment after the start (numpy's and pandas' imports shared
                 * the 2 cores of a small machine with the start and a one-off script's first turn,
                 * even at nice 19), or at once when the first spawn request is there (it stays
                 * queued for zygote.py); the server gone first (EOF): nothing to warm up for. */
                struct pollfd first = {.fd = 3, .events = POLLIN};
                if (ret_lift_fd && poll(&first, 1, (int) SBX_ZYGOTE_WARMUP_DELAY_MS) > 0 && (first.revents & POLLHUP))
                        _exit(0);
                execve(SBX_PYTHON_BIN, argv, envp);
                _exit(127);
        }
        sp[1] = safe_close(sp[1]);
        if (ret_lift_fd) {
                char path[64];
                snprintf(path, sizeof(path), "/proc/%d/autogroup", (int) pid);
                *ret_lift_fd = open(path, O_WRONLY | O_CLOEXEC); /* the task's, whatever its group then */
        }
        if (ret_pid)
                *ret_pid = pid;
        return TAKE_FD(sp[0]);
}

int sbx_zygote_wait_ready(int zygote_fd, uint64_t timeout_ms, hull_error *e) {
        struct pollfd p = {.fd = zygote_fd, .events = POLLIN};
        int n = poll(&p, 1, (int) timeout_ms);
        if (n == 0)
                return hull_err(e, -ETIMEDOUT, "zygote: not ready after %" PRIu64 " ms", timeout_ms);
        if (n < 0)
                return hull_err(e, negative_errno(), "zygote: poll");
        char buf[4096];
        ssize_t k = recv(zygote_fd, buf, sizeof(buf) - 1, 0);
        if (k <= 0)
                return hull_err(e, k == 0 ? -EPIPE : negative_errno(), "zygote: it ended before it was ready");
        buf[k] = '\0';
        json_t *j = json_loadb(buf, (size_t) k, 0, NULL);
        json_t *ready = json_object_get(j, "ready");
        int r = json_is_object(ready) ? 0 : hull_err(e, -EPROTO, "zygote: unexpected first message");
        json_decref(j);
        return r;
}
