/* sbx-net.h: a sandbox's network. Three modes:
 *
 * - none (the default): the sandbox has its own network namespace with only loopback up;
 *   nothing leaves it.
 * - limited: the same namespace, plus one listening TCP socket on 127.0.0.1:SBX_NET_PROXY_PORT
 *   inside it, made by the sandbox's init during set-up and handed to hull over the set-up
 *   socket. A proxy in hull, outside the sandbox (sbx_net_proxy: threads of the process that
 *   launched the sandbox), accepts on it. It speaks HTTP CONNECT (any TCP, HTTPS included) and
 *   plain HTTP requests with an absolute URI, checks the destination name against the policy
 *   (allowed_hosts, the package registries), resolves the name itself, applies the egress guard
 *   of web_fetch (src/shared/egress.h: no loopback, private, link-local or metadata address,
 *   whatever the name resolves to), connects and relays. Every connection is one log line.
 *   HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy (and an empty NO_PROXY) point programs at
 *   it; a program that ignores them has no route anywhere.
 * - unrestricted: Debian's pasta (package passt, SBX_NET_PASTA_PATH) gives the namespace a tap
 *   interface with the host's address and default route and relays its TCP, UDP and ICMP
 *   through the host's own sockets. It runs as a child of the process that launched the sandbox
 *   (sbx_net_pasta_start: pasta joins the sandbox's user and network namespaces before the
 *   command starts; it dies with its parent and is killed when the sandbox ends), without port
 *   forwarding either way (-t/-u/-T/-U none) and without mapping the gateway's address to the
 *   host's loopback (--no-map-gw): the host's 127.0.0.1 is not reachable (the sandbox's own
 *   loopback is its own). The sandbox's init adds, before pasta starts, unreachable routes for
 *   169.254.0.0/16 (the metadata address among them) and fd00:ec2::254. The host's other
 *   addresses (e.g. a docker bridge) are reachable like any other address: see
 *   docs/SECURITY.md.
 *
 * A destination given as an address (CONNECT 10.0.0.1:443) is refused unless allowed_hosts
 * names that very address; the egress guard still applies to it.
 *
 * The parsers (the proxy's request head, apt's source lists, a host pattern) are pure and
 * fuzzed (fuzz/fuzz-net.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"

typedef enum sbx_net_mode {
        SBX_NET_NONE,         /* loopback only */
        SBX_NET_LIMITED,      /* only through hull's proxy, to the policy's hosts */
        SBX_NET_UNRESTRICTED, /* pasta: anywhere but the host's loopback and the metadata addresses */
        _SBX_NET_MODE_MAX,
} sbx_net_mode;

const char *sbx_net_mode_to_string(sbx_net_mode m); /* "none", "limited", "unrestricted" */
int sbx_net_mode_from_string(const char *s, sbx_net_mode *ret);

/* What a limited sandbox may reach. Built by the caller outside the sandbox; borrowed by the
 * engine, which copies what the proxy keeps. */
typedef struct sbx_net_policy {
        char *const *allowed_hosts;  /* NULL-terminated (or NULL): "name" (the whole name,
                                      * case-insensitive), "*.suffix" (any name ending in
                                      * ".suffix", not the suffix itself), or an address
                                      * ("10.1.2.3", "::1") that a CONNECT may name literally */
        bool allow_package_managers; /* also the hosts of sbx_net_package_hosts() */
        bool pin_package_hosts;      /* with allow_package_managers: the registries' names are
                                      * resolved once, on the host, when the proxy starts, and a
                                      * connection to such a name goes only to those addresses,
                                      * which the egress guard admits although internal or
                                      * reserved (the operator configured those registries: a
                                      * mirror or a gateway may sit there). Loopback, link-local,
                                      * metadata, unspecified, broadcast and multicast addresses
                                      * are never pinned (they stay refused). Layer builds set it */
        bool allow_loopback;         /* TESTING ONLY: loopback addresses pass the egress guard
                                      * (tests run their servers on 127.0.0.1); the metadata
                                      * addresses and the rest stay denied */
        char *const *allow_cidrs;    /* NULL-terminated (or NULL): addresses or CIDRs ("10.8.0.0/16",
                                      * "203.0.113.80") the egress guard lets through although
                                      * they are internal: the operator's own mirror or gateway.
                                      * The metadata addresses stay refused */
        const char *hosts_file;      /* TESTING ONLY: "ADDRESS NAME..." lines the proxy
                                      * consults before DNS; NULL: DNS only */
        int log_fd;                  /* one line per connection is written here (dup'ed by the
                                      * proxy), or -1 */
} sbx_net_policy;

/* The registries this host's package managers are configured for, computed outside any
 * sandbox: the hosts of the URIs in /etc/apt/sources.list and /etc/apt/sources.list.d/
 * (one-line .list and deb822 .sources files), npm's registry (registry= in /etc/npmrc and
 * $HOME/.npmrc, else registry.npmjs.org) and pip's (the hosts of sbx_net_pip_setting's
 * index-url, else pypi.org and files.pythonhosted.org, and of its extra-index-url). Returns a NULL-terminated,
 * deduplicated list (free with sbx_net_hosts_free) or a negative errno with *e. */
int sbx_net_package_hosts(char ***ret, hull_error *e);

/* The host's effective pip setting key ("index-url", "extra-index-url", "trusted-host"), as pip
 * on the host would use it for an install: $PIP_INDEX_URL (and so on) when set, else the value in
 * [install] of $HOME/.config/pip/pip.conf, of /etc/pip.conf, then their [global] (pip's order). Into
 * out (size bytes; several values space-separated). Returns 1, 0 when it is not set, or a negative
 * errno (-E2BIG: longer than size). A build sandbox sees neither the host's HOME nor its
 * environment: env-layer passes these to the sandbox's pip as PIP_* variables. */
int sbx_net_pip_setting(const char *key, char *out, size_t size);
void sbx_net_hosts_free(char **hosts);
static inline void sbx_net_hosts_freep(char ***hosts) {
        sbx_net_hosts_free(*hosts);
}

/* ---- pure parts (fuzzed) ---- */

/* Whether host (a name or an address as text, lowercase or not) matches pattern ("name",
 * "*.suffix" or an address), case-insensitively, a final dot ignored on either side. */
bool sbx_net_host_matches(const char *pattern, const char *host);

/* Whether an allowed_hosts entry is well formed: a name of letters, digits, '-', '_' and dots
 * (at most EGRESS_HOST_MAX bytes), "*." followed by such a name, or an address. */
bool sbx_net_pattern_valid(const char *pattern);

/* Add to *hosts (n entries, NULL-terminated, at most max) the host of each URI of one apt
 * source list (text, len bytes): one-line "deb [opts] URI suite..." and deb822 "URIs: a b".
 * Only http and https URIs count. Returns 0, or -ENOMEM / -E2BIG. */
int sbx_net_apt_hosts(const char *text, size_t len, char **hosts, size_t *n, size_t max);

/* An unrestricted sandbox's /etc/resolv.conf from the host's (text, len bytes): each
 * "nameserver ADDR" whose address is reachable through pasta (not loopback, link-local,
 * unspecified or multicast; at most 3, as glibc reads) as "nameserver ADDR\n", into out (size
 * bytes, NUL-terminated; "" when none is left: names then do not resolve). Pure. Returns the
 * number of nameservers written. */
size_t sbx_net_resolv_conf(const char *text, size_t len, char *out, size_t size);

/* The value of key (lowercase, '-' between words) in section ("global", "install") of a pip.conf
 * (text, len bytes), as pip reads it: "key = value" or "key: value" (the key case-insensitive, '_'
 * as '-'; the last one counts), its indented continuation lines joined by single spaces, trimmed,
 * into out (size bytes; "" when not set). Returns 1, 0 when the key is not set, -E2BIG when the
 * value does not fit. Pure. */
int sbx_net_pip_conf_value(const char *text, size_t len, const char *section, const char *key, char *out, size_t size);

/* The host of an http or https URI (s, len bytes; userinfo and port dropped), lowercase, into
 * out. Returns false when s is not such a URI. Pure. */
bool sbx_net_uri_host(const char *s, size_t len, char out[static EGRESS_HOST_MAX + 1]);

typedef enum sbx_net_req_kind {
        SBX_NET_REQ_CONNECT, /* CONNECT host:port HTTP/1.x */
        SBX_NET_REQ_HTTP,    /* METHOD http://host[:port]/path HTTP/1.x */
} sbx_net_req_kind;

/* A parsed request head (all spans point into the parsed buffer). */
typedef struct sbx_net_req {
        sbx_net_req_kind kind;
        char host[EGRESS_HOST_MAX + 1]; /* lowercase; an IPv6 literal without brackets */
        unsigned port;
        const char *method; /* HTTP: the method and the origin-form target ("/path?q") */
        size_t method_len;
        const char *target;
        size_t target_len;
        unsigned minor;    /* HTTP/1.minor */
        size_t header_off; /* where the header lines start (after the request line) */
        size_t head_len;   /* the whole head, its blank line included */
} sbx_net_req;

/* Parse the head at the start of buf (len bytes). Returns 0 and *ret when a whole head is
 * there, -EAGAIN when more bytes are needed (and len < SBX_NET_HEAD_MAX), -E2BIG when no head
 * ends within SBX_NET_HEAD_MAX bytes, -EINVAL when it is not a CONNECT or an absolute-URI http
 * request (https:// absolute URIs, other schemes, userinfo, a bad port or host: refused).
 * Pure. */
int sbx_net_req_parse(const char *buf, size_t len, sbx_net_req *ret);

/* The head to send upstream for an HTTP request: "METHOD TARGET HTTP/1.x", its header lines but
 * the hop-by-hop ones (Connection, Keep-Alive, TE, Trailer, Upgrade, and every Proxy-*), then
 * "Connection: close", at most SBX_NET_HEAD_MAX + 64 bytes into out (size bytes). Returns the
 * length, or -E2BIG. Pure. */
int sbx_net_req_rewrite(const char *buf, const sbx_net_req *req, char *out, size_t size);

/* ---- pasta (unrestricted mode) ---- */

/* Start pasta for the network namespace of child (a sandbox being set up, its uid map written),
 * from a single-threaded process (it forks), and wait until the namespace has its default route
 * (at most SBX_NET_PASTA_START_MS). Returns 0 with *ret (pasta's pid: stop it with
 * sbx_net_pasta_stop), or a negative errno with *e (-ENOENT: pasta is not installed). */
int sbx_net_pasta_start(pid_t child, pid_t *ret, hull_error *e);
/* SIGKILL pasta and reap it; pid <= 0: nothing. */
void sbx_net_pasta_stop(pid_t pid);

/* ---- the proxy (limited mode) ---- */

typedef struct sbx_net_proxy sbx_net_proxy;

typedef struct sbx_net_proxy_stats {
        uint64_t allowed, refused;     /* connections */
        uint64_t bytes_up, bytes_down; /* relayed, every connection together */
        uint64_t polls, splices;       /* the relay's wake-ups and splice(2) calls (its cost per byte) */
} sbx_net_proxy_stats;

/* Start the proxy on listen_fd (taken: closed on every path), a listening socket in a
 * sandbox's namespace. The policy is copied (allow_package_managers is expanded here, with
 * sbx_net_package_hosts). The accepting thread and one thread per connection (at most
 * SBX_NET_CONNS_MAX at once) never fork. Returns 0 and *ret, or a negative errno with *e. */
int sbx_net_proxy_start(int listen_fd, const sbx_net_policy *policy, sbx_net_proxy **ret, hull_error *e);

/* Stop accepting, end every connection, join the threads, free. *ret (or NULL) gets the totals. */
void sbx_net_proxy_stop(sbx_net_proxy *p, sbx_net_proxy_stats *ret);

/* Read a connection log (a file or memfd the proxy appends to) from *offset: at most max bytes,
 * whole lines only. Returns 0 with *ret (malloc'ed, NUL-terminated, *ret_len bytes, possibly
 * empty), *offset moved past what was taken and *ret_more true when max cut the read short (more
 * is there for a later read); or a negative errno. A line still being written is left for later. */
int sbx_net_log_read(int fd, uint64_t *offset, size_t max, char **ret, size_t *ret_len, bool *ret_more);
