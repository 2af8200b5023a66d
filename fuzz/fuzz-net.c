/* fuzz-net.c: a limited sandbox's pure parsers over arbitrary bytes: the proxy's request head
 * (a parsed head lies within the input, names a valid host and port, and its rewrite is one head
 * that parses as origin-form and carries no hop-by-hop header), apt's source lists (every host
 * found is a valid pattern that matches itself), pip.conf values (NUL-terminated within their
 * buffer, "" when not set), and host patterns over the input's lines. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sbx-net.h"

#define LINES_MAX 16

static void check_req(const char *buf, size_t len) {
        sbx_net_req r;
        static char out[SBX_NET_HEAD_MAX + 64];
        int k = sbx_net_req_parse(buf, len, &r);
        if (k == -EAGAIN && len >= SBX_NET_HEAD_MAX)
                abort();
        if (k != 0)
                return;
        if (r.head_len == 0 || r.head_len > len || r.head_len > SBX_NET_HEAD_MAX || r.header_off > r.head_len)
                abort();
        if (r.port == 0 || r.port > 65535 || !sbx_net_pattern_valid(r.host) || !sbx_net_host_matches(r.host, r.host))
                abort();
        if (r.kind != SBX_NET_REQ_HTTP)
                return;
        if (r.method < buf || r.target < buf || r.target + r.target_len > buf + r.head_len)
                abort();
        int n = sbx_net_req_rewrite(buf, &r, out, sizeof(out));
        if (n < 0)
                return;
        if ((size_t) n < 4 || memcmp(out + n - 4, "\r\n\r\n", 4) != 0 || out[r.method_len + 1] != '/')
                abort();
        for (int i = 0; i + 1 < n; i++)
                if (out[i] == '\n' &&
                    (strncasecmp(out + i + 1, "proxy-", 6) == 0 || strncasecmp(out + i + 1, "keep-alive:", 11) == 0))
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char buf[1 << 16];
        static char *hosts[65];
        if (size >= sizeof(buf))
                return 0;
        memcpy(buf, data, size);
        buf[size] = '\0';
        check_req(buf, size);

        static char resolv[SBX_ETC_FILE_MAX];
        size_t ns = sbx_net_resolv_conf(buf, size, resolv, sizeof(resolv));
        if (ns > 3 || strlen(resolv) >= sizeof(resolv) || (ns == 0 && resolv[0]))
                abort();

        size_t n = 0;
        int k = sbx_net_apt_hosts(buf, size, hosts, &n, 64);
        if (k < 0 && k != -E2BIG && k != -ENOMEM)
                abort();
        for (size_t i = 0; i < n; i++) {
                if (!sbx_net_pattern_valid(hosts[i]) || !sbx_net_host_matches(hosts[i], hosts[i]))
                        abort();
                free(hosts[i]);
                hosts[i] = NULL;
        }

        static const char *const pip_keys[] = {"index-url", "extra-index-url", "trusted-host"};
        for (size_t i = 0; i < 3; i++) {
                char small[16], val[SBX_NET_PIP_SETTING_MAX];
                for (int sec = 0; sec < 2; sec++) {
                        const char *section = sec ? "install" : "global";
                        int v = sbx_net_pip_conf_value(buf, size, section, pip_keys[i], val, sizeof(val));
                        if ((v != 0 && v != 1 && v != -E2BIG) || strnlen(val, sizeof(val)) >= sizeof(val) ||
                            (v == 0 && val[0]) || (v == 1 && (val[0] == ' ' || val[0] == '\t')))
                                abort();
                        v = sbx_net_pip_conf_value(buf, size, section, pip_keys[i], small, sizeof(small));
                        if ((v != 0 && v != 1 && v != -E2BIG) || strnlen(small, sizeof(small)) >= sizeof(small))
                                abort();
                }
        }

        char *lines[LINES_MAX];
        size_t nl = 0;
        for (char *p = buf; p && nl < LINES_MAX && p < buf + size;) {
                char *e = strchr(p, '\n');
                if (e)
                        *e = '\0';
                lines[nl++] = p;
                p = e ? e + 1 : NULL;
        }
        for (size_t i = 0; i < nl; i++) {
                bool valid = sbx_net_pattern_valid(lines[i]);
                if (valid && lines[i][0] != '*' && !sbx_net_host_matches(lines[i], lines[i]))
                        abort();
                for (size_t j = 0; j < nl; j++)
                        (void) sbx_net_host_matches(lines[i], lines[j]);
        }
        return 0;
}
