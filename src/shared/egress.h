/* egress.h: the egress guard: which URLs hull's own fetches (web_fetch) may reach, decided
 * before any byte is sent.
 *
 * A URL must be http or https in the standard form scheme://host..., with no user name or
 * password (refused, not stripped: credentials in a URL a model wrote are either a secret
 * about to leak to a third party or the "http://public@internal/" confusion; dropping them
 * silently would fetch something the writer did not mean). It is parsed with libcurl's URL API
 * (the parser that then makes the request: no second opinion on where the host ends), which
 * also turns the odd spellings of IPv4 (2130706433, 0177.0.0.1, 0x7f.1, 127.1) into the
 * dotted quad it will connect to.
 *
 * Every address the host has is checked: a literal address as it is, a name through the
 * policy's resolver (getaddrinfo with a deadline, or the caller's). One address that is not
 * allowed denies the host. Denied: loopback, private (RFC 1918, fc00::/7), link-local, CGNAT
 * (100.64.0.0/10), the unspecified and broadcast addresses, multicast, reserved ranges
 * (0.0.0.0/8, 192.0.0.0/24, documentation, benchmarking, 240.0.0.0/4, IPv6 outside 2000::/3,
 * Teredo and the rest of 2001::/23, 6to4 relays), and IPv6 forms carrying a denied IPv4
 * address (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16). The cloud
 * metadata endpoints are denied first and always, whatever the allowlist says, with their own
 * message. The allowlist (empty by default) admits internal sources: host names (the whole
 * name, case-insensitive) and CIDRs.
 *
 * The caller then connects only to the addresses checked (webfetch.h pins them with
 * CURLOPT_RESOLVE), so a DNS answer that changes between the check and the connection cannot
 * take it elsewhere.
 *
 * The address parts (classification, CIDRs, the decision on a host's addresses) are pure and
 * fuzzed (fuzz/fuzz-egress.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

typedef struct egress_addr {
        int family;        /* AF_INET or AF_INET6 */
        uint8_t bytes[16]; /* network order; AF_INET uses the first 4 */
} egress_addr;

typedef enum egress_class {
        EGRESS_PUBLIC,
        EGRESS_METADATA, /* a cloud metadata endpoint: never allowed */
        EGRESS_LOOPBACK,
        EGRESS_PRIVATE,
        EGRESS_LINK_LOCAL,
        EGRESS_CGNAT,
        EGRESS_UNSPECIFIED,
        EGRESS_BROADCAST,
        EGRESS_MULTICAST,
        EGRESS_RESERVED,
        _EGRESS_CLASS_MAX,
} egress_class;

/* "public", "cloud metadata endpoint", "loopback", "private", "link-local", "CGNAT",
 * "unspecified", "broadcast", "multicast", "reserved". */
const char *egress_class_to_string(egress_class c);

/* A numeric address, strictly: IPv4 as a dotted quad of decimals (inet_pton: no octal, hex or
 * short forms; the URL parser has already turned those into this), or IPv6 without brackets
 * and without a zone. Returns 0 and *ret, or -EINVAL. Pure. */
int egress_addr_parse(const char *s, egress_addr *ret);

/* a as text (inet_ntop; IPv6 without brackets) in buf; returns buf. Pure. */
const char *egress_addr_to_string(const egress_addr *a, char buf[static EGRESS_ADDR_STR_MAX]);

/* What kind of IPv6 address carries an IPv4 one. */
typedef enum egress_embed {
        EGRESS_EMBED_NONE,
        EGRESS_EMBED_MAPPED,     /* ::ffff:a.b.c.d */
        EGRESS_EMBED_COMPATIBLE, /* ::a.b.c.d (deprecated; not :: or ::1) */
        EGRESS_EMBED_NAT64,      /* 64:ff9b::a.b.c.d */
        EGRESS_EMBED_6TO4,       /* 2002:aabb:ccdd::/48 */
} egress_embed;

/* The IPv4 address an IPv6 one carries (in *ret_v4) and how; EGRESS_EMBED_NONE (and *ret_v4
 * untouched) for IPv4 and other IPv6 addresses. Pure. */
egress_embed egress_addr_embedded(const egress_addr *a, egress_addr *ret_v4);
const char *egress_embed_to_string(egress_embed m); /* "IPv4-mapped", ... ("" for none) */

/* The class of an address. An IPv6 address carrying an IPv4 one takes the IPv4 address's class
 * when that is not public (a public one stays public, except IPv4-compatible: reserved); the
 * metadata endpoints are found in every form. Pure. */
egress_class egress_addr_classify(const egress_addr *a);

typedef struct egress_cidr {
        egress_addr net; /* host bits zero */
        unsigned prefix; /* 0..32 or 0..128 */
} egress_cidr;

/* "10.1.0.0/16", "fd00::/8", or a bare address (a /32 or /128). Host bits set below the prefix
 * are refused ("10.1.2.3/16": -EINVAL), so an entry means what it says. Returns 0 and *ret, or
 * -EINVAL. Pure. */
int egress_cidr_parse(const char *s, egress_cidr *ret);

/* Whether c holds a. An IPv4-mapped IPv6 address is the IPv4 address it maps (the same
 * destination on a dual-stack socket), for either side. Pure. */
bool egress_cidr_contains(const egress_cidr *c, const egress_addr *a);

/* Resolve host into at most max addresses (*ret_n of them, possibly 0) by deadline_mono_ms
 * (now_mono_ms()'s clock). Returns 0, or a negative errno with *e: -EHOSTUNREACH (the name
 * does not resolve, or is not a valid name), -ETIMEDOUT, -ENOMEM. */
typedef int egress_resolve_fn(void *userdata, const char *host, uint64_t deadline_mono_ms, egress_addr *ret, size_t max,
                              size_t *ret_n, hull_error *e);

/* The default resolver: getaddrinfo (both families, TCP) on a thread of its own, waited for
 * until the deadline (or EGRESS_RESOLVE_MS_DEFAULT, whichever is first); a late answer is
 * dropped when it comes. Duplicates are removed. userdata is unused. */
egress_resolve_fn egress_resolve_default;

typedef struct egress_policy egress_policy;

/* A policy. allow: n entries (at most EGRESS_ALLOW_MAX), each an address or CIDR (see
 * egress_cidr_parse) or a host name (letters, digits, '-', '_' and dots, at most
 * EGRESS_HOST_MAX bytes; matched whole and case-insensitively, a final dot ignored). resolver:
 * NULL for egress_resolve_default. Returns 0 and *ret (free with egress_policy_free), or
 * -EINVAL with *e naming the entry, -ENOMEM. */
int egress_policy_new(const char *const *allow, size_t n, egress_resolve_fn *resolver, void *resolver_userdata,
                      egress_policy **ret, hull_error *e);
void egress_policy_free(egress_policy *p);
static inline void egress_policy_freep(egress_policy **p) {
        if (*p)
                egress_policy_free(*p);
}
#define _cleanup_egress_policy_ _cleanup_(egress_policy_freep)

/* Whether host (a name) is on p's allowlist. Pure. */
bool egress_host_allowed(const egress_policy *p, const char *host);

/* The decision on host's addresses (n of them; host as the URL has it, a name or a literal):
 * 0 when every one may be reached, else -EACCES with *e naming the first address refused and
 * why: "blocked cloud metadata endpoint ADDR" (any metadata address, looked for before
 * anything else and whatever the allowlist), "blocked internal address ADDR (CLASS)" (not
 * public and neither host nor ADDR allowlisted), or "no addresses for HOST" (n == 0). Each
 * message starts "egress: blocked by egress policy: ". Pure. */
int egress_check_addrs(const egress_policy *p, const char *host, const egress_addr *addrs, size_t n, hull_error *e);

/* A URL that passed the guard: where to connect. */
typedef struct egress_target {
        char *url;                           /* normalised (lowercase host, no fragment); malloc'd */
        char host[EGRESS_HOST_MAX + 1];      /* the name (lowercase, ASCII: IDN as punycode), or
                                              * the literal address (IPv6 without brackets) */
        bool literal;                        /* host is an address: nothing was resolved */
        unsigned port;                       /* the URL's, or the scheme's default */
        egress_addr addrs[EGRESS_ADDRS_MAX]; /* every address checked: connect to these only */
        size_t n_addrs;
} egress_target;
void egress_target_done(egress_target *t);

/* The bytes of an egress_target_pin (a NUL included). */
#define EGRESS_PIN_MAX (EGRESS_HOST_MAX + 8 + EGRESS_ADDRS_MAX * (EGRESS_ADDR_STR_MAX + 3))

/* t's checked addresses as a libcurl CURLOPT_RESOLVE entry ("HOST:PORT:ADDR[,ADDR...]", an IPv6
 * ADDR in brackets) in buf, for httpc_request.resolve: the request then connects to those
 * addresses only. Meaningless for a literal host (t->literal: nothing to resolve). Returns 0, or
 * -ENAMETOOLONG. Pure. */
int egress_target_pin(const egress_target *t, char buf[static EGRESS_PIN_MAX]);

/* Check url against p: its form (see above), then its host's addresses (resolved with p's
 * resolver by deadline_mono_ms). Returns 0 and *ret (release with egress_target_done), or a
 * negative errno with *e, every message starting "egress: ": -EINVAL (not a URL, another
 * scheme, credentials, no host, a zone, port 0, too long), -EACCES (egress_check_addrs),
 * -EHOSTUNREACH or -ETIMEDOUT (the resolver's: "blocked by egress policy: could not resolve
 * HOST: ..."), -ENOSYS (no libcurl), -ENOMEM. Loads libcurl. */
int egress_check_url(const egress_policy *p, const char *url, uint64_t deadline_mono_ms, egress_target *ret,
                     hull_error *e);

/* location (a redirect's Location: absolute, or relative to base) joined to base with
 * libcurl's URL API. Returns 0 and *ret (malloc'd; not checked yet: pass it to
 * egress_check_url), or -EINVAL with *e, -ENOSYS, -ENOMEM. */
int egress_url_join(const char *base, const char *location, char **ret, hull_error *e);
