/* probe-util.c: the probe's result lines and small helpers (/proc readers, number parsers, a
 * child to kill), shared by every mode. */
#include "probe.h"

/* ---- result lines -------------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) void add(outcome *o, const char *fmt, ...) {
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

const char *errname(int err) {
        const char *n = strerrorname_np(err);
        return n ? n : "E?";
}

/* Record one attempt that must fail. want: the errno the policy names, 0 for any failure. */
void expect_fail(outcome *o, const char *what, long ret, int err, int want) {
        if (ret >= 0) {
                o->escaped = true;
                add(o, "%s=ok(%ld)", what, ret);
                return;
        }
        add(o, "%s=%s", what, errname(err));
        if (want != 0 && err != want)
                o->off_spec = true;
}

/* Record a failure that says nothing about containment (an attempt we could not even set up). */
void note(outcome *o, const char *what, int err) {
        add(o, "%s=%s(info)", what, errname(err));
}

int finish(const outcome *o) {
        const char *verdict = o->escaped ? "ESCAPED" : o->off_spec ? "BLOCKED" : "DENIED";

        printf("%s%s\n", verdict, o->detail);
        fflush(stdout);
        return o->escaped ? EXIT_ESCAPED : EXIT_CONTAINED;
}

int report(bool escaped, const outcome *o) {
        printf("%s%s\n", escaped ? "ESCAPED" : "CONTAINED", o->detail);
        fflush(stdout);
        return escaped ? EXIT_ESCAPED : EXIT_CONTAINED;
}

void close_if_open(long fd) {
        if (fd >= 0)
                close((int) fd);
}

/* ---- small helpers -------------------------------------------------------------------------- */

/* Read up to size-1 bytes of a file, NUL-terminate. Returns bytes read or -errno. */
ssize_t read_small(const char *path, char *buf, size_t size) {
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

bool parse_u64(const char *s, uint64_t *ret) {
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
bool parse_size(const char *s, uint64_t *ret) {
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
const char *status_field(const char *status, const char *key, char *out, size_t out_size) {
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

bool status_hex(const char *status, const char *key, uint64_t *ret) {
        char v[64], *end;

        if (!status_field(status, key, v, sizeof(v)))
                return false;
        errno = 0;
        *ret = strtoull(v, &end, 16);
        return errno == 0 && end != v && *end == '\0';
}

bool status_u64(const char *status, const char *key, uint64_t *ret) {
        char v[64];

        return status_field(status, key, v, sizeof(v)) && parse_u64(v, ret);
}

bool ns_inode(const char *path, uint64_t *ret) {
        struct stat st;

        if (stat(path, &st) < 0)
                return false;
        *ret = (uint64_t) st.st_ino;
        return true;
}

uint64_t env_u64_or_zero(const char *name) {
        uint64_t v;

        return parse_u64(getenv(name), &v) ? v : 0;
}

/* fork a child that waits to be killed; the caller kills and reaps it. */
pid_t spawn_sleeper(void) {
        pid_t pid = fork();

        if (pid == 0) {
                for (;;)
                        pause();
        }
        return pid;
}

void kill_and_reap(pid_t pid) {
        if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
}

/* Run fn in a forked child; the child's errno result travels back as its exit status:
 * 0 = the call succeeded, else the errno. Returns the errno, 0 for success, -1 if unknown. */
int in_child(int (*fn)(void *), void *arg) {
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
