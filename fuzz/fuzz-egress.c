/* fuzz-egress.c: the egress guard's pure parts over arbitrary lines: address and CIDR parsing
 * round-trip, the classification of an IPv4 address equals that of its IPv4-mapped form, a CIDR
 * holds its own network and an address holds itself, and the decision on a host's addresses
 * denies every set that holds a metadata endpoint (with that message), whatever the allowlist
 * made of the same lines says. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"

#define LINES_MAX 64

static void check_addr(const egress_addr *a) {
        char s[EGRESS_ADDR_STR_MAX];
        egress_addr b;
        egress_cidr self;
        egress_class c = egress_addr_classify(a);
        if ((unsigned) c >= _EGRESS_CLASS_MAX)
                abort();
        if (egress_addr_parse(egress_addr_to_string(a, s), &b) < 0 || b.family != a->family ||
            memcmp(a->bytes, b.bytes, 16) != 0)
                abort();
        if (egress_cidr_parse(s, &self) < 0 || !egress_cidr_contains(&self, a))
                abort();
        if (a->family == AF_INET) {
                egress_addr m = {.family = AF_INET6}, v4;
                m.bytes[10] = m.bytes[11] = 0xff;
                memcpy(m.bytes + 12, a->bytes, 4);
                if (egress_addr_classify(&m) != c || egress_addr_embedded(&m, &v4) != EGRESS_EMBED_MAPPED ||
                    memcmp(v4.bytes, a->bytes, 4) != 0 || !egress_cidr_contains(&self, &m))
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char buf[1 << 16];
        static char *lines[LINES_MAX];
        static egress_addr addrs[LINES_MAX];
        size_t n_lines = 0, n_addrs = 0;
        bool metadata = false;
        if (size >= sizeof(buf))
                return 0;
        memcpy(buf, data, size);
        buf[size] = '\0';
        for (char *p = buf; p && *p && n_lines < LINES_MAX;) {
                char *nl = strchr(p, '\n');
                if (nl)
                        *nl = '\0';
                lines[n_lines++] = p;
                p = nl ? nl + 1 : NULL;
        }
        for (size_t i = 0; i < n_lines; i++) {
                egress_cidr c;
                if (egress_addr_parse(lines[i], &addrs[n_addrs]) == 0) {
                        check_addr(&addrs[n_addrs]);
                        metadata |= egress_addr_classify(&addrs[n_addrs]) == EGRESS_METADATA;
                        n_addrs++;
                }
                if (egress_cidr_parse(lines[i], &c) == 0) {
                        if (!egress_cidr_contains(&c, &c.net))
                                abort();
                        check_addr(&c.net);
                }
        }
        egress_policy *p = NULL;
        hull_error e = {0};
        if (egress_policy_new((const char *const *) lines, n_lines, NULL, NULL, &p, &e) < 0)
                p = NULL;
        if (!p && egress_policy_new(NULL, 0, NULL, NULL, &p, &e) < 0)
                return 0;
        const char *host = n_lines ? lines[0] : "";
        int r = egress_check_addrs(p, host, addrs, n_addrs, &e);
        if (metadata && (r != -EACCES || !strstr(e.msg, "blocked cloud metadata endpoint")))
                abort();
        if (n_addrs == 0 && r != -EACCES)
                abort();
        if (r == 0 && n_addrs > 0)
                for (size_t i = 0; i < n_addrs; i++)
                        if (egress_addr_classify(&addrs[i]) != EGRESS_PUBLIC && !egress_host_allowed(p, host)) {
                                /* allowed only through a CIDR of the allowlist, which must hold it */
                                bool held = false;
                                for (size_t j = 0; j < n_lines && !held; j++) {
                                        egress_cidr c;
                                        held = egress_cidr_parse(lines[j], &c) == 0 &&
                                               egress_cidr_contains(&c, &addrs[i]);
                                }
                                if (!held)
                                        abort();
                        }
        egress_policy_free(p);
        return 0;
}
