/* egress.c: the egress guard (see egress.h): address classes, CIDRs, the allowlist, the
 * decision on a host's addresses (pure), the default resolver (getaddrinfo on a thread, with a
 * deadline) and the URL check over libcurl's URL API (loaded through src/shared/dlib-curl.h). */
#include "egress.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "dlib-curl.h"
#include "macro.h"
#include "parse-util.h"
#include "time-util.h"

#define BLOCKED "egress: blocked by egress policy: "

static const char *const class_names[_EGRESS_CLASS_MAX] = {
        [EGRESS_PUBLIC] = "public",           [EGRESS_METADATA] = "cloud metadata endpoint",
        [EGRESS_LOOPBACK] = "loopback",       [EGRESS_PRIVATE] = "private",
        [EGRESS_LINK_LOCAL] = "link-local",   [EGRESS_CGNAT] = "CGNAT",
        [EGRESS_UNSPECIFIED] = "unspecified", [EGRESS_BROADCAST] = "broadcast",
        [EGRESS_MULTICAST] = "multicast",     [EGRESS_RESERVED] = "reserved",
};

const char *egress_class_to_string(egress_class c) {
        return (unsigned) c < _EGRESS_CLASS_MAX ? class_names[c] : "unknown";
}

const char *egress_embed_to_string(egress_embed m) {
        switch (m) {
        case EGRESS_EMBED_MAPPED:
                return "IPv4-mapped";
        case EGRESS_EMBED_COMPATIBLE:
                return "IPv4-compatible";
        case EGRESS_EMBED_NAT64:
                return "NAT64";
        case EGRESS_EMBED_6TO4:
                return "6to4";
        case EGRESS_EMBED_NONE:
                break;
        }
        return "";
}

/* ---- addresses (pure) ---- */

int egress_addr_parse(const char *s, egress_addr *ret) {
        egress_addr a = {0};
        if (!s)
                return -EINVAL;
        if (inet_pton(AF_INET, s, a.bytes) == 1)
                a.family = AF_INET;
        else if (inet_pton(AF_INET6, s, a.bytes) == 1)
                a.family = AF_INET6;
        else
                return -EINVAL;
        *ret = a;
        return 0;
}

const char *egress_addr_to_string(const egress_addr *a, char buf[static EGRESS_ADDR_STR_MAX]) {
        if (!inet_ntop(a->family == AF_INET ? AF_INET : AF_INET6, a->bytes, buf, EGRESS_ADDR_STR_MAX))
                snprintf(buf, EGRESS_ADDR_STR_MAX, "(bad address)");
        return buf;
}

static bool all_zero(const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (p[i])
                        return false;
        return true;
}

static egress_addr v4_of(const uint8_t *p) {
        egress_addr v = {.family = AF_INET};
        memcpy(v.bytes, p, 4);
        return v;
}

egress_embed egress_addr_embedded(const egress_addr *a, egress_addr *ret_v4) {
        const uint8_t *b = a->bytes;
        if (a->family != AF_INET6)
                return EGRESS_EMBED_NONE;
        if (all_zero(b, 10) && b[10] == 0xff && b[11] == 0xff) {
                *ret_v4 = v4_of(b + 12);
                return EGRESS_EMBED_MAPPED;
        }
        if (all_zero(b, 12) && !all_zero(b + 12, 3)) { /* not :: nor ::1 (nor ::0.0.0.x: reserved below) */
                *ret_v4 = v4_of(b + 12);
                return EGRESS_EMBED_COMPATIBLE;
        }
        if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && all_zero(b + 4, 8)) {
                *ret_v4 = v4_of(b + 12);
                return EGRESS_EMBED_NAT64;
        }
        if (b[0] == 0x20 && b[1] == 0x02) {
                *ret_v4 = v4_of(b + 2);
                return EGRESS_EMBED_6TO4;
        }
        return EGRESS_EMBED_NONE;
}

/* Whether the first prefix bits of a and b (n bytes each) are equal. */
static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned prefix) {
        unsigned whole = prefix / 8, rest = prefix % 8;
        if (memcmp(a, b, whole) != 0)
                return false;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t) (0xff << (8 - rest));
        return (a[whole] & mask) == (b[whole] & mask);
}

typedef struct range {
        uint8_t net[16];
        unsigned prefix;
        egress_class class;
} range;

/* First match wins: the narrower ranges come before the ones that hold them. */
static const range v4_ranges[] = {
        {{0, 0, 0, 0}, 32, EGRESS_UNSPECIFIED},
        {{0, 0, 0, 0}, 8, EGRESS_RESERVED}, /* "this network" */
        {{10, 0, 0, 0}, 8, EGRESS_PRIVATE},
        {{100, 64, 0, 0}, 10, EGRESS_CGNAT}, /* shared address space (RFC 6598) */
        {{127, 0, 0, 0}, 8, EGRESS_LOOPBACK},
        {{169, 254, 0, 0}, 16, EGRESS_LINK_LOCAL},
        {{172, 16, 0, 0}, 12, EGRESS_PRIVATE},
        {{192, 0, 0, 0}, 24, EGRESS_RESERVED},   /* IETF protocol assignments */
        {{192, 0, 2, 0}, 24, EGRESS_RESERVED},   /* TEST-NET-1 (documentation) */
        {{192, 88, 99, 0}, 24, EGRESS_RESERVED}, /* 6to4 relay anycast (deprecated) */
        {{192, 168, 0, 0}, 16, EGRESS_PRIVATE},
        {{198, 18, 0, 0}, 15, EGRESS_RESERVED},   /* benchmarking */
        {{198, 51, 100, 0}, 24, EGRESS_RESERVED}, /* TEST-NET-2 */
        {{203, 0, 113, 0}, 24, EGRESS_RESERVED},  /* TEST-NET-3 */
        {{224, 0, 0, 0}, 4, EGRESS_MULTICAST},
        {{255, 255, 255, 255}, 32, EGRESS_BROADCAST},
        {{240, 0, 0, 0}, 4, EGRESS_RESERVED},
};

static const range v6_ranges[] = {
        {{0}, 128, EGRESS_UNSPECIFIED},
        {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, EGRESS_LOOPBACK},
        {{0}, 96, EGRESS_RESERVED},                                  /* ::0.0.0.x left by the embedding */
        {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, EGRESS_RESERVED}, /* local-use NAT64 */
        {{0x01, 0x00}, 64, EGRESS_RESERVED},                         /* discard-only */
        {{0x20, 0x01, 0x0d, 0xb8}, 32, EGRESS_RESERVED},             /* documentation */
        {{0x20, 0x01, 0x00, 0x00}, 23, EGRESS_RESERVED},             /* Teredo, benchmarking, ORCHID... */
        {{0x3f, 0xff}, 20, EGRESS_RESERVED},                         /* documentation (RFC 9637) */
        {{0xfc, 0x00}, 7, EGRESS_PRIVATE},                           /* unique local */
        {{0xfe, 0x80}, 10, EGRESS_LINK_LOCAL},
        {{0xfe, 0xc0}, 10, EGRESS_PRIVATE}, /* site-local (deprecated) */
        {{0xff, 0x00}, 8, EGRESS_MULTICAST},
};

/* The cloud metadata endpoints: instance credentials one request away. Denied before the
 * allowlist is looked at. */
static const uint8_t metadata_v4[][4] = {
        {169, 254, 169, 254}, /* AWS, GCP, Azure IMDS, OpenStack, DigitalOcean, Oracle... */
        {169, 254, 170, 2},   /* AWS ECS task credentials */
        {169, 254, 170, 23},  /* AWS EKS Pod Identity credentials */
        {168, 63, 129, 16},   /* Azure wireserver (a public address) */
        {100, 100, 100, 200}, /* Alibaba Cloud */
        {192, 0, 0, 192},     /* Oracle Cloud */
};
static const uint8_t metadata_v6[][16] = {
        {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}, /* fd00:ec2::254, AWS IMDS */
        {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x23}, /* fd00:ec2::23, EKS Pod Identity */
};

static egress_class classify_v4(const egress_addr *a) {
        for (size_t i = 0; i < ELEMENTSOF(metadata_v4); i++)
                if (memcmp(a->bytes, metadata_v4[i], 4) == 0)
                        return EGRESS_METADATA;
        for (size_t i = 0; i < ELEMENTSOF(v4_ranges); i++)
                if (prefix_equal(a->bytes, v4_ranges[i].net, v4_ranges[i].prefix))
                        return v4_ranges[i].class;
        return EGRESS_PUBLIC;
}

egress_class egress_addr_classify(const egress_addr *a) {
        egress_addr v4;
        if (a->family == AF_INET)
                return classify_v4(a);
        if (a->family != AF_INET6)
                return EGRESS_RESERVED;
        for (size_t i = 0; i < ELEMENTSOF(metadata_v6); i++)
                if (memcmp(a->bytes, metadata_v6[i], 16) == 0)
                        return EGRESS_METADATA;
        egress_embed m = egress_addr_embedded(a, &v4);
        if (m != EGRESS_EMBED_NONE) {
                egress_class c = classify_v4(&v4);
                if (c != EGRESS_PUBLIC)
                        return c;
                /* ::a.b.c.d is deprecated (RFC 4291) and routes nowhere useful */
                return m == EGRESS_EMBED_COMPATIBLE ? EGRESS_RESERVED : EGRESS_PUBLIC;
        }
        for (size_t i = 0; i < ELEMENTSOF(v6_ranges); i++)
                if (prefix_equal(a->bytes, v6_ranges[i].net, v6_ranges[i].prefix))
                        return v6_ranges[i].class;
        if ((a->bytes[0] & 0xe0) != 0x20) /* outside global unicast 2000::/3: not allocated */
                return EGRESS_RESERVED;
        return EGRESS_PUBLIC;
}

/* ---- CIDRs (pure) ---- */

int egress_cidr_parse(const char *s, egress_cidr *ret) {
        char addr[EGRESS_ADDR_STR_MAX];
        egress_cidr c = {0};
        const char *slash = s ? strchr(s, '/') : NULL;
        size_t n = slash ? (size_t) (slash - s) : (s ? strlen(s) : 0);
        if (!s || n == 0 || n >= sizeof(addr))
                return -EINVAL;
        memcpy(addr, s, n);
        addr[n] = '\0';
        if (egress_addr_parse(addr, &c.net) < 0)
                return -EINVAL;
        unsigned bits = c.net.family == AF_INET ? 32 : 128;
        c.prefix = bits;
        if (slash) {
                uint64_t v;
                /* digits only, no sign, no leading zero (parse_uint64 takes "016") */
                if ((slash[1] == '0' && slash[2] != '\0') || parse_uint64(slash + 1, 0, bits, &v) < 0)
                        return -EINVAL;
                c.prefix = (unsigned) v;
        }
        /* host bits below the prefix must be zero */
        for (unsigned i = c.prefix; i < bits; i++)
                if (c.net.bytes[i / 8] & (0x80 >> (i % 8)))
                        return -EINVAL;
        *ret = c;
        return 0;
}

/* a as family f when it can be: IPv4 <-> IPv4-mapped IPv6. */
static bool as_family(const egress_addr *a, int f, egress_addr *ret) {
        egress_addr v4;
        if (a->family == f) {
                *ret = *a;
                return true;
        }
        if (f == AF_INET && egress_addr_embedded(a, &v4) == EGRESS_EMBED_MAPPED) {
                *ret = v4;
                return true;
        }
        if (f == AF_INET6 && a->family == AF_INET) {
                *ret = (egress_addr){.family = AF_INET6};
                ret->bytes[10] = ret->bytes[11] = 0xff;
                memcpy(ret->bytes + 12, a->bytes, 4);
                return true;
        }
        return false;
}

bool egress_cidr_contains(const egress_cidr *c, const egress_addr *a) {
        egress_addr x;
        if (!as_family(a, c->net.family, &x))
                return false;
        return prefix_equal(x.bytes, c->net.bytes, c->prefix);
}

/* ---- the policy ---- */

struct egress_policy {
        char **hosts; /* lowercase, without a final dot */
        size_t n_hosts;
        egress_cidr *cidrs;
        size_t n_cidrs;
        egress_resolve_fn *resolve;
        void *resolve_userdata;
};

void egress_policy_free(egress_policy *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n_hosts; i++)
                free(p->hosts[i]);
        free(p->hosts);
        free(p->cidrs);
        free(p);
}

/* A host name as the allowlist and the URL check take it: ASCII letters, digits, '-', '_' and
 * dots, not empty, at most EGRESS_HOST_MAX bytes. */
static bool host_name_ok(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > EGRESS_HOST_MAX || s[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++) {
                char ch = s[i];
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                      ch == '_' || ch == '.'))
                        return false;
        }
        return true;
}

/* n bytes of s, lowercase, without one final dot, into buf (EGRESS_HOST_MAX + 1 bytes). */
static void host_key(const char *s, char buf[static EGRESS_HOST_MAX + 1]) {
        size_t n = MIN(strlen(s), (size_t) EGRESS_HOST_MAX);
        if (n > 0 && s[n - 1] == '.')
                n--;
        for (size_t i = 0; i < n; i++)
                buf[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char) (s[i] - 'A' + 'a') : s[i];
        buf[n] = '\0';
}

int egress_policy_new(const char *const *allow, size_t n, egress_resolve_fn *resolver, void *resolver_userdata,
                      egress_policy **ret, hull_error *e) {
        if (n > EGRESS_ALLOW_MAX)
                return hull_fail(e, -EINVAL, "egress: the allowlist has %zu entries, more than %u", n,
                                 EGRESS_ALLOW_MAX);
        egress_policy *p = calloc(1, sizeof(*p));
        if (!p ||
            (n > 0 && (!(p->hosts = calloc(n, sizeof(char *))) || !(p->cidrs = calloc(n, sizeof(egress_cidr)))))) {
                egress_policy_free(p);
                return hull_err(e, -ENOMEM, "egress: out of memory");
        }
        p->resolve = resolver ? resolver : egress_resolve_default;
        p->resolve_userdata = resolver_userdata;
        for (size_t i = 0; i < n; i++) {
                const char *s = allow[i] ? allow[i] : "";
                char key[EGRESS_HOST_MAX + 1];
                if (egress_cidr_parse(s, &p->cidrs[p->n_cidrs]) == 0) {
                        p->n_cidrs++;
                        continue;
                }
                if (strchr(s, '/') || strchr(s, ':') || !host_name_ok(s)) {
                        egress_policy_free(p);
                        return hull_fail(e, -EINVAL,
                                         "egress: allowlist entry '%.*s' is neither a host name nor an address or "
                                         "CIDR (examples: intranet.example, 10.1.0.0/16, fd00::/8)",
                                         (int) MIN(strlen(s), (size_t) EGRESS_HOST_MAX), s);
                }
                host_key(s, key);
                if (!(p->hosts[p->n_hosts] = strdup(key))) {
                        egress_policy_free(p);
                        return hull_err(e, -ENOMEM, "egress: out of memory");
                }
                p->n_hosts++;
        }
        *ret = p;
        return 0;
}

bool egress_host_allowed(const egress_policy *p, const char *host) {
        char key[EGRESS_HOST_MAX + 1];
        if (!host || strlen(host) > EGRESS_HOST_MAX)
                return false;
        host_key(host, key);
        for (size_t i = 0; i < p->n_hosts; i++)
                if (strcmp(p->hosts[i], key) == 0)
                        return true;
        return false;
}

static bool cidr_allowed(const egress_policy *p, const egress_addr *a) {
        for (size_t i = 0; i < p->n_cidrs; i++)
                if (egress_cidr_contains(&p->cidrs[i], a))
                        return true;
        return false;
}

/* " of HOST" when host is a name (not the address itself), else "". */
static const char *of_host(const char *host, const char *addr, char *buf, size_t size) {
        if (!host || strcmp(host, addr) == 0)
                return "";
        snprintf(buf, size, " of %.*s", (int) MIN(strlen(host), (size_t) EGRESS_HOST_MAX), host);
        return buf;
}

int egress_check_addrs(const egress_policy *p, const char *host, const egress_addr *addrs, size_t n, hull_error *e) {
        char s[EGRESS_ADDR_STR_MAX], v[EGRESS_ADDR_STR_MAX], of[EGRESS_HOST_MAX + 8];
        if (n == 0)
                return hull_fail(e, -EACCES, BLOCKED "no addresses for %.*s", (int) EGRESS_HOST_MAX, host ? host : "");
        for (size_t i = 0; i < n; i++)
                if (egress_addr_classify(&addrs[i]) == EGRESS_METADATA) {
                        egress_addr_to_string(&addrs[i], s);
                        return hull_fail(e, -EACCES, BLOCKED "blocked cloud metadata endpoint %s%s", s,
                                         of_host(host, s, of, sizeof(of)));
                }
        bool host_ok = host && egress_host_allowed(p, host);
        for (size_t i = 0; i < n; i++) {
                egress_class c = egress_addr_classify(&addrs[i]);
                egress_addr v4;
                if (c == EGRESS_PUBLIC || host_ok || cidr_allowed(p, &addrs[i]))
                        continue;
                egress_addr_to_string(&addrs[i], s);
                egress_embed m = egress_addr_embedded(&addrs[i], &v4);
                if (m != EGRESS_EMBED_NONE)
                        return hull_fail(e, -EACCES, BLOCKED "blocked internal address %s (%s %s: %s)%s", s,
                                         egress_embed_to_string(m), egress_addr_to_string(&v4, v),
                                         egress_class_to_string(c), of_host(host, s, of, sizeof(of)));
                return hull_fail(e, -EACCES, BLOCKED "blocked internal address %s (%s)%s", s, egress_class_to_string(c),
                                 of_host(host, s, of, sizeof(of)));
        }
        return 0;
}

/* ---- the default resolver ---- */

/* One getaddrinfo on its own thread. The caller and the thread each hold a reference: a caller
 * that stops waiting drops its own, and the thread frees the job when it is done. */
typedef struct gai_job {
        atomic_int refs;
        atomic_bool done; /* the answer is in (release by the thread, acquire by the caller) */
        int efd;          /* eventfd: written once done */
        int rc;           /* getaddrinfo's */
        int sys_errno;    /* with EAI_SYSTEM */
        struct addrinfo *res;
        char host[EGRESS_HOST_MAX + 1];
} gai_job;

static void gai_job_unref(gai_job *j) {
        if (atomic_fetch_sub(&j->refs, 1) != 1)
                return;
        if (j->res)
                freeaddrinfo(j->res);
        safe_close(j->efd);
        free(j);
}

static void *gai_thread(void *arg) {
        gai_job *j = arg;
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        j->rc = getaddrinfo(j->host, NULL, &hints, &j->res);
        if (j->rc == EAI_SYSTEM)
                j->sys_errno = errno;
        atomic_store_explicit(&j->done, true, memory_order_release);
        uint64_t one = 1;
        (void) !write(j->efd, &one, sizeof(one));
        gai_job_unref(j);
        return NULL;
}

static void add_unique(egress_addr *out, size_t max, size_t *n, const egress_addr *a) {
        for (size_t i = 0; i < *n; i++)
                if (out[i].family == a->family && memcmp(out[i].bytes, a->bytes, 16) == 0)
                        return;
        if (*n < max)
                out[(*n)++] = *a;
}

int egress_resolve_default(void *userdata, const char *host, uint64_t deadline_mono_ms, egress_addr *ret, size_t max,
                           size_t *ret_n, hull_error *e) {
        uint64_t start = now_mono_ms(), now = start, end = MIN(deadline_mono_ms, start + EGRESS_RESOLVE_MS_DEFAULT);
        if (strlen(host) > EGRESS_HOST_MAX)
                return hull_fail(e, -EHOSTUNREACH, "the name is longer than %u bytes", EGRESS_HOST_MAX);
        if (now >= end)
                return hull_fail(e, -ETIMEDOUT, "no time was left to resolve it");
        gai_job *j = calloc(1, sizeof(*j));
        if (!j)
                return hull_err(e, -ENOMEM, "out of memory");
        memcpy(j->host, host, strlen(host) + 1);
        atomic_init(&j->refs, 2);
        j->efd = eventfd(0, EFD_CLOEXEC);
        if (j->efd < 0) {
                int r = negative_errno();
                free(j);
                return hull_err(e, r, "cannot make an eventfd");
        }
        pthread_attr_t attr;
        pthread_t t;
        int pr = pthread_attr_init(&attr);
        if (pr == 0) {
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                pr = pthread_create(&t, &attr, gai_thread, j);
                pthread_attr_destroy(&attr);
        }
        if (pr != 0) {
                safe_close(j->efd);
                free(j);
                return hull_err(e, -pr, "cannot start the resolver's thread");
        }
        while (!atomic_load_explicit(&j->done, memory_order_acquire)) {
                now = now_mono_ms();
                if (now >= end)
                        break;
                struct pollfd pfd = {.fd = j->efd, .events = POLLIN};
                int k = poll(&pfd, 1, (int) MIN(end - now, (uint64_t) INT32_MAX));
                if (k < 0 && errno != EINTR)
                        break;
        }
        if (!atomic_load_explicit(&j->done, memory_order_acquire)) {
                gai_job_unref(j); /* the thread frees it when its answer comes */
                return hull_fail(e, -ETIMEDOUT, "no answer within %" PRIu64 " ms", end - start);
        }
        int r = 0;
        if (j->rc == EAI_MEMORY)
                r = hull_err(e, -ENOMEM, "out of memory");
        else if (j->rc == EAI_SYSTEM)
                r = hull_fail(e, -EHOSTUNREACH, "%s", strerror(j->sys_errno));
        else if (j->rc != 0)
                r = hull_fail(e, -EHOSTUNREACH, "%s", gai_strerror(j->rc));
        else {
                size_t n = 0;
                for (struct addrinfo *ai = j->res; ai; ai = ai->ai_next) {
                        egress_addr a = {.family = ai->ai_family};
                        if (ai->ai_family == AF_INET && ai->ai_addrlen >= sizeof(struct sockaddr_in))
                                memcpy(a.bytes, &((struct sockaddr_in *) ai->ai_addr)->sin_addr, 4);
                        else if (ai->ai_family == AF_INET6 && ai->ai_addrlen >= sizeof(struct sockaddr_in6))
                                memcpy(a.bytes, &((struct sockaddr_in6 *) ai->ai_addr)->sin6_addr, 16);
                        else
                                continue;
                        add_unique(ret, max, &n, &a);
                }
                *ret_n = n;
        }
        gai_job_unref(j);
        return r;
}

/* ---- URLs (libcurl's URL API) ---- */

void egress_target_done(egress_target *t) {
        if (!t)
                return;
        free(t->url);
        *t = (egress_target){0};
}

int egress_target_pin(const egress_target *t, char buf[static EGRESS_PIN_MAX]) {
        size_t len = 0;
        int n = snprintf(buf, EGRESS_PIN_MAX, "%s:%u:", t->host, t->port);
        if (n < 0 || (size_t) n >= EGRESS_PIN_MAX)
                return -ENAMETOOLONG;
        len = (size_t) n;
        for (size_t i = 0; i < t->n_addrs; i++) {
                char a[EGRESS_ADDR_STR_MAX];
                egress_addr_to_string(&t->addrs[i], a);
                n = snprintf(buf + len, EGRESS_PIN_MAX - len, t->addrs[i].family == AF_INET6 ? "%s[%s]" : "%s%s",
                             i ? "," : "", a);
                if (n < 0 || (size_t) n >= EGRESS_PIN_MAX - len)
                        return -ENAMETOOLONG;
                len += (size_t) n;
        }
        return 0;
}

static void curl_urlp(CURLU **u) {
        if (*u)
                curl_url_cleanup(*u);
}
static void curl_freep(char **p) {
        if (*p)
                curl_free(*p);
}
#define _cleanup_curlu_ _cleanup_(curl_urlp)
#define _cleanup_curl_free_ _cleanup_(curl_freep)

/* At most this many bytes of a URL quoted in a message. */
#define SHOWN 200

static int url_error(hull_error *e, const char *url, CURLUcode uc) {
        if (uc == CURLUE_OUT_OF_MEMORY)
                return hull_err(e, -ENOMEM, "egress: out of memory");
        if (uc == CURLUE_BAD_SCHEME || uc == CURLUE_NO_SCHEME)
                return hull_fail(e, -EINVAL,
                                 "egress: '%.*s' is not a URL (write it as http://HOST/PATH or https://...)", SHOWN,
                                 url);
        if (uc == CURLUE_NO_HOST)
                return hull_fail(e, -EINVAL, BLOCKED "no host in URL '%.*s'", SHOWN, url);
        return hull_fail(e, -EINVAL, "egress: '%.*s' is not a valid URL: %s", SHOWN, url, curl_url_strerror(uc));
}

/* The scheme, host and port of u into t, checked; the host written back lowercase and the
 * fragment dropped. raw: the text u was parsed from. */
static int check_form(CURLU *u, const char *raw, egress_target *t, hull_error *e) {
        _cleanup_curl_free_ char *scheme = NULL, *user = NULL, *password = NULL, *host = NULL, *zone = NULL,
                                 *port = NULL;
        CURLUcode uc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
        if (uc != CURLUE_OK)
                return url_error(e, raw, uc);
        if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
                return hull_fail(e, -EINVAL, BLOCKED "scheme '%.*s' is not allowed (http and https only)", 32, scheme);
        /* scheme://authority: curl, like browsers, reads "http:///x" and "http:/x" as http://x/;
         * a URL that needs such repair is more likely wrong than meant, so it has no host. */
        size_t n = strlen(scheme);
        if (strncasecmp(raw, scheme, n) != 0 || strncmp(raw + n, "://", 3) != 0 || raw[n + 3] == '/' ||
            raw[n + 3] == '\\')
                return hull_fail(e, -EINVAL, BLOCKED "no host in URL '%.*s' (write it as %s://HOST/PATH)", SHOWN, raw,
                                 scheme);
        if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
            curl_url_get(u, CURLUPART_PASSWORD, &password, 0) == CURLUE_OK)
                return hull_fail(e, -EINVAL,
                                 BLOCKED "URLs with a user name or password are refused (credentials do not go in "
                                         "a fetched URL)");
        uc = curl_url_get(u, CURLUPART_HOST, &host, CURLU_PUNYCODE);
        if (uc == CURLUE_NO_HOST || (uc == CURLUE_OK && !host[0]))
                return hull_fail(e, -EINVAL, BLOCKED "no host in URL '%.*s'", SHOWN, raw);
        if (uc != CURLUE_OK)
                return hull_fail(e, -EINVAL,
                                 BLOCKED "cannot use the host of '%.*s': %s (an international name: write it in "
                                         "its xn-- form)",
                                 SHOWN, raw, curl_url_strerror(uc));
        if (curl_url_get(u, CURLUPART_ZONEID, &zone, 0) == CURLUE_OK)
                return hull_fail(e, -EINVAL, BLOCKED "an IPv6 zone ('%%%.*s') is not allowed in a URL", 32, zone);
        uc = curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
        uint64_t pv;
        if (uc != CURLUE_OK || parse_uint64(port, 1, 65535, &pv) < 0)
                return hull_fail(e, -EINVAL, "egress: '%.*s' has no valid port (1 to 65535)", SHOWN, raw);
        t->port = (unsigned) pv;

        size_t hl = strlen(host);
        if (host[0] == '[') { /* an IPv6 literal */
                char lit[EGRESS_ADDR_STR_MAX];
                if (hl < 3 || host[hl - 1] != ']' || hl - 2 >= sizeof(lit))
                        return hull_fail(e, -EINVAL, BLOCKED "bad IPv6 host '%.*s'", SHOWN, host);
                memcpy(lit, host + 1, hl - 2);
                lit[hl - 2] = '\0';
                if (egress_addr_parse(lit, &t->addrs[0]) < 0 || t->addrs[0].family != AF_INET6)
                        return hull_fail(e, -EINVAL, BLOCKED "bad IPv6 host '%.*s'", SHOWN, host);
                egress_addr_to_string(&t->addrs[0], t->host);
                t->literal = true;
                t->n_addrs = 1;
        } else if (egress_addr_parse(host, &t->addrs[0]) == 0 && t->addrs[0].family == AF_INET) {
                egress_addr_to_string(&t->addrs[0], t->host);
                t->literal = true;
                t->n_addrs = 1;
        } else {
                /* a name as the resolver and the pinned connection will both see it: curl
                 * decodes %XX and converts IDN above, and leaves nothing else to reinterpret */
                if (!host_name_ok(host))
                        return hull_fail(e, -EINVAL, BLOCKED "'%.*s' is not a valid host name", SHOWN, host);
                for (size_t i = 0; i <= hl; i++)
                        t->host[i] = (host[i] >= 'A' && host[i] <= 'Z') ? (char) (host[i] - 'A' + 'a') : host[i];
                uc = curl_url_set(u, CURLUPART_HOST, t->host, 0);
                if (uc != CURLUE_OK)
                        return url_error(e, raw, uc);
        }
        uc = curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
        if (uc != CURLUE_OK)
                return url_error(e, raw, uc);
        return 0;
}

int egress_check_url(const egress_policy *p, const char *url, uint64_t deadline_mono_ms, egress_target *ret,
                     hull_error *e) {
        egress_target t = {0};
        _cleanup_curlu_ CURLU *u = NULL;
        _cleanup_curl_free_ char *norm = NULL;
        int r;

        if (!url || !url[0])
                return hull_fail(e, -EINVAL, "egress: no URL given");
        if (strlen(url) > EGRESS_URL_MAX)
                return hull_fail(e, -EINVAL, "egress: the URL is longer than %u bytes", EGRESS_URL_MAX);
        r = dlib_load(DLIB_CURL, e);
        if (r < 0)
                return r;
        if (!(u = curl_url()))
                return hull_err(e, -ENOMEM, "egress: out of memory");
        CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE);
        if (uc != CURLUE_OK)
                return url_error(e, url, uc);
        r = check_form(u, url, &t, e);
        if (r < 0)
                return r;
        uc = curl_url_get(u, CURLUPART_URL, &norm, CURLU_PUNYCODE);
        if (uc != CURLUE_OK)
                return url_error(e, url, uc);
        if (strlen(norm) > EGRESS_URL_MAX)
                return hull_fail(e, -EINVAL, "egress: the URL is longer than %u bytes", EGRESS_URL_MAX);

        if (!t.literal) {
                hull_error why = {0};
                size_t n = 0;
                r = p->resolve(p->resolve_userdata, t.host, deadline_mono_ms, t.addrs, EGRESS_ADDRS_MAX, &n, &why);
                if (r == -ENOMEM)
                        return hull_err(e, r, "egress: out of memory");
                if (r == -ETIMEDOUT)
                        return hull_fail(e, r, "egress: could not resolve %s in time: %s", t.host, why.msg);
                if (r < 0)
                        return hull_fail(e, -EHOSTUNREACH, BLOCKED "could not resolve %s: %s", t.host,
                                         why.msg[0] ? why.msg : "no reason given");
                t.n_addrs = MIN(n, (size_t) EGRESS_ADDRS_MAX);
        }
        r = egress_check_addrs(p, t.host, t.addrs, t.n_addrs, e);
        if (r < 0)
                return r;
        if (!(t.url = strdup(norm)))
                return hull_err(e, -ENOMEM, "egress: out of memory");
        *ret = t;
        return 0;
}

int egress_url_join(const char *base, const char *location, char **ret, hull_error *e) {
        _cleanup_curlu_ CURLU *u = NULL;
        _cleanup_curl_free_ char *joined = NULL;
        int r = dlib_load(DLIB_CURL, e);
        if (r < 0)
                return r;
        if (!location || !location[0])
                return hull_fail(e, -EINVAL, "egress: a redirect without a Location");
        if (strlen(location) > EGRESS_URL_MAX)
                return hull_fail(e, -EINVAL, "egress: a redirect's Location is longer than %u bytes", EGRESS_URL_MAX);
        if (!(u = curl_url()))
                return hull_err(e, -ENOMEM, "egress: out of memory");
        CURLUcode uc = curl_url_set(u, CURLUPART_URL, base, CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE);
        if (uc == CURLUE_OK)
                uc = curl_url_set(u, CURLUPART_URL, location, CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE);
        if (uc == CURLUE_OK)
                uc = curl_url_get(u, CURLUPART_URL, &joined, CURLU_PUNYCODE);
        if (uc != CURLUE_OK)
                return uc == CURLUE_OUT_OF_MEMORY
                               ? hull_err(e, -ENOMEM, "egress: out of memory")
                               : hull_fail(e, -EINVAL, "egress: a redirect to '%.*s' that is not a valid URL: %s",
                                           SHOWN, location, curl_url_strerror(uc));
        if (!(*ret = strdup(joined)))
                return hull_err(e, -ENOMEM, "egress: out of memory");
        return 0;
}
