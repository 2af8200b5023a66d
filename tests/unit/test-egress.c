/* test-egress.c: the egress guard and the guarded fetch.
 *
 * The pure part: every vector of sheath's egress suite (../shared/reference/sheath-harness.md
 * §8.4) with a fake resolver, the odd IPv4 spellings, IPv6 forms carrying IPv4 addresses, the
 * reserved ranges, the allowlist, the metadata endpoints denied whatever the allowlist says.
 *
 * The live part, on loopback: an "internal" server on 127.0.0.1 (denied, as loopback is) and a
 * "public" one on 127.0.0.2 at the same port (the test's stand-in for the internet: allowlisted
 * as 127.0.0.2/32). Redirects of every code, a relative Location, a redirect to a denied
 * address or a metadata endpoint, a loop, a refused first URL making no request, the loopback
 * server refused by default and reached through the allowlist, DNS rebinding (a resolver whose
 * answer changes after the check: the internal server sees nothing, while an unpinned request
 * for the same name does reach it), the body cap, the deadline. */
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "egress.h"
#include "http-client.h"
#include "http-server.h"
#include "http-testlib.h"
#include "test.h"
#include "time-util.h"
#include "webfetch.h"

/* ---- a fake resolver: a map of names to address lists ---- */

typedef struct fake_entry {
        const char *host;
        const char *addrs[4]; /* NULL-ended; {"!fail"}: resolution fails; {"!idna"}: not a valid name */
} fake_entry;

typedef struct fake {
        const fake_entry *entries;
        size_t n;
        atomic_uint calls;
        /* rebinding: the answer after the first call for this name */
        const char *rebind_host;
        const char *rebind_to;
} fake;

static int fake_resolve(void *userdata, const char *host, uint64_t deadline, egress_addr *ret, size_t max,
                        size_t *ret_n, hull_error *e) {
        fake *f = userdata;
        unsigned call = atomic_fetch_add(&f->calls, 1);
        if (f->rebind_host && strcmp(host, f->rebind_host) == 0 && call > 0) {
                *ret_n = 1;
                return egress_addr_parse(f->rebind_to, &ret[0]);
        }
        for (size_t i = 0; i < f->n; i++) {
                if (strcmp(f->entries[i].host, host) != 0)
                        continue;
                const char *const *a = f->entries[i].addrs;
                if (a[0] && strcmp(a[0], "!fail") == 0)
                        return hull_fail(e, -EHOSTUNREACH, "Name or service not known");
                if (a[0] && strcmp(a[0], "!idna") == 0)
                        return hull_fail(e, -EHOSTUNREACH, "the name is not valid IDNA");
                size_t n = 0;
                for (; a[n] && n < max; n++)
                        if (egress_addr_parse(a[n], &ret[n]) < 0)
                                return hull_fail(e, -EINVAL, "bad test address %s", a[n]);
                *ret_n = n;
                return 0;
        }
        return hull_fail(e, -EHOSTUNREACH, "Name or service not known");
}

static const fake_entry names[] = {
        {"public.example", {"93.184.216.34", NULL}},
        {"public6.example", {"2606:2800:220:1:248:1893:25c8:1946", NULL}},
        {"mixed.example", {"93.184.216.34", "127.0.0.1", NULL}},
        {"intranet.corp", {"10.1.2.3", NULL}},
        {"two.corp", {"10.1.2.3", "172.16.0.1", NULL}},
        {"far.corp", {"10.9.9.9", NULL}},
        {"metadata.google.internal", {"169.254.169.254", NULL}},
        {"mapped.example", {"::ffff:10.0.0.1", NULL}},
        {"fail.example", {"!fail"}},
        {"idna.example", {"!idna"}},
        {"empty.example", {NULL}},
};

static egress_policy *policy(const char *const *allow, size_t n, fake *f) {
        egress_policy *p = NULL;
        hull_error e = {0};
        if (egress_policy_new(allow, n, f ? fake_resolve : NULL, f, &p, &e) < 0) {
                printf("# policy: %s\n", e.msg);
                return NULL;
        }
        return p;
}

/* egress_check_addrs on a list of address strings. */
static int check_list(const egress_policy *p, const char *host, const char *const *list, hull_error *e) {
        egress_addr a[8];
        size_t n = 0;
        for (; list[n]; n++)
                if (egress_addr_parse(list[n], &a[n]) < 0) {
                        printf("# bad test address %s\n", list[n]);
                        return -999;
                }
        return egress_check_addrs(p, host, a, n, e);
}

static int check_one(const egress_policy *p, const char *addr, hull_error *e) {
        const char *l[] = {addr, NULL};
        return check_list(p, addr, l, e);
}

static egress_class class_of(const char *s) {
        egress_addr a;
        if (egress_addr_parse(s, &a) < 0)
                return _EGRESS_CLASS_MAX;
        return egress_addr_classify(&a);
}

static void test_classes(void) {
        static const struct {
                const char *addr;
                egress_class c;
        } v[] = {
                /* §8.4's denied and allowed addresses */
                {"127.0.0.1", EGRESS_LOOPBACK},
                {"::1", EGRESS_LOOPBACK},
                {"::ffff:127.0.0.1", EGRESS_LOOPBACK},
                {"10.0.0.5", EGRESS_PRIVATE},
                {"172.16.0.1", EGRESS_PRIVATE},
                {"192.168.1.1", EGRESS_PRIVATE},
                {"fd00::1", EGRESS_PRIVATE},
                {"169.254.1.1", EGRESS_LINK_LOCAL},
                {"0.0.0.0", EGRESS_UNSPECIFIED},
                {"224.0.0.1", EGRESS_MULTICAST},
                {"100.64.0.1", EGRESS_CGNAT},
                {"93.184.216.34", EGRESS_PUBLIC},
                {"2606:2800:220:1:248:1893:25c8:1946", EGRESS_PUBLIC},
                /* range edges */
                {"127.255.255.254", EGRESS_LOOPBACK},
                {"9.255.255.255", EGRESS_PUBLIC},
                {"11.0.0.0", EGRESS_PUBLIC},
                {"172.15.255.255", EGRESS_PUBLIC},
                {"172.31.255.255", EGRESS_PRIVATE},
                {"172.32.0.0", EGRESS_PUBLIC},
                {"100.63.255.255", EGRESS_PUBLIC},
                {"100.127.255.255", EGRESS_CGNAT},
                {"100.128.0.0", EGRESS_PUBLIC},
                {"192.167.255.255", EGRESS_PUBLIC},
                {"192.169.0.0", EGRESS_PUBLIC},
                {"169.254.0.0", EGRESS_LINK_LOCAL},
                {"169.255.0.1", EGRESS_PUBLIC},
                /* reserved, documentation, benchmarking, broadcast */
                {"0.1.2.3", EGRESS_RESERVED},
                {"192.0.0.8", EGRESS_RESERVED},
                {"192.0.2.1", EGRESS_RESERVED},
                {"192.88.99.1", EGRESS_RESERVED},
                {"198.18.0.1", EGRESS_RESERVED},
                {"198.19.255.255", EGRESS_RESERVED},
                {"198.20.0.0", EGRESS_PUBLIC},
                {"198.51.100.7", EGRESS_RESERVED},
                {"203.0.113.9", EGRESS_RESERVED},
                {"239.255.255.250", EGRESS_MULTICAST},
                {"240.0.0.1", EGRESS_RESERVED},
                {"255.255.255.254", EGRESS_RESERVED},
                {"255.255.255.255", EGRESS_BROADCAST},
                {"223.255.255.255", EGRESS_PUBLIC},
                /* IPv6 forms carrying IPv4 */
                {"::ffff:7f00:1", EGRESS_LOOPBACK},
                {"0:0:0:0:0:ffff:127.0.0.1", EGRESS_LOOPBACK},
                {"::ffff:10.0.0.5", EGRESS_PRIVATE},
                {"::ffff:100.64.0.1", EGRESS_CGNAT},
                {"::ffff:93.184.216.34", EGRESS_PUBLIC},
                {"::127.0.0.1", EGRESS_LOOPBACK},
                {"::10.0.0.5", EGRESS_PRIVATE},
                {"::93.184.216.34", EGRESS_RESERVED}, /* IPv4-compatible: deprecated */
                {"64:ff9b::127.0.0.1", EGRESS_LOOPBACK},
                {"64:ff9b::a00:5", EGRESS_PRIVATE},
                {"64:ff9b::5db8:d822", EGRESS_PUBLIC},
                {"64:ff9b:1::1", EGRESS_RESERVED},
                {"2002:7f00:1::", EGRESS_LOOPBACK},
                {"2002:c0a8:101::1", EGRESS_PRIVATE},
                {"2002:5db8:d822::1", EGRESS_PUBLIC},
                /* IPv6 ranges */
                {"::", EGRESS_UNSPECIFIED},
                {"::2", EGRESS_RESERVED},
                {"fe80::1", EGRESS_LINK_LOCAL},
                {"febf::1", EGRESS_LINK_LOCAL},
                {"fec0::1", EGRESS_PRIVATE},
                {"fc00::1", EGRESS_PRIVATE},
                {"fdff:ffff::1", EGRESS_PRIVATE},
                {"ff02::1", EGRESS_MULTICAST},
                {"100::1", EGRESS_RESERVED},
                {"2001::1", EGRESS_RESERVED}, /* Teredo */
                {"2001:2::1", EGRESS_RESERVED},
                {"2001:db8::1", EGRESS_RESERVED},
                {"3fff::1", EGRESS_RESERVED},
                {"4000::1", EGRESS_RESERVED},
                {"1::1", EGRESS_RESERVED},
                {"2001:4860:4860::8888", EGRESS_PUBLIC},
                {"2a00:1450:4001::1", EGRESS_PUBLIC},
                /* the metadata endpoints, in every form */
                {"169.254.169.254", EGRESS_METADATA},
                {"169.254.170.2", EGRESS_METADATA},
                {"168.63.129.16", EGRESS_METADATA},
                {"100.100.100.200", EGRESS_METADATA},
                {"192.0.0.192", EGRESS_METADATA},
                {"fd00:ec2::254", EGRESS_METADATA},
                {"::ffff:169.254.169.254", EGRESS_METADATA},
                {"::ffff:168.63.129.16", EGRESS_METADATA},
                {"::ffff:100.100.100.200", EGRESS_METADATA},
                {"::ffff:192.0.0.192", EGRESS_METADATA},
                {"::ffff:169.254.170.2", EGRESS_METADATA},
                {"64:ff9b::a9fe:a9fe", EGRESS_METADATA},
                {"2002:a9fe:a9fe::", EGRESS_METADATA},
        };
        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                egress_class c = class_of(v[i].addr);
                TEST_RESULT(c == v[i].c, "%s is %s (got %s)", v[i].addr, egress_class_to_string(v[i].c),
                            egress_class_to_string(c));
        }
}

static void test_parse(void) {
        egress_addr a;
        egress_cidr c;
        char s[EGRESS_ADDR_STR_MAX];
        /* strict: the odd spellings are the URL parser's business, not an address's */
        static const char *const bad[] = {"2130706433", "0177.0.0.1", "0x7f.1", "127.1",
                                          "127.0.0.1.", " 127.0.0.1", "[::1]",  "fe80::1%eth0",
                                          "1.2.3.4.5",  "256.1.1.1",  "",       "::g"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                TEST_RESULT(egress_addr_parse(bad[i], &a) == -EINVAL, "'%s' is not an address", bad[i]);
        CHECK(egress_addr_parse("::FFFF:127.0.0.1", &a) == 0 && a.family == AF_INET6);
        CHECK_EQ_STR(egress_addr_to_string(&a, s), "::ffff:127.0.0.1");

        CHECK(egress_cidr_parse("10.1.0.0/16", &c) == 0 && c.prefix == 16 && c.net.family == AF_INET);
        CHECK(egress_cidr_parse("127.0.0.1", &c) == 0 && c.prefix == 32);
        CHECK(egress_cidr_parse("fd00::/8", &c) == 0 && c.prefix == 8 && c.net.family == AF_INET6);
        CHECK(egress_cidr_parse("::1", &c) == 0 && c.prefix == 128);
        CHECK(egress_cidr_parse("0.0.0.0/0", &c) == 0 && c.prefix == 0);
        static const char *const bad_cidr[] = {"10.1.2.3/16",  "10.0.0.0/33", "10.0.0.0/",  "10.0.0.0/-1",
                                               "10.0.0.0/016", "/8",          "fd00::/129", "10.0.0.0/8/8",
                                               "host/8",       "10.0.0.0/ 8", "10.0.0.0/8 "};
        for (size_t i = 0; i < ELEMENTSOF(bad_cidr); i++)
                TEST_RESULT(egress_cidr_parse(bad_cidr[i], &c) == -EINVAL, "'%s' is not a CIDR", bad_cidr[i]);

        /* containment, and IPv4-mapped addresses are their IPv4 address for either side */
        CHECK(egress_cidr_parse("10.1.0.0/16", &c) == 0);
        CHECK(egress_addr_parse("10.1.2.3", &a) == 0 && egress_cidr_contains(&c, &a));
        CHECK(egress_addr_parse("10.9.9.9", &a) == 0 && !egress_cidr_contains(&c, &a));
        CHECK(egress_addr_parse("::ffff:10.1.2.3", &a) == 0 && egress_cidr_contains(&c, &a));
        CHECK(egress_addr_parse("::10.1.2.3", &a) == 0 && !egress_cidr_contains(&c, &a));
        CHECK(egress_cidr_parse("::ffff:10.1.0.0/112", &c) == 0);
        CHECK(egress_addr_parse("10.1.2.3", &a) == 0 && egress_cidr_contains(&c, &a));
        CHECK(egress_cidr_parse("fd00::/8", &c) == 0);
        CHECK(egress_addr_parse("fd12::1", &a) == 0 && egress_cidr_contains(&c, &a));
        CHECK(egress_addr_parse("fe00::1", &a) == 0 && !egress_cidr_contains(&c, &a));
        CHECK(egress_addr_parse("10.1.2.3", &a) == 0 && !egress_cidr_contains(&c, &a));
}

static void test_decisions(void) {
        hull_error e = {0};
        egress_policy *none = policy(NULL, 0, NULL);
        CHECK(none != NULL);
        if (!none)
                return;
        /* §8.4: denied and allowed addresses */
        static const char *const denied[] = {"127.0.0.1",  "::1",         "::ffff:127.0.0.1", "10.0.0.5",
                                             "172.16.0.1", "192.168.1.1", "fd00::1",          "169.254.1.1",
                                             "0.0.0.0",    "224.0.0.1",   "100.64.0.1"};
        for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
                e = (hull_error){0};
                int r = check_one(none, denied[i], &e);
                TEST_RESULT(r == -EACCES && strstr(e.msg, "blocked internal address") && strstr(e.msg, denied[i]),
                            "%s denied (%d: %s)", denied[i], r, e.msg);
        }
        CHECK(strstr(e.msg, "egress: blocked by egress policy: blocked internal address 100.64.0.1 (CGNAT)") == e.msg);
        CHECK_EQ_INT(check_one(none, "93.184.216.34", &e), 0);
        CHECK_EQ_INT(check_one(none, "2606:2800:220:1:248:1893:25c8:1946", &e), 0);
        e = (hull_error){0};
        CHECK_EQ_INT(check_one(none, "::ffff:127.0.0.1", &e), -EACCES);
        CHECK(strstr(e.msg, "(IPv4-mapped 127.0.0.1: loopback)") != NULL);
        printf("# %s\n", e.msg);

        /* a public address and a loopback one: denied, naming the loopback one */
        const char *mixed[] = {"93.184.216.34", "127.0.0.1", NULL};
        e = (hull_error){0};
        CHECK_EQ_INT(check_list(none, "mixed.example", mixed, &e), -EACCES);
        CHECK(strstr(e.msg, "127.0.0.1 (loopback) of mixed.example") != NULL);
        /* no addresses */
        const char *empty[] = {NULL};
        e = (hull_error){0};
        CHECK_EQ_INT(check_list(none, "empty.example", empty, &e), -EACCES);
        CHECK(strstr(e.msg, "no addresses for empty.example") != NULL);

        /* the allowlist: host names (case-insensitive, whole), CIDRs */
        const char *allow[] = {"INTRANET.Corp.", "10.1.0.0/16"};
        egress_policy *p = policy(allow, 2, NULL);
        CHECK(p != NULL);
        if (!p) {
                egress_policy_free(none);
                return;
        }
        const char *intranet[] = {"10.1.2.3", NULL}, *far[] = {"10.9.9.9", NULL},
                   *two[] = {"10.1.2.3", "172.16.0.1", NULL};
        CHECK_EQ_INT(check_list(p, "intranet.corp", intranet, &e), 0);
        CHECK_EQ_INT(check_list(p, "Intranet.CORP", intranet, &e), 0);
        CHECK(egress_host_allowed(p, "intranet.corp.") && !egress_host_allowed(p, "x.intranet.corp") &&
              !egress_host_allowed(p, "intranet.corp.evil"));
        CHECK_EQ_INT(check_list(p, "other.corp", intranet, &e), 0); /* through the CIDR */
        CHECK_EQ_INT(check_list(p, "far.corp", far, &e), -EACCES);
        CHECK_EQ_INT(check_list(p, "two.corp", two, &e), -EACCES);
        CHECK(strstr(e.msg, "172.16.0.1") != NULL);
        CHECK_EQ_INT(check_list(p, "intranet.corp", two, &e), 0); /* the host itself is trusted */
        /* the default allowlist is empty */
        CHECK_EQ_INT(check_list(none, "intranet.corp", intranet, &e), -EACCES);

        /* metadata: always denied, with its own message, before any allowlist */
        const char *md_allow[] = {"metadata.google.internal",
                                  "169.254.0.0/16",
                                  "168.63.0.0/16",
                                  "100.64.0.0/10",
                                  "192.0.0.0/24",
                                  "fd00::/8",
                                  "::ffff:0:0/96",
                                  "0.0.0.0/0"};
        egress_policy *md = policy(md_allow, ELEMENTSOF(md_allow), NULL);
        CHECK(md != NULL);
        static const char *const metadata[] = {
                "169.254.169.254",        "169.254.170.2",        "168.63.129.16",
                "100.100.100.200",        "192.0.0.192",          "fd00:ec2::254",
                "::ffff:169.254.169.254", "::ffff:168.63.129.16", "::ffff:100.100.100.200",
                "::ffff:192.0.0.192"};
        for (size_t i = 0; md && i < ELEMENTSOF(metadata); i++) {
                const char *l[] = {metadata[i], NULL};
                e = (hull_error){0};
                int r = check_list(md, "metadata.google.internal", l, &e);
                TEST_RESULT(r == -EACCES && strstr(e.msg, "blocked cloud metadata endpoint") &&
                                    strstr(e.msg, metadata[i]),
                            "metadata %s denied even when allowlisted (%s)", metadata[i], e.msg);
        }
        /* a metadata address anywhere in the list gets its own message */
        const char *md_mixed[] = {"10.0.0.1", "93.184.216.34", "169.254.169.254", NULL};
        e = (hull_error){0};
        CHECK_EQ_INT(check_list(none, "x.example", md_mixed, &e), -EACCES);
        CHECK(strstr(e.msg, "blocked cloud metadata endpoint 169.254.169.254 of x.example") != NULL);
        /* the allowlisted 0.0.0.0/0 admits everything else */
        CHECK_EQ_INT(check_one(md, "127.0.0.1", &e), 0);

        /* entries that are neither a name nor a CIDR are refused, naming them */
        static const char *const bad[] = {"10.1.2.3/16", "a b",   "http://x", "10.0.0.0/33",     "",
                                          "x/8",         "[::1]", ".corp",    "caf\xc3\xa9.corp"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                egress_policy *q = NULL;
                e = (hull_error){0};
                int r = egress_policy_new(&bad[i], 1, NULL, NULL, &q, &e);
                TEST_RESULT(r == -EINVAL && strstr(e.msg, "allowlist entry"), "allowlist '%s' refused (%s)", bad[i],
                            e.msg);
                egress_policy_free(q);
        }
        egress_policy_free(md);
        egress_policy_free(p);
        egress_policy_free(none);
}

/* egress_check_url with the fake resolver: r and (when r < 0) a piece of the message. */
static void url_case(const egress_policy *p, fake *f, const char *url, int want, const char *msg_part,
                     unsigned want_calls) {
        egress_target t = {0};
        hull_error e = {0};
        unsigned before = atomic_load(&f->calls);
        int r = egress_check_url(p, url, now_mono_ms() + 5000, &t, &e);
        unsigned calls = atomic_load(&f->calls) - before;
        bool ok = r == want && (!msg_part || strstr(want < 0 ? e.msg : t.url, msg_part)) && calls == want_calls;
        TEST_RESULT(ok, "%s -> %d (got %d, %u resolver calls: %s)", url, want, r, calls, r < 0 ? e.msg : t.url);
        egress_target_done(&t);
}

/* egress_check_url on the forms of §8.4 and on other forms, refused. */
static void urls_refused(const egress_policy *p, fake *f) {
        /* §8.4 */
        url_case(p, f, "http://127.0.0.1:8080/admin", -EACCES, "blocked internal address 127.0.0.1", 0);
        url_case(p, f, "http://93.184.216.34/", 0, "http://93.184.216.34/", 0);
        url_case(p, f, "file:///etc/passwd", -EINVAL, "scheme 'file' is not allowed", 0);
        url_case(p, f, "http://10.0.0.1/admin", -EACCES, "blocked by egress policy: blocked internal address 10.0.0.1",
                 0);
        url_case(p, f, "http://169.254.169.254/latest/meta-data/", -EACCES, "blocked cloud metadata endpoint", 0);
        url_case(p, f, "http://fail.example/", -EHOSTUNREACH, "could not resolve fail.example", 1);
        url_case(p, f, "http://idna.example/", -EHOSTUNREACH, "could not resolve idna.example", 1);
        url_case(p, f, "http://empty.example/", -EACCES, "no addresses for empty.example", 1);
        url_case(p, f, "http:///x", -EINVAL, "no host", 0);
        url_case(p, f, "http://mixed.example/", -EACCES, "127.0.0.1", 1);
        url_case(p, f, "http://public.example/a", 0, "http://public.example/a", 1);
        url_case(p, f, "https://public6.example/", 0, "https://public6.example/", 1);
        url_case(p, f, "http://metadata.google.internal/computeMetadata/v1/", -EACCES,
                 "blocked cloud metadata endpoint 169.254.169.254 of metadata.google.internal", 1);
        url_case(p, f, "http://mapped.example/", -EACCES, "::ffff:10.0.0.1", 1);
        /* other forms refused */
        url_case(p, f, "http:/x", -EINVAL, "no host", 0);
        url_case(p, f, "gopher://public.example/", -EINVAL, "scheme 'gopher' is not allowed", 0);
        url_case(p, f, "ftp://public.example/", -EINVAL, "scheme 'ftp'", 0);
        url_case(p, f, "javascript:alert(1)", -EINVAL, "not a valid URL", 0);
        url_case(p, f, "data:text/html,hi", -EINVAL, "not a valid URL", 0);
        url_case(p, f, "public.example/page", -EINVAL, "is not a URL", 0);
        url_case(p, f, "", -EINVAL, "no URL", 0);
        url_case(p, f, "http://user:pw@public.example/", -EINVAL, "user name or password", 0);
        url_case(p, f, "http://public.example@127.0.0.1/", -EINVAL, "user name or password", 0);
        url_case(p, f, "http://public.example:0/", -EINVAL, "port", 0);
        url_case(p, f, "http://public.example:99999/", -EINVAL, "not a valid URL", 0);
        url_case(p, f, "http://[fe80::1%25eth0]/", -EINVAL, "zone", 0);
        url_case(p, f, "http://exa mple.com/", -EINVAL, "not a valid URL", 0);
}

/* Odd spellings of internal addresses, refused without DNS, and normalised URLs. */
static void urls_odd(const egress_policy *p, fake *f) {
        hull_error e = {0};
        /* odd spellings of 127.0.0.1 (and of 192.168.0.1): libcurl's parser makes the dotted quad
         * it would connect to; that address is what is checked, with no DNS */
        static const char *const odd[] = {"http://2130706433/",
                                          "http://0177.0.0.1/",
                                          "http://0x7f.1/",
                                          "http://127.1/",
                                          "http://0x7f000001/",
                                          "http://017700000001/",
                                          "http://0x7f.0.0.1/",
                                          "http://127.0.1/",
                                          "http://%31%32%37.0.0.1/",
                                          "http://[::ffff:127.0.0.1]/",
                                          "http://[::ffff:7f00:1]/",
                                          "http://[0:0:0:0:0:ffff:127.0.0.1]/",
                                          "http://[::1]/",
                                          "http://[::127.0.0.1]/",
                                          "http://[64:ff9b::127.0.0.1]/",
                                          "http://[2002:7f00:1::]/",
                                          "HTTP://LOCALHOST.localdomain@127.0.0.1/"};
        for (size_t i = 0; i < ELEMENTSOF(odd); i++) {
                egress_target t = {0};
                e = (hull_error){0};
                unsigned before = atomic_load(&f->calls);
                int r = egress_check_url(p, odd[i], now_mono_ms() + 5000, &t, &e);
                bool named = strstr(e.msg, "127.0.0.1") || strstr(e.msg, "::1") || strstr(e.msg, "7f00:1") ||
                             strstr(e.msg, "user name");
                TEST_RESULT((r == -EACCES || r == -EINVAL) && named && atomic_load(&f->calls) == before,
                            "%s refused without DNS (%s)", odd[i], e.msg);
        }
        url_case(p, f, "http://0300.0250.0.1/", -EACCES, "192.168.0.1 (private)", 0);
        url_case(p, f, "http://0/", -EACCES, "0.0.0.0 (unspecified)", 0);
        url_case(p, f, "http://4294967295/", -EACCES, "255.255.255.255 (broadcast)", 0);
        url_case(p, f, "http://[fd00:ec2::254]/", -EACCES, "blocked cloud metadata endpoint fd00:ec2::254", 0);
        url_case(p, f, "http://[::ffff:169.254.169.254]/", -EACCES, "blocked cloud metadata endpoint", 0);
        url_case(p, f, "http://0xa9fea9fe/", -EACCES, "blocked cloud metadata endpoint 169.254.169.254", 0);
        /* normalised: the host lowercase, the fragment gone, spaces encoded */
        url_case(p, f, "http://PUBLIC.Example/A b?q=1#frag", 0, "http://public.example/A%20b?q=1", 1);
        url_case(p, f, "https://93.184.216.34:8443/x#y", 0, "https://93.184.216.34:8443/x", 0);
}

/* The target (where to connect, its pin) and a redirect's Location joined. */
static void urls_target(const egress_policy *p) {
        hull_error e = {0};
        /* the target: where to connect */
        egress_target t = {0};
        CHECK_EQ_INT(egress_check_url(p, "https://public.example/", now_mono_ms() + 5000, &t, &e), 0);
        CHECK(!t.literal && t.port == 443 && t.n_addrs == 1 && strcmp(t.host, "public.example") == 0);
        char pin[EGRESS_PIN_MAX];
        CHECK_EQ_INT(egress_target_pin(&t, pin), 0);
        CHECK_EQ_STR(pin, "public.example:443:93.184.216.34");
        CHECK_EQ_INT(egress_addr_parse("2606:2800:220:1::1", &t.addrs[1]), 0);
        t.n_addrs = 2;
        CHECK_EQ_INT(egress_target_pin(&t, pin), 0);
        CHECK_EQ_STR(pin, "public.example:443:93.184.216.34,[2606:2800:220:1::1]");
        egress_target_done(&t);
        CHECK_EQ_INT(
                egress_check_url(p, "http://[2606:2800:220:1:248:1893:25c8:1946]:81/", now_mono_ms() + 5000, &t, &e),
                0);
        CHECK(t.literal && t.port == 81 && t.n_addrs == 1 && strcmp(t.host, "2606:2800:220:1:248:1893:25c8:1946") == 0);
        egress_target_done(&t);

        /* a redirect's Location joined with libcurl's URL API */
        static const struct {
                const char *loc, *want;
        } joins[] = {
                {"/next", "http://a.example/next"},
                {"next", "http://a.example/x/next"},
                {"../z", "http://a.example/z"},
                {"//b.example/p", "http://b.example/p"},
                {"https://c.example", "https://c.example/"},
                {"?q2", "http://a.example/x/y?q2"},
                {"http://127.0.0.1:8080/admin", "http://127.0.0.1:8080/admin"},
        };
        for (size_t i = 0; i < ELEMENTSOF(joins); i++) {
                char *j = NULL;
                int r = egress_url_join("http://a.example/x/y?q#f", joins[i].loc, &j, &e);
                TEST_RESULT(r == 0 && j && strcmp(j, joins[i].want) == 0, "join %s -> %s (got %s)", joins[i].loc,
                            joins[i].want, j ? j : e.msg);
                free(j);
        }
        char *j = NULL;
        CHECK_EQ_INT(egress_url_join("http://a.example/", "", &j, &e), -EINVAL);
        CHECK_EQ_INT(egress_url_join("http://a.example/", "http://[::1", &j, &e), -EINVAL);
}

static void urls_default_resolver(void) {
        hull_error e = {0};
        /* the default resolver: a real name (from /etc/hosts), and a deadline already past. A
         * minimal root (debootstrap --variant=minbase) may have no /etc/hosts: then the system
         * itself does not know "localhost", and the checks that need it are skipped. */
        egress_addr a[EGRESS_ADDRS_MAX];
        size_t n = 0;
        struct addrinfo *ai = NULL, hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        bool have_localhost = getaddrinfo("localhost", NULL, &hints, &ai) == 0;
        if (ai)
                freeaddrinfo(ai);
        if (have_localhost) {
                CHECK_EQ_INT(
                        egress_resolve_default(NULL, "localhost", now_mono_ms() + 10000, a, EGRESS_ADDRS_MAX, &n, &e),
                        0);
                CHECK(n >= 1 && egress_addr_classify(&a[0]) == EGRESS_LOOPBACK);
        } else
                printf("skip - the default resolver finds localhost: this system does not resolve it (no /etc/hosts "
                       "entry)\n");
        CHECK_EQ_INT(egress_resolve_default(NULL, "localhost", now_mono_ms() - 1, a, EGRESS_ADDRS_MAX, &n, &e),
                     -ETIMEDOUT);
        CHECK_EQ_INT(egress_resolve_default(NULL, "no-such-host.invalid", now_mono_ms() + 10000, a, EGRESS_ADDRS_MAX,
                                            &n, &e),
                     -EHOSTUNREACH);
        egress_policy *real = have_localhost ? policy(NULL, 0, NULL) : NULL;
        if (!have_localhost)
                printf("skip - a URL naming localhost is refused as loopback: this system does not resolve "
                       "localhost\n");
        if (real) {
                egress_target tt = {0};
                e = (hull_error){0};
                CHECK_EQ_INT(egress_check_url(real, "http://localhost:8080/", now_mono_ms() + 10000, &tt, &e), -EACCES);
                CHECK(strstr(e.msg, "(loopback) of localhost") != NULL);
                printf("# %s\n", e.msg);
                egress_policy_free(real);
        }
}

static void test_urls(void) {
        fake f = {.entries = names, .n = ELEMENTSOF(names)};
        egress_policy *p = policy(NULL, 0, &f);
        CHECK(p != NULL);
        if (!p)
                return;
        urls_refused(p, &f);
        urls_odd(p, &f);
        urls_target(p);
        egress_policy_free(p);
        urls_default_resolver();
}

/* ---- the live part ---- */

typedef struct site {
        const char *name;
        atomic_uint requests;
        char paths[2048]; /* "METHOD PATH BODY;" for each request, in order */
        pthread_mutex_t lock;
        unsigned port; /* both sites have the same */
} site;

static site internal_site = {.name = "internal", .lock = PTHREAD_MUTEX_INITIALIZER};
static site public_site = {.name = "public", .lock = PTHREAD_MUTEX_INITIALIZER};

static void note(http_req *r) {
        site *s = http_req_data(r);
        size_t len = 0;
        const char *body = http_req_body(r, &len);
        atomic_fetch_add(&s->requests, 1);
        pthread_mutex_lock(&s->lock);
        size_t used = strlen(s->paths);
        snprintf(s->paths + used, sizeof(s->paths) - used, "%s %s %.*s;", http_req_method(r), http_req_path(r),
                 (int) MIN(len, (size_t) 32), body ? body : "");
        pthread_mutex_unlock(&s->lock);
}

static void reset(site *s) {
        pthread_mutex_lock(&s->lock);
        s->paths[0] = '\0';
        atomic_store(&s->requests, 0);
        pthread_mutex_unlock(&s->lock);
}

static void redirect(http_req *r, unsigned status, const char *location) {
        http_answer_header(r, "Location", location);
        http_answer_text(r, status, "moved\n");
}

static void h_ok(http_req *r) {
        note(r);
        char text[64];
        snprintf(text, sizeof(text), "%s ok from %s\n", http_req_method(r), ((site *) http_req_data(r))->name);
        http_answer_text(r, 200, text);
}

static void h_code(http_req *r) {
        note(r);
        const char *code = http_req_param(r, "code");
        redirect(r, (unsigned) strtoul(code, NULL, 10), "/ok");
}

static void h_start(http_req *r) {
        note(r);
        redirect(r, 302, "/next");
}

static void h_loop(http_req *r) {
        note(r);
        redirect(r, 302, "/loop");
}

static void h_to(http_req *r) {
        note(r);
        const char *where = http_req_query(r, "u");
        redirect(r, 302, where ? where : "/ok");
}

static void h_nolocation(http_req *r) {
        note(r);
        http_answer_text(r, 302, "no location\n");
}

static void h_long(http_req *r) {
        note(r);
        char loc[1200] = "/ok?pad=";
        memset(loc + 8, 'x', 1000);
        loc[1008] = '\0';
        redirect(r, 301, loc);
}

static void h_big(http_req *r) {
        note(r);
        char *b = malloc(100 << 10);
        if (b)
                memset(b, 'b', 100 << 10);
        http_answer(r, 200, "text/plain", b, b ? 100 << 10 : 0);
}

static void slow(http_req *r) {
        struct timespec ts = {.tv_sec = 3};
        nanosleep(&ts, NULL);
        http_answer_text(r, 200, "late\n");
}

static void h_slow(http_req *r) {
        note(r);
        if (http_req_spawn(r, slow) < 0)
                http_answer_text(r, 500, "no thread\n");
}

static const http_api api = {.name = "egress-test"};
static const http_route routes[] = {
        {.methods = HTTP_GET | HTTP_POST | HTTP_PUT, .pattern = "/ok", .body_max = 1024, .handler = h_ok},
        {.methods = HTTP_GET | HTTP_POST | HTTP_PUT, .pattern = "/next", .body_max = 1024, .handler = h_ok},
        {.methods = HTTP_GET | HTTP_POST | HTTP_PUT, .pattern = "/admin", .body_max = 1024, .handler = h_ok},
        {.methods = HTTP_GET | HTTP_POST | HTTP_PUT, .pattern = "/code/{code}", .body_max = 1024, .handler = h_code},
        {.methods = HTTP_GET, .pattern = "/start", .handler = h_start},
        {.methods = HTTP_GET, .pattern = "/loop", .handler = h_loop},
        {.methods = HTTP_GET, .pattern = "/to", .handler = h_to},
        {.methods = HTTP_GET, .pattern = "/nolocation", .handler = h_nolocation},
        {.methods = HTTP_GET, .pattern = "/long", .handler = h_long},
        {.methods = HTTP_GET, .pattern = "/big", .handler = h_big},
        {.methods = HTTP_GET, .pattern = "/slow", .handler = h_slow},
};

static http_server *serve(const char *addr, unsigned port, site *s, hull_error *e) {
        static dlog log = {.level = DLOG_ERROR, .fd = 2};
        static metrics m[2];
        static http_config cfgs[2]; /* outlive the servers */
        char listen[64];
        http_server *srv = NULL;
        unsigned i = s == &public_site;
        snprintf(listen, sizeof(listen), "%s:%u", addr, port);
        metrics_init(&m[i]);
        cfgs[i] = (http_config){.fallback = &api, .log = &log, .metrics = &m[i]};
        if (http_listen_parse(listen, &cfgs[i].listen, &cfgs[i].listen_len) < 0 || http_new(&cfgs[i], &srv, e) < 0 ||
            http_add_routes(srv, &api, routes, ELEMENTSOF(routes), s) < 0 || http_start(srv, e) < 0) {
                if (srv)
                        http_stop(srv);
                return NULL;
        }
        s->port = http_port(srv);
        return srv;
}

typedef struct fetched {
        int r;
        webfetch_result res;
        hull_error e;
} fetched;

static fetched fetch(httpc *c, const egress_policy *p, const char *url, const webfetch_request *tmpl) {
        fetched f = {0};
        webfetch_request req = tmpl ? *tmpl : (webfetch_request){0};
        req.url = url;
        if (!req.deadline_mono_ms)
                req.deadline_mono_ms = now_mono_ms() + 20000;
        f.r = webfetch(c, p, &req, &f.res, &f.e);
        return f;
}

/* What the live cases share: the client, the two servers' port and bases, the policies. */
typedef struct live {
        httpc *c;
        unsigned port;
        char pub_base[64], in_base[64];
        egress_policy *p;         /* 127.0.0.2/32 allowed */
        egress_policy *p_default; /* nothing allowed */
        egress_policy *p_lo;      /* 127.0.0.1 allowed */
} live;

/* The client's own pins and answer_truncate. */
static void live_pins(live *l) {
        hull_error e = {0};
        char url[256];
        /* the client's own pins: a listed name goes where it is pinned, an unlisted one resolves
         * nowhere (libcurl is not asked to look it up) */
        char pin[64];
        snprintf(pin, sizeof(pin), "pinned.test:%u:127.0.0.2", l->port);
        const char *pins[] = {pin, NULL};
        httpc_answer a = {0};
        snprintf(url, sizeof(url), "http://pinned.test:%u/ok", l->port);
        CHECK_EQ_INT(httpc_perform(l->c,
                                   &(httpc_request){.method = "GET", .url = url, .resolve = pins, .answer_max = 1024},
                                   &a, &e),
                     0);
        CHECK(a.status == 200 && strcmp(a.body, "GET ok from public\n") == 0);
        httpc_answer_done(&a);
        snprintf(url, sizeof(url), "http://localhost:%u/ok", l->port);
        e = (hull_error){0};
        CHECK_EQ_INT(httpc_perform(l->c,
                                   &(httpc_request){.method = "GET", .url = url, .resolve = pins, .answer_max = 1024},
                                   &a, &e),
                     -EHOSTUNREACH);
        printf("# %s\n", e.msg);
        /* answer_truncate: the first bytes, a success */
        snprintf(url, sizeof(url), "%s/big", l->pub_base);
        CHECK_EQ_INT(httpc_perform(
                             l->c,
                             &(httpc_request){.method = "GET", .url = url, .answer_max = 1000, .answer_truncate = true},
                             &a, &e),
                     0);
        CHECK(a.status == 200 && a.truncated && a.body_len == 1000 && a.body[999] == 'b' && a.body[1000] == 0);
        httpc_answer_done(&a);
        CHECK_EQ_INT(httpc_perform(l->c, &(httpc_request){.method = "GET", .url = url, .answer_max = 1000}, &a, &e),
                     -EFBIG);
        reset(&public_site);
        reset(&internal_site);
}

/* A direct 200 and followed redirects. */
static void live_redirects(live *l) {
        char url[256];
        fetched x;
        /* a direct 200 */
        snprintf(url, sizeof(url), "%s/ok", l->pub_base);
        x = fetch(l->c, l->p, url, NULL);
        CHECK_EQ_INT(x.r, 0);
        CHECK(x.res.status == 200 && strcmp(x.res.body, "GET ok from public\n") == 0 && x.res.redirects == 0 &&
              strncmp(x.res.content_type, "text/plain", 10) == 0 && !x.res.truncated && strcmp(x.res.url, url) == 0);
        webfetch_result_done(&x.res);

        /* a relative Location joined, then checked: the requests are exactly /start then /next */
        reset(&public_site);
        snprintf(url, sizeof(url), "%s/start", l->pub_base);
        x = fetch(l->c, l->p, url, NULL);
        CHECK(x.r == 0 && x.res.status == 200 && x.res.redirects == 1);
        CHECK_EQ_STR(public_site.paths, "GET /start ;GET /next ;");
        if (x.r == 0) {
                snprintf(url, sizeof(url), "%s/next", l->pub_base);
                CHECK_EQ_STR(x.res.url, url);
        }
        webfetch_result_done(&x.res);

        /* every redirect code is followed; 303 (and 301/302 after a POST) continue as a GET
         * without the body, 307 and 308 keep the method and the body */
        static const struct {
                const char *code, *method, *want;
        } codes[] = {
                {"301", "GET", "GET /code/301 ;GET /ok ;"},
                {"302", "GET", "GET /code/302 ;GET /ok ;"},
                {"303", "GET", "GET /code/303 ;GET /ok ;"},
                {"307", "GET", "GET /code/307 ;GET /ok ;"},
                {"308", "GET", "GET /code/308 ;GET /ok ;"},
                {"301", "POST", "POST /code/301 q=1;GET /ok ;"},
                {"302", "POST", "POST /code/302 q=1;GET /ok ;"},
                {"303", "POST", "POST /code/303 q=1;GET /ok ;"},
                {"307", "POST", "POST /code/307 q=1;POST /ok q=1;"},
                {"308", "POST", "POST /code/308 q=1;POST /ok q=1;"},
        };
        for (size_t i = 0; i < ELEMENTSOF(codes); i++) {
                reset(&public_site);
                snprintf(url, sizeof(url), "%s/code/%s", l->pub_base, codes[i].code);
                bool post = strcmp(codes[i].method, "GET") != 0;
                webfetch_request t = {.method = codes[i].method,
                                      .body = post ? "q=1" : NULL,
                                      .body_len = post ? 3 : 0,
                                      .body_type = post ? "application/x-www-form-urlencoded" : NULL};
                x = fetch(l->c, l->p, url, &t);
                TEST_RESULT(x.r == 0 && x.res.status == 200 && x.res.redirects == 1 &&
                                    strcmp(public_site.paths, codes[i].want) == 0,
                            "%s after %s: %s (got %d %s)", codes[i].code, codes[i].method, codes[i].want, x.r,
                            x.r < 0 ? x.e.msg : public_site.paths);
                webfetch_result_done(&x.res);
        }
}

/* Redirects refused or cut, and one followed through the resolver. */
static void live_redirects_refused(live *l) {
        const char *allow_pub[] = {"127.0.0.2/32"};
        char url[256];
        fetched x;
        /* a redirect to a denied address is refused, naming it; the internal server sees nothing */
        reset(&internal_site);
        snprintf(url, sizeof(url), "%s/to?u=http://127.0.0.1:%u/admin", l->pub_base, l->port);
        x = fetch(l->c, l->p, url, NULL);
        CHECK_EQ_INT(x.r, -EACCES);
        CHECK(strstr(x.e.msg, "redirect 1 from") && strstr(x.e.msg, "blocked internal address 127.0.0.1 (loopback)"));
        CHECK_EQ_INT(atomic_load(&internal_site.requests), 0);
        printf("# %s\n", x.e.msg);
        /* the same by a protocol-relative Location, and to a metadata endpoint */
        snprintf(url, sizeof(url), "%s/to?u=//127.0.0.1:%u/admin", l->pub_base, l->port);
        x = fetch(l->c, l->p, url, NULL);
        CHECK(x.r == -EACCES && strstr(x.e.msg, "127.0.0.1"));
        snprintf(url, sizeof(url), "%s/to?u=http://169.254.169.254/latest/meta-data/", l->pub_base);
        x = fetch(l->c, l->p, url, NULL);
        CHECK(x.r == -EACCES && strstr(x.e.msg, "blocked cloud metadata endpoint 169.254.169.254"));
        snprintf(url, sizeof(url), "%s/to?u=file:///etc/passwd", l->pub_base);
        x = fetch(l->c, l->p, url, NULL);
        CHECK(x.r == -EINVAL && strstr(x.e.msg, "scheme 'file'"));
        snprintf(url, sizeof(url), "%s/to?u=http://u:p@127.0.0.2:%u/ok", l->pub_base, l->port);
        x = fetch(l->c, l->p, url, NULL);
        CHECK(x.r == -EINVAL && strstr(x.e.msg, "user name or password"));
        CHECK_EQ_INT(atomic_load(&internal_site.requests), 0);
        /* a public redirect to a public URL is followed (here by name, through the resolver) */
        snprintf(url, sizeof(url), "%s/to?u=http://pinned-by-fake.test:%u/ok", l->pub_base, l->port);
        {
                fake_entry e2[] = {{"pinned-by-fake.test", {"127.0.0.2", NULL}}};
                fake f2 = {.entries = e2, .n = 1};
                egress_policy *p2 = policy(allow_pub, 1, &f2);
                x = fetch(l->c, p2, url, NULL);
                CHECK(x.r == 0 && x.res.status == 200 && x.res.redirects == 1 && atomic_load(&f2.calls) == 1);
                webfetch_result_done(&x.res);
                egress_policy_free(p2);
        }

        /* a loop: "too many redirects" after max_redirects + 1 requests */
        reset(&public_site);
        snprintf(url, sizeof(url), "%s/loop", l->pub_base);
        x = fetch(l->c, l->p, url, &(webfetch_request){.max_redirects = 3});
        CHECK(x.r == -ELOOP && strstr(x.e.msg, "too many redirects"));
        CHECK_EQ_INT(atomic_load(&public_site.requests), 4);
        x = fetch(l->c, l->p, url, NULL);
        CHECK(x.r == -ELOOP && strstr(x.e.msg, "too many redirects (more than 5)"));
        /* a redirect without a Location; one with a long Location (1 KB) */
        snprintf(url, sizeof(url), "%s/nolocation", l->pub_base);
        x = fetch(l->c, l->p, url, NULL);
        CHECK(x.r == -EPROTO && strstr(x.e.msg, "without a Location"));
        snprintf(url, sizeof(url), "%s/long", l->pub_base);
        x = fetch(l->c, l->p, url, NULL);
        CHECK(x.r == 0 && x.res.status == 200 && x.res.redirects == 1 && strstr(x.res.url, "xxxxxxxxxx"));
        webfetch_result_done(&x.res);
}

/* A blocked first URL, the allowlist, and DNS rebinding. */
static void live_blocked(live *l) {
        const char *allow_pub[] = {"127.0.0.2/32"};
        hull_error e = {0};
        char url[256];
        fetched x;
        /* a blocked first URL makes no request at all */
        reset(&internal_site);
        snprintf(url, sizeof(url), "%s/ok", l->in_base);
        x = fetch(l->c, l->p_default, url, NULL);
        CHECK(x.r == -EACCES && strstr(x.e.msg, "blocked internal address 127.0.0.1 (loopback)"));
        x = fetch(l->c, l->p, url, NULL);
        CHECK_EQ_INT(x.r, -EACCES);
        CHECK_EQ_INT(atomic_load(&internal_site.requests), 0);
        /* the loopback server: refused by default, reached through the allowlist */
        x = fetch(l->c, l->p_lo, url, NULL);
        CHECK(x.r == 0 && x.res.status == 200 && strcmp(x.res.body, "GET ok from internal\n") == 0);
        CHECK_EQ_INT(atomic_load(&internal_site.requests), 1);
        webfetch_result_done(&x.res);

        /* DNS rebinding: the resolver says 127.0.0.2 (allowed) when asked first, 127.0.0.1 after.
         * The connection goes to the address checked; the internal server sees nothing. */
        {
                fake_entry e3[] = {{"localhost", {"127.0.0.2", NULL}}};
                fake f3 = {.entries = e3, .n = 1, .rebind_host = "localhost", .rebind_to = "127.0.0.1"};
                egress_policy *p3 = policy(allow_pub, 1, &f3);
                reset(&internal_site);
                reset(&public_site);
                snprintf(url, sizeof(url), "http://localhost:%u/ok", l->port);
                x = fetch(l->c, p3, url, NULL);
                CHECK(x.r == 0 && x.res.status == 200 && strcmp(x.res.body, "GET ok from public\n") == 0);
                CHECK_EQ_INT(atomic_load(&internal_site.requests), 0);
                CHECK_EQ_INT(atomic_load(&public_site.requests), 1);
                CHECK_EQ_INT(atomic_load(&f3.calls), 1);
                webfetch_result_done(&x.res);
                /* the name's next answer (127.0.0.1) is checked like any other: refused */
                x = fetch(l->c, p3, url, NULL);
                CHECK(x.r == -EACCES && strstr(x.e.msg, "127.0.0.1 (loopback) of localhost"));
                CHECK_EQ_INT(atomic_load(&internal_site.requests), 0);
                /* the same name through a redirect: re-resolved, checked, refused */
                fake f4 = {.entries = e3, .n = 1, .rebind_host = "localhost", .rebind_to = "127.0.0.1"};
                egress_policy *p4 = policy(allow_pub, 1, &f4);
                snprintf(url, sizeof(url), "http://localhost:%u/to?u=/ok", l->port);
                x = fetch(l->c, p4, url, NULL);
                CHECK(x.r == -EACCES && strstr(x.e.msg, "redirect 1") && strstr(x.e.msg, "127.0.0.1"));
                CHECK_EQ_INT(atomic_load(&internal_site.requests), 0);
                /* the control: the same URL without the pin reaches the internal server, so the
                 * test above would see a request if the connection resolved the name again */
                httpc_answer a = {0};
                snprintf(url, sizeof(url), "http://localhost:%u/ok", l->port);
                CHECK_EQ_INT(
                        httpc_perform(l->c, &(httpc_request){.method = "GET", .url = url, .answer_max = 1024}, &a, &e),
                        0);
                CHECK(a.status == 200 && strcmp(a.body, "GET ok from internal\n") == 0);
                CHECK_EQ_INT(atomic_load(&internal_site.requests), 1);
                httpc_answer_done(&a);
                egress_policy_free(p4);
                egress_policy_free(p3);
        }
}

/* The body cap, the deadline and a cancel. */
static void live_limits(live *l) {
        char url[256];
        fetched x;
        /* the body cap: text cut at max_bytes, with the declared full size */
        snprintf(url, sizeof(url), "%s/big", l->pub_base);
        x = fetch(l->c, l->p, url, &(webfetch_request){.max_bytes = 1000});
        CHECK(x.r == 0 && x.res.status == 200 && x.res.truncated && x.res.body_len == 1000 &&
              x.res.full_bytes == 100 << 10);
        webfetch_result_done(&x.res);
        x = fetch(l->c, l->p, url, &(webfetch_request){.max_bytes = 200 << 10});
        CHECK(x.r == 0 && !x.res.truncated && x.res.body_len == 100 << 10 && x.res.full_bytes == -1);
        webfetch_result_done(&x.res);

        /* the deadline: one for the whole fetch (a redirect, then a slow answer) */
        snprintf(url, sizeof(url), "%s/to?u=/slow", l->pub_base);
        x = fetch(l->c, l->p, url, &(webfetch_request){.deadline_mono_ms = now_mono_ms() + 800});
        CHECK_EQ_INT(x.r, -ETIMEDOUT);
        printf("# %s\n", x.e.msg);
        x = fetch(l->c, l->p, url, &(webfetch_request){.deadline_mono_ms = now_mono_ms() - 1});
        CHECK(x.r == -ETIMEDOUT && strstr(x.e.msg, "no time left"));
        /* a cancel */
        atomic_bool cancel = true;
        x = fetch(l->c, l->p, url, &(webfetch_request){.cancel = &cancel});
        CHECK_EQ_INT(x.r, -ECANCELED);
}

static void test_live(void) {
        hull_error e = {0};
        httpc *c = NULL;
        if (httpc_new(&c, &e) < 0) {
                printf("skip - no libcurl: %s\n", e.msg);
                return;
        }
        http_server *in = serve("127.0.0.1", 0, &internal_site, &e);
        http_server *pub = in ? serve("127.0.0.2", internal_site.port, &public_site, &e) : NULL;
        if (!in || !pub) {
                printf("skip - no loopback servers (127.0.0.1 and 127.0.0.2 on one port): %s\n", e.msg);
                if (in)
                        http_stop(in);
                httpc_free(c);
                return;
        }
        live l = {.c = c, .port = internal_site.port};
        snprintf(l.pub_base, sizeof(l.pub_base), "http://127.0.0.2:%u", l.port);
        snprintf(l.in_base, sizeof(l.in_base), "http://127.0.0.1:%u", l.port);

        fake f = {.entries = names, .n = ELEMENTSOF(names)};
        const char *allow_pub[] = {"127.0.0.2/32"};
        l.p = policy(allow_pub, 1, &f);
        l.p_default = policy(NULL, 0, &f);
        const char *allow_lo[] = {"127.0.0.1"};
        l.p_lo = policy(allow_lo, 1, &f);
        CHECK(l.p && l.p_default && l.p_lo);
        if (!l.p || !l.p_default || !l.p_lo)
                goto out;

        live_pins(&l);
        live_redirects(&l);
        live_redirects_refused(&l);
        live_blocked(&l);
        live_limits(&l);

out:
        egress_policy_free(l.p);
        egress_policy_free(l.p_default);
        egress_policy_free(l.p_lo);
        /* the slow handler's thread: wait for it before stopping */
        for (int i = 0; i < 100 && (http_busy(pub) || http_busy(in)); i++) {
                struct timespec ts = {.tv_nsec = 100 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        CHECK_EQ_INT(http_stop(pub), 0);
        CHECK_EQ_INT(http_stop(in), 0);
        httpc_free(c);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        test_classes();
        test_parse();
        test_decisions();
        test_urls();
        test_live();
        return test_done();
}
