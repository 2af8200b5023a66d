/* sbx-oci.c: the kernel tier's bundles and runsc itself (see sbx-oci.h): finding and probing
 * runsc, writing a bundle (its root, /etc files and config.json with jansson), starting runsc in
 * the bundle's cgroup, and the teardown that leaves nothing behind. The single run that uses
 * them is sbx-kernel.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <linux/close_range.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sbx-internal.h"
#include "sbx-oci.h"
#include "sbx-oci-root.h"
#include "sbx-seccomp-list.h"

/* ---- runsc ---- */

static bool is_executable(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int sbx_oci_runtime_find(sbx_oci_runtime *ret, hull_error *e) {
        sbx_oci_runtime rt = {0};
        const char *env = getenv("HULL_RUNSC");
        if (env && env[0]) {
                if (env[0] != '/' || !is_executable(env))
                        return hull_err_hint(e, -ENOENT, "set HULL_RUNSC to the absolute path of a runsc binary",
                                             "kernel: HULL_RUNSC=%s is not an executable file", env);
                if ((size_t) snprintf(rt.path, sizeof(rt.path), "%s", env) >= sizeof(rt.path))
                        return hull_err(e, -ENAMETOOLONG, "kernel: HULL_RUNSC is too long");
        } else {
                const char *path = getenv("PATH");
                bool found = false;
                if (!path || !path[0])
                        path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
                for (const char *p = path; *p && !found;) {
                        size_t n = strcspn(p, ":");
                        if (n > 0 && p[0] == '/' && n + sizeof("/runsc") <= sizeof(rt.path)) {
                                snprintf(rt.path, sizeof(rt.path), "%.*s/runsc", (int) n, p);
                                found = is_executable(rt.path);
                        }
                        p += n + (p[n] == ':');
                }
                if (!found) {
                        snprintf(rt.path, sizeof(rt.path), "/usr/bin/runsc");
                        if (!is_executable(rt.path))
                                return hull_err_hint(
                                        e, -ENOENT, "install gVisor (Debian: apt-get install runsc; or set HULL_RUNSC)",
                                        "kernel: runsc is not installed");
                }
        }
        const char *plat = getenv("HULL_RUNSC_PLATFORM");
        if (plat && plat[0]) {
                for (const char *c = plat; *c; c++)
                        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
                                return hull_err_hint(e, -EINVAL, "e.g. HULL_RUNSC_PLATFORM=systrap or ptrace",
                                                     "kernel: HULL_RUNSC_PLATFORM=%s is not a platform name", plat);
                if ((size_t) snprintf(rt.platform, sizeof(rt.platform), "%s", plat) >= sizeof(rt.platform))
                        return hull_err(e, -ENAMETOOLONG, "kernel: HULL_RUNSC_PLATFORM is too long");
        }
        *ret = rt;
        return 0;
}

/* A new network namespace for the calling process, loopback up, and the proxy's listening socket
 * on 127.0.0.1:SBX_NET_PROXY_PORT there. Returns it, or -1 with errno (async-signal-safe; a
 * failure may leave the process in the new namespace). */
static int limited_net_listen(void) {
        struct ifreq ifr = {0};
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(SBX_NET_PROXY_PORT)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (unshare(CLONE_NEWNET) < 0)
                return -1;
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        memcpy(ifr.ifr_name, "lo", 3);
        if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                goto fail;
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                goto fail;
        close(fd);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, SBX_NET_BACKLOG) < 0)
                goto fail;
        return fd;
fail:
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}

int sbx_oci_net_enter(hull_error *e) {
        int fd = limited_net_listen();
        if (fd < 0)
                return hull_err(e, negative_errno(), "kernel: cannot make the limited network's namespace");
        return fd;
}

/* In a forked child, for a limited network: limited_net_listen(), the socket sent to the parent
 * over sync_fd (the child keeps no copy). Async-signal-safe; _exits on failure. */
static void child_limited_net(int sync_fd) {
        int fd = limited_net_listen();
        if (fd < 0)
                _exit(SBX_EXIT_SETUP);
        char cbuf[CMSG_SPACE(sizeof(int))];
        memset(cbuf, 0, sizeof(cbuf));
        char byte = 'n';
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        if (sendmsg(sync_fd, &mh, MSG_NOSIGNAL) != 1)
                _exit(SBX_EXIT_SETUP);
        close(fd);
}

/* In a forked child, for an unrestricted network: a new network namespace with loopback up and
 * the metadata routes to nowhere (sbx_net_block_metadata, before anything can use it), then the
 * byte 'u' to the parent on sync_fd (which starts pasta on this process's namespace) and wait
 * for its go (a byte). Async-signal-safe; _exits on failure. */
static void child_unrestricted_net(int sync_fd) {
        struct ifreq ifr = {0};
        const char *what;
        char byte = 'u';
        if (unshare(CLONE_NEWNET) < 0)
                _exit(SBX_EXIT_SETUP);
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        memcpy(ifr.ifr_name, "lo", 3);
        if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                _exit(SBX_EXIT_SETUP);
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                _exit(SBX_EXIT_SETUP);
        close(fd);
        if (sbx_net_block_metadata(&what) < 0 || write(sync_fd, &byte, 1) != 1 || read(sync_fd, &byte, 1) != 1)
                _exit(SBX_EXIT_SETUP);
}

/* In a forked child: stdio from the fds (-1: /dev/null), nothing else open but /dev/null at
 * SBX_OCI_WIDE_FD, default signals, a clean environment; then execve. Never returns. */
_noreturn_ _no_sanitize_address_ static void exec_runsc(const char *path, char *const *argv, int in_fd, int out_fd,
                                                        int err_fd, int go_fd, char tasks[][SBX_CGROUP_TASKS_PATH_MAX],
                                                        size_t n_tasks, int net_sync_fd, sbx_net_mode net) {
        static char *const envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        sigset_t none;
        char byte;
        if (go_fd >= 0 && read(go_fd, &byte, 1) != 1)
                _exit(SBX_EXIT_SETUP);
        /* v1: move ourselves ("0" to each `tasks` file): a thread moving itself skips the
         * threadgroup lock whose writer waits for an RCU grace period (sbx-cgroup.h). */
        for (size_t i = 0; i < n_tasks; i++) {
                int fd = open(tasks[i], O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "0", 1) != 1)
                        _exit(SBX_EXIT_SETUP);
                close(fd);
        }
        if (net_sync_fd >= 0 && net == SBX_NET_UNRESTRICTED)
                child_unrestricted_net(net_sync_fd);
        else if (net_sync_fd >= 0)
                child_limited_net(net_sync_fd);
        int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        int fds[3] = {in_fd, out_fd, err_fd};
        for (int i = 0; i < 3; i++) {
                int src = fds[i] >= 0 ? fds[i] : null_fd;
                if (src < 0 || (src == i ? fcntl(i, F_SETFD, 0) : dup2(src, i)) < 0)
                        _exit(SBX_EXIT_SETUP);
        }
        /* /dev/null at SBX_OCI_WIDE_FD, not close-on-exec (dup2 clears it): nothing of hull's,
         * nothing to read or write, only a wide fd table for runsc's children; without it (a low
         * RLIMIT_NOFILE) runsc runs as before */
        int wide = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (wide >= 0 && dup2(wide, (int) SBX_OCI_WIDE_FD) == (int) SBX_OCI_WIDE_FD) {
                syscall(SYS_close_range, 3U, SBX_OCI_WIDE_FD - 1, 0U);
                syscall(SYS_close_range, SBX_OCI_WIDE_FD + 1, ~0U, 0U);
        } else
                syscall(SYS_close_range, 3U, ~0U, 0U);
        signal(SIGPIPE, SIG_DFL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        setpgid(0, 0);
        execve(path, argv, envp);
        _exit(SBX_EXIT_SETUP);
}

/* What a vfork-style child (spawn_main) needs to exec runsc: all of it prepared by the parent,
 * read only, so the child allocates nothing and writes nothing of the parent's. */
typedef struct spawn_args {
        const char *path;
        char *const *argv;
        int in_fd, out_fd, err_fd;
        char (*tasks)[SBX_CGROUP_TASKS_PATH_MAX];
        size_t n_tasks;
} spawn_args;

_no_sanitize_address_ static int spawn_main(void *p) {
        const spawn_args *a = p;
        /* every signal is blocked (spawn_vfork): a handler of the parent's must never run here, on
         * its memory, once exec_runsc unblocks them (as posix_spawn does) */
        for (int sig = 1; sig < _NSIG; sig++) {
                struct sigaction old;
                if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)
                        signal(sig, SIG_DFL);
        }
        exec_runsc(a->path, a->argv, a->in_fd, a->out_fd, a->err_fd, -1, a->tasks, a->n_tasks, -1, SBX_NET_NONE);
}

/* Start runsc sharing this process's memory until its execve (CLONE_VM | CLONE_VFORK, on a
 * stack of its own): no page tables copied, no copy-on-write faults in either process, which a
 * fork() of hull serve or hull exec pays for every page it touches after (about 130 faults for
 * `hull exec --tier kernel`; a page fault is dear in a VM). Only when the child needs nothing
 * from the parent before its execve (no go byte, no network handshake). */
static pid_t spawn_vfork(const spawn_args *a) {
        _cleanup_free_ char *stack = malloc(SBX_EXEC_STACK_BYTES);
        if (!stack)
                return -ENOMEM;
        sigset_t all, saved;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        pid_t pid = clone(spawn_main, stack + SBX_EXEC_STACK_BYTES, CLONE_VM | CLONE_VFORK | SIGCHLD, (void *) a);
        int r = pid < 0 ? negative_errno() : pid;
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        return r;
}

static int pidfd_open_(pid_t pid) {
        return (int) syscall(SYS_pidfd_open, pid, 0);
}

/* Wait for pid at most timeout_ms, SIGKILL its group after; returns its wait status (>= 0) or a
 * negative errno. While waiting, read its stdout into buf when out_fd >= 0. */
static int wait_bounded(pid_t pid, int out_fd, char *buf, size_t size, size_t *ret_len, uint64_t timeout_ms) {
        _cleanup_close_ int pfd = pidfd_open_(pid);
        uint64_t deadline = sbx_now_us() + timeout_ms * 1000ULL;
        size_t len = 0;
        int status = 0;
        bool killed = false;
        for (;;) {
                uint64_t now = sbx_now_us();
                if (now >= deadline && !killed) {
                        kill(-pid, SIGKILL);
                        kill(pid, SIGKILL);
                        killed = true;
                }
                struct pollfd p[2] = {{.fd = pfd, .events = POLLIN}, {.fd = out_fd, .events = POLLIN}};
                int wait_ms = killed ? 1000 : (int) ((deadline - now) / 1000ULL) + 1;
                if (pfd < 0)
                        wait_ms = wait_ms > 10 ? 10 : wait_ms; /* no pidfd: poll waitpid */
                int n = poll(p, out_fd >= 0 ? 2 : 1, wait_ms);
                if (n < 0 && errno != EINTR)
                        break;
                if (out_fd >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
                        ssize_t k = size > len + 1 ? read(out_fd, buf + len, size - len - 1) : 0;
                        if (k > 0)
                                len += (size_t) k;
                        else {
                                char sink[SBX_READ_CHUNK];
                                if (read(out_fd, sink, sizeof(sink)) <= 0)
                                        out_fd = -1;
                        }
                }
                pid_t w = waitpid(pid, &status, WNOHANG);
                if (w == pid)
                        break;
                if (w < 0)
                        return negative_errno();
        }
        if (buf)
                buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return killed ? -ETIMEDOUT : status;
}

/* Run argv (runsc ...) with stdout into buf (NUL-terminated), stderr discarded. Returns the
 * wait status or a negative errno. */
static int run_capture(const char *path, char *const *argv, char *buf, size_t size, uint64_t timeout_ms) {
        _cleanup_close_pair_ int outp[2] = {-1, -1};
        if (pipe2(outp, O_CLOEXEC) < 0)
                return negative_errno();
        pid_t pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0)
                exec_runsc(path, argv, -1, outp[1], outp[1], -1, NULL, 0, -1, SBX_NET_NONE);
        outp[1] = safe_close(outp[1]);
        return wait_bounded(pid, outp[0], buf, size, NULL, timeout_ms);
}

/* "runsc version 0.0~20221219.0\nspec: ..." -> "0.0~20221219.0" */
static void parse_version(const char *text, char *ret, size_t size) {
        const char *p = strstr(text, "runsc version ");
        ret[0] = '\0';
        if (!p)
                return;
        p += strlen("runsc version ");
        size_t n = strcspn(p, " \n");
        snprintf(ret, size, "%.*s", (int) (n < size ? n : size - 1), p);
}

/* From `runsc flags`: whether -platform lists systrap, and its default ("(default \"ptrace\")"). */
static void parse_platforms(const char *text, bool *ret_systrap, char *ret_default, size_t size) {
        const char *p = strstr(text, "-platform ");
        *ret_systrap = false;
        ret_default[0] = '\0';
        if (!p)
                return;
        const char *end = strstr(p + 1, "\n  -");
        size_t span = end ? (size_t) (end - p) : strlen(p);
        char line[SBX_OCI_OUTPUT_MAX];
        snprintf(line, sizeof(line), "%.*s", (int) (span < sizeof(line) ? span : sizeof(line) - 1), p);
        *ret_systrap = strstr(line, "systrap") != NULL;
        const char *d = strstr(line, "(default \"");
        if (d) {
                d += strlen("(default \"");
                size_t n = strcspn(d, "\"");
                snprintf(ret_default, size, "%.*s", (int) (n < size ? n : size - 1), d);
        }
}

static const char *const self_check_argv[] = {"/bin/true", NULL};

int sbx_oci_runtime_probe(sbx_oci_runtime *rt, hull_error *e) {
        _cleanup_free_ char *buf = malloc(SBX_OCI_OUTPUT_MAX);
        char def[SBX_OCI_PLATFORM_MAX];
        int r;
        if (!buf)
                return hull_err(e, -ENOMEM, "kernel: out of memory");
        char *ver_argv[] = {rt->path, (char *) "--version", NULL};
        r = run_capture(rt->path, ver_argv, buf, SBX_OCI_OUTPUT_MAX, SBX_OCI_CONTROL_MS);
        if (r < 0 || !WIFEXITED(r) || WEXITSTATUS(r) != 0)
                return hull_err(e, r < 0 ? r : -EIO, "kernel: `%s --version` failed", rt->path);
        parse_version(buf, rt->version, sizeof(rt->version));
        if (!rt->version[0])
                return hull_err(e, -EPROTO, "kernel: `%s --version` did not name a runsc version", rt->path);
        char *flags_argv[] = {rt->path, (char *) "flags", NULL};
        r = run_capture(rt->path, flags_argv, buf, SBX_OCI_OUTPUT_MAX, SBX_OCI_CONTROL_MS);
        if (r < 0)
                return hull_err(e, r, "kernel: `%s flags` failed", rt->path);
        parse_platforms(buf, &rt->has_systrap, def, sizeof(def));
        if (!rt->platform[0] && rt->has_systrap)
                snprintf(rt->platform, sizeof(rt->platform), "systrap");
        snprintf(rt->platform_seen, sizeof(rt->platform_seen), "%s", rt->platform[0] ? rt->platform : def);

        /* The self-check: a real bundle, a real run of /bin/true. */
        sbx_spec spec = {
                .tier = SBX_TIER_KERNEL,
                .argv = (char *const *) self_check_argv,
                .timeout_ms = SBX_OCI_PROBE_MS,
                .tmp_bytes = SBX_DEFAULT_TMP_BYTES,
                .output_bytes = SBX_DEFAULT_OUTPUT_BYTES,
                .cancel_fd = -1,
        };
        sbx_oci_bundle b;
        r = sbx_oci_bundle_make_root(rt, &spec, NULL, true, &b, e);
        if (r < 0)
                return r;
        const char *args[] = {"run", "--bundle", b.dir, b.id, NULL};
        r = sbx_oci_runsc(&b, args, SBX_OCI_PROBE_MS, e);
        hull_error w;
        int q = sbx_oci_bundle_destroy(&b, &w);
        if (r < 0)
                return r;
        if (!WIFEXITED(r) || WEXITSTATUS(r) != 0)
                return hull_err_hint(e, -EIO, "run it by hand with --debug --debug-log=/tmp/runsc/ to see why",
                                     "kernel: runsc's self-check (/bin/true in a bundle) failed with status %d",
                                     WIFEXITED(r) ? WEXITSTATUS(r) : 128 + WTERMSIG(r));
        if (q < 0)
                return hull_err(e, q, "kernel: the self-check left something behind: %s", w.msg);
        return 0;
}

void sbx_oci_runtime_evidence(const sbx_oci_runtime *rt, char *buf, size_t size) {
        snprintf(buf, size, "gVisor runsc %s, platform %s", rt->version[0] ? rt->version : "(version not probed)",
                 rt->platform_seen[0] ? rt->platform_seen
                 : rt->platform[0]    ? rt->platform
                                      : "default");
}

/* ---- config.json ---- */

static json_t *string_array(char *const *v) {
        json_t *a = json_array();
        for (size_t i = 0; a && v && v[i]; i++)
                if (json_array_append_new(a, json_string(v[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static json_t *mount_new(const char *dst, const char *type, const char *src, const char *o1, const char *o2,
                         const char *o3) {
        json_t *opts = json_array();
        const char *o[] = {o1, o2, o3};
        for (size_t i = 0; opts && i < ELEMENTSOF(o); i++)
                if (o[i])
                        json_array_append_new(opts, json_string(o[i]));
        return json_pack("{s:s, s:s, s:s, s:o}", "destination", dst, "type", type, "source", src, "options", opts);
}

static json_t *rlimit_new(const char *type, uint64_t v) {
        return json_pack("{s:s, s:I, s:I}", "type", type, "hard", (json_int_t) v, "soft", (json_int_t) v);
}

/* One OCI seccomp rule: names (NULL-terminated) answer errno, when arg index (or -1: always)
 * masked with mask equals value. */
static int seccomp_rule(json_t *rules, const char *const *names, size_t n, int err, int index, uint64_t mask,
                        uint64_t value) {
        json_t *nm = json_array();
        for (size_t i = 0; nm && i < n; i++)
                if (json_array_append_new(nm, json_string(names[i])) < 0)
                        break;
        json_t *rule =
                nm ? json_pack("{s:o, s:s, s:i}", "names", nm, "action", "SCMP_ACT_ERRNO", "errnoRet", err) : NULL;
        if (rule && index >= 0) {
                json_t *args = json_pack("[{s:i, s:I, s:I, s:s}]", "index", index, "value", (json_int_t) mask,
                                         "valueTwo", (json_int_t) value, "op", "SCMP_CMP_MASKED_EQ");
                if (!args || json_object_set_new(rule, "args", args) < 0) {
                        json_decref(rule);
                        return -ENOMEM;
                }
        }
        return rule && json_array_append_new(rules, rule) == 0 ? 0 : -ENOMEM;
}

/* hull's seccomp policy (sbx-seccomp.c) in OCI form, for runsc --oci-seccomp: the deny list,
 * clone3 (ENOSYS), namespace flags of clone, device nodes, set-id modes, TIOCSTI/TIOCLINUX and
 * the personality flags that weaken memory protections. gVisor applies it to the sandboxed
 * processes inside its own kernel. */
static json_t *seccomp_profile(void) {
        static const uint64_t clone_flags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
                                               CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP, 0x00000080};
        static const uint64_t personality_flags[] = {ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ADDR_COMPAT_LAYOUT,
                                                     MMAP_PAGE_ZERO,    ADDR_LIMIT_32BIT,  ADDR_LIMIT_3GB,
                                                     SHORT_INODE,       WHOLE_SECONDS,     STICKY_TIMEOUTS};
        static const char *const clone3[] = {"clone3"}, *const clone_[] = {"clone"}, *const mknod_[] = {"mknod"},
                                 *const mknodat[] = {"mknodat"}, *const ioctl_[] = {"ioctl"},
                                 *const personality_[] = {"personality"},
                                 *const chmod1[] = {"chmod", "fchmod", "creat"}, *const chmod2[] = {"fchmodat"};
        json_t *rules = json_array();
        int r = rules ? 0 : -ENOMEM;
        if (r >= 0)
                r = seccomp_rule(rules, denied_syscalls, ELEMENTSOF(denied_syscalls), EPERM, -1, 0, 0);
        if (r >= 0)
                r = seccomp_rule(rules, clone3, 1, ENOSYS, -1, 0, 0);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(clone_flags); i++)
                r = seccomp_rule(rules, clone_, 1, EPERM, 0, clone_flags[i], clone_flags[i]);
        static const uint64_t dev_types[] = {S_IFCHR, S_IFBLK};
        static const uint64_t setid[] = {S_ISUID, S_ISGID};
        for (size_t i = 0; r >= 0 && i < 2; i++) {
                r = seccomp_rule(rules, mknod_, 1, EPERM, 1, S_IFMT, dev_types[i]);
                if (r >= 0)
                        r = seccomp_rule(rules, mknodat, 1, EPERM, 2, S_IFMT, dev_types[i]);
                if (r >= 0)
                        r = seccomp_rule(rules, chmod1, ELEMENTSOF(chmod1), EPERM, 1, setid[i], setid[i]);
                if (r >= 0)
                        r = seccomp_rule(rules, chmod2, 1, EPERM, 2, setid[i], setid[i]);
        }
        if (r >= 0)
                r = seccomp_rule(rules, ioctl_, 1, EPERM, 1, 0xffffffffULL, TIOCSTI);
        if (r >= 0)
                r = seccomp_rule(rules, ioctl_, 1, EPERM, 1, 0xffffffffULL, TIOCLINUX);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(personality_flags); i++)
                r = seccomp_rule(rules, personality_, 1, EPERM, 0, personality_flags[i], personality_flags[i]);
        if (r < 0) {
                json_decref(rules);
                return NULL;
        }
        return json_pack("{s:s, s:o}", "defaultAction", "SCMP_ACT_ALLOW", "syscalls", rules);
}

/* The sandbox user: the container tier's host identity (the work directory's owner, or
 * SBX_ROOT_HOST_UID when that is root or there is none), so files it writes through the gofer
 * belong to the same host user in both tiers. */
static void sandbox_identity(const char *workdir, uid_t *ret_uid, gid_t *ret_gid) {
        struct stat st;
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (workdir && stat(workdir, &st) == 0 && uid == 0 && st.st_uid != 0) {
                uid = st.st_uid;
                gid = st.st_gid;
        }
        if (uid == 0) {
                uid = SBX_ROOT_HOST_UID;
                gid = SBX_ROOT_HOST_UID;
        }
        *ret_uid = uid;
        *ret_gid = gid;
}

int sbx_oci_config(const sbx_spec *spec, const char *workdir, const char *root_path, const char *const *binds,
                   char *const *env, json_t **ret, hull_error *e) {
        char tmp_opt[SBX_SHORT_STR_MAX], ws_opt[SBX_SHORT_STR_MAX];
        uid_t uid;
        gid_t gid;
        sandbox_identity(workdir, &uid, &gid);
        snprintf(tmp_opt, sizeof(tmp_opt), "size=%" PRIu64,
                 (uint64_t) (spec->tmp_bytes ? spec->tmp_bytes : SBX_DEFAULT_TMP_BYTES));
        snprintf(ws_opt, sizeof(ws_opt), "size=%" PRIu64,
                 (uint64_t) (spec->memory_bytes ? spec->memory_bytes : SBX_DEFAULT_MEMORY_BYTES));

        _cleanup_(json_decrefp) json_t *mounts = json_array();
        _cleanup_(json_decrefp) json_t *caps = json_pack("{s:[], s:[], s:[], s:[], s:[]}", "bounding", "effective",
                                                         "inheritable", "permitted", "ambient");
        /* RLIMIT_NPROC: gVisor counts the sandbox user's tasks inside the sandbox, which is the
         * pids limit there (a fork past it fails with EAGAIN, as in the container tier); the
         * host's pids cgroup is only the backstop (sbx_oci_bundle_make). */
        _cleanup_(json_decrefp) json_t *rlimits = json_pack("[o, o]", rlimit_new("RLIMIT_NOFILE", SBX_DEFAULT_NOFILE),
                                                            rlimit_new("RLIMIT_FSIZE", SBX_DEFAULT_FSIZE_BYTES));
        if (rlimits && spec->pids)
                json_array_append_new(rlimits, rlimit_new("RLIMIT_NPROC", spec->pids));
        _cleanup_(json_decrefp) json_t *args = string_array(spec->argv);
        _cleanup_(json_decrefp) json_t *envj = string_array(env);
        if (!mounts || !caps || !rlimits || !args || !envj)
                return hull_err(e, -ENOMEM, "kernel: out of memory");

        json_array_append_new(mounts, mount_new("/proc", "proc", "proc", NULL, NULL, NULL));
        json_array_append_new(mounts, mount_new("/tmp", "tmpfs", "tmpfs", "mode=1777", tmp_opt, NULL));
        json_array_append_new(mounts, mount_new("/dev/shm", "tmpfs", "shm", "mode=1777", tmp_opt, NULL));
        if (workdir) {
                _cleanup_free_ char *real = realpath(workdir, NULL);
                if (!real)
                        return hull_err_hint(e, negative_errno(), "pass an existing directory to --workdir",
                                             "exec: cannot resolve the work directory %s", workdir);
                json_array_append_new(mounts, mount_new("/workspace", "bind", real, "rbind", "rw", NULL));
        } else
                json_array_append_new(mounts, mount_new("/workspace", "tmpfs", "tmpfs", "mode=1777", ws_opt, NULL));
        for (size_t i = 0; binds && binds[i] && binds[i + 1]; i += 2)
                json_array_append_new(mounts, mount_new(binds[i], "bind", binds[i + 1], "rbind", "ro", NULL));
        if (spec->handles_dir)
                json_array_append_new(mounts, mount_new("/handles", "bind", spec->handles_dir, "rbind", "ro", NULL));
        if (spec->layer_dir)
                json_array_append_new(mounts, mount_new("/env", "bind", spec->layer_dir, "rbind", "ro", NULL));
        if (spec->skills_dir)
                json_array_append_new(mounts, mount_new("/skills", "bind", spec->skills_dir, "rbind", "ro", NULL));
        if (spec->mnt_dir) /* a /v1 session's resources (and its memory link: v1-resources.c) */
                json_array_append_new(mounts, mount_new("/mnt", "bind", spec->mnt_dir, "rbind", "ro", NULL));
        if (json_array_size(mounts) < 4)
                return hull_err(e, -ENOMEM, "kernel: out of memory");

        json_t *cfg = json_pack("{s:s, s:{s:b, s:{s:I, s:I}, s:O, s:O, s:s, s:O, s:O, s:b}, s:{s:s, s:b}, s:s, s:O,"
                                " s:{s:[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}]}}",
                                "ociVersion", "1.0.2", "process", "terminal", 0, "user", "uid", (json_int_t) uid, "gid",
                                (json_int_t) gid, "args", args, "env", envj, "cwd", "/workspace", "capabilities", caps,
                                "rlimits", rlimits, "noNewPrivileges", 1, "root", "path", root_path, "readonly", 1,
                                "hostname", "hull", "mounts", mounts, "linux", "namespaces", "type", "pid", "type",
                                "network", "type", "ipc", "type", "uts", "type", "mount");
        /* limited, unrestricted: runsc (--network=host) stays in the namespace hull made for it,
         * whose only way out is the proxy, or pasta; a network namespace of runsc's own would
         * have nothing */
        if (cfg && spec->net != SBX_NET_NONE)
                json_array_remove(json_object_get(json_object_get(cfg, "linux"), "namespaces"), 1);
        json_t *seccomp = cfg ? seccomp_profile() : NULL;
        if (!seccomp || json_object_set_new(json_object_get(cfg, "linux"), "seccomp", seccomp) < 0) {
                json_decref(cfg);
                return hull_err(e, -ENOMEM, "kernel: cannot build config.json");
        }
        *ret = cfg;
        return 0;
}

/* ---- bundles ---- */

int sbx_oci_bundle_make_root(const sbx_oci_runtime *rt, const sbx_spec *spec, const char *workdir, bool shared_root,
                             sbx_oci_bundle *ret, hull_error *e) {
        _cleanup_(sbx_oci_root_plan_freep) sbx_oci_root_plan *p = calloc(1, sizeof(sbx_oci_root_plan));
        _cleanup_(sbx_env_freep) char **env = NULL;
        _cleanup_(json_decrefp) json_t *cfg = NULL;
        _cleanup_close_ int dir_fd = -1, root_fd = -1;
        sbx_oci_bundle b = {.rt = *rt, .net = spec->net};
        char root_path[SBX_PATH_MAX], cfg_path[SBX_PATH_MAX];
        uid_t uid;
        gid_t gid;
        int r;

        *ret = (sbx_oci_bundle){0};
        if (!p)
                return hull_err(e, -ENOMEM, "kernel: out of memory");
        b.net_fd = -1;
        if (spec->net >= _SBX_NET_MODE_MAX)
                return hull_err(e, -EINVAL, "kernel: unknown network mode");
        sandbox_identity(workdir, &uid, &gid);
        /* the root's plan first: it only reads the host, so a bad --rootfs leaves nothing */
        r = sbx_oci_root_plan_make(p, spec->rootfs, uid, gid, spec->net == SBX_NET_UNRESTRICTED, !spec->mnt_dir, e);
        if (r < 0)
                return r;
        const char *tmp = getenv("TMPDIR");
        if (!tmp || tmp[0] != '/')
                tmp = "/tmp";
        if ((size_t) snprintf(b.dir, sizeof(b.dir), "%s/hull-oci.XXXXXX", tmp) >= sizeof(b.dir))
                return hull_err(e, -ENAMETOOLONG, "kernel: TMPDIR is too long");
        if (!mkdtemp(b.dir))
                return hull_err_hint(e, negative_errno(), "set TMPDIR to a writable directory",
                                     "kernel: cannot create the bundle directory in %s", tmp);
        snprintf(b.id, sizeof(b.id), "hull-%d-%" PRIu64, (int) getpid(), sbx_now_us());
        /* a single run's runsc keeps its state beside config.json: one directory fewer */
        if ((size_t) snprintf(b.state, sizeof(b.state), shared_root ? "%s" : "%s/state", b.dir) >= sizeof(b.state) ||
            (size_t) snprintf(root_path, sizeof(root_path), "%s/rootfs", b.dir) >= sizeof(root_path) ||
            (size_t) snprintf(cfg_path, sizeof(cfg_path), "%s/config.json", b.dir) >= sizeof(cfg_path)) {
                r = hull_err(e, -ENAMETOOLONG, "kernel: TMPDIR is too long");
                goto fail;
        }

        dir_fd = open(b.dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0 || (!shared_root && mkdirat(dir_fd, "state", 0700) < 0)) {
                r = hull_err(e, negative_errno(), "kernel: cannot make the bundle in %s", b.dir);
                goto fail;
        }
        /* the shared skeleton; where it cannot be had (a read-only /run, SBX_KERNEL_DIR not
         * hull's own: never used then), a root of the bundle's own, as a session's */
        hull_error shared_e = {0};
        char shared_path[SBX_PATH_MAX];
        r = shared_root ? sbx_oci_root_shared(p, shared_path, sizeof(shared_path), &shared_e) : -ENOENT;
        if (r >= 0)
                memcpy(root_path, shared_path, sizeof(root_path));
        if (r < 0 && (mkdirat(dir_fd, "rootfs", 0755) < 0 ||
                      (root_fd = openat(dir_fd, "rootfs", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0))
                r = hull_err(e, negative_errno(), "kernel: cannot make the bundle's root");
        else if (r < 0)
                r = sbx_oci_root_write(p, root_fd, e);
        if (r < 0)
                goto fail;
        r = sbx_env_build(spec->env, "/workspace", spec->net == SBX_NET_LIMITED, &env);
        if (r < 0) {
                hull_err(e, r, "kernel: cannot build the environment");
                goto fail;
        }
        r = sbx_oci_config(spec, workdir, root_path, p->binds, env, &cfg, e);
        if (r < 0)
                goto fail;
        if (json_dump_file(cfg, cfg_path, JSON_COMPACT) < 0) {
                r = hull_err(e, -EIO, "kernel: cannot write %s", cfg_path);
                goto fail;
        }
        if (spec->use_cgroups) {
                /* pids: the backstop for the sandbox's RLIMIT_NPROC, counting the host tasks
                 * each sandboxed task costs (ptrace: a sentry thread and a stub) and runsc's
                 * own; always set, so the cgroup exists and the teardown finds every process
                 * runsc left. */
                uint64_t pids = spec->pids ? spec->pids : (uint64_t) SBX_PIDS_MAX;
                sbx_cgroup_limits lim = {
                        .memory_bytes = spec->memory_bytes,
                        .pids = pids * SBX_OCI_PIDS_PER_TASK + SBX_OCI_PIDS_OVERHEAD,
                        .millicpus = spec->millicpus,
                };
                r = sbx_cgroup_plan(&b.cg, b.id, &lim, e);
                if (r >= 0)
                        r = sbx_cgroup_make(&b.cg, e);
                if (r < 0)
                        goto fail;
        }
        *ret = b;
        return 0;
fail:
        (void) sbx_oci_bundle_destroy(&b, NULL);
        return r;
}

int sbx_oci_bundle_make(const sbx_oci_runtime *rt, const sbx_spec *spec, const char *workdir, sbx_oci_bundle *ret,
                        hull_error *e) {
        return sbx_oci_bundle_make_root(rt, spec, workdir, false, ret, e);
}

static int build_argv(const sbx_oci_bundle *b, const char *const *args, char **argv, char *const *store) {
        size_t n = 0;
        argv[n++] = (char *) b->rt.path;
        argv[n++] = store[0]; /* --root=... */
        /* limited: the namespace runsc starts in is hull's, with loopback and the proxy only */
        argv[n++] = (char *) (b->net != SBX_NET_NONE ? "--network=host" : "--network=none");
        argv[n++] = (char *) "--ignore-cgroups";
        argv[n++] = (char *) "--oci-seccomp";
        if (b->rt.platform[0])
                argv[n++] = store[1]; /* --platform=... */
        for (size_t i = 0; args[i]; i++) {
                if (n + 1 >= SBX_OCI_ARGS_MAX)
                        return -E2BIG;
                argv[n++] = (char *) args[i];
        }
        argv[n] = NULL;
        return 0;
}

int sbx_oci_spawn(sbx_oci_bundle *b, const char *const *args, int in_fd, int out_fd, int err_fd, pid_t *ret_pid,
                  hull_error *e) {
        char root_flag[SBX_PATH_MAX + 16], plat_flag[SBX_OCI_PLATFORM_MAX + 16];
        char *store[] = {root_flag, plat_flag};
        char *argv[SBX_OCI_ARGS_MAX];
        _cleanup_close_pair_ int gop[2] = {-1, -1};
        int r;

        snprintf(root_flag, sizeof(root_flag), "--root=%s", b->state);
        snprintf(plat_flag, sizeof(plat_flag), "--platform=%s", b->rt.platform);
        if (build_argv(b, args, argv, store) < 0)
                return hull_err(e, -E2BIG, "kernel: too many runsc arguments");
        char tasks[3][SBX_CGROUP_TASKS_PATH_MAX];
        size_t n_tasks = 0;
        if (b->cg.made) {
                r = sbx_cgroup_tasks_paths(&b->cg, "", tasks, ELEMENTSOF(tasks), e);
                if (r < 0)
                        return r;
                n_tasks = (size_t) r;
        }
        if (b->cg.made && n_tasks == 0 && pipe2(gop, O_CLOEXEC) < 0)
                return hull_err(e, negative_errno(), "kernel: cannot create a pipe");
        size_t verb = 0;
        while (args[verb] && args[verb][0] == '-')
                verb++;
        bool starts = args[verb] && (strcmp(args[verb], "run") == 0 || strcmp(args[verb], "create") == 0 ||
                                     strcmp(args[verb], "restore") == 0);
        if (starts)
                b->created = true;
        _cleanup_close_pair_ int netp[2] = {-1, -1};
        bool unrestricted = starts && b->net == SBX_NET_UNRESTRICTED && !b->net_entered;
        if (starts && b->net != SBX_NET_NONE && !b->net_entered &&
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, netp) < 0)
                return hull_err(e, negative_errno(), "kernel: cannot create a socket pair");
        pid_t pid;
        if (gop[0] < 0 && netp[0] < 0) {
                spawn_args a = {b->rt.path, argv, in_fd, out_fd, err_fd, tasks, n_tasks};
                pid = spawn_vfork(&a);
                if (pid < 0)
                        return hull_err(e, pid, "kernel: cannot start runsc");
        } else if ((pid = fork()) < 0)
                return hull_err(e, negative_errno(), "kernel: cannot fork runsc");
        else if (pid == 0)
                exec_runsc(b->rt.path, argv, in_fd, out_fd, err_fd, gop[0], tasks, n_tasks, netp[0], b->net);
        setpgid(pid, pid);
        gop[0] = safe_close(gop[0]);
        if (b->cg.made && n_tasks == 0) {
                /* v2: in the cgroup before runsc runs: every process it makes is born inside. */
                r = sbx_cgroup_attach(&b->cg, pid, e);
                if (r < 0 || write(gop[1], "g", 1) != 1) {
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                        return r < 0 ? r : hull_err(e, -EPIPE, "kernel: cannot start runsc");
                }
        }
        if (unrestricted) {
                /* the namespace is made, its metadata routes blocked: pasta gives it the host's
                 * address and default route, then runsc runs */
                char byte = 0;
                netp[0] = safe_close(netp[0]);
                r = read(netp[1], &byte, 1) == 1 && byte == 'u'
                            ? sbx_net_pasta_start(pid, &b->pasta_pid, e)
                            : hull_err(e, -EIO, "kernel: the unrestricted network's namespace could not be set up");
                if (r >= 0 && write(netp[1], "g", 1) != 1)
                        r = hull_err(e, -EPIPE, "kernel: cannot start runsc");
                if (r < 0) {
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                        return r;
                }
        } else if (netp[0] >= 0) {
                netp[0] = safe_close(netp[0]);
                r = sbx_receive_fd(netp[1], "kernel: the limited network's namespace could not be set up", e);
                if (r < 0) {
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                        return r;
                }
                b->net_fd = r;
        }
        *ret_pid = pid;
        return 0;
}

int sbx_oci_runsc(sbx_oci_bundle *b, const char *const *args, uint64_t timeout_ms, hull_error *e) {
        pid_t pid;
        int r = sbx_oci_spawn(b, args, -1, -1, -1, &pid, e);
        if (r < 0)
                return r;
        r = wait_bounded(pid, -1, NULL, 0, NULL, timeout_ms);
        if (r < 0)
                return hull_err(e, r, "kernel: `runsc %s` did not end within %" PRIu64 " ms", args[0], timeout_ms);
        return r;
}

/* Whether runsc still keeps state in the bundle's --root (a `run` that ended cleanly deletes
 * its container itself: then nothing is left to kill). */
static bool state_left(const sbx_oci_bundle *b) {
        DIR *d = opendir(b->state);
        bool any = false;
        if (!d)
                return false;
        for (struct dirent *de; !any && (de = readdir(d));) /* hull's own files may be there too */
                any = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
                      strcmp(de->d_name, "config.json") != 0 && strcmp(de->d_name, "runsc.log") != 0 &&
                      strcmp(de->d_name, "rootfs") != 0;
        closedir(d);
        return any;
}

/* SIGKILL every process in the cgroup until none is left (bounded); 0 or -EBUSY. */
static int kill_cgroup(const sbx_cgroup *cg) {
        const char *dirs[] = {cg->pids, cg->memory, cg->cpu};
        char path[SBX_PATH_MAX], buf[SBX_CGROUP_FILE_MAX];
        const char *dir = NULL;
        for (size_t i = 0; i < ELEMENTSOF(dirs) && !dir; i++)
                if (dirs[i][0])
                        dir = dirs[i];
        if (!dir || (size_t) snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= sizeof(path))
                return 0;
        for (unsigned round = 0; round < SBX_CGROUP_RMDIR_TRIES * 4; round++) {
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return 0;
                ssize_t n = read(fd, buf, sizeof(buf) - 1);
                if (n <= 0)
                        return 0;
                buf[n] = '\0';
                for (char *s = buf, *end; *s; s = end) {
                        long pid = strtol(s, &end, 10);
                        if (end == s)
                                break;
                        if (pid > 0)
                                kill((pid_t) pid, SIGKILL);
                }
                usleep(round < 8 ? 1000 : 10000);
        }
        return -EBUSY;
}

int sbx_oci_bundle_destroy(sbx_oci_bundle *b, hull_error *e) {
        int r = 0;
        if (b->net_fd > 2) /* a zeroed bundle has 0: never ours */
                b->net_fd = safe_close(b->net_fd);
        sbx_net_pasta_stop(b->pasta_pid);
        b->pasta_pid = 0;
        if (b->created && b->dir[0] && state_left(b)) {
                const char *kill_args[] = {"kill", "--all", b->id, "KILL", NULL};
                const char *del_args[] = {"delete", "--force", b->id, NULL};
                (void) sbx_oci_runsc(b, kill_args, SBX_OCI_CONTROL_MS, NULL);
                (void) sbx_oci_runsc(b, del_args, SBX_OCI_CONTROL_MS, NULL);
        }
        b->created = false;
        if (b->cg.made && kill_cgroup(&b->cg) < 0)
                r = hull_err(e, -EBUSY, "kernel: processes of sandbox %s did not die", b->id);
        int q = sbx_cgroup_destroy(&b->cg, r < 0 ? NULL : e);
        if (q < 0 && r >= 0)
                r = q;
        if (b->dir[0]) {
                /* what a run leaves: config.json, runsc's log and (but for a single run) its empty
                 * state directory (a shared root is not the bundle's); anything else, the whole
                 * tree */
                _cleanup_close_ int fd = open(b->dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (fd >= 0) {
                        (void) unlinkat(fd, "config.json", 0);
                        (void) unlinkat(fd, "runsc.log", 0);
                        (void) unlinkat(fd, "state", AT_REMOVEDIR);
                }
                q = rmdir(b->dir) == 0 ? 0 : rm_rf_at(AT_FDCWD, b->dir);
                if (q < 0 && r >= 0)
                        r = hull_err(e, q, "kernel: cannot remove the bundle %s", b->dir);
                b->dir[0] = '\0';
        }
        return r;
}
