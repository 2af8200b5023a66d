/* sbx-session-cgroup.c: a container-tier session's cgroup seen from the host: its membership
 * files (for the zygote's interpreters to join) and its task count, which tells after a cell
 * whether anything is left to sweep without a round trip to the session's init.
 *
 * Every process of a container-tier session is in its cgroup (the init, the interpreters, what
 * they start: a forked child inherits it, and the sandbox cannot write another cgroup's
 * membership files). The cgroup's pids.current counts its tasks (threads, and zombies until
 * reaped). The init is one task and each running interpreter at least one, so a count equal to
 * 1 + the running interpreters, read while each of them is alive, means nothing else existed
 * at that moment: nothing the cell started, no thread of an interpreter. Each one's liveness is
 * its pidfd polled after the count was read (a process that died and left its place to another
 * would show as exited). The pidfd is found once per interpreter, right after its hello and
 * before it ran any code, as the process of the cgroup whose NSpid (from the pidfd's fdinfo, so
 * no pid can be reused under it) has the init's depth and the interpreter's own pid last.
 * Anything else (a count above the floor, an interpreter without a pidfd, no cgroup) is swept
 * as before. What runs after the check (a signal handler the cell left, say) is the next sweep's,
 * as it was the next sweep's after a sweep. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sbx-internal.h"
#include "sbx-session.h"

int sbx_session_open_cgroup(sbx_session_box *b, hull_error *e) {
        char paths[3][SBX_CGROUP_TASKS_PATH_MAX];
        if (!b->have_cg)
                return 0;
        int n = sbx_cgroup_tasks_paths(&b->cg, "", paths, ELEMENTSOF(paths), e);
        if (n < 0)
                return n;
        if (n == 0 && b->cg.memory[0]) { /* v2: one cgroup.procs */
                if ((size_t) snprintf(paths[0], sizeof(paths[0]), "%s/cgroup.procs", b->cg.memory) >= sizeof(paths[0]))
                        return hull_err(e, -ENAMETOOLONG, "session: cgroup path too long");
                n = 1;
        }
        for (int i = 0; i < n; i++) {
                int fd = open(paths[i], O_WRONLY | O_CLOEXEC);
                if (fd < 0)
                        return hull_err(e, negative_errno(), "session: cannot open %s", paths[i]);
                b->cg_fds[b->n_cg_fds++] = fd;
        }
        /* The cgroup that counts the tasks (below): not having one only costs time. */
        const char *count_dir = b->cg.pids[0] ? b->cg.pids : b->cg.memory;
        if (n > 0 && count_dir[0])
                b->cg_dir_fd = open(count_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return 0;
}

/* The NSpid line of a pidfd's fdinfo: how many pid namespaces deep the process is and its pid
 * in the innermost. Returns 0, or a negative errno (-ESRCH: it has exited). */
static int pidfd_nspid(int pidfd, unsigned *ret_depth, pid_t *ret_last) {
        char path[64], buf[SBX_QUIET_FDINFO_BUF];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return n < 0 ? negative_errno() : -EIO;
        buf[n] = '\0';
        const char *p = strstr(buf, "\nNSpid:");
        if (!p)
                return -ESRCH; /* exited: the kernel prints Pid: -1 and no NSpid */
        p += strlen("\nNSpid:");
        unsigned depth = 0;
        long last = 0;
        for (;;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p < '0' || *p > '9')
                        break;
                char *end;
                last = strtol(p, &end, 10);
                p = end;
                depth++;
        }
        if (depth == 0 || last <= 0)
                return -EPROTO;
        *ret_depth = depth;
        *ret_last = (pid_t) last;
        return 0;
}

void sbx_interp_find(sbx_session *s, sbx_interp *in) {
        char buf[SBX_QUIET_PROCS_BUF];
        unsigned init_depth, depth;
        pid_t init_last, last;

        in->pidfd = safe_close(in->pidfd);
        if (s->cg_dir_fd < 0 || s->pidfd < 0 || in->pid <= 1)
                return;
        if (pidfd_nspid(s->pidfd, &init_depth, &init_last) < 0 || init_last != 1)
                return;
        _cleanup_close_ int fd = openat(s->cg_dir_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t) n;
                if (len == sizeof(buf) - 1)
                        return; /* more than we read: its cells are swept */
        }
        buf[len] = '\0';
        for (char *p = buf; *p;) {
                char *end;
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                p = end;
                while (*p == '\n')
                        p++;
                if (pid <= 0 || pid > INT32_MAX)
                        continue;
                int pfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
                if (pfd < 0)
                        continue;
                if (pidfd_nspid(pfd, &depth, &last) == 0 && depth == init_depth && last == in->pid) {
                        in->pidfd = pfd;
                        return;
                }
                safe_close(pfd);
        }
}

bool sbx_session_quiet(sbx_session *s) {
        struct pollfd pf[_SBX_LANG_MAX + 1];
        size_t n = 0;
        char buf[32];

        if (s->cg_dir_fd < 0 || s->pidfd < 0)
                return false;
        for (int i = 0; i < _SBX_LANG_MAX; i++) {
                const sbx_interp *in = &s->interp[i];
                if (!in->running)
                        continue;
                if (in->hello_pending || in->pidfd < 0)
                        return false;
                pf[n++] = (struct pollfd){.fd = in->pidfd, .events = POLLIN};
        }
        pf[n++] = (struct pollfd){.fd = s->pidfd, .events = POLLIN};
        if (s->pids_fd < 0) {
                s->pids_fd = openat(s->cg_dir_fd, "pids.current", O_RDONLY | O_CLOEXEC);
                if (s->pids_fd < 0)
                        return false;
        }
        /* The count first; then each of the processes it must be is alive (none readable). */
        ssize_t k = pread(s->pids_fd, buf, sizeof(buf) - 1, 0);
        if (k <= 0)
                return false;
        buf[k] = '\0';
        char *end;
        unsigned long long tasks = strtoull(buf, &end, 10);
        if (end == buf || (*end != '\n' && *end != '\0') || tasks != n)
                return false;
        int r;
        do
                r = poll(pf, n, 0);
        while (r < 0 && errno == EINTR);
        return r == 0;
}
