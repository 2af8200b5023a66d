/* sbx-net.c: a limited sandbox's proxy (see sbx-net.h) and the package registries of the host.
 *
 * One accepting thread per sandbox, one thread per connection (at most SBX_NET_CONNS_MAX; the
 * rest wait in the listen backlog). A connection's thread reads the request head (bounded in
 * bytes and time), decides, resolves, connects and relays both ways through two bounded
 * buffers until both sides are done, idle for SBX_NET_IDLE_MS, or the proxy stops. None of
 * them forks: the process that owns the sandbox may be single-threaded for its clones, and
 * these threads never clone. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"
#include "fs-util.h"
#include "macro.h"
#include "sbx-net.h"
#include "time-util.h"

const char *sbx_net_mode_to_string(sbx_net_mode m) {
        switch (m) {
        case SBX_NET_NONE:
                return "none";
        case SBX_NET_LIMITED:
                return "limited";
        case SBX_NET_UNRESTRICTED:
                return "unrestricted";
        case _SBX_NET_MODE_MAX:
                break;
        }
        return "unknown";
}

int sbx_net_mode_from_string(const char *s, sbx_net_mode *ret) {
        for (int m = 0; m < _SBX_NET_MODE_MAX; m++)
                if (strcmp(s, sbx_net_mode_to_string((sbx_net_mode) m)) == 0) {
                        *ret = (sbx_net_mode) m;
                        return 0;
                }
        return -EINVAL;
}

void sbx_net_hosts_free(char **hosts) {
        for (char **h = hosts; h && *h; h++)
                free(*h);
        free(hosts);
}

/* ---- the package registries ---- */

/* The contents of path (at most SBX_NET_SOURCES_MAX bytes, NUL-terminated), or NULL when it
 * cannot be read (a missing file is no registry). */
static char *read_small_file(const char *path, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return NULL;
        char *buf = malloc(SBX_NET_SOURCES_MAX + 1);
        if (!buf)
                return NULL;
        ssize_t n = loop_read(fd, buf, SBX_NET_SOURCES_MAX);
        if (n < 0) {
                free(buf);
                return NULL;
        }
        buf[n] = '\0';
        *ret_len = (size_t) n;
        return buf;
}

static int add_host(char **hosts, size_t *n, const char *host) {
        for (size_t i = 0; i < *n; i++)
                if (strcmp(hosts[i], host) == 0)
                        return 0;
        if (*n >= SBX_NET_ALLOW_MAX)
                return -E2BIG;
        if (!(hosts[*n] = strdup(host)))
                return -ENOMEM;
        hosts[++*n] = NULL;
        return 0;
}

/* The hosts of "KEY = URL" lines of an ini-like file (npmrc) whose key is one of keys
 * (or ends in ":registry" for npm's scoped registries). Returns how many were added, or a
 * negative errno. */
static int add_config_hosts(const char *path, const char *const *keys, size_t n_keys, char **hosts, size_t *n) {
        size_t len = 0;
        _cleanup_free_ char *text = read_small_file(path, &len);
        int added = 0;
        if (!text)
                return 0;
        for (char *line = text; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                char *eq = strchr(line, '=');
                if (eq) {
                        char *k = line, *ke = eq;
                        while (*k == ' ' || *k == '\t')
                                k++;
                        while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
                                ke--;
                        char *v = eq + 1;
                        while (*v == ' ' || *v == '\t' || *v == '"')
                                v++;
                        size_t vl = strcspn(v, " \t\r\"");
                        size_t kl = (size_t) (ke - k);
                        bool match = kl >= 9 && strncmp(ke - 9, ":registry", 9) == 0;
                        for (size_t i = 0; i < n_keys && !match; i++)
                                match = strlen(keys[i]) == kl && strncmp(keys[i], k, kl) == 0;
                        char host[EGRESS_HOST_MAX + 1];
                        if (match && sbx_net_uri_host(v, vl, host)) {
                                int r = add_host(hosts, n, host);
                                if (r < 0)
                                        return r;
                                added++;
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        return added;
}

int sbx_net_pip_setting(const char *key, char *out, size_t size) {
        static const char *const sections[] = {"install", "global"};
        char var[64] = "PIP_", path[SBX_PATH_MAX];
        size_t vl = 4;
        for (const char *k = key; *k && vl + 1 < sizeof(var); k++)
                var[vl++] = *k == '-' ? '_' : (char) (*k >= 'a' && *k <= 'z' ? *k - 'a' + 'A' : *k);
        var[vl] = '\0';
        const char *v = getenv(var);
        if (v && *v) {
                if (strlen(v) >= size)
                        return -E2BIG;
                memcpy(out, v, strlen(v) + 1);
                return 1;
        }
        const char *home = getenv("HOME");
        size_t hl = 0, el = 0;
        _cleanup_free_ char *htext = home && path_join(path, sizeof(path), home, ".config/pip/pip.conf") >= 0
                                             ? read_small_file(path, &hl)
                                             : NULL;
        _cleanup_free_ char *etext = read_small_file("/etc/pip.conf", &el);
        for (size_t i = 0; i < ELEMENTSOF(sections); i++) {
                int r = htext ? sbx_net_pip_conf_value(htext, hl, sections[i], key, out, size) : 0;
                if (r == 0 && etext)
                        r = sbx_net_pip_conf_value(etext, el, sections[i], key, out, size);
                if (r != 0)
                        return r;
        }
        return 0;
}

/* Add the host of each whitespace-separated http(s) URI of value. Returns how many. */
static int add_value_hosts(const char *value, char **hosts, size_t *n) {
        int added = 0;
        for (const char *p = value; *p;) {
                p += strspn(p, " \t");
                size_t l = strcspn(p, " \t");
                char host[EGRESS_HOST_MAX + 1];
                if (l > 0 && sbx_net_uri_host(p, l, host)) {
                        int r = add_host(hosts, n, host);
                        if (r < 0)
                                return r;
                        added++;
                }
                p += l;
        }
        return added;
}

static int add_apt_file(const char *path, char **hosts, size_t *n) {
        size_t len = 0;
        _cleanup_free_ char *text = read_small_file(path, &len);
        if (!text)
                return 0;
        return sbx_net_apt_hosts(text, len, hosts, n, SBX_NET_ALLOW_MAX);
}

int sbx_net_package_hosts(char ***ret, hull_error *e) {
        static const char *const npm_keys[] = {"registry"};
        char **hosts = calloc(SBX_NET_ALLOW_MAX + 1, sizeof(char *));
        char path[SBX_PATH_MAX];
        size_t n = 0;
        bool pip_long = false;
        _cleanup_free_ char *pv = NULL;
        int r;
        if (!hosts)
                return hull_err(e, -ENOMEM, "net: out of memory");
        if ((r = add_apt_file("/etc/apt/sources.list", hosts, &n)) < 0)
                goto fail;
        DIR *d = opendir("/etc/apt/sources.list.d");
        if (d) {
                unsigned files = 0;
                for (struct dirent *de; (de = readdir(d)) && files < SBX_NET_SOURCE_FILES_MAX;) {
                        size_t l = strlen(de->d_name);
                        bool list = l > 5 && strcmp(de->d_name + l - 5, ".list") == 0;
                        bool sources = l > 8 && strcmp(de->d_name + l - 8, ".sources") == 0;
                        if (!list && !sources)
                                continue;
                        files++;
                        if (path_join(path, sizeof(path), "/etc/apt/sources.list.d", de->d_name) < 0)
                                continue;
                        if ((r = add_apt_file(path, hosts, &n)) < 0)
                                break;
                }
                closedir(d);
                if (r < 0)
                        goto fail;
        }
        const char *home = getenv("HOME");
        int npm = add_config_hosts("/etc/npmrc", npm_keys, 1, hosts, &n);
        int npm_home = 0;
        if (home && path_join(path, sizeof(path), home, ".npmrc") >= 0)
                npm_home = add_config_hosts(path, npm_keys, 1, hosts, &n);
        if (npm < 0 || npm_home < 0) {
                r = npm < 0 ? npm : npm_home;
                goto fail;
        }
        if (npm + npm_home == 0 && (r = add_host(hosts, &n, "registry.npmjs.org")) < 0)
                goto fail;
        /* pip's index (else PyPI's two hosts) and extra indexes, as pip on this host would use them. */
        if (!(pv = malloc(SBX_NET_PIP_SETTING_MAX))) {
                r = -ENOMEM;
                goto fail;
        }
        int pip = sbx_net_pip_setting("index-url", pv, SBX_NET_PIP_SETTING_MAX);
        pip_long = pip == -E2BIG;
        if (pip > 0)
                pip = add_value_hosts(pv, hosts, &n);
        if (pip < 0) {
                r = pip;
                goto fail;
        }
        if (pip <= 0 &&
            ((r = add_host(hosts, &n, "pypi.org")) < 0 || (r = add_host(hosts, &n, "files.pythonhosted.org")) < 0))
                goto fail;
        pip_long = (r = sbx_net_pip_setting("extra-index-url", pv, SBX_NET_PIP_SETTING_MAX)) == -E2BIG;
        if (r > 0)
                r = add_value_hosts(pv, hosts, &n);
        if (r < 0)
                goto fail;
        *ret = hosts;
        return 0;
fail:
        sbx_net_hosts_free(hosts);
        if (r == -E2BIG && pip_long)
                return hull_err_hint(e, r, "shorten it in pip.conf or $PIP_INDEX_URL / $PIP_EXTRA_INDEX_URL",
                                     "net: pip's index-url or extra-index-url is longer than %u bytes",
                                     SBX_NET_PIP_SETTING_MAX - 1);
        return hull_err(e, r, r == -E2BIG ? "net: more than %u package registries" : "net: out of memory",
                        SBX_NET_ALLOW_MAX);
}

/* ---- the proxy ---- */

typedef struct host_entry {
        char name[EGRESS_HOST_MAX + 1];
        egress_addr addr;
} host_entry;

struct sbx_net_proxy {
        int listen_fd;
        int stop_fd; /* an eventfd, readable once the proxy stops */
        pthread_t acceptor;
        bool have_acceptor;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned active; /* connection threads alive */
        bool stopping;
        char **allow; /* patterns, NULL-terminated */
        egress_policy *egress;
        host_entry *hosts; /* the testing hosts file */
        size_t n_hosts;
        host_entry *pins; /* the package registries, resolved when the proxy started */
        size_t n_pins;
        egress_policy *egress_pinned; /* the guard for a pinned name: also its addresses */
        int log_fd;
        bool log_full; /* the log reached SBX_NET_LOG_MAX and said so */
        sbx_net_proxy_stats stats;
};

typedef struct conn {
        sbx_net_proxy *p;
        int fd;     /* the sandbox's side */
        int up;     /* the destination's */
        char *head; /* SBX_NET_HEAD_MAX bytes, then the rest of the head's read */
        size_t got; /* bytes in head */
        sbx_net_req req;
        char addr[EGRESS_ADDR_STR_MAX];
        uint64_t bytes_up, bytes_down;
        uint64_t polls, splices; /* the relay's own cost, summed into the stats */
} conn;

static void proxy_log(sbx_net_proxy *p, const conn *c, bool allowed, const char *why) {
        char line[SBX_NET_LOG_LINE_MAX], ts[32];
        struct timespec now;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
        const char *kind = c->req.host[0] ? (c->req.kind == SBX_NET_REQ_CONNECT ? "CONNECT" : "HTTP") : "-";
        bool v6 = strchr(c->req.host, ':') != NULL;
        int n = snprintf(line, sizeof(line), "%s net %s %s %s%s%s:%u addr=%s up=%" PRIu64 " down=%" PRIu64 "%s%s\n", ts,
                         allowed ? "allowed" : "refused", kind, v6 ? "[" : "", c->req.host[0] ? c->req.host : "-",
                         v6 ? "]" : "", c->req.port, c->addr[0] ? c->addr : "-", c->bytes_up, c->bytes_down,
                         why ? " reason=" : "", why ? why : "");
        if (n >= (int) sizeof(line)) {
                n = (int) sizeof(line) - 1;
                line[n - 1] = '\n';
        }
        pthread_mutex_lock(&p->lock);
        if (allowed)
                p->stats.allowed++;
        else
                p->stats.refused++;
        p->stats.bytes_up += c->bytes_up;
        p->stats.bytes_down += c->bytes_down;
        p->stats.polls += c->polls;
        p->stats.splices += c->splices;
        /* A log that is a file (or memfd) stops at SBX_NET_LOG_MAX bytes with one line saying so;
         * later connections are still counted in the stats. Written under the lock so lines
         * never interleave. */
        struct stat st;
        bool write_it = p->log_fd >= 0 && n > 0 && !p->log_full;
        if (write_it && fstat(p->log_fd, &st) == 0 && S_ISREG(st.st_mode) &&
            (uint64_t) st.st_size + (uint64_t) n > SBX_NET_LOG_MAX) {
                p->log_full = true;
                n = snprintf(line, sizeof(line),
                             "%s net log-full: this log reached %u bytes; later connections are not logged\n", ts,
                             SBX_NET_LOG_MAX);
        }
        if (write_it)
                (void) loop_write(p->log_fd, line, (size_t) n);
        pthread_mutex_unlock(&p->lock);
}

int sbx_net_log_read(int fd, uint64_t *offset, size_t max, char **ret, size_t *ret_len, bool *ret_more) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        uint64_t end = st.st_size > 0 ? (uint64_t) st.st_size : 0;
        size_t want = end > *offset ? (size_t) MIN(end - *offset, (uint64_t) max) : 0;
        _cleanup_free_ char *buf = malloc(want + 1);
        if (!buf)
                return -ENOMEM;
        ssize_t got = loop_pread(fd, buf, want, *offset);
        if (got < 0)
                return (int) got;
        size_t len = (size_t) got;
        while (len > 0 && buf[len - 1] != '\n')
                len--;
        for (size_t i = 0; i < len; i++) /* only the proxy writes it; still, never a NUL out */
                if (buf[i] == '\0')
                        buf[i] = '?';
        buf[len] = '\0';
        *ret_more = end > *offset && end - *offset > want; /* max cut it short */
        *offset += len;
        *ret_len = len;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* Wait for events on fd (or the stop) until deadline_ms (monotonic). 1 ready, 0 timeout,
 * -ECANCELED stopped, or a negative errno. */
static int wait_fd(sbx_net_proxy *p, int fd, short events, uint64_t deadline_ms) {
        for (;;) {
                uint64_t now = now_mono_ms();
                if (now >= deadline_ms)
                        return 0;
                struct pollfd pfd[2] = {{.fd = fd, .events = events}, {.fd = p->stop_fd, .events = POLLIN}};
                int n = poll(pfd, 2, (int) (deadline_ms - now));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (pfd[1].revents)
                        return -ECANCELED;
                if (n > 0)
                        return 1;
        }
}

/* Send a short answer to the sandbox's client and log the refusal. */
static void refuse(conn *c, int status, const char *why) {
        char buf[SBX_NET_LOG_LINE_MAX + 256];
        const char *text = status == 403   ? "Forbidden"
                           : status == 400 ? "Bad Request"
                           : status == 431 ? "Request Header Fields Too Large"
                           : status == 504 ? "Gateway Timeout"
                                           : "Bad Gateway";
        int n = snprintf(
                buf, sizeof(buf),
                "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n"
                "hull: %s\n",
                status, text, strlen("hull: \n") + strlen(why), why);
        /* Logged before the client hears it: a program that exits on the refusal, and the call
         * that answers after it, find the line already there. */
        proxy_log(c->p, c, false, why);
        if (n > 0 && n < (int) sizeof(buf))
                (void) send(c->fd, buf, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static int read_head(conn *c) {
        uint64_t deadline = now_mono_ms() + SBX_NET_HEAD_MS;
        for (;;) {
                int r = sbx_net_req_parse(c->head, c->got, &c->req);
                if (r != -EAGAIN)
                        return r;
                r = wait_fd(c->p, c->fd, POLLIN, deadline);
                if (r <= 0)
                        return r == 0 ? -ETIMEDOUT : r;
                ssize_t k = recv(c->fd, c->head + c->got, SBX_NET_HEAD_MAX - c->got, MSG_DONTWAIT);
                if (k < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (k <= 0)
                        return -ECONNRESET;
                c->got += (size_t) k;
        }
}

static bool host_allowed(const sbx_net_proxy *p, const char *host) {
        for (char **a = p->allow; a && *a; a++)
                if (sbx_net_host_matches(*a, host))
                        return true;
        return false;
}

/* The destination's addresses: the literal (*ret_pinned when a registry is configured as that
 * very address, e.g. index-url = http://10.1.2.3/simple), the testing hosts file, the pinned
 * registries (*ret_pinned), or DNS. */
static int resolve(conn *c, egress_addr *addrs, size_t *n, bool *ret_pinned, hull_error *e) {
        sbx_net_proxy *p = c->p;
        *n = 0;
        *ret_pinned = false;
        if (egress_addr_parse(c->req.host, &addrs[0]) == 0) {
                *n = 1;
                for (size_t i = 0; i < p->n_pins && !*ret_pinned; i++) {
                        egress_addr named;
                        *ret_pinned = egress_addr_parse(p->pins[i].name, &named) == 0 &&
                                      named.family == addrs[0].family &&
                                      memcmp(named.bytes, addrs[0].bytes, sizeof(named.bytes)) == 0;
                }
                return 0;
        }
        for (size_t i = 0; i < p->n_hosts && *n < EGRESS_ADDRS_MAX; i++)
                if (strcmp(p->hosts[i].name, c->req.host) == 0)
                        addrs[(*n)++] = p->hosts[i].addr;
        if (*n > 0)
                return 0;
        for (size_t i = 0; i < p->n_pins && *n < EGRESS_ADDRS_MAX; i++)
                if (strcmp(p->pins[i].name, c->req.host) == 0)
                        addrs[(*n)++] = p->pins[i].addr;
        if (*n > 0) {
                *ret_pinned = true;
                return 0;
        }
        return egress_resolve_default(NULL, c->req.host, now_mono_ms() + SBX_NET_CONNECT_MS, addrs, EGRESS_ADDRS_MAX, n,
                                      e);
}

static int connect_one(conn *c, const egress_addr *a, uint64_t deadline) {
        struct sockaddr_storage ss = {0};
        socklen_t sl;
        if (a->family == AF_INET) {
                struct sockaddr_in *in = (struct sockaddr_in *) &ss;
                in->sin_family = AF_INET;
                in->sin_port = htons((uint16_t) c->req.port);
                memcpy(&in->sin_addr, a->bytes, 4);
                sl = sizeof(*in);
        } else {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t) c->req.port);
                memcpy(&in6->sin6_addr, a->bytes, 16);
                sl = sizeof(*in6);
        }
        _cleanup_close_ int fd = socket(a->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &ss, sl) < 0) {
                if (errno != EINPROGRESS)
                        return -errno;
                int r = wait_fd(c->p, fd, POLLOUT, deadline);
                if (r <= 0)
                        return r == 0 ? -ETIMEDOUT : r;
                int err = 0;
                socklen_t el = sizeof(err);
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                        return -errno;
                if (err)
                        return -err;
        }
        return TAKE_FD(fd);
}

/* One direction of a relay: the bytes in flight sit in a pipe (splice(2): socket to pipe to
 * socket, no copy through this process), at most cap of them. */
typedef struct pipe_buf {
        int r, w;
        size_t len, cap;
        bool eof;  /* the reading side ended */
        bool shut; /* and the writing side was told (shutdown SHUT_WR) */
        bool full; /* the pipe took no more although len < cap: its slots hold socket fragments,
                    * not whole pages; reading waits until some bytes went out */
        uint64_t *count;
        uint64_t *calls; /* splice(2) calls, the connection's */
} pipe_buf;

static int pipe_buf_open(pipe_buf *b, uint64_t *count, uint64_t *calls) {
        int fds[2];
        *b = (pipe_buf){.r = -1, .w = -1, .count = count, .calls = calls};
        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        b->r = fds[0];
        b->w = fds[1];
        int cap = fcntl(b->w, F_SETPIPE_SZ, (int) SBX_NET_BUF_BYTES);
        if (cap < 0)
                cap = fcntl(b->w, F_GETPIPE_SZ);
        if (cap <= 0)
                return -errno;
        b->cap = (size_t) cap;
        return 0;
}

static void pipe_buf_close(pipe_buf *b) {
        b->r = safe_close(b->r);
        b->w = safe_close(b->w);
}

/* Bytes the proxy itself puts in flight (a rewritten head, what followed the head); they fit:
 * the pipe is empty and holds at least a page more than a head. */
static int pipe_buf_put(pipe_buf *b, const char *data, size_t len) {
        while (len > 0) {
                ssize_t k = write(b->w, data, len);
                if (k <= 0)
                        return k < 0 ? -errno : -EIO;
                b->len += (size_t) k;
                data += k;
                len -= (size_t) k;
        }
        return 0;
}

/* Read from `from` into the pipe; 0, or -1 when the connection is over. */
static int pump_in(int from, pipe_buf *b) {
        (*b->calls)++;
        ssize_t k = splice(from, NULL, b->w, NULL, b->cap - b->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (k > 0) {
                b->len += (size_t) k;
                return 0;
        }
        if (k == 0) {
                b->eof = true;
                return 0;
        }
        if (errno == EAGAIN && b->len > 0)
                b->full = true; /* else polling the readable socket again would return at once */
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
}

static bool pipe_buf_room(const pipe_buf *b) {
        return !b->eof && !b->full && b->len < b->cap;
}

static int pump_out(int to, pipe_buf *b) {
        (*b->calls)++;
        ssize_t k = splice(b->r, NULL, to, NULL, b->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -1;
        b->len -= (size_t) k;
        *b->count += (uint64_t) k;
        if (k > 0)
                b->full = false;
        return 0;
}

/* Relay until both directions are done, an error, the idle timeout or the stop. */
static void relay(conn *c, pipe_buf *up, pipe_buf *down) {
        for (;;) {
                if (up->eof && up->len == 0 && !up->shut) {
                        (void) shutdown(c->up, SHUT_WR);
                        up->shut = true;
                }
                if (down->eof && down->len == 0 && !down->shut) {
                        (void) shutdown(c->fd, SHUT_WR);
                        down->shut = true;
                }
                if (up->shut && down->shut)
                        return;
                struct pollfd pfd[3] = {
                        {.fd = c->fd, .events = (short) ((pipe_buf_room(up) ? POLLIN : 0) | (down->len ? POLLOUT : 0))},
                        {.fd = c->up, .events = (short) ((pipe_buf_room(down) ? POLLIN : 0) | (up->len ? POLLOUT : 0))},
                        {.fd = c->p->stop_fd, .events = POLLIN},
                };
                int n = poll(pfd, 3, SBX_NET_IDLE_MS);
                c->polls++;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0 || pfd[2].revents)
                        return;
                if ((pfd[0].revents & (POLLERR | POLLNVAL)) || (pfd[1].revents & (POLLERR | POLLNVAL)))
                        return;
                if ((pfd[0].revents & (POLLIN | POLLHUP)) && pipe_buf_room(up) && pump_in(c->fd, up) < 0)
                        return;
                if ((pfd[1].revents & (POLLIN | POLLHUP)) && pipe_buf_room(down) && pump_in(c->up, down) < 0)
                        return;
                if (up->len && pump_out(c->up, up) < 0)
                        return;
                if (down->len && pump_out(c->fd, down) < 0)
                        return;
        }
}

static void serve(conn *c) {
        sbx_net_proxy *p = c->p;
        hull_error e = {0};
        egress_addr addrs[EGRESS_ADDRS_MAX];
        size_t n = 0;
        bool pinned = false;
        int r = read_head(c);
        if (r == -ECANCELED || r == -ECONNRESET)
                return;
        if (r == -ETIMEDOUT) {
                refuse(c, 400, "the request head did not arrive in time");
                return;
        }
        if (r == -E2BIG) {
                refuse(c, 431, "the request head is too large");
                return;
        }
        if (r < 0) {
                c->req.host[0] = '\0';
                refuse(c, 400, "not a CONNECT or an absolute http:// request");
                return;
        }
        if (!host_allowed(p, c->req.host)) {
                egress_addr lit;
                refuse(c, 403,
                       egress_addr_parse(c->req.host, &lit) == 0 ? "an address, not on the allowed hosts"
                                                                 : "not on the allowed hosts");
                return;
        }
        r = resolve(c, addrs, &n, &pinned, &e);
        if (r < 0) {
                refuse(c, 502, e.msg[0] ? e.msg : "could not resolve");
                return;
        }
        r = egress_check_addrs(pinned ? p->egress_pinned : p->egress, c->req.host, addrs, n, &e);
        if (r < 0) {
                refuse(c, 403, e.msg);
                return;
        }
        uint64_t deadline = now_mono_ms() + SBX_NET_CONNECT_MS;
        int last = -EHOSTUNREACH;
        for (size_t i = 0; i < n && c->up < 0; i++) {
                r = connect_one(c, &addrs[i], deadline);
                if (r >= 0) {
                        c->up = r;
                        egress_addr_to_string(&addrs[i], c->addr);
                } else
                        last = r;
                if (r == -ECANCELED)
                        return;
        }
        if (c->up < 0) {
                char why[128];
                snprintf(why, sizeof(why), "could not connect: %s", strerror(-last));
                refuse(c, last == -ETIMEDOUT ? 504 : 502, why);
                return;
        }
        int one = 1;
        (void) setsockopt(c->up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        pipe_buf up, down;
        if (pipe_buf_open(&up, &c->bytes_up, &c->splices) < 0 ||
            pipe_buf_open(&down, &c->bytes_down, &c->splices) < 0) {
                pipe_buf_close(&up);
                refuse(c, 502, "cannot make the relay's pipes");
                return;
        }
        size_t rest = c->got - c->req.head_len;
        if (c->req.kind == SBX_NET_REQ_CONNECT) {
                static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
                /* a fresh socket's send buffer takes it whole */
                if (send(c->fd, ok, sizeof(ok) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t) sizeof(ok) - 1)
                        goto out;
        } else {
                /* The rewritten head goes first. */
                char out[SBX_NET_HEAD_MAX + 64];
                int k = sbx_net_req_rewrite(c->head, &c->req, out, sizeof(out));
                if (k < 0) {
                        refuse(c, 431, "the request head is too large");
                        goto out;
                }
                if (pipe_buf_put(&up, out, (size_t) k) < 0) {
                        refuse(c, 502, "cannot forward the request");
                        goto out;
                }
        }
        /* Then whatever the client sent after its head. */
        if (rest > 0 && pipe_buf_put(&up, c->head + c->req.head_len, rest) < 0) {
                refuse(c, 502, "cannot forward the request");
                goto out;
        }
        relay(c, &up, &down);
        proxy_log(p, c, true, NULL);
out:
        pipe_buf_close(&up);
        pipe_buf_close(&down);
}

static void *conn_main(void *arg) {
        conn *c = arg;
        sbx_net_proxy *p = c->p;
        c->head = malloc(SBX_NET_HEAD_MAX);
        if (c->head)
                serve(c);
        safe_close(c->fd);
        safe_close(c->up);
        free(c->head);
        free(c);
        pthread_mutex_lock(&p->lock);
        p->active--;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

static void *accept_main(void *arg) {
        sbx_net_proxy *p = arg;
        for (;;) {
                pthread_mutex_lock(&p->lock);
                while (p->active >= SBX_NET_CONNS_MAX && !p->stopping)
                        pthread_cond_wait(&p->cond, &p->lock);
                bool stop = p->stopping;
                pthread_mutex_unlock(&p->lock);
                if (stop)
                        return NULL;
                struct pollfd pfd[2] = {{.fd = p->listen_fd, .events = POLLIN}, {.fd = p->stop_fd, .events = POLLIN}};
                if (poll(pfd, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return NULL;
                }
                if (pfd[1].revents)
                        return NULL;
                int fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0)
                        continue;
                conn *c = calloc(1, sizeof(conn));
                if (!c) {
                        safe_close(fd);
                        continue;
                }
                *c = (conn){.p = p, .fd = fd, .up = -1};
                pthread_attr_t attr;
                pthread_t t;
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                pthread_attr_setstacksize(&attr, 256U << 10);
                pthread_mutex_lock(&p->lock);
                p->active++;
                pthread_mutex_unlock(&p->lock);
                if (pthread_create(&t, &attr, conn_main, c) != 0) {
                        pthread_mutex_lock(&p->lock);
                        p->active--;
                        pthread_mutex_unlock(&p->lock);
                        refuse(c, 502, "cannot start a connection thread");
                        safe_close(c->fd);
                        free(c);
                }
                pthread_attr_destroy(&attr);
        }
}

/* The testing hosts file: "ADDRESS NAME..." lines, '#' comments. */
static int load_hosts(sbx_net_proxy *p, const char *path, hull_error *e) {
        size_t len = 0;
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return hull_err(e, -errno, "net: cannot open the hosts file %s", path);
        text = malloc(SBX_NET_HOSTS_FILE_MAX + 1);
        if (!text)
                return hull_err(e, -ENOMEM, "net: out of memory");
        ssize_t k = loop_read(fd, text, SBX_NET_HOSTS_FILE_MAX + 1);
        if (k < 0)
                return hull_err(e, (int) k, "net: cannot read the hosts file %s", path);
        if ((size_t) k > SBX_NET_HOSTS_FILE_MAX)
                return hull_err(e, -E2BIG, "net: the hosts file %s is larger than %u bytes", path,
                                SBX_NET_HOSTS_FILE_MAX);
        len = (size_t) k;
        text[len] = '\0';
        p->hosts = calloc(SBX_NET_ALLOW_MAX, sizeof(host_entry));
        if (!p->hosts)
                return hull_err(e, -ENOMEM, "net: out of memory");
        unsigned lineno = 0;
        for (char *line = text; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                lineno++;
                char *hash = strchr(line, '#');
                if (hash)
                        *hash = '\0';
                char *save = NULL, *tok = strtok_r(line, " \t\r", &save);
                egress_addr a;
                if (tok && egress_addr_parse(tok, &a) < 0)
                        return hull_err(e, -EINVAL, "net: hosts file %s line %u: '%s' is not an address", path, lineno,
                                        tok);
                for (char *name = tok ? strtok_r(NULL, " \t\r", &save) : NULL; name;
                     name = strtok_r(NULL, " \t\r", &save)) {
                        if (p->n_hosts >= SBX_NET_ALLOW_MAX)
                                return hull_err(e, -E2BIG, "net: hosts file %s: more than %u names", path,
                                                SBX_NET_ALLOW_MAX);
                        size_t nl2 = strlen(name);
                        if (nl2 > EGRESS_HOST_MAX || !sbx_net_pattern_valid(name) || name[0] == '*')
                                return hull_err(e, -EINVAL, "net: hosts file %s line %u: bad name '%s'", path, lineno,
                                                name);
                        host_entry *h = &p->hosts[p->n_hosts++];
                        for (size_t i = 0; i <= nl2; i++)
                                h->name[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char) (name[i] - 'A' + 'a') : name[i];
                        h->addr = a;
                }
                line = nl ? nl + 1 : NULL;
        }
        return 0;
}

/* Whether a registry's address may be pinned: what the operator's configuration may legitimately
 * point at (public, private, CGNAT, reserved), never what no registry is (loopback, link-local,
 * metadata, unspecified, broadcast, multicast). */
static bool pinnable(const egress_addr *a) {
        egress_addr v4;
        egress_class c = egress_addr_classify(egress_addr_embedded(a, &v4) != EGRESS_EMBED_NONE ? &v4 : a);
        return c == EGRESS_PUBLIC || c == EGRESS_PRIVATE || c == EGRESS_CGNAT || c == EGRESS_RESERVED;
}

/* Resolve each registry name now and keep its pinnable addresses; a name that does not resolve
 * is not pinned (a connection to it resolves then, under the plain guard). *guard gets the
 * pinned addresses as text (n_guard entries already there, at most max). */
static int pin_hosts(sbx_net_proxy *p, char **names, char (*text)[EGRESS_ADDR_STR_MAX], const char **guard,
                     size_t *n_guard, size_t max, hull_error *e) {
        p->pins = calloc(SBX_NET_PINS_MAX, sizeof(host_entry));
        if (!p->pins)
                return hull_err(e, -ENOMEM, "net: out of memory");
        for (char **h = names; h && *h; h++) {
                egress_addr addrs[EGRESS_ADDRS_MAX];
                size_t n = 0;
                hull_error ignored = {0};
                if (strlen(*h) > EGRESS_HOST_MAX || egress_resolve_default(NULL, *h, now_mono_ms() + SBX_NET_CONNECT_MS,
                                                                           addrs, EGRESS_ADDRS_MAX, &n, &ignored) < 0)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        if (!pinnable(&addrs[i]))
                                continue;
                        if (p->n_pins >= SBX_NET_PINS_MAX || *n_guard >= max)
                                return hull_fail(e, -E2BIG, "net: the package registries have more than %u addresses",
                                                 SBX_NET_PINS_MAX);
                        host_entry *pe = &p->pins[p->n_pins];
                        snprintf(pe->name, sizeof(pe->name), "%s", *h);
                        pe->addr = addrs[i];
                        egress_addr_to_string(&addrs[i], text[p->n_pins]);
                        guard[(*n_guard)++] = text[p->n_pins];
                        p->n_pins++;
                }
        }
        return 0;
}

static void proxy_free(sbx_net_proxy *p) {
        safe_close(p->listen_fd);
        safe_close(p->stop_fd);
        safe_close(p->log_fd);
        sbx_net_hosts_free(p->allow);
        if (p->egress)
                egress_policy_free(p->egress);
        if (p->egress_pinned)
                egress_policy_free(p->egress_pinned);
        free(p->hosts);
        free(p->pins);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        free(p);
}

int sbx_net_proxy_start(int listen_fd, const sbx_net_policy *policy, sbx_net_proxy **ret, hull_error *e) {
        _cleanup_close_ int lfd = listen_fd;
        _cleanup_(sbx_net_hosts_freep) char **pkg = NULL;
        sbx_net_proxy *p = calloc(1, sizeof(*p));
        size_t n = 0;
        int r;
        if (!p)
                return hull_err(e, -ENOMEM, "net: out of memory");
        p->listen_fd = p->stop_fd = p->log_fd = -1;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->allow = calloc(SBX_NET_ALLOW_MAX + 1, sizeof(char *));
        if (!p->allow) {
                r = hull_err(e, -ENOMEM, "net: out of memory");
                goto fail;
        }
        for (char *const *a = policy->allowed_hosts; a && *a; a++) {
                if (!sbx_net_pattern_valid(*a)) {
                        r = hull_err_hint(e, -EINVAL, "give a name, *.suffix or an address",
                                          "net: '%s' is not a host pattern", *a);
                        goto fail;
                }
                if ((r = add_host(p->allow, &n, *a)) < 0) {
                        r = hull_err(e, r, "net: more than %u allowed hosts", SBX_NET_ALLOW_MAX);
                        goto fail;
                }
        }
        if (policy->allow_package_managers) {
                if ((r = sbx_net_package_hosts(&pkg, e)) < 0)
                        goto fail;
                for (char **h = pkg; *h && r >= 0; h++)
                        r = add_host(p->allow, &n, *h);
                if (r < 0) {
                        r = hull_err(e, r, "net: more than %u allowed hosts", SBX_NET_ALLOW_MAX);
                        goto fail;
                }
        }
        /* The egress guard's allowlist: loopback for tests, the operator's CIDRs. */
        const char *guard[SBX_NET_ALLOW_MAX];
        size_t n_guard = 0;
        if (policy->allow_loopback) {
                guard[n_guard++] = "127.0.0.0/8";
                guard[n_guard++] = "::1";
        }
        for (char *const *a = policy->allow_cidrs; a && *a; a++) {
                egress_cidr cidr;
                if (egress_cidr_parse(*a, &cidr) < 0) {
                        r = hull_err_hint(e, -EINVAL, "give an address or a CIDR such as 10.8.0.0/16",
                                          "net: '%s' is not an address or a CIDR", *a);
                        goto fail;
                }
                if (n_guard >= ELEMENTSOF(guard)) {
                        r = hull_err(e, -E2BIG, "net: more than %u allowed CIDRs", SBX_NET_ALLOW_MAX - 2);
                        goto fail;
                }
                guard[n_guard++] = *a;
        }
        r = egress_policy_new(guard, n_guard, NULL, NULL, &p->egress, e);
        if (r < 0)
                goto fail;
        if (policy->allow_package_managers && policy->pin_package_hosts) {
                /* The plain guard's list, then the pinned addresses. */
                _cleanup_free_ const char **pguard = calloc(n_guard + SBX_NET_PINS_MAX, sizeof(char *));
                _cleanup_free_ char(*text)[EGRESS_ADDR_STR_MAX] = calloc(SBX_NET_PINS_MAX, EGRESS_ADDR_STR_MAX);
                size_t n_pguard = n_guard;
                if (!pguard || !text) {
                        r = hull_err(e, -ENOMEM, "net: out of memory");
                        goto fail;
                }
                memcpy(pguard, guard, n_guard * sizeof(char *));
                if ((r = pin_hosts(p, pkg, text, pguard, &n_pguard, n_guard + SBX_NET_PINS_MAX, e)) < 0 ||
                    (r = egress_policy_new(pguard, n_pguard, NULL, NULL, &p->egress_pinned, e)) < 0)
                        goto fail;
        }
        if (policy->hosts_file && (r = load_hosts(p, policy->hosts_file, e)) < 0)
                goto fail;
        if (policy->log_fd >= 0 && (p->log_fd = fcntl(policy->log_fd, F_DUPFD_CLOEXEC, 3)) < 0) {
                r = hull_err(e, -errno, "net: cannot keep the log's fd");
                goto fail;
        }
        p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->stop_fd < 0) {
                r = hull_err(e, -errno, "net: eventfd");
                goto fail;
        }
        p->listen_fd = TAKE_FD(lfd);
        if (fcntl(p->listen_fd, F_SETFL, O_NONBLOCK) < 0) {
                r = hull_err(e, -errno, "net: cannot set up the proxy's socket");
                goto fail;
        }
        r = -pthread_create(&p->acceptor, NULL, accept_main, p);
        if (r < 0) {
                r = hull_err(e, r, "net: cannot start the proxy's thread");
                goto fail;
        }
        p->have_acceptor = true;
        *ret = p;
        return 0;
fail:
        proxy_free(p);
        return r;
}

void sbx_net_proxy_stop(sbx_net_proxy *p, sbx_net_proxy_stats *ret) {
        if (!p)
                return;
        uint64_t one = 1;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        (void) write(p->stop_fd, &one, sizeof(one));
        if (p->have_acceptor)
                pthread_join(p->acceptor, NULL);
        pthread_mutex_lock(&p->lock);
        while (p->active > 0)
                pthread_cond_wait(&p->cond, &p->lock);
        sbx_net_proxy_stats st = p->stats;
        pthread_mutex_unlock(&p->lock);
        if (ret)
                *ret = st;
        proxy_free(p);
}
