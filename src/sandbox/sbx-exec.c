/* sbx-exec.c: what both tiers share (sbx-internal.h): the scrubbed environment, the command's
 * stdin, the exec path of the child, the supervisor loop and the result. */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sbx-internal.h"

static const char *const default_env[] = {
        "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
        "LANG=C.UTF-8",
        "TMPDIR=/tmp",
        "USER=sandbox",
        "LOGNAME=sandbox",
        "SHELL=/bin/sh",
};

uint64_t sbx_now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

void sbx_env_free(char **env) {
        if (!env)
                return;
        for (char **p = env; *p; p++)
                free(*p);
        free(env);
}

void sbx_env_freep(char ***env) {
        sbx_env_free(*env);
}

/* Replace the entry with the same key as kv, or append it. */
static int env_set(char **env, size_t *n, const char *kv) {
        size_t klen = (size_t) (strchr(kv, '=') - kv) + 1;
        char *copy = strdup(kv);
        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                if (strncmp(env[i], kv, klen) == 0) {
                        free(env[i]);
                        env[i] = copy;
                        return 0;
                }
        env[(*n)++] = copy;
        return 0;
}

/* A limited sandbox's proxy (sbx-net.h), inside its own network namespace. */
static const char *const proxy_env[] = {
        "HTTP_PROXY=" SBX_NET_PROXY_URL,
        "HTTPS_PROXY=" SBX_NET_PROXY_URL,
        "http_proxy=" SBX_NET_PROXY_URL,
        "https_proxy=" SBX_NET_PROXY_URL,
        "ALL_PROXY=" SBX_NET_PROXY_URL,
        "all_proxy=" SBX_NET_PROXY_URL,
        "NO_PROXY=",
        "no_proxy=",
};

int sbx_env_build(char *const *extra, const char *home, bool net_proxy, char ***ret) {
        size_t n_extra = 0;
        for (; extra && extra[n_extra]; n_extra++)
                ;
        size_t cap = ELEMENTSOF(default_env) + ELEMENTSOF(proxy_env) + 1 + n_extra + 1;
        _cleanup_(sbx_env_freep) char **env = calloc(cap, sizeof(char *));
        size_t n = 0;
        char homebuf[SBX_PATH_MAX + 8];
        if (!env)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(default_env); i++)
                if (env_set(env, &n, default_env[i]) < 0)
                        return -ENOMEM;
        if ((size_t) snprintf(homebuf, sizeof(homebuf), "HOME=%s", home) >= sizeof(homebuf))
                return -ENAMETOOLONG;
        if (env_set(env, &n, homebuf) < 0)
                return -ENOMEM;
        for (size_t i = 0; net_proxy && i < ELEMENTSOF(proxy_env); i++)
                if (env_set(env, &n, proxy_env[i]) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < n_extra; i++)
                if (env_set(env, &n, extra[i]) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(env);
        return 0;
}

int sbx_open_stdin(const char *path, hull_error *e) {
        if (!path) {
                int fd = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
                return fd >= 0 ? fd : hull_err(e, negative_errno(), "exec: cannot open /dev/null");
        }
        _cleanup_close_ int src = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        if (src < 0)
                return hull_err(e, negative_errno(), "exec: cannot open --stdin %s", path);
        if (fstat(src, &st) < 0)
                return hull_err(e, negative_errno(), "exec: cannot stat --stdin %s", path);
        if (!S_ISREG(st.st_mode))
                return hull_err_hint(e, -EINVAL, "pass a regular file, e.g. save the data to a file first",
                                     "exec: --stdin %s is not a regular file", path);
        if ((uint64_t) st.st_size > SBX_STDIN_BYTES_MAX)
                return hull_err_hint(e, -EFBIG, "pass the data through --workdir instead",
                                     "exec: --stdin %s is larger than %llu bytes", path,
                                     (unsigned long long) SBX_STDIN_BYTES_MAX);
        _cleanup_close_ int mem = memfd_create("hull-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (mem < 0)
                return hull_err(e, negative_errno(), "exec: cannot create a memfd for --stdin");
        /* on the heap: a 64 KiB frame would put every call below it on fresh stack pages */
        _cleanup_free_ char *buf = malloc(SBX_READ_CHUNK);
        if (!buf)
                return hull_err(e, -ENOMEM, "exec: out of memory");
        uint64_t total = 0;
        for (;;) {
                ssize_t n = read(src, buf, SBX_READ_CHUNK);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return hull_err(e, negative_errno(), "exec: cannot read --stdin %s", path);
                if (n == 0)
                        break;
                total += (uint64_t) n;
                if (total > SBX_STDIN_BYTES_MAX)
                        return hull_err(e, -EFBIG, "exec: --stdin %s grew past %llu bytes while read", path,
                                        (unsigned long long) SBX_STDIN_BYTES_MAX);
                for (ssize_t done = 0; done < n;) {
                        ssize_t w = write(mem, buf + done, (size_t) (n - done));
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return hull_err(e, negative_errno(), "exec: cannot copy --stdin %s", path);
                        done += w;
                }
        }
        if (fcntl(mem, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0 ||
            lseek(mem, 0, SEEK_SET) < 0)
                return hull_err(e, negative_errno(), "exec: cannot seal the copy of --stdin");
        return TAKE_FD(mem);
}

int sbx_stdio_fd_ok(int fd, hull_error *e) {
        static const char *const names[] = {"stdin", "stdout", "stderr"};
        struct stat st, null;
        if (fstat(fd, &st) < 0)
                return hull_err_hint(e, negative_errno(), "give it a pipe (or </dev/null)",
                                     "exec: --stdio: %s is closed", names[fd]);
        if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || isatty(fd))
                return 0;
        if (S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) && st.st_rdev == null.st_rdev)
                return 0;
        return hull_err_hint(e, -EINVAL, "connect it through a pipe, e.g. CMD | hull exec --stdio ... | cat",
                             "exec: --stdio: %s is a %s, which the sandbox could reopen through /proc/self/fd; "
                             "only pipes, sockets, terminals and /dev/null are handed over",
                             names[fd], S_ISREG(st.st_mode) ? "regular file" : "file that is not a pipe");
}

/* ---- child side: async-signal-safe only ---- */

static size_t child_strlen(const char *s) {
        size_t n = 0;
        while (s[n])
                n++;
        return n;
}

void sbx_child_fail_path(int report_fd, const char *what, const char *path, int err) {
        sbx_report rep = {.kind = SBX_REPORT_ERROR, .err = err};
        size_t i = 0;
        for (; what[i] && i < sizeof(rep.what) - 1; i++)
                rep.what[i] = what[i];
        if (path) /* "what path": the message names the path that failed */
                for (size_t j = 0; (j == 0 || path[j - 1]) && i < sizeof(rep.what) - 1; j++)
                        rep.what[i++] = j == 0 ? ' ' : path[j - 1];
        rep.what[i] = '\0';
        ssize_t n = write(report_fd, &rep, sizeof(rep));
        (void) n;
        _exit(SBX_EXIT_SETUP);
}

void sbx_child_fail(int report_fd, const char *what, int err) {
        sbx_child_fail_path(report_fd, what, NULL, err);
}

static int move_fd(int from, int to) {
        if (from == to)
                return fcntl(from, F_SETFD, 0) < 0 ? -errno : 0;
        return dup2(from, to) < 0 ? -errno : 0;
}

int sbx_child_exec(char *const *argv, char *const *envp, int in_fd, int out_fd, int err_fd, int fd3,
                   const struct rlimit *nofile, const struct rlimit *fsize) {
        static const struct rlimit no_core = {0, 0};
        sigset_t all;
        int r;

        if ((r = move_fd(in_fd, 0)) < 0 || (r = move_fd(out_fd, 1)) < 0 || (r = move_fd(err_fd, 2)) < 0)
                return r;
        /* Nothing hull inherited may reach the command (a leaked directory fd is a way out of
         * every mount): mark all others close-on-exec; the report pipe still works until exec. */
        if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return -errno;
        if (fd3 >= 0 && (r = move_fd(fd3, 3)) < 0)
                return r;
        if (setrlimit(RLIMIT_NOFILE, nofile) < 0 || setrlimit(RLIMIT_FSIZE, fsize) < 0 ||
            setrlimit(RLIMIT_CORE, &no_core) < 0)
                return -errno;
        for (int sig = 1; sig < SIGRTMIN; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) signal(sig, SIG_DFL);
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);

        const char *file = argv[0];
        bool has_slash = false;
        for (const char *p = file; *p; p++)
                if (*p == '/')
                        has_slash = true;
        if (has_slash) {
                execve(file, argv, envp);
                return -errno;
        }
        const char *path = "/usr/local/bin:/usr/bin:/bin";
        for (char *const *e = envp; *e; e++)
                if ((*e)[0] == 'P' && (*e)[1] == 'A' && (*e)[2] == 'T' && (*e)[3] == 'H' && (*e)[4] == '=')
                        path = *e + 5;
        size_t flen = child_strlen(file);
        int first_err = ENOENT;
        for (const char *p = path;;) {
                const char *end = p;
                while (*end && *end != ':')
                        end++;
                size_t dlen = (size_t) (end - p);
                char buf[SBX_PATH_MAX];
                if (dlen + 1 + flen + 1 <= sizeof(buf)) {
                        size_t k = 0;
                        for (size_t i = 0; i < dlen; i++)
                                buf[k++] = p[i];
                        if (dlen == 0)
                                buf[k++] = '.';
                        buf[k++] = '/';
                        for (size_t i = 0; i < flen; i++)
                                buf[k++] = file[i];
                        buf[k] = '\0';
                        execve(buf, argv, envp);
                        if (errno == EACCES)
                                first_err = EACCES;
                        else if (errno != ENOENT && errno != ENOTDIR)
                                return -errno;
                }
                if (!*end)
                        break;
                p = end + 1;
        }
        return -first_err;
}

/* ---- parent side ---- */

/* buf: SBX_READ_CHUNK bytes, on the heap (see own_dir in sbx-cgroup.c: stack pages are faults). */
static int drain(int *fd, capture *c, char *buf) {
        for (;;) {
                ssize_t n = read(*fd, buf, SBX_READ_CHUNK);
                if (n > 0) {
                        capture_append(c, buf, (size_t) n);
                        if ((size_t) n < SBX_READ_CHUNK)
                                return 0;
                        continue;
                }
                if (n == 0) {
                        *fd = safe_close(*fd);
                        return 0;
                }
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN)
                        return 0;
                return negative_errno();
        }
}

static void read_reports(int *fd, sbx_supervise_out *o) {
        sbx_report rep;
        for (;;) {
                ssize_t n = read(*fd, &rep, sizeof(rep));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n != (ssize_t) sizeof(rep)) { /* EOF, error or a torn record: stop listening */
                        *fd = safe_close(*fd);
                        return;
                }
                rep.what[sizeof(rep.what) - 1] = '\0';
                if (rep.kind == SBX_REPORT_ERROR && !o->have_error) {
                        o->error_report = rep;
                        o->have_error = true;
                } else if (rep.kind == SBX_REPORT_EXIT && !o->have_exit) {
                        o->exit_report = rep;
                        o->have_exit = true;
                }
        }
}

int sbx_supervise(const sbx_supervise_args *a, capture *out, capture *err, sbx_supervise_out *ret, hull_error *e) {
        sbx_supervise_out o = {0};
        int out_fd = a->out_fd, err_fd = a->err_fd, rep_fd = a->report_fd;
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, a->pid, 0);
        uint64_t deadline = a->timeout_ms ? a->start_us + a->timeout_ms * 1000ULL : 0, kill_at = 0;
        bool reaped = false;
        uint64_t drain_until = 0;
        _cleanup_free_ char *buf = malloc(SBX_READ_CHUNK);

        if (pidfd < 0 || !buf) {
                int r = pidfd < 0 ? negative_errno() : -ENOMEM;
                kill(a->kill_target, SIGKILL);
                waitpid(a->pid, NULL, 0);
                safe_close(out_fd);
                safe_close(err_fd);
                safe_close(rep_fd);
                return hull_err(e, r, "supervise: %s",
                                pidfd < 0 ? "cannot open a pidfd for the sandbox" : "out of memory");
        }
        int fds[3] = {out_fd, err_fd, rep_fd};
        for (size_t i = 0; i < 3; i++)
                if (fds[i] >= 0)
                        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);

        for (;;) {
                if (reaped && out_fd < 0 && err_fd < 0 && rep_fd < 0)
                        break;
                uint64_t now = sbx_now_us();
                if (reaped && drain_until && now >= drain_until)
                        break;
                if (!reaped && deadline && !o.timed_out && !o.interrupted_signal && now >= deadline) {
                        o.timed_out = true;
                        kill(a->kill_target, SIGTERM);
                        kill_at = now + SBX_KILL_GRACE_MS * 1000ULL;
                }
                if (!reaped && kill_at && now >= kill_at) {
                        kill(a->kill_target, SIGKILL);
                        kill_at = 0;
                }
                uint64_t next = 0;
                if (!reaped && deadline && !o.timed_out && !o.interrupted_signal)
                        next = deadline;
                if (!reaped && kill_at)
                        next = kill_at;
                if (reaped && drain_until)
                        next = drain_until;
                int timeout = -1;
                if (next)
                        timeout = next > now ? (int) ((next - now + 999) / 1000) : 0;

                struct pollfd p[5] = {
                        {.fd = out_fd, .events = POLLIN},
                        {.fd = err_fd, .events = POLLIN},
                        {.fd = rep_fd, .events = POLLIN},
                        {.fd = reaped ? -1 : pidfd, .events = POLLIN},
                        {.fd = reaped ? -1 : a->cancel_fd, .events = POLLIN},
                };
                int n = poll(p, 5, timeout);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = negative_errno();
                        kill(a->kill_target, SIGKILL);
                        if (!reaped)
                                wait4(a->pid, NULL, 0, NULL);
                        safe_close(out_fd);
                        safe_close(err_fd);
                        safe_close(rep_fd);
                        return hull_err(e, r, "supervise: poll failed");
                }
                if (p[0].revents && drain(&out_fd, out, buf) < 0)
                        out_fd = safe_close(out_fd);
                if (p[1].revents && drain(&err_fd, err, buf) < 0)
                        err_fd = safe_close(err_fd);
                if (p[2].revents)
                        read_reports(&rep_fd, &o);
                if (!reaped && p[4].revents) {
                        struct signalfd_siginfo si;
                        if (read(a->cancel_fd, &si, sizeof(si)) == (ssize_t) sizeof(si) && !o.interrupted_signal &&
                            !o.timed_out) {
                                o.interrupted_signal = (int) si.ssi_signo;
                                kill(a->kill_target, SIGTERM);
                                kill_at = now + SBX_KILL_GRACE_MS * 1000ULL;
                        }
                }
                if (!reaped && p[3].revents) {
                        pid_t w;
                        do
                                w = wait4(a->pid, &o.wait_status, 0, &o.rusage);
                        while (w < 0 && errno == EINTR);
                        reaped = true;
                        o.end_us = sbx_now_us();
                        if (a->kill_group_at_exit)
                                kill(a->kill_target, SIGKILL);
                        /* Every writer is gone (container) or was just killed (process tier);
                         * whatever still holds a pipe open after this grace is not waited for. */
                        drain_until = o.end_us + SBX_DRAIN_GRACE_MS * 1000ULL;
                }
        }
        safe_close(out_fd);
        safe_close(err_fd);
        safe_close(rep_fd);
        *ret = o;
        return 0;
}

int sbx_result_fill(sbx_result *ret, const sbx_supervise_out *so, capture *out, capture *err, hull_error *e) {
        int st = so->wait_status;
        if (so->have_exit) {
                ret->exited = so->exit_report.exited;
                ret->exit_code = so->exit_report.exit_code;
                ret->term_signal = so->exit_report.term_signal;
        } else if (WIFEXITED(st)) {
                ret->exited = true;
                ret->exit_code = WEXITSTATUS(st);
        } else if (WIFSIGNALED(st)) {
                ret->term_signal = WTERMSIG(st);
        }
        ret->timed_out = so->timed_out;
        ret->interrupted_signal = so->interrupted_signal;
        ret->cpu_user_us = (uint64_t) so->rusage.ru_utime.tv_sec * 1000000ULL + (uint64_t) so->rusage.ru_utime.tv_usec;
        ret->cpu_sys_us = (uint64_t) so->rusage.ru_stime.tv_sec * 1000000ULL + (uint64_t) so->rusage.ru_stime.tv_usec;
        ret->peak_memory_bytes = (uint64_t) so->rusage.ru_maxrss * 1024ULL;
        ret->out_total = out->total;
        ret->err_total = err->total;
        ret->out_head_len = out->head_len;
        ret->err_head_len = err->head_len;
        ret->out_dropped = capture_dropped(out);
        ret->err_dropped = capture_dropped(err);
        if (capture_contents(out, &ret->out, &ret->out_len) < 0 || capture_contents(err, &ret->err, &ret->err_len) < 0)
                return hull_err(e, -ENOMEM, "exec: out of memory while collecting output");
        return 0;
}
