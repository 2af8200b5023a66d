/* probe.c: escape attempts against the hull container tier, one per mode.
 *
 *   probe MODE [ARG...]
 *
 * Each mode tries to break out of (or past the limits of) the sandbox it runs in and prints one
 * result line on stdout (the flood mode prints it on stderr):
 *   DENIED ...    every attempt failed, each with the errno the policy names (EPERM for the
 *                 seccomp deny-list, ENOSYS for clone3, ENOSPC for a full /tmp, ...)
 *   BLOCKED ...   every attempt failed, some with another errno (contained, but not as specified)
 *   CONTAINED ... an inspection found nothing wrong
 *   ESCAPED ...   an attempt succeeded or an invariant did not hold
 * and exits 0 when contained, 1 when it escaped, 2 when it refuses to run.
 *
 * This program runs as root on a real machine when something is wrong, so main() first proves
 * that it is inside a sandbox (sandbox_guard()) and refuses otherwise. Every attempt is chosen so
 * that even its success harms nothing: bogus module images, invalid reboot commands, the clock
 * set to the time it already has, files opened for writing but never written, no unlink or
 * truncate outside the sandbox's own /tmp and /workspace. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/quota.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define EXIT_CONTAINED 0
#define EXIT_ESCAPED 1
#define EXIT_REFUSED 2

#define SANDBOX_ID 1000U        /* uid and gid inside the sandbox */
#define DETAIL_MAX 4096U        /* bytes of one result line's detail */
#define SMALL_FILE_MAX 65536U   /* bytes read from one /proc file */
#define FORK_BOMB_MAX 4096U     /* children the fork bomb will ever start */
#define MEMORY_CHUNK (4U << 20) /* bytes the memory bomb touches per step */
#define MEMORY_BOMB_FACTOR 4U   /* give up (escaped) at this multiple of the limit */
#define FILL_CHUNK (1U << 20)   /* bytes per write() when filling a tmpfs */
#define FLOOD_CHUNK 65536U      /* bytes per write() when flooding stdout */
#define OBSERVE_TRIES 4000U     /* polls of a child's /proc status, 500 us apart */
#define X32_SYSCALL_BIT 0x40000000L
#define I386_NR_GETPID 20L
#define X86_64_NR_GETPID 39L

/* ---- result lines -------------------------------------------------------------------------- */

typedef struct outcome {
        char detail[DETAIL_MAX];
        size_t len;
        bool escaped;  /* an attempt succeeded */
        bool off_spec; /* an attempt failed, but not with the errno the policy names */
} outcome;

__attribute__((format(printf, 2, 3))) static void add(outcome *o, const char *fmt, ...) {
        va_list ap;
        int n;

        if (o->len + 2 >= sizeof(o->detail))
                return;
        o->detail[o->len++] = ' ';
        va_start(ap, fmt);
        n = vsnprintf(o->detail + o->len, sizeof(o->detail) - o->len, fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        o->len += (size_t) n;
        if (o->len >= sizeof(o->detail))
                o->len = sizeof(o->detail) - 1;
        o->detail[o->len] = '\0';
}

static const char *errname(int err) {
        const char *n = strerrorname_np(err);
        return n ? n : "E?";
}

/* Record one attempt that must fail. want: the errno the policy names, 0 for any failure. */
static void expect_fail(outcome *o, const char *what, long ret, int err, int want) {
        if (ret >= 0) {
                o->escaped = true;
                add(o, "%s=ok(%ld)", what, ret);
                return;
        }
        add(o, "%s=%s", what, errname(err));
        if (want != 0 && err != want)
                o->off_spec = true;
}

/* Evaluate EXPR (returning -1/errno on failure), record it, yield its value. */
#define TRY(o, what, want, expr)                                                                                       \
        ({                                                                                                             \
                errno = 0;                                                                                             \
                long try_ret_ = (long) (expr);                                                                         \
                int try_err_ = errno;                                                                                  \
                expect_fail((o), (what), try_ret_, try_err_, (want));                                                  \
                try_ret_;                                                                                              \
        })

/* Record a failure that says nothing about containment (an attempt we could not even set up). */
static void note(outcome *o, const char *what, int err) {
        add(o, "%s=%s(info)", what, errname(err));
}

static int finish(const outcome *o) {
        const char *verdict = o->escaped ? "ESCAPED" : o->off_spec ? "BLOCKED" : "DENIED";

        printf("%s%s\n", verdict, o->detail);
        fflush(stdout);
        return o->escaped ? EXIT_ESCAPED : EXIT_CONTAINED;
}

static int report(bool escaped, const outcome *o) {
        printf("%s%s\n", escaped ? "ESCAPED" : "CONTAINED", o->detail);
        fflush(stdout);
        return escaped ? EXIT_ESCAPED : EXIT_CONTAINED;
}

static void close_if_open(long fd) {
        if (fd >= 0)
                close((int) fd);
}

/* ---- small helpers -------------------------------------------------------------------------- */

/* Read up to size-1 bytes of a file, NUL-terminate. Returns bytes read or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t got = 0;

        if (fd < 0)
                return -errno;
        while (got + 1 < size) {
                ssize_t n = read(fd, buf + got, size - 1 - got);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = errno;
                        close(fd);
                        return -e;
                }
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        buf[got] = '\0';
        close(fd);
        return (ssize_t) got;
}

static bool parse_u64(const char *s, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!s || *s < '0' || *s > '9')
                return false;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0')
                return false;
        *ret = v;
        return true;
}

/* "64M", "8K", "1G", "4096" */
static bool parse_size(const char *s, uint64_t *ret) {
        char *end;
        unsigned long long v;
        unsigned shift = 0;

        if (!s || *s < '0' || *s > '9')
                return false;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0)
                return false;
        switch (*end) {
        case '\0':
                shift = 0;
                break;
        case 'k':
        case 'K':
                shift = 10;
                end++;
                break;
        case 'm':
        case 'M':
                shift = 20;
                end++;
                break;
        case 'g':
        case 'G':
                shift = 30;
                end++;
                break;
        default:
                return false;
        }
        if (*end == 'i' || *end == 'B')
                end++;
        if (*end == 'B')
                end++;
        if (*end != '\0' || v > (UINT64_MAX >> shift))
                return false;
        *ret = (uint64_t) v << shift;
        return true;
}

/* Value of "Key:" in a /proc/PID/status text, or NULL. */
static const char *status_field(const char *status, const char *key, char *out, size_t out_size) {
        size_t klen = strlen(key);
        const char *p = status;

        while (p && *p) {
                if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
                        const char *v = p + klen + 1;
                        size_t n = 0;
                        while (*v == ' ' || *v == '\t')
                                v++;
                        while (v[n] && v[n] != '\n')
                                n++;
                        if (n >= out_size)
                                n = out_size - 1;
                        memcpy(out, v, n);
                        out[n] = '\0';
                        return out;
                }
                p = strchr(p, '\n');
                if (p)
                        p++;
        }
        return NULL;
}

static bool status_hex(const char *status, const char *key, uint64_t *ret) {
        char v[64], *end;

        if (!status_field(status, key, v, sizeof(v)))
                return false;
        errno = 0;
        *ret = strtoull(v, &end, 16);
        return errno == 0 && end != v && *end == '\0';
}

static bool status_u64(const char *status, const char *key, uint64_t *ret) {
        char v[64];

        return status_field(status, key, v, sizeof(v)) && parse_u64(v, ret);
}

static bool ns_inode(const char *path, uint64_t *ret) {
        struct stat st;

        if (stat(path, &st) < 0)
                return false;
        *ret = (uint64_t) st.st_ino;
        return true;
}

static uint64_t env_u64_or_zero(const char *name) {
        uint64_t v;

        return parse_u64(getenv(name), &v) ? v : 0;
}

/* fork a child that waits to be killed; the caller kills and reaps it. */
static pid_t spawn_sleeper(void) {
        pid_t pid = fork();

        if (pid == 0) {
                for (;;)
                        pause();
        }
        return pid;
}

static void kill_and_reap(pid_t pid) {
        if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
}

/* Run fn in a forked child; the child's errno result travels back as its exit status:
 * 0 = the call succeeded, else the errno. Returns the errno, 0 for success, -1 if unknown. */
static int in_child(int (*fn)(void *), void *arg) {
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return -1;
        if (pid == 0)
                _exit(fn(arg) & 0xff);
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                return -1;
        return WEXITSTATUS(status);
}

/* ---- the safety gate ----------------------------------------------------------------------- */

__attribute__((noreturn)) static void refuse(const char *why) {
        printf("REFUSED not in sandbox: %s\n", why);
        fflush(stdout);
        exit(EXIT_REFUSED);
}

/* Prove we are inside a hull sandbox before attempting anything: our pid and user namespaces
 * must differ from the host's (given by the harness), the uid map must not be the initial
 * namespace's identity map, and we must hold no effective capability. */
static void sandbox_guard(void) {
        static char buf[SMALL_FILE_MAX];
        uint64_t host_pidns, host_userns, own, capeff;
        const char *line;

        if (!parse_u64(getenv("HULL_HOST_PIDNS"), &host_pidns) || host_pidns == 0)
                refuse("HULL_HOST_PIDNS missing or not a number");
        if (!parse_u64(getenv("HULL_HOST_USERNS"), &host_userns) || host_userns == 0)
                refuse("HULL_HOST_USERNS missing or not a number");

        if (!ns_inode("/proc/self/ns/pid", &own))
                refuse("cannot stat /proc/self/ns/pid");
        if (own == host_pidns)
                refuse("pid namespace is the host's");
        if (!ns_inode("/proc/self/ns/user", &own))
                refuse("cannot stat /proc/self/ns/user");
        if (own == host_userns)
                refuse("user namespace is the host's");

        if (read_small("/proc/self/uid_map", buf, sizeof(buf)) < 0)
                refuse("cannot read /proc/self/uid_map");
        for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                unsigned long inside, outside, count;
                if (sscanf(line, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 && outside == 0 &&
                    count == 4294967295UL)
                        refuse("uid_map is the identity map");
        }

        if (read_small("/proc/self/status", buf, sizeof(buf)) < 0)
                refuse("cannot read /proc/self/status");
        if (!status_hex(buf, "CapEff", &capeff))
                refuse("no CapEff in /proc/self/status");
        if (capeff != 0)
                refuse("effective capabilities are not empty");
}

/* ---- host files ------------------------------------------------------------------------------ */

/* Host files outside the binds: /root, /etc/shadow and friends. */
static int mode_read_host_files(int argc, char **argv) {
        static const char *const files[] = {
                "/etc/shadow",
                "/etc/gshadow",
                "/etc/sudoers",
                "/etc/ssh/ssh_host_ed25519_key",
                "/root/.bashrc",
                "/root/.profile",
                "/root/.ssh/authorized_keys",
                "/var/log/syslog",
                "/home",
        };
        outcome o = {0};
        DIR *d;

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
                close_if_open(TRY(&o, files[i], 0, open(files[i], O_RDONLY | O_CLOEXEC)));

        d = opendir("/root");
        if (d) {
                struct dirent *de;
                unsigned n = 0;
                while ((de = readdir(d)))
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                n++;
                closedir(d);
                if (n > 0) {
                        o.escaped = true;
                        add(&o, "/root-listing=%u-entries", n);
                } else
                        add(&o, "/root-listing=empty");
        } else
                add(&o, "/root-listing=%s", errname(errno));
        return finish(&o);
}

/* A host canary file (path and secret from the harness), by every path trick we know. */
static int mode_host_canary(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        static const char *const prefixes[] = {
                "",
                "/proc/1/root",
                "/proc/self/root",
                "/proc/self/cwd/../../../../../../../..",
                "../../../../../../../../../..",
                "/workspace/../../../..",
                "/proc/1/cwd/../../../..",
                "/proc/self/root/proc/1/root",
                "/dev/fd/../../../..",
                "/oldroot",
                "/proc/1/root/oldroot",
        };
        outcome o = {0};

        if (argc < 2)
                refuse("usage: host-canary PATH SECRET");
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
                char path[PATH_MAX];
                ssize_t n;

                snprintf(path, sizeof(path), "%s%s", prefixes[i], argv[0]);
                n = read_small(path, buf, sizeof(buf));
                if (n < 0) {
                        add(&o, "%s=%s", path, errname((int) -n));
                        continue;
                }
                if (strstr(buf, argv[1])) {
                        o.escaped = true;
                        add(&o, "%s=READ-SECRET", path);
                } else
                        add(&o, "%s=opened-no-secret", path);
        }
        return finish(&o);
}

/* /proc/self/root and /proc/1/root must be the sandbox root, not a door to the host's. */
static int mode_proc_root(int argc, char **argv) {
        static const char *const links[] = {"/proc/self/root", "/proc/1/root", "/proc/self/cwd"};
        static const char *const host_only[] = {
                "/proc/1/root/etc/shadow",
                "/proc/self/root/etc/shadow",
                "/proc/1/root/root",
                "/proc/1/root/var/log",
                "/proc/1/root/boot",
                "/proc/self/root/../../etc/shadow",
                "/proc/1/root/../../../etc/shadow",
                "/proc/1/cwd/../../etc/shadow",
                "/oldroot/etc/shadow",
                "/oldroot/root",
                "/proc/1/root/oldroot/etc/shadow",
        };
        outcome o = {0};
        struct stat a, b;

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
                char target[PATH_MAX];
                ssize_t n = readlink(links[i], target, sizeof(target) - 1);
                if (n < 0) {
                        note(&o, links[i], errno);
                        continue;
                }
                target[n] = '\0';
                add(&o, "%s->%s", links[i], target);
                if (i < 2 && strcmp(target, "/") != 0)
                        o.escaped = true;
        }
        for (size_t i = 0; i < sizeof(host_only) / sizeof(host_only[0]); i++)
                close_if_open(TRY(&o, host_only[i], 0, open(host_only[i], O_RDONLY | O_CLOEXEC)));

        /* the root of pid 1 and our own root are the same directory */
        if (stat("/proc/1/root/usr", &a) == 0 && stat("/usr", &b) == 0 &&
            (a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
                o.escaped = true;
                add(&o, "/proc/1/root/usr=differs-from-/usr");
        }
        return finish(&o);
}

/* Read /workspace/NAME (a link the harness planted pointing at a host file); the host secret
 * must not come through. Then plant our own links and read and write through them. */
static int mode_workdir_links(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        outcome o = {0};

        if (argc < 3)
                refuse("usage: workdir-links LINK HOST-FILE SECRET");
        const char *link = argv[0], *host_file = argv[1], *secret = argv[2];
        char ours[PATH_MAX];
        ssize_t n;

        n = read_small(link, buf, sizeof(buf));
        if (n >= 0 && strstr(buf, secret)) {
                o.escaped = true;
                add(&o, "%s=READ-SECRET", link);
        } else
                add(&o, "%s=%s", link, n < 0 ? errname((int) -n) : "opened-no-secret");

        snprintf(ours, sizeof(ours), "/workspace/probe-link-%d", getpid());
        if (symlink(host_file, ours) < 0)
                note(&o, "symlink", errno);
        n = read_small(ours, buf, sizeof(buf));
        if (n >= 0 && strstr(buf, secret)) {
                o.escaped = true;
                add(&o, "own-link=READ-SECRET");
        } else
                add(&o, "own-link=%s", n < 0 ? errname((int) -n) : "opened-no-secret");
        /* writing through the links must not reach the host file (the harness checks it) */
        close_if_open(TRY(&o, "write-through-planted", 0, open(link, O_WRONLY | O_APPEND | O_CLOEXEC)));
        close_if_open(TRY(&o, "write-through-own", 0, open(ours, O_WRONLY | O_APPEND | O_CLOEXEC)));
        unlink(ours);
        return finish(&o);
}

/* /proc/1 is the sandbox's first process, never the host's init; its environ is ours to read at
 * most. argv[0]: the host pid 1's command line (first word). */
static int mode_proc1(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        outcome o = {0};
        uint64_t ino, host = env_u64_or_zero("HULL_HOST_PIDNS");
        bool escaped = false;
        ssize_t n;

        n = read_small("/proc/1/cmdline", buf, sizeof(buf));
        add(&o, "pid1=%s", n > 0 ? buf : "?");
        if (n > 0 && argc >= 1 && strcmp(buf, argv[0]) == 0) {
                escaped = true;
                add(&o, "is-host-init");
        }
        if (ns_inode("/proc/1/ns/pid", &ino) && ino == host) {
                escaped = true;
                add(&o, "pid1-in-host-pidns");
        }
        n = read_small("/proc/1/environ", buf, sizeof(buf));
        add(&o, "environ=%s", n < 0 ? errname((int) -n) : "readable(sandbox-own)");
        return report(escaped, &o);
}

/* Pid 1 (hull's init inside the sandbox) must be no softer target than we are: if its memory is
 * writable through /proc/1/mem, it must hold no capability and run under the same seccomp filter
 * and no_new_privs, or hijacking it would shed those layers. */
static int mode_pid1_hijack(int argc, char **argv) {
        static char status[SMALL_FILE_MAX];
        char v[64];
        outcome o = {0};
        bool escaped = false, writable;
        uint64_t capeff = 1, capbnd = 1, nnp = 0, mode = 0;
        int fd;

        (void) argc, (void) argv;
        if (getpid() == 1) {
                add(&o, "probe-is-pid1");
                return report(false, &o);
        }
        fd = open("/proc/1/mem", O_RDWR | O_CLOEXEC);
        writable = fd >= 0;
        add(&o, "mem-rw=%s", writable ? "yes" : errname(errno));
        close_if_open(fd);
        if (read_small("/proc/1/status", status, sizeof(status)) < 0) {
                add(&o, "status=%s", errname(errno));
                return report(writable, &o);
        }
        status_field(status, "Name", v, sizeof(v));
        add(&o, "name=%s", v);
        if (!status_hex(status, "CapEff", &capeff) || !status_hex(status, "CapBnd", &capbnd) ||
            !status_u64(status, "NoNewPrivs", &nnp) || !status_u64(status, "Seccomp", &mode))
                add(&o, "status-unparsed");
        add(&o, "CapEff=%" PRIx64 " CapBnd=%" PRIx64 " NoNewPrivs=%" PRIu64 " Seccomp=%" PRIu64, capeff, capbnd, nnp,
            mode);
        if (writable && (capeff != 0 || capbnd != 0 || nnp != 1 || mode != 2))
                escaped = true;
        return report(escaped, &o);
}

/* No process we can see carries the host environment marker (host environ leaked or visible). */
static int mode_environ_scan(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        outcome o = {0};
        bool escaped = false;
        unsigned scanned = 0;
        DIR *d;
        struct dirent *de;

        if (argc < 1)
                refuse("usage: environ-scan TOKEN");
        d = opendir("/proc");
        if (!d)
                refuse("cannot open /proc");
        while ((de = readdir(d))) {
                char path[PATH_MAX];
                ssize_t n;
                uint64_t pid;

                if (!parse_u64(de->d_name, &pid))
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/environ", de->d_name);
                n = read_small(path, buf, sizeof(buf));
                if (n < 0)
                        continue;
                scanned++;
                for (ssize_t i = 0; i < n; i++)
                        if (buf[i] == '\0')
                                buf[i] = '\n';
                if (strstr(buf, argv[0])) {
                        escaped = true;
                        add(&o, "token-in-pid-%s", de->d_name);
                }
        }
        closedir(d);
        add(&o, "scanned=%u", scanned);
        return report(escaped, &o);
}

/* ---- writes to read-only places -------------------------------------------------------------- */

static int mode_write_usr(int argc, char **argv) {
        outcome o = {0};
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "/usr/%s", argc >= 1 ? argv[0] : "hull-probe-canary");
        if (TRY(&o, "create-in-usr", 0, open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644)) >= 0)
                unlink(path);
        close_if_open(TRY(&o, "open-usr-bin-true-rw", 0, open("/usr/bin/true", O_WRONLY | O_CLOEXEC)));
        if (TRY(&o, "mkdir-usr-lib", 0, mkdir("/usr/lib/hull-probe-dir", 0755)) >= 0)
                rmdir("/usr/lib/hull-probe-dir");
        /* chmod to the mode it already has: harmless if it ever went through */
        TRY(&o, "chmod-usr-bin-true", 0, chmod("/usr/bin/true", 0755));
        if (TRY(&o, "symlink-in-usr-bin", 0, symlink("/workspace/probe", "/usr/bin/hull-probe-link")) >= 0)
                unlink("/usr/bin/hull-probe-link");
        return finish(&o);
}

static int mode_write_root_etc(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        if (TRY(&o, "create-/", 0, open("/hull-probe", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644)) >= 0)
                unlink("/hull-probe");
        if (TRY(&o, "create-/etc", 0, open("/etc/hull-probe", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644)) >= 0)
                unlink("/etc/hull-probe");
        close_if_open(TRY(&o, "open-/etc/passwd-rw", 0, open("/etc/passwd", O_WRONLY | O_APPEND | O_CLOEXEC)));
        close_if_open(TRY(&o, "open-/etc/hosts-rw", 0, open("/etc/hosts", O_WRONLY | O_APPEND | O_CLOEXEC)));
        if (TRY(&o, "mkdir-/", 0, mkdir("/hull-probe-dir", 0755)) >= 0)
                rmdir("/hull-probe-dir");
        if (TRY(&o, "rename-/etc/hosts", 0, rename("/etc/hosts", "/etc/hosts.probe")) >= 0)
                rename("/etc/hosts.probe", "/etc/hosts");
        return finish(&o);
}

/* /proc/sys and other kernel knobs: opened for writing, never written. */
static int mode_proc_sys(int argc, char **argv) {
        static const char *const knobs[] = {
                "/proc/sys/kernel/hostname", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
                "/proc/sys/vm/drop_caches",  "/proc/sys/net/ipv4/ip_forward", "/proc/sysrq-trigger",
                "/sys/kernel/uevent_helper",
        };
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
                close_if_open(TRY(&o, knobs[i], 0, open(knobs[i], O_WRONLY | O_CLOEXEC)));
        return finish(&o);
}

static int mode_mknod(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        if (TRY(&o, "chr-1:1-in-tmp", 0, mknod("/tmp/hull-mem", S_IFCHR | 0600, makedev(1, 1))) >= 0)
                unlink("/tmp/hull-mem");
        if (TRY(&o, "blk-8:0-in-workspace", 0, mknod("/workspace/hull-sda", S_IFBLK | 0600, makedev(8, 0))) >= 0)
                unlink("/workspace/hull-sda");
        if (TRY(&o, "chr-1:3-in-dev", 0, mknod("/dev/hull-null", S_IFCHR | 0666, makedev(1, 3))) >= 0)
                unlink("/dev/hull-null");
        return finish(&o);
}

/* Device nodes the sandbox must not have. */
static int mode_dev_nodes(int argc, char **argv) {
        static const char *const nodes[] = {
                "/dev/mem", "/dev/kmem",        "/dev/port",         "/dev/kmsg", "/dev/sda",
                "/dev/vda", "/dev/nvme0n1",     "/dev/loop-control", "/dev/fuse", "/dev/net/tun",
                "/dev/kvm", "/dev/userfaultfd", "/dev/cpu/0/msr",
        };
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++)
                close_if_open(TRY(&o, nodes[i], 0, open(nodes[i], O_RDONLY | O_CLOEXEC)));
        return finish(&o);
}

/* ---- mounts and namespaces ----------------------------------------------------------------- */

static int mode_mount(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        TRY(&o, "tmpfs", EPERM, mount("none", "/tmp", "tmpfs", 0, ""));
        TRY(&o, "remount-/-rw", EPERM, mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL));
        TRY(&o, "remount-usr-rw", EPERM, mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL));
        TRY(&o, "bind-workspace", EPERM, mount("/workspace", "/tmp", NULL, MS_BIND, NULL));
        TRY(&o, "proc", EPERM, mount("proc", "/tmp", "proc", 0, NULL));
        TRY(&o, "cgroup-v1", EPERM, mount("cgroup", "/tmp", "cgroup", 0, "rdma"));
        TRY(&o, "umount-proc", EPERM, umount2("/proc", MNT_DETACH));
        return finish(&o);
}

static int mode_new_mount_api(int argc, char **argv) {
        outcome o = {0};
        char attr[32] = {0}; /* struct mount_attr, zeroed */

        (void) argc, (void) argv;
        close_if_open(TRY(&o, "fsopen", EPERM, syscall(SYS_fsopen, "tmpfs", 0)));
        close_if_open(TRY(&o, "fspick", EPERM, syscall(SYS_fspick, AT_FDCWD, "/", 0)));
        close_if_open(TRY(&o, "open_tree", EPERM,
                          syscall(SYS_open_tree, AT_FDCWD, "/usr", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
        TRY(&o, "move_mount", EPERM, syscall(SYS_move_mount, AT_FDCWD, "/workspace", AT_FDCWD, "/tmp", 0));
        close_if_open(TRY(&o, "fsmount", EPERM, syscall(SYS_fsmount, -1, 0, 0)));
        TRY(&o, "mount_setattr", EPERM, syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, attr, sizeof(attr)));
        return finish(&o);
}

static int mode_chroot(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        /* the classic escape: chroot into a subdir, then walk up from the old cwd */
        if (TRY(&o, "chroot-tmp", EPERM, chroot("/tmp")) >= 0) {
                for (int i = 0; i < 64; i++)
                        if (chdir("..") < 0)
                                break;
                TRY(&o, "chroot-dot", EPERM, chroot("."));
        }
        return finish(&o);
}

static int mode_pivot_root(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        TRY(&o, "pivot_root", EPERM, syscall(SYS_pivot_root, "/tmp", "/tmp"));
        TRY(&o, "pivot_root-dot", EPERM, syscall(SYS_pivot_root, ".", "."));
        return finish(&o);
}

static const struct {
        int flag;
        const char *name;
} ns_flags[] = {
        {CLONE_NEWUSER, "user"}, {CLONE_NEWNS, "mnt"},  {CLONE_NEWPID, "pid"},       {CLONE_NEWNET, "net"},
        {CLONE_NEWUTS, "uts"},   {CLONE_NEWIPC, "ipc"}, {CLONE_NEWCGROUP, "cgroup"}, {CLONE_NEWTIME, "time"},
};

static int mode_unshare(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++) {
                char what[32];
                snprintf(what, sizeof(what), "unshare-%s", ns_flags[i].name);
                TRY(&o, what, EPERM, unshare(ns_flags[i].flag));
        }
        return finish(&o);
}

static int mode_clone_ns(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++) {
                char what[32];
                long r;

                snprintf(what, sizeof(what), "clone-%s", ns_flags[i].name);
                errno = 0;
                r = syscall(SYS_clone, (unsigned long) ns_flags[i].flag | SIGCHLD, NULL, NULL, NULL, 0UL);
                if (r == 0)
                        syscall(SYS_exit_group, 0); /* the child of an escaped clone */
                if (r > 0)
                        waitpid((pid_t) r, NULL, 0);
                expect_fail(&o, what, r, errno, EPERM);
        }
        return finish(&o);
}

static int mode_clone3(int argc, char **argv) {
        outcome o = {0};
        static const unsigned long long flags[] = {CLONE_NEWUSER, CLONE_NEWNS | CLONE_NEWPID, 0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
                struct clone_args args = {.flags = flags[i], .exit_signal = SIGCHLD};
                char what[40];
                long r;

                snprintf(what, sizeof(what), "clone3-flags-%#llx", flags[i]);
                errno = 0;
                r = syscall(SYS_clone3, &args, sizeof(args));
                if (r == 0)
                        syscall(SYS_exit_group, 0);
                if (r > 0)
                        waitpid((pid_t) r, NULL, 0);
                /* clone3 without namespace flags is no escape, but the policy says ENOSYS */
                if (r > 0 && flags[i] == 0) {
                        add(&o, "%s=ok(%ld)", what, r);
                        o.off_spec = true;
                        continue;
                }
                expect_fail(&o, what, r, errno, ENOSYS);
        }
        return finish(&o);
}

static int mode_setns(int argc, char **argv) {
        static const char *const kinds[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time"};
        static const char *const owners[] = {"/proc/1/ns", "/proc/self/ns"};
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t w = 0; w < 2; w++)
                for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
                        char path[64];
                        int fd;

                        snprintf(path, sizeof(path), "%s/%s", owners[w], kinds[i]);
                        fd = open(path, O_RDONLY | O_CLOEXEC);
                        if (fd < 0) {
                                note(&o, path, errno);
                                continue;
                        }
                        TRY(&o, path, EPERM, setns(fd, 0));
                        close(fd);
                }
        return finish(&o);
}

/* ---- processes ------------------------------------------------------------------------------- */

static int traceme(void *arg) {
        (void) arg;
        return ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? 0 : errno;
}

static int mode_ptrace(int argc, char **argv) {
        outcome o = {0};
        pid_t kid = spawn_sleeper();
        pid_t parent = getppid();
        int err;

        (void) argc, (void) argv;
        if (kid < 0)
                refuse("fork failed");
        if (TRY(&o, "attach-child", EPERM, ptrace(PTRACE_ATTACH, kid, NULL, NULL)) == 0)
                ptrace(PTRACE_DETACH, kid, NULL, NULL);
        if (TRY(&o, "seize-child", EPERM, ptrace(PTRACE_SEIZE, kid, NULL, NULL)) == 0)
                ptrace(PTRACE_DETACH, kid, NULL, NULL);
        if (parent > 0) {
                if (TRY(&o, "attach-parent", EPERM, ptrace(PTRACE_ATTACH, parent, NULL, NULL)) == 0)
                        ptrace(PTRACE_DETACH, parent, NULL, NULL);
        } else
                add(&o, "parent=outside-pidns");
        if (getpid() != 1)
                if (TRY(&o, "attach-pid1", EPERM, ptrace(PTRACE_ATTACH, 1, NULL, NULL)) == 0)
                        ptrace(PTRACE_DETACH, 1, NULL, NULL);
        err = in_child(traceme, NULL);
        expect_fail(&o, "traceme", err == 0 ? 0 : -1, err < 0 ? EIO : err, EPERM);
        kill_and_reap(kid);
        return finish(&o);
}

static volatile uint64_t secret_word = 0x68756c6cULL; /* something for a sibling to read */

static int mode_process_vm(int argc, char **argv) {
        outcome o = {0};
        uint64_t word = 0;
        struct iovec local = {&word, sizeof(word)};
        struct iovec remote = {(void *) &secret_word, sizeof(secret_word)};
        pid_t kid = spawn_sleeper();

        (void) argc, (void) argv;
        if (kid < 0)
                refuse("fork failed");
        TRY(&o, "process_vm_readv", EPERM, syscall(SYS_process_vm_readv, kid, &local, 1UL, &remote, 1UL, 0UL));
        TRY(&o, "process_vm_writev", EPERM, syscall(SYS_process_vm_writev, kid, &local, 1UL, &remote, 1UL, 0UL));
        kill_and_reap(kid);
        return finish(&o);
}

/* The given host pids (the test shell, the host listener) are invisible and unsignalable. */
static int mode_signal_host(int argc, char **argv) {
        outcome o = {0};
        uint64_t own_pidns, ino;

        if (argc < 1 || !ns_inode("/proc/self/ns/pid", &own_pidns))
                refuse("usage: signal-host PID...");
        for (int i = 0; i < argc; i++) {
                char path[64], what[64];
                uint64_t pid;

                if (!parse_u64(argv[i], &pid) || pid == 0 || pid > INT_MAX)
                        refuse("bad pid");
                snprintf(path, sizeof(path), "/proc/%" PRIu64 "/ns/pid", pid);
                if (ns_inode(path, &ino) && ino == own_pidns) {
                        /* the number happens to be a sandbox process: not a host process */
                        add(&o, "pid-%" PRIu64 "=sandbox-process", pid);
                        continue;
                }
                snprintf(what, sizeof(what), "visible-%" PRIu64, pid);
                snprintf(path, sizeof(path), "/proc/%" PRIu64, pid);
                TRY(&o, what, 0, access(path, F_OK));
                snprintf(what, sizeof(what), "kill0-%" PRIu64, pid);
                TRY(&o, what, ESRCH, kill((pid_t) pid, 0));
                snprintf(what, sizeof(what), "sigusr1-%" PRIu64, pid);
                if (i == 0)
                        TRY(&o, what, ESRCH, kill((pid_t) pid, SIGUSR1));
        }
        return finish(&o);
}

/* Every process we can see is in our pid namespace; lists them. */
static int mode_proc_pids(int argc, char **argv) {
        outcome o = {0};
        uint64_t own, host = env_u64_or_zero("HULL_HOST_PIDNS"), ino;
        bool escaped = false;
        unsigned count = 0;
        char list[1024] = "";
        size_t used = 0;
        DIR *d;
        struct dirent *de;

        (void) argc, (void) argv;
        if (!ns_inode("/proc/self/ns/pid", &own))
                refuse("cannot stat own pid ns");
        d = opendir("/proc");
        if (!d)
                refuse("cannot open /proc");
        while ((de = readdir(d))) {
                char path[PATH_MAX];
                uint64_t pid;

                if (!parse_u64(de->d_name, &pid))
                        continue;
                count++;
                if (used + 24 < sizeof(list))
                        used += (size_t) snprintf(list + used, sizeof(list) - used, "%s%s", used ? "," : "",
                                                  de->d_name);
                snprintf(path, sizeof(path), "/proc/%s/ns/pid", de->d_name);
                if (!ns_inode(path, &ino))
                        continue;
                if (ino == host || ino != own) {
                        escaped = true;
                        add(&o, "pid-%s-in-foreign-pidns", de->d_name);
                }
        }
        closedir(d);
        add(&o, "count=%u pids=%s", count, list);
        return report(escaped, &o);
}

/* Fork until the pids limit stops us; hold the children for a while (so the harness can time
 * the host meanwhile), then kill them. argv: LIMIT [HOLD-SECONDS] */
static int mode_fork_bomb(int argc, char **argv) {
        static pid_t kids[FORK_BOMB_MAX];
        uint64_t limit, hold = 0;
        unsigned n = 0;
        int err = 0;
        outcome o = {0};

        if (argc < 1 || !parse_u64(argv[0], &limit) || limit == 0 || limit > FORK_BOMB_MAX)
                refuse("usage: fork-bomb LIMIT [HOLD]");
        if (argc >= 2 && (!parse_u64(argv[1], &hold) || hold > 60))
                refuse("bad hold");
        for (;;) {
                pid_t pid;

                if (n >= limit) {
                        o.escaped = true;
                        break;
                }
                pid = fork();
                if (pid < 0) {
                        err = errno;
                        break;
                }
                if (pid == 0) {
                        for (;;)
                                pause();
                }
                kids[n++] = pid;
        }
        if (o.escaped)
                add(&o, "forks=%u reached-limit=%" PRIu64, n, limit);
        else {
                add(&o, "forks=%u fork=%s", n, errname(err));
                if (err != EAGAIN)
                        o.off_spec = true;
        }
        finish(&o);
        sleep((unsigned) hold);
        for (unsigned i = 0; i < n; i++)
                kill(kids[i], SIGKILL);
        for (unsigned i = 0; i < n; i++)
                waitpid(kids[i], NULL, 0);
        return o.escaped ? EXIT_ESCAPED : EXIT_CONTAINED;
}

/* Touch memory until the memory limit kills us. argv: LIMIT (e.g. 64M). */
static int mode_memory_bomb(int argc, char **argv) {
        uint64_t limit, touched = 0;
        outcome o = {0};

        if (argc < 1 || !parse_size(argv[0], &limit) || limit == 0 || limit > (1ULL << 34))
                refuse("usage: memory-bomb LIMIT");
        while (touched < limit * MEMORY_BOMB_FACTOR) {
                void *p = mmap(NULL, MEMORY_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED) {
                        add(&o, "mmap=%s touched=%" PRIu64, errname(errno), touched);
                        o.off_spec = true;
                        return finish(&o);
                }
                memset(p, 0x5a, MEMORY_CHUNK);
                touched += MEMORY_CHUNK;
        }
        o.escaped = true;
        add(&o, "touched=%" PRIu64 " limit=%" PRIu64, touched, limit);
        return finish(&o);
}

/* Fill a tmpfs until it is full. argv: DIR LIMIT. ENOSPC at or below LIMIT is contained. */
static int mode_fill_tmp(int argc, char **argv) {
        static char chunk[FILL_CHUNK];
        uint64_t limit, written = 0;
        outcome o = {0};
        char path[PATH_MAX];
        int fd, err = 0;

        if (argc < 2 || !parse_size(argv[1], &limit) || limit == 0 || limit > (1ULL << 34))
                refuse("usage: fill-tmp DIR LIMIT");
        snprintf(path, sizeof(path), "%s/hull-fill-%d", argv[0], getpid());
        fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0) {
                add(&o, "open=%s", errname(errno));
                o.off_spec = true;
                return finish(&o);
        }
        memset(chunk, 'x', sizeof(chunk));
        while (written <= limit + FILL_CHUNK) {
                ssize_t n = write(fd, chunk, sizeof(chunk));
                if (n < 0) {
                        err = errno;
                        break;
                }
                written += (uint64_t) n;
        }
        close(fd);
        unlink(path);
        if (err == 0 || written > limit) {
                o.escaped = true;
                add(&o, "written=%" PRIu64 " limit=%" PRIu64, written, limit);
                return finish(&o);
        }
        add(&o, "write=%s written=%" PRIu64, errname(err), written);
        if (err != ENOSPC)
                o.off_spec = true;
        return finish(&o);
}

/* Write BYTES of 'A' to stdout; the result line goes to stderr. */
static int mode_flood(int argc, char **argv) {
        static char chunk[FLOOD_CHUNK];
        uint64_t total, done = 0;

        if (argc < 1 || !parse_size(argv[0], &total))
                refuse("usage: flood BYTES");
        memset(chunk, 'A', sizeof(chunk));
        while (done < total) {
                size_t n = total - done < sizeof(chunk) ? (size_t) (total - done) : sizeof(chunk);
                ssize_t w = write(STDOUT_FILENO, chunk, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                done += (uint64_t) w;
        }
        fprintf(stderr, "CONTAINED flooded=%" PRIu64 "\n", done);
        return EXIT_CONTAINED;
}

/* Leave a daemon behind: double fork, setsid, close stdio, sleep DELAY, then write
 * /workspace/orphan-marker-TOKEN. The harness checks that it never runs to the end. With HANG,
 * the command itself then sleeps HANG seconds (to be ended by the timeout instead). */
static int mode_orphan(int argc, char **argv) {
        uint64_t delay, hang = 0;
        pid_t pid;

        if (argc < 2 || !parse_u64(argv[0], &delay) || delay > 60)
                refuse("usage: orphan DELAY TOKEN [HANG]");
        if (argc >= 3 && (!parse_u64(argv[2], &hang) || hang > 600))
                refuse("bad hang");
        pid = fork();
        if (pid < 0)
                refuse("fork failed");
        if (pid == 0) {
                setsid();
                if (fork() != 0)
                        _exit(0);
                /* the grandchild: detached, ignoring the polite signals */
                signal(SIGHUP, SIG_IGN);
                signal(SIGTERM, SIG_IGN);
                int devnull = open("/dev/null", O_RDWR);
                if (devnull >= 0) {
                        dup2(devnull, 0);
                        dup2(devnull, 1);
                        dup2(devnull, 2);
                }
                sleep((unsigned) delay);
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "/workspace/orphan-marker-%s", argv[1]);
                int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
                if (fd >= 0) {
                        (void) !write(fd, "survived\n", 9);
                        close(fd);
                }
                _exit(0);
        }
        waitpid(pid, NULL, 0);
        printf("CONTAINED orphan-started delay=%" PRIu64 "\n", delay);
        fflush(stdout);
        sleep((unsigned) hang);
        return EXIT_CONTAINED;
}

/* ---- credentials and capabilities ------------------------------------------------------------ */

/* uid/gid are the sandbox's, capabilities are empty in every set, and root is unreachable. */
static int mode_creds(int argc, char **argv) {
        static char status[SMALL_FILE_MAX];
        static const char *const sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
        outcome o = {0};
        bool escaped = false;
        uid_t r, e, s;
        gid_t gr, ge, gs;
        gid_t groups[64];
        int ngroups;

        (void) argc, (void) argv;
        getresuid(&r, &e, &s);
        getresgid(&gr, &ge, &gs);
        add(&o, "uid=%u,%u,%u gid=%u,%u,%u", r, e, s, gr, ge, gs);
        if (r != SANDBOX_ID || e != SANDBOX_ID || s != SANDBOX_ID || gr != SANDBOX_ID || ge != SANDBOX_ID ||
            gs != SANDBOX_ID)
                escaped = true;
        ngroups = getgroups(64, groups);
        for (int i = 0; i < ngroups; i++)
                if (groups[i] == 0) {
                        escaped = true;
                        add(&o, "in-group-0");
                }
        if (read_small("/proc/self/status", status, sizeof(status)) < 0)
                refuse("cannot read /proc/self/status");
        for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
                uint64_t v;
                if (!status_hex(status, sets[i], &v)) {
                        escaped = true;
                        add(&o, "%s=missing", sets[i]);
                        continue;
                }
                add(&o, "%s=%016" PRIx64, sets[i], v);
                if (v != 0)
                        escaped = true;
        }
        if (setuid(0) == 0) {
                escaped = true;
                add(&o, "setuid0=ok");
        } else
                add(&o, "setuid0=%s", errname(errno));
        if (setgid(0) == 0) {
                escaped = true;
                add(&o, "setgid0=ok");
        } else
                add(&o, "setgid0=%s", errname(errno));
        return report(escaped, &o);
}

/* no_new_privs is set and a seccomp filter is installed. */
static int mode_nnp(int argc, char **argv) {
        static char status[SMALL_FILE_MAX];
        outcome o = {0};
        bool escaped = false;
        uint64_t nnp = 2, mode = 9;
        int p;

        (void) argc, (void) argv;
        if (read_small("/proc/self/status", status, sizeof(status)) < 0)
                refuse("cannot read /proc/self/status");
        if (!status_u64(status, "NoNewPrivs", &nnp) || nnp != 1)
                escaped = true;
        if (!status_u64(status, "Seccomp", &mode) || mode != 2)
                escaped = true;
        p = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
        if (p != 1)
                escaped = true;
        add(&o, "NoNewPrivs=%" PRIu64 " Seccomp=%" PRIu64 " prctl=%d", nnp, mode, p);
        return report(escaped, &o);
}

/* Run a setuid-root binary from /usr (argv: PATH [ARG...]) with a stdin that never delivers,
 * watch its /proc status while it waits, and check it did not gain root or capabilities. */
static int mode_suid_exec(int argc, char **argv) {
        static char status[SMALL_FILE_MAX];
        char path[64], name[64], uid[128] = "?", capeff[64] = "?", capprm[64] = "?";
        const char *base;
        outcome o = {0};
        bool seen = false, escaped = false;
        int in[2], st;
        pid_t pid;

        if (argc < 1)
                refuse("usage: suid-exec PATH [ARG...]");
        if (pipe2(in, O_CLOEXEC) < 0)
                refuse("pipe failed");
        pid = fork();
        if (pid < 0)
                refuse("fork failed");
        if (pid == 0) {
                int devnull = open("/dev/null", O_WRONLY);
                dup2(in[0], 0);
                if (devnull >= 0) {
                        dup2(devnull, 1);
                        dup2(devnull, 2);
                }
                execv(argv[0], argv);
                _exit(127);
        }
        close(in[0]);
        base = strrchr(argv[0], '/');
        base = base ? base + 1 : argv[0];
        snprintf(path, sizeof(path), "/proc/%d/status", pid);
        for (unsigned i = 0; i < OBSERVE_TRIES && !seen; i++) {
                if (read_small(path, status, sizeof(status)) > 0 && status_field(status, "Name", name, sizeof(name)) &&
                    strncmp(name, base, 15) == 0) {
                        status_field(status, "Uid", uid, sizeof(uid));
                        status_field(status, "CapEff", capeff, sizeof(capeff));
                        status_field(status, "CapPrm", capprm, sizeof(capprm));
                        seen = true;
                        break;
                }
                usleep(500);
        }
        if (seen) {
                unsigned ru, eu, su, fu;
                add(&o, "%s Uid=[%s] CapEff=%s CapPrm=%s", base, uid, capeff, capprm);
                if (sscanf(uid, "%u %u %u %u", &ru, &eu, &su, &fu) != 4 || ru != SANDBOX_ID || eu != SANDBOX_ID ||
                    su != SANDBOX_ID || fu != SANDBOX_ID)
                        escaped = true;
                if (strspn(capeff, "0") != strlen(capeff) || strspn(capprm, "0") != strlen(capprm))
                        escaped = true;
        } else {
                add(&o, "%s=not-observed", base);
                escaped = true; /* unverified is not contained */
        }
        kill(pid, SIGKILL);
        close(in[1]);
        waitpid(pid, &st, 0);
        return report(escaped, &o);
}

static int mode_personality(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        if (TRY(&o, "READ_IMPLIES_EXEC", EPERM,
                syscall(SYS_personality, (unsigned long) (PER_LINUX | READ_IMPLIES_EXEC))) >= 0)
                syscall(SYS_personality, (unsigned long) PER_LINUX);
        /* the harmless query, for the record */
        errno = 0;
        long cur = syscall(SYS_personality, 0xffffffffUL);
        if (cur < 0)
                add(&o, "query=%s(info)", errname(errno));
        else
                add(&o, "current=%#lx", (unsigned long) cur);
        return finish(&o);
}

/* ---- the seccomp deny-list ----------------------------------------------------------------- */

static int mode_modules(int argc, char **argv) {
        static char image[64]; /* not an ELF module: rejected even if the call went through */
        outcome o = {0};
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        (void) argc, (void) argv;
        TRY(&o, "init_module", EPERM, syscall(SYS_init_module, image, sizeof(image), ""));
        TRY(&o, "finit_module", EPERM, syscall(SYS_finit_module, fd, "", 0));
        TRY(&o, "delete_module", EPERM, syscall(SYS_delete_module, "hull_probe_no_such_module", O_NONBLOCK));
        close_if_open(fd);
        return finish(&o);
}

static int mode_hostname(int argc, char **argv) {
        outcome o = {0};
        static const char name[] = "hull-probe-pwned";

        (void) argc, (void) argv;
        TRY(&o, "sethostname", EPERM, sethostname(name, sizeof(name) - 1));
        TRY(&o, "setdomainname", EPERM, setdomainname(name, sizeof(name) - 1));
        return finish(&o);
}

/* Set the clock to the time it already has: detectable, harmless. */
static int mode_clock(int argc, char **argv) {
        outcome o = {0};
        struct timeval tv;
        struct timespec ts;
        struct timex tx = {.modes = 0};

        (void) argc, (void) argv;
        gettimeofday(&tv, NULL);
        TRY(&o, "settimeofday", EPERM, settimeofday(&tv, NULL));
        clock_gettime(CLOCK_REALTIME, &ts);
        TRY(&o, "clock_settime", EPERM, clock_settime(CLOCK_REALTIME, &ts));
        TRY(&o, "adjtimex", EPERM, syscall(SYS_adjtimex, &tx));
        memset(&tx, 0, sizeof(tx));
        TRY(&o, "clock_adjtime", EPERM, syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));
        return finish(&o);
}

struct sti_result {
        int plain, high_bits, linux_ioctl;
};

/* In a new session with the pty as controlling terminal, push a character into its input. */
static int try_tiocsti(void *arg) {
        int *which = arg;
        int master, slave;
        char c = '#';
        long r;

        if (setsid() < 0)
                return 250;
        master = posix_openpt(O_RDWR | O_NOCTTY);
        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
                return 251;
        slave = open(ptsname(master), O_RDWR); /* becomes our controlling terminal */
        if (slave < 0)
                return 252;
        if (*which == 0)
                r = ioctl(slave, TIOCSTI, &c);
        else if (*which == 1) /* the upper 32 bits of cmd are ignored by the kernel */
                r = syscall(SYS_ioctl, slave, (unsigned long) TIOCSTI | (1UL << 32), &c);
        else {
                char sub = 6; /* TIOCL_GETSHIFTSTATE: read-only */
                r = ioctl(slave, TIOCLINUX, &sub);
        }
        return r == 0 ? 0 : errno;
}

static int mode_tiocsti(int argc, char **argv) {
        static const char *const what[] = {"TIOCSTI-pty", "TIOCSTI-highbits", "TIOCLINUX-pty"};
        outcome o = {0};
        char c = '#';

        (void) argc, (void) argv;
        for (int i = 0; i < 3; i++) {
                int err = in_child(try_tiocsti, &i);
                if (err >= 250 || err < 0) {
                        note(&o, what[i], err < 0 ? EIO : ENOTTY);
                        o.off_spec = true;
                        continue;
                }
                expect_fail(&o, what[i], err == 0 ? 0 : -1, err, EPERM);
        }
        for (int fd = 0; fd <= 2; fd++) {
                char w[32];
                snprintf(w, sizeof(w), "TIOCSTI-fd%d", fd);
                TRY(&o, w, EPERM, ioctl(fd, TIOCSTI, &c));
        }
        return finish(&o);
}

static int mode_keyctl(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        TRY(&o, "add_key", EPERM,
            syscall(SYS_add_key, "user", "hull-probe", "x", 1UL, (long) KEY_SPEC_PROCESS_KEYRING));
        TRY(&o, "keyctl-get-user-keyring", EPERM,
            syscall(SYS_keyctl, (long) KEYCTL_GET_KEYRING_ID, (long) KEY_SPEC_USER_KEYRING, 0L));
        TRY(&o, "keyctl-join-session", EPERM, syscall(SYS_keyctl, (long) KEYCTL_JOIN_SESSION_KEYRING, NULL));
        TRY(&o, "request_key", EPERM, syscall(SYS_request_key, "user", "hull-probe-none", NULL, 0L));
        return finish(&o);
}

static int mode_bpf(int argc, char **argv) {
        outcome o = {0};
        union bpf_attr map = {0}, prog = {0};
        struct bpf_insn insns[2] = {
                {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
                {.code = BPF_JMP | BPF_EXIT},
        };
        static const char license[] = "GPL";

        (void) argc, (void) argv;
        map.map_type = BPF_MAP_TYPE_ARRAY;
        map.key_size = 4;
        map.value_size = 4;
        map.max_entries = 1;
        close_if_open(TRY(&o, "BPF_MAP_CREATE", EPERM, syscall(SYS_bpf, BPF_MAP_CREATE, &map, sizeof(map))));
        prog.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
        prog.insn_cnt = 2;
        prog.insns = (uint64_t) (uintptr_t) insns;
        prog.license = (uint64_t) (uintptr_t) license;
        close_if_open(TRY(&o, "BPF_PROG_LOAD", EPERM, syscall(SYS_bpf, BPF_PROG_LOAD, &prog, sizeof(prog))));
        return finish(&o);
}

static int mode_perf(int argc, char **argv) {
        outcome o = {0};
        struct perf_event_attr attr = {0};

        (void) argc, (void) argv;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.size = sizeof(attr);
        attr.config = PERF_COUNT_SW_TASK_CLOCK;
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        close_if_open(TRY(&o, "perf-self", EPERM, syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0UL)));
        attr.exclude_kernel = 0;
        attr.type = PERF_TYPE_HARDWARE;
        attr.config = PERF_COUNT_HW_CPU_CYCLES;
        close_if_open(TRY(&o, "perf-cpu-wide", EPERM, syscall(SYS_perf_event_open, &attr, -1, 0, -1, 0UL)));
        return finish(&o);
}

static int mode_userfaultfd(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        close_if_open(
                TRY(&o, "userfaultfd-user-mode", EPERM, syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY)));
        close_if_open(TRY(&o, "userfaultfd", EPERM, syscall(SYS_userfaultfd, O_CLOEXEC)));
        return finish(&o);
}

static int mode_io_uring(int argc, char **argv) {
        outcome o = {0};
        struct io_uring_params p = {0};

        (void) argc, (void) argv;
        close_if_open(TRY(&o, "io_uring_setup", EPERM, syscall(SYS_io_uring_setup, 4U, &p)));
        TRY(&o, "io_uring_register", EPERM, syscall(SYS_io_uring_register, -1, 0U, NULL, 0U));
        TRY(&o, "io_uring_enter", EPERM, syscall(SYS_io_uring_enter, -1, 0U, 0U, 0U, NULL, 0UL));
        return finish(&o);
}

/* The "shocker" attack: open a file by handle, bypassing the mount's view. */
static int mode_open_by_handle(int argc, char **argv) {
        outcome o = {0};
        union {
                struct file_handle fh;
                char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
        } h;
        int mount_id, dirfd = open("/workspace", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        (void) argc, (void) argv;
        memset(&h, 0, sizeof(h));
        h.fh.handle_bytes = MAX_HANDLE_SZ;
        TRY(&o, "name_to_handle_at", EPERM,
            syscall(SYS_name_to_handle_at, AT_FDCWD, "/workspace", &h.fh, &mount_id, 0));
        /* a root-inode-style handle (ext4: inode 2, generation 0) */
        memset(&h, 0, sizeof(h));
        h.fh.handle_bytes = 8;
        h.fh.handle_type = 1;
        h.fh.f_handle[0] = 2;
        close_if_open(TRY(&o, "open_by_handle_at", EPERM,
                          syscall(SYS_open_by_handle_at, dirfd, &h.fh, O_RDONLY | O_CLOEXEC)));
        close_if_open(dirfd);
        return finish(&o);
}

static int mode_kexec(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        TRY(&o, "kexec_load", EPERM, syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0UL));
        TRY(&o, "kexec_file_load", EPERM, syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0UL));
        return finish(&o);
}

static int mode_reboot(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        /* an invalid command: EINVAL if it ever got past the permission checks, never a reboot */
        TRY(&o, "reboot", EPERM, syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, 0x0badc0deUL, NULL));
        return finish(&o);
}

static int mode_acct(int argc, char **argv) {
        outcome o = {0};
        int fd = open("/tmp/hull-acct", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

        (void) argc, (void) argv;
        close_if_open(fd);
        if (TRY(&o, "acct-on", EPERM, acct("/tmp/hull-acct")) == 0)
                acct(NULL);
        TRY(&o, "acct-off", EPERM, acct(NULL));
        unlink("/tmp/hull-acct");
        return finish(&o);
}

static int mode_swap(int argc, char **argv) {
        outcome o = {0};
        int fd = open("/tmp/hull-swap", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        static char quota_buf[256];

        (void) argc, (void) argv;
        close_if_open(fd);
        if (TRY(&o, "swapon", EPERM, swapon("/tmp/hull-swap", 0)) == 0)
                swapoff("/tmp/hull-swap");
        TRY(&o, "swapoff", EPERM, swapoff("/tmp/hull-swap-none"));
        TRY(&o, "quotactl", EPERM, quotactl(QCMD(Q_GETINFO, USRQUOTA), "/dev/null", 0, quota_buf));
        unlink("/tmp/hull-swap");
        return finish(&o);
}

static int mode_iopl(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        if (TRY(&o, "iopl3", EPERM, syscall(SYS_iopl, 3)) == 0)
                syscall(SYS_iopl, 0);
        if (TRY(&o, "ioperm-0x80", EPERM, syscall(SYS_ioperm, 0x80UL, 1UL, 1)) == 0)
                syscall(SYS_ioperm, 0x80UL, 1UL, 0);
        return finish(&o);
}

/* i386 ABI: getpid through int 0x80. The seccomp filter must kill us with SIGSYS. */
static int mode_i386(int argc, char **argv) {
        long r;

        (void) argc, (void) argv;
        fprintf(stderr, "ATTEMPT int 0x80 getpid\n");
        fflush(stderr);
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(I386_NR_GETPID) : "r8", "r9", "r10", "r11", "memory");
        if (r >= 0) {
                printf("ESCAPED i386 getpid returned %ld\n", r);
                fflush(stdout);
                return EXIT_ESCAPED;
        }
        printf("BLOCKED i386 returned %ld (not killed)\n", r);
        fflush(stdout);
        return EXIT_CONTAINED;
}

/* x32 ABI: getpid with the x32 bit. The seccomp filter must kill us with SIGSYS. */
static int mode_x32(int argc, char **argv) {
        long r;

        (void) argc, (void) argv;
        fprintf(stderr, "ATTEMPT x32 getpid\n");
        fflush(stderr);
        __asm__ volatile("syscall" : "=a"(r) : "a"(X32_SYSCALL_BIT | X86_64_NR_GETPID) : "rcx", "r11", "memory");
        if (r >= 0) {
                printf("ESCAPED x32 getpid returned %ld\n", r);
                fflush(stdout);
                return EXIT_ESCAPED;
        }
        printf("BLOCKED x32 returned %ld (not killed)\n", r);
        fflush(stdout);
        return EXIT_CONTAINED;
}

/* ---- network --------------------------------------------------------------------------------- */

/* argv: ADDR PORT [ADDR PORT...]; every connection must fail. */
static int mode_connect_tcp(int argc, char **argv) {
        outcome o = {0};

        if (argc < 2 || argc % 2 != 0)
                refuse("usage: connect-tcp ADDR PORT...");
        for (int i = 0; i + 1 < argc; i += 2) {
                struct sockaddr_in sin = {.sin_family = AF_INET};
                uint64_t port;
                char what[96];
                int fd;

                if (inet_pton(AF_INET, argv[i], &sin.sin_addr) != 1 || !parse_u64(argv[i + 1], &port) || port == 0 ||
                    port > 65535)
                        refuse("bad address");
                sin.sin_port = htons((uint16_t) port);
                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        note(&o, "socket", errno);
                        continue;
                }
                snprintf(what, sizeof(what), "%s:%s", argv[i], argv[i + 1]);
                TRY(&o, what, 0, connect(fd, (struct sockaddr *) &sin, sizeof(sin)));
                close(fd);
        }
        return finish(&o);
}

/* argv: NAME... ; "@x" is the abstract socket x, anything else a path. */
static int mode_connect_unix(int argc, char **argv) {
        outcome o = {0};

        if (argc < 1)
                refuse("usage: connect-unix NAME...");
        for (int i = 0; i < argc; i++) {
                struct sockaddr_un sun = {.sun_family = AF_UNIX};
                size_t len = strlen(argv[i]);
                socklen_t alen;
                int fd;

                if (len == 0 || len >= sizeof(sun.sun_path))
                        refuse("bad socket name");
                memcpy(sun.sun_path, argv[i], len);
                if (argv[i][0] == '@')
                        sun.sun_path[0] = '\0';
                alen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len);
                fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        note(&o, "socket", errno);
                        continue;
                }
                TRY(&o, argv[i], 0, connect(fd, (struct sockaddr *) &sun, alen));
                close(fd);
        }
        return finish(&o);
}

/* Only lo exists: /proc/net/dev and /sys/class/net (when mounted). argv: host interfaces. */
static int mode_netifs(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        outcome o = {0};
        bool escaped = false;
        const char *line;
        DIR *d;

        if (read_small("/proc/net/dev", buf, sizeof(buf)) < 0)
                refuse("cannot read /proc/net/dev");
        for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                char name[64];
                const char *colon = strchr(line, ':'), *nl = strchr(line, '\n');
                size_t n;

                if (!colon || (nl && colon > nl))
                        continue;
                while (*line == ' ')
                        line++;
                n = (size_t) (colon - line);
                if (n == 0 || n >= sizeof(name))
                        continue;
                memcpy(name, line, n);
                name[n] = '\0';
                add(&o, "proc:%s", name);
                if (strcmp(name, "lo") != 0)
                        escaped = true;
                for (int i = 0; i < argc; i++)
                        if (strcmp(name, argv[i]) == 0 && strcmp(name, "lo") != 0)
                                add(&o, "host-interface-%s-visible", name);
        }
        d = opendir("/sys/class/net");
        if (d) {
                struct dirent *de;
                while ((de = readdir(d))) {
                        if (de->d_name[0] == '.')
                                continue;
                        add(&o, "sys:%s", de->d_name);
                        if (strcmp(de->d_name, "lo") != 0)
                                escaped = true;
                }
                closedir(d);
        } else
                add(&o, "sys=%s", errname(errno));
        return report(escaped, &o);
}

/* The command has no controlling terminal: the terminal hull was started from (if any) must
 * not be reachable through /dev/tty, and stdio are not terminals. */
static int mode_ctty(int argc, char **argv) {
        outcome o = {0};

        (void) argc, (void) argv;
        close_if_open(TRY(&o, "/dev/tty", 0, open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)));
        for (int fd = 0; fd <= 2; fd++) {
                char what[16];
                snprintf(what, sizeof(what), "isatty%d", fd);
                errno = 0;
                int tty = isatty(fd);
                expect_fail(&o, what, tty ? 0 : -1, errno, 0);
        }
        return finish(&o);
}

/* ---- leaks and cgroups ----------------------------------------------------------------------- */

/* No file descriptor beyond stdio leaks in; a leaked directory fd is a way out (runc
 * CVE-2024-21626). argv (optional): NAME SECRET, a file to open through a leaked directory fd. */
static int mode_leaked_fds(int argc, char **argv) {
        outcome o = {0};
        bool escaped = false;
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;

        if (!d)
                refuse("cannot open /proc/self/fd");
        while ((de = readdir(d))) {
                uint64_t fd;
                char path[64], target[PATH_MAX];
                struct stat st;
                ssize_t n;

                if (!parse_u64(de->d_name, &fd) || fd <= 2 || (int) fd == dirfd(d))
                        continue;
                snprintf(path, sizeof(path), "/proc/self/fd/%" PRIu64, fd);
                n = readlink(path, target, sizeof(target) - 1);
                target[n < 0 ? 0 : n] = '\0';
                if (fstat((int) fd, &st) == 0 && S_ISDIR(st.st_mode)) {
                        escaped = true;
                        add(&o, "fd%s=DIR:%s", de->d_name, target);
                        if (argc >= 2) {
                                /* walk through it to a host file */
                                static char buf[SMALL_FILE_MAX];
                                int f = openat((int) fd, argv[0], O_RDONLY | O_CLOEXEC);
                                ssize_t got = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);
                                buf[got < 0 ? 0 : got] = '\0';
                                close_if_open(f);
                                add(&o, "openat(fd%s,%s)=%s", de->d_name, argv[0],
                                    f < 0                  ? errname(errno)
                                    : strstr(buf, argv[1]) ? "READ-SECRET"
                                                           : "opened");
                        }
                } else {
                        add(&o, "fd%s=%s", de->d_name, target);
                        o.off_spec = true;
                }
        }
        closedir(d);
        if (escaped)
                return report(true, &o);
        return finish(&o);
}

/* Move ourselves out of the sandbox's cgroup (and its limits), or make a cgroup. */
static int mode_cgroup_escape(int argc, char **argv) {
        static char buf[SMALL_FILE_MAX];
        static const char *const procs[] = {
                "/sys/fs/cgroup/cgroup.procs",      "/sys/fs/cgroup/unified/cgroup.procs",
                "/sys/fs/cgroup/pids/cgroup.procs", "/sys/fs/cgroup/memory/cgroup.procs",
                "/sys/fs/cgroup/../cgroup.procs",
        };
        outcome o = {0};

        (void) argc, (void) argv;
        for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
                close_if_open(TRY(&o, procs[i], 0, open(procs[i], O_WRONLY | O_CLOEXEC)));
        if (TRY(&o, "mkdir-cgroup", 0, mkdir("/sys/fs/cgroup/hull-probe", 0755)) == 0)
                rmdir("/sys/fs/cgroup/hull-probe");
        if (read_small("/proc/self/cgroup", buf, sizeof(buf)) > 0) {
                for (char *p = buf; *p; p++)
                        if (*p == '\n')
                                *p = ';';
                add(&o, "cgroup=%s", buf);
        }
        return finish(&o);
}

/* ---- dispatch -------------------------------------------------------------------------------- */

typedef struct probe_mode {
        const char *name;
        int (*run)(int argc, char **argv);
} probe_mode;

static const probe_mode modes[] = {
        {"read-host-files", mode_read_host_files},
        {"host-canary", mode_host_canary},
        {"proc-root", mode_proc_root},
        {"workdir-links", mode_workdir_links},
        {"proc1", mode_proc1},
        {"environ-scan", mode_environ_scan},
        {"pid1-hijack", mode_pid1_hijack},
        {"write-usr", mode_write_usr},
        {"write-root-etc", mode_write_root_etc},
        {"proc-sys", mode_proc_sys},
        {"mknod", mode_mknod},
        {"dev-nodes", mode_dev_nodes},
        {"mount", mode_mount},
        {"new-mount-api", mode_new_mount_api},
        {"chroot", mode_chroot},
        {"pivot-root", mode_pivot_root},
        {"unshare", mode_unshare},
        {"clone-ns", mode_clone_ns},
        {"clone3", mode_clone3},
        {"setns", mode_setns},
        {"ptrace", mode_ptrace},
        {"process-vm", mode_process_vm},
        {"signal-host", mode_signal_host},
        {"proc-pids", mode_proc_pids},
        {"fork-bomb", mode_fork_bomb},
        {"memory-bomb", mode_memory_bomb},
        {"fill-tmp", mode_fill_tmp},
        {"flood", mode_flood},
        {"orphan", mode_orphan},
        {"creds", mode_creds},
        {"nnp", mode_nnp},
        {"suid-exec", mode_suid_exec},
        {"personality", mode_personality},
        {"modules", mode_modules},
        {"hostname", mode_hostname},
        {"clock", mode_clock},
        {"tiocsti", mode_tiocsti},
        {"keyctl", mode_keyctl},
        {"bpf", mode_bpf},
        {"perf", mode_perf},
        {"userfaultfd", mode_userfaultfd},
        {"io-uring", mode_io_uring},
        {"open-by-handle", mode_open_by_handle},
        {"kexec", mode_kexec},
        {"reboot", mode_reboot},
        {"acct", mode_acct},
        {"swap", mode_swap},
        {"iopl", mode_iopl},
        {"i386", mode_i386},
        {"x32", mode_x32},
        {"connect-tcp", mode_connect_tcp},
        {"connect-unix", mode_connect_unix},
        {"netifs", mode_netifs},
        {"ctty", mode_ctty},
        {"leaked-fds", mode_leaked_fds},
        {"cgroup-escape", mode_cgroup_escape},
};

int main(int argc, char **argv) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        sandbox_guard(); /* before anything else, for every mode */

        if (argc < 2) {
                printf("REFUSED usage: probe MODE [ARG...]\n");
                return EXIT_REFUSED;
        }
        for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
                if (strcmp(argv[1], modes[i].name) == 0)
                        return modes[i].run(argc - 2, argv + 2);
        printf("REFUSED unknown mode %s\n", argv[1]);
        return EXIT_REFUSED;
}
