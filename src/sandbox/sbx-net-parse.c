/* sbx-net-parse.c: the pure parts of a limited sandbox's network (see sbx-net.h): the proxy's
 * request head and its rewrite, host patterns, and the hosts of apt's source lists. No I/O. */
#include <arpa/inet.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress.h"
#include "macro.h"
#include "sbx-net.h"

#define METHOD_MAX 32U

static char lower(char c) {
        return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
}

static bool is_name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
               c == '.';
}

/* A host name: name characters only, no empty label, at most EGRESS_HOST_MAX bytes. */
static bool name_valid(const char *s, size_t len) {
        if (len == 0 || len > EGRESS_HOST_MAX || s[0] == '.')
                return false;
        for (size_t i = 0; i < len; i++) {
                if (!is_name_char(s[i]))
                        return false;
                if (s[i] == '.' && i + 1 < len && s[i + 1] == '.')
                        return false;
        }
        return true;
}

/* s (len bytes) without a final dot. */
static size_t strip_dot(const char *s, size_t len) {
        return len > 1 && s[len - 1] == '.' ? len - 1 : len;
}

bool sbx_net_pattern_valid(const char *pattern) {
        egress_addr a;
        if (!pattern)
                return false;
        if (egress_addr_parse(pattern, &a) == 0)
                return true;
        if (pattern[0] == '*' && pattern[1] == '.')
                pattern += 2;
        return name_valid(pattern, strlen(pattern));
}

bool sbx_net_host_matches(const char *pattern, const char *host) {
        egress_addr pa, ha;
        if (!pattern || !host)
                return false;
        bool p_addr = egress_addr_parse(pattern, &pa) == 0, h_addr = egress_addr_parse(host, &ha) == 0;
        if (p_addr || h_addr)
                return p_addr && h_addr && pa.family == ha.family && memcmp(pa.bytes, ha.bytes, 16) == 0;
        size_t hl = strip_dot(host, strlen(host));
        if (pattern[0] == '*' && pattern[1] == '.') {
                const char *suf = pattern + 1; /* ".suffix" */
                size_t sl = strip_dot(suf, strlen(suf));
                return sl > 1 && hl > sl && strncasecmp(host + hl - sl, suf, sl) == 0;
        }
        size_t pl = strip_dot(pattern, strlen(pattern));
        return pl == hl && pl > 0 && strncasecmp(pattern, host, pl) == 0;
}

/* The host and port of an authority "host[:port]" or "[v6][:port]" into ret (lowercase; a
 * literal strictly as egress_addr_parse reads it). default_port 0: the port is required. A name
 * that inet_aton reads as an address in another spelling (127.1, 0x7f000001) is refused. */
static int parse_authority(const char *s, size_t len, unsigned default_port, sbx_net_req *ret) {
        const char *host = s, *port = NULL;
        size_t host_len, port_len = 0;
        if (len > 0 && s[0] == '[') {
                const char *close = memchr(s, ']', len);
                if (!close)
                        return -EINVAL;
                host = s + 1;
                host_len = (size_t) (close - host);
                size_t rest = len - (size_t) (close - s) - 1;
                if (rest > 0) {
                        if (close[1] != ':')
                                return -EINVAL;
                        port = close + 2;
                        port_len = rest - 1;
                }
        } else {
                const char *colon = memchr(s, ':', len);
                host_len = colon ? (size_t) (colon - s) : len;
                if (colon) {
                        port = colon + 1;
                        port_len = len - host_len - 1;
                }
        }
        if (host_len == 0 || host_len > EGRESS_HOST_MAX)
                return -EINVAL;
        for (size_t i = 0; i < host_len; i++)
                ret->host[i] = lower(host[i]);
        ret->host[host_len] = '\0';
        egress_addr a;
        bool literal = egress_addr_parse(ret->host, &a) == 0;
        if (host != s && (!literal || a.family != AF_INET6))
                return -EINVAL; /* brackets hold an IPv6 address and nothing else */
        if (!literal) {
                struct in_addr v4;
                if (!name_valid(ret->host, host_len) || inet_aton(ret->host, &v4) != 0)
                        return -EINVAL;
        }
        if (port) {
                unsigned v = 0;
                if (port_len == 0 || port_len > 5)
                        return -EINVAL;
                for (size_t i = 0; i < port_len; i++) {
                        if (port[i] < '0' || port[i] > '9')
                                return -EINVAL;
                        v = v * 10 + (unsigned) (port[i] - '0');
                }
                if (v == 0 || v > 65535)
                        return -EINVAL;
                ret->port = v;
        } else if (default_port)
                ret->port = default_port;
        else
                return -EINVAL;
        return 0;
}

/* The end of the head: the offset just past its blank line, or 0 when there is none yet. Lines
 * end in "\r\n" or "\n". */
static size_t head_end(const char *buf, size_t len) {
        for (size_t i = 0; i < len; i++) {
                if (buf[i] != '\n')
                        continue;
                if (i + 1 < len && buf[i + 1] == '\n')
                        return i + 2;
                if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
                        return i + 3;
        }
        return 0;
}

int sbx_net_req_parse(const char *buf, size_t len, sbx_net_req *ret) {
        sbx_net_req r = {0};
        size_t scan = len < SBX_NET_HEAD_MAX ? len : SBX_NET_HEAD_MAX;
        size_t end = head_end(buf, scan);
        if (end == 0)
                return len >= SBX_NET_HEAD_MAX ? -E2BIG : -EAGAIN;
        if (memchr(buf, '\0', end))
                return -EINVAL;
        const char *nl = memchr(buf, '\n', end);
        size_t line_len = (size_t) (nl - buf);
        r.header_off = line_len + 1;
        if (line_len > 0 && buf[line_len - 1] == '\r')
                line_len--;
        /* METHOD SP TARGET SP HTTP/1.x */
        const char *sp1 = memchr(buf, ' ', line_len);
        if (!sp1)
                return -EINVAL;
        r.method = buf;
        r.method_len = (size_t) (sp1 - buf);
        if (r.method_len == 0 || r.method_len > METHOD_MAX)
                return -EINVAL;
        for (size_t i = 0; i < r.method_len; i++)
                if (buf[i] < 'A' || buf[i] > 'Z')
                        return -EINVAL;
        const char *tgt = sp1 + 1;
        const char *sp2 = memchr(tgt, ' ', line_len - (size_t) (tgt - buf));
        if (!sp2 || sp2 == tgt)
                return -EINVAL;
        size_t tgt_len = (size_t) (sp2 - tgt);
        const char *ver = sp2 + 1;
        size_t ver_len = line_len - (size_t) (ver - buf);
        if (ver_len != 8 || memcmp(ver, "HTTP/1.", 7) != 0 || (ver[7] != '0' && ver[7] != '1'))
                return -EINVAL;
        r.minor = (unsigned) (ver[7] - '0');
        for (size_t i = 0; i < tgt_len; i++)
                if ((unsigned char) tgt[i] <= ' ' || tgt[i] == 0x7f)
                        return -EINVAL;

        if (r.method_len == 7 && memcmp(buf, "CONNECT", 7) == 0) {
                r.kind = SBX_NET_REQ_CONNECT;
                if (memchr(tgt, '/', tgt_len) || memchr(tgt, '@', tgt_len))
                        return -EINVAL;
                int k = parse_authority(tgt, tgt_len, 0, &r);
                if (k < 0)
                        return k;
        } else {
                static const char scheme[] = "http://";
                r.kind = SBX_NET_REQ_HTTP;
                if (tgt_len < sizeof(scheme) - 1 || strncasecmp(tgt, scheme, sizeof(scheme) - 1) != 0)
                        return -EINVAL;
                const char *auth = tgt + sizeof(scheme) - 1;
                size_t rest = tgt_len - (sizeof(scheme) - 1);
                size_t auth_len = 0;
                while (auth_len < rest && auth[auth_len] != '/' && auth[auth_len] != '?' && auth[auth_len] != '#')
                        auth_len++;
                if (memchr(auth, '@', auth_len))
                        return -EINVAL;
                int k = parse_authority(auth, auth_len, 80, &r);
                if (k < 0)
                        return k;
                r.target = auth + auth_len;
                r.target_len = rest - auth_len;
                if (r.target_len > 0 && r.target[0] == '#')
                        r.target_len = 0;
        }
        /* Every header line holds a colon (or continues the previous one). */
        for (size_t off = r.header_off; off < end;) {
                const char *lnl = memchr(buf + off, '\n', end - off);
                size_t ll = (size_t) (lnl - (buf + off));
                size_t content = ll > 0 && buf[off + ll - 1] == '\r' ? ll - 1 : ll;
                if (content > 0 && buf[off] != ' ' && buf[off] != '\t' && !memchr(buf + off, ':', content))
                        return -EINVAL;
                if (content > 0 && buf[off] == ':')
                        return -EINVAL;
                off += ll + 1;
        }
        r.head_len = end;
        *ret = r;
        return 0;
}

static bool hop_by_hop(const char *name, size_t len) {
        static const char *const names[] = {"connection", "keep-alive", "te", "trailer", "upgrade"};
        while (len > 0 && (name[len - 1] == ' ' || name[len - 1] == '\t'))
                len--;
        if (len >= 6 && strncasecmp(name, "proxy-", 6) == 0)
                return true; /* every Proxy-* header was meant for this proxy */
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strlen(names[i]) == len && strncasecmp(names[i], name, len) == 0)
                        return true;
        return false;
}

/* Append n bytes at *pos of out (size bytes); false when they do not fit. */
static bool put(char *out, size_t size, size_t *pos, const char *s, size_t n) {
        if (n > size - *pos)
                return false;
        memcpy(out + *pos, s, n);
        *pos += n;
        return true;
}

int sbx_net_req_rewrite(const char *buf, const sbx_net_req *req, char *out, size_t size) {
        size_t pos = 0;
        char ver[] = "HTTP/1.0\r\n";
        ver[7] = (char) ('0' + (req->minor ? 1 : 0));
        if (req->kind != SBX_NET_REQ_HTTP)
                return -EINVAL;
        bool slash = req->target_len == 0 || req->target[0] != '/';
        if (!put(out, size, &pos, req->method, req->method_len) || !put(out, size, &pos, " ", 1) ||
            (slash && !put(out, size, &pos, "/", 1)) || !put(out, size, &pos, req->target, req->target_len) ||
            !put(out, size, &pos, " ", 1) || !put(out, size, &pos, ver, sizeof(ver) - 1))
                return -E2BIG;
        bool dropping = false;
        for (size_t off = req->header_off; off < req->head_len;) {
                const char *lnl = memchr(buf + off, '\n', req->head_len - off);
                if (!lnl)
                        break;
                size_t ll = (size_t) (lnl - (buf + off));
                size_t content = ll > 0 && buf[off + ll - 1] == '\r' ? ll - 1 : ll;
                const char *line = buf + off;
                off += ll + 1;
                if (content == 0)
                        break; /* the blank line */
                if (line[0] == ' ' || line[0] == '\t') {
                        if (dropping)
                                continue; /* a continuation of a dropped header */
                } else {
                        const char *colon = memchr(line, ':', content);
                        dropping = !colon || hop_by_hop(line, (size_t) (colon - line));
                        if (dropping)
                                continue;
                }
                if (!put(out, size, &pos, line, content) || !put(out, size, &pos, "\r\n", 2))
                        return -E2BIG;
        }
        static const char tail[] = "Connection: close\r\n\r\n";
        if (!put(out, size, &pos, tail, sizeof(tail) - 1))
                return -E2BIG;
        return (int) pos;
}

/* The host of an http(s) URI (s, len bytes) in lowercase into out, or false. */
static bool uri_host(const char *s, size_t len, char out[static EGRESS_HOST_MAX + 1]) {
        size_t skip;
        if (len > 7 && strncasecmp(s, "http://", 7) == 0)
                skip = 7;
        else if (len > 8 && strncasecmp(s, "https://", 8) == 0)
                skip = 8;
        else
                return false;
        s += skip;
        len -= skip;
        size_t a = 0;
        while (a < len && s[a] != '/' && s[a] != '?' && s[a] != '#')
                a++;
        const char *at = NULL;
        for (size_t i = 0; i < a; i++)
                if (s[i] == '@')
                        at = s + i;
        if (at) {
                a -= (size_t) (at + 1 - s);
                s = at + 1;
        }
        sbx_net_req r = {0};
        if (parse_authority(s, a, 80, &r) < 0)
                return false;
        memcpy(out, r.host, strlen(r.host) + 1);
        return true;
}

static int hosts_add(char **hosts, size_t *n, size_t max, const char *host) {
        for (size_t i = 0; i < *n; i++)
                if (strcmp(hosts[i], host) == 0)
                        return 0;
        if (*n >= max)
                return -E2BIG;
        char *c = strdup(host);
        if (!c)
                return -ENOMEM;
        hosts[(*n)++] = c;
        hosts[*n] = NULL;
        return 0;
}

static bool is_space(char c) {
        return c == ' ' || c == '\t' || c == '\r';
}

int sbx_net_apt_hosts(const char *text, size_t len, char **hosts, size_t *n, size_t max) {
        char host[EGRESS_HOST_MAX + 1];
        bool in_uris = false;
        for (size_t off = 0; off < len;) {
                const char *line = text + off;
                const char *nl = memchr(line, '\n', len - off);
                size_t ll = nl ? (size_t) (nl - line) : len - off;
                off += ll + 1;
                const char *hash = memchr(line, '#', ll);
                if (hash)
                        ll = (size_t) (hash - line);
                bool continuation = ll > 0 && is_space(line[0]);
                /* The line's words. */
                const char *w[64];
                size_t wl[64], nw = 0;
                for (size_t i = 0; i < ll && nw < ELEMENTSOF(w);) {
                        while (i < ll && is_space(line[i]))
                                i++;
                        if (i >= ll)
                                break;
                        size_t s = i;
                        while (i < ll && !is_space(line[i]))
                                i++;
                        w[nw] = line + s;
                        wl[nw++] = i - s;
                }
                if (nw == 0) {
                        if (!continuation)
                                in_uris = false;
                        continue;
                }
                size_t first = 0;
                if (continuation && in_uris)
                        ; /* more URIs of the field above */
                else if (wl[0] == 5 && strncasecmp(w[0], "URIs:", 5) == 0) {
                        in_uris = true;
                        first = 1;
                } else if (wl[0] > 5 && strncasecmp(w[0], "URIs:", 5) == 0) {
                        /* "URIs:http://..." */
                        in_uris = true;
                        w[0] += 5;
                        wl[0] -= 5;
                } else {
                        in_uris = false;
                        if ((wl[0] == 3 && memcmp(w[0], "deb", 3) == 0) ||
                            (wl[0] == 7 && memcmp(w[0], "deb-src", 7) == 0)) {
                                size_t i = 1;
                                if (i < nw && w[i][0] == '[') {
                                        while (i < nw && w[i][wl[i] - 1] != ']')
                                                i++;
                                        i++;
                                }
                                if (i < nw && uri_host(w[i], wl[i], host)) {
                                        int k = hosts_add(hosts, n, max, host);
                                        if (k < 0)
                                                return k;
                                }
                        }
                        continue;
                }
                for (size_t i = first; i < nw; i++)
                        if (uri_host(w[i], wl[i], host)) {
                                int k = hosts_add(hosts, n, max, host);
                                if (k < 0)
                                        return k;
                        }
        }
        return 0;
}

size_t sbx_net_resolv_conf(const char *text, size_t len, char *out, size_t size) {
        static const char key[] = "nameserver";
        size_t n = 0, used = 0;
        if (size == 0)
                return 0;
        out[0] = '\0';
        for (size_t at = 0; at < len && n < 3;) {
                const char *line = text + at;
                const char *nl = memchr(line, '\n', len - at);
                size_t ll = nl ? (size_t) (nl - line) : len - at;
                at += ll + 1;
                if (ll <= sizeof(key) || memcmp(line, key, sizeof(key) - 1) != 0 ||
                    (line[sizeof(key) - 1] != ' ' && line[sizeof(key) - 1] != '\t'))
                        continue;
                size_t a = sizeof(key) - 1;
                while (a < ll && (line[a] == ' ' || line[a] == '\t'))
                        a++;
                size_t b = a;
                while (b < ll && line[b] != ' ' && line[b] != '\t' && line[b] != '\r' && line[b] != '#' &&
                       line[b] != ';')
                        b++;
                char addr[INET6_ADDRSTRLEN];
                if (b == a || b - a >= sizeof(addr))
                        continue;
                memcpy(addr, line + a, b - a);
                addr[b - a] = '\0';
                unsigned char bin[16];
                bool usable;
                if (inet_pton(AF_INET, addr, bin) == 1)
                        usable = bin[0] != 127 && bin[0] != 0 && !(bin[0] == 169 && bin[1] == 254) && bin[0] < 224;
                else if (inet_pton(AF_INET6, addr, bin) == 1) {
                        static const unsigned char zero[15] = {0};
                        bool lo_or_any = memcmp(bin, zero, 15) == 0 && bin[15] <= 1;
                        bool mapped = memcmp(bin, zero, 10) == 0 && bin[10] == 0xff && bin[11] == 0xff;
                        usable =
                                !lo_or_any && !mapped && bin[0] != 0xff && !(bin[0] == 0xfe && (bin[1] & 0xc0) == 0x80);
                } else
                        continue;
                if (!usable)
                        continue;
                int w = snprintf(out + used, size - used, "nameserver %s\n", addr);
                if (w < 0 || (size_t) w >= size - used) {
                        out[used] = '\0';
                        break;
                }
                used += (size_t) w;
                n++;
        }
        return n;
}

bool sbx_net_uri_host(const char *s, size_t len, char out[static EGRESS_HOST_MAX + 1]) {
        return uri_host(s, len, out);
}

/* Whether a pip.conf key (k, kl bytes) names key: case-insensitive, '_' as '-' (as pip reads). */
static bool conf_key_is(const char *k, size_t kl, const char *key) {
        if (kl != strlen(key))
                return false;
        for (size_t i = 0; i < kl; i++)
                if ((k[i] == '_' ? '-' : lower(k[i])) != key[i])
                        return false;
        return true;
}

/* Append s (len bytes, trimmed), space-separated, to out (used bytes of size). */
static int conf_append(char *out, size_t size, size_t *used, const char *s, size_t len) {
        while (len > 0 && (*s == ' ' || *s == '\t'))
                s++, len--;
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
                len--;
        if (len == 0)
                return 0;
        size_t sep = *used > 0 ? 1 : 0;
        if (*used + sep + len >= size)
                return -E2BIG;
        if (sep)
                out[(*used)++] = ' ';
        memcpy(out + *used, s, len);
        *used += len;
        out[*used] = '\0';
        return 0;
}

int sbx_net_pip_conf_value(const char *text, size_t len, const char *section, const char *key, char *out, size_t size) {
        bool in_section = false, in_value = false, found = false;
        size_t used = 0;
        if (size == 0)
                return -E2BIG;
        out[0] = '\0';
        for (size_t at = 0; at < len;) {
                const char *line = text + at;
                const char *nl = memchr(line, '\n', len - at);
                size_t ll = nl ? (size_t) (nl - line) : len - at;
                at += ll + 1;
                size_t a = 0;
                while (a < ll && (line[a] == ' ' || line[a] == '\t'))
                        a++;
                if (a == ll || line[a] == '\r' || line[a] == '#' || line[a] == ';')
                        continue;        /* blank lines and comments end no value, as configparser reads */
                if (a > 0 && in_value) { /* an indented continuation line */
                        if (conf_append(out, size, &used, line + a, ll - a) < 0)
                                return -E2BIG;
                        continue;
                }
                in_value = false;
                if (line[a] == '[') {
                        const char *end = memchr(line + a, ']', ll - a);
                        size_t sl = end ? (size_t) (end - (line + a + 1)) : 0;
                        in_section = end && sl == strlen(section) && memcmp(line + a + 1, section, sl) == 0;
                        continue;
                }
                size_t d = a;
                while (d < ll && line[d] != '=' && line[d] != ':')
                        d++;
                if (d == ll || !in_section)
                        continue;
                size_t ke = d;
                while (ke > a && (line[ke - 1] == ' ' || line[ke - 1] == '\t'))
                        ke--;
                if (!conf_key_is(line + a, ke - a, key))
                        continue;
                used = 0; /* the last one counts */
                out[0] = '\0';
                found = in_value = true;
                if (conf_append(out, size, &used, line + d + 1, ll - d - 1) < 0)
                        return -E2BIG;
        }
        return found ? 1 : 0;
}
