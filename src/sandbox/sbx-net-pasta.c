/* sbx-net-pasta.c: the unrestricted network mode: Debian's pasta (package passt) gives a
 * sandbox's network namespace a tap interface with the host's address and a default route, and
 * relays its TCP, UDP and ICMP through the host's sockets. See sbx-net.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sbx-net.h"
#include "time-util.h"

/* Whether /proc/PID/net/route (the routes of PID's network namespace) has a default route. */
static bool has_default_route(pid_t pid) {
        char path[64], buf[4096];
        snprintf(path, sizeof(path), "/proc/%d/net/route", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n = loop_read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        /* "Iface Destination Gateway ..." lines; the default route's Destination is 00000000 */
        for (char *l = strchr(buf, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
                const char *f = l + 1;
                f += strcspn(f, " \t\n"); /* the interface */
                f += strspn(f, " \t");
                if (strncmp(f, "00000000", 8) == 0 && (f[8] == ' ' || f[8] == '\t'))
                        return true;
        }
        return false;
}

int sbx_net_pasta_start(pid_t child, pid_t *ret, hull_error *e) {
        char netns[64], runas[64];
        /* The child is not dumpable, so pasta (which drops its capabilities) could not open its
         * /proc/PID/ns/net: it gets the namespace opened here, as fd 3. */
        snprintf(netns, sizeof(netns), "/proc/%d/ns/net", (int) child);
        _cleanup_close_ int ns_fd = open(netns, O_RDONLY | O_CLOEXEC);
        if (ns_fd < 0)
                return hull_err(e, negative_errno(), "net: cannot open the sandbox's network namespace");
        snprintf(netns, sizeof(netns), "/proc/self/fd/3");
        /* as root pasta would switch to "nobody", which cannot join the sandbox's user namespace */
        snprintf(runas, sizeof(runas), "%u:%u", (unsigned) geteuid(), (unsigned) getegid());
        char *const argv[] = {(char *) "pasta",
                              (char *) "--foreground",
                              (char *) "--quiet",
                              (char *) "--config-net",
                              (char *) "--no-map-gw",
                              (char *) "--runas",
                              runas,
                              (char *) "-t",
                              (char *) "none",
                              (char *) "-u",
                              (char *) "none",
                              (char *) "-T",
                              (char *) "none",
                              (char *) "-U",
                              (char *) "none",
                              (char *) "--netns-only",
                              (char *) "--netns",
                              netns,
                              NULL};
        if (access(SBX_NET_PASTA_PATH, X_OK) < 0)
                return hull_err_hint(e, -ENOENT, "install Debian's passt package (scripts/install-deps.sh does)",
                                     "net: unrestricted networking needs %s", SBX_NET_PASTA_PATH);
        _cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0)
                return hull_err(e, negative_errno(), "net: cannot open /dev/null");
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0)
                return hull_err(e, negative_errno(), "net: cannot fork pasta");
        if (pid == 0) {
                /* pasta would keep the namespace alive after the sandbox: it dies with us, and
                 * the owner kills it when the sandbox ends */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                        _exit(127);
                /* its stderr stays hull's: with --quiet pasta prints only its errors */
                if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
                        _exit(127);
                if (ns_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(ns_fd, 3) < 0)
                        _exit(127);
                (void) syscall(SYS_close_range, 4U, ~0U, 0U);
                /* pasta refuses to start when SIGPIPE is ignored already (its check of
                 * signal()'s answer takes SIG_IGN for a failure), as it is in hull exec */
                for (int sig = 1; sig < NSIG; sig++)
                        if (sig != SIGKILL && sig != SIGSTOP)
                                (void) signal(sig, SIG_DFL);
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                execve(SBX_NET_PASTA_PATH, argv, (char *const[]){NULL});
                _exit(127);
        }
        /* ready when the namespace has its default route */
        uint64_t deadline = now_mono_ms() + SBX_NET_PASTA_START_MS;
        for (;;) {
                int st;
                pid_t w = waitpid(pid, &st, WNOHANG);
                if (w == pid)
                        return hull_err_hint(e, -ENETUNREACH, "run pasta by hand to see why (pasta --help)",
                                             "net: pasta ended before the sandbox's network was up (%s %d)",
                                             WIFEXITED(st) ? "status" : "signal",
                                             WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
                if (has_default_route(child))
                        break;
                if (now_mono_ms() >= deadline) {
                        sbx_net_pasta_stop(pid);
                        return hull_err(e, -ETIMEDOUT, "net: pasta did not set the sandbox's network up within %u ms",
                                        SBX_NET_PASTA_START_MS);
                }
                usleep(5000);
        }
        *ret = pid;
        return 0;
}

void sbx_net_pasta_stop(pid_t pid) {
        if (pid <= 0)
                return;
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}
