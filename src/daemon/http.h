/* http.h: hull serve's HTTP/1.1 server (libmicrohttpd, internal polling threads on epoll). It
 * routes the plimsoll procedures (bearer auth, bounded bodies, the request-ID echo),
 * /healthz, /readyz and /metrics; each admitted run waits for the broker on a thread of its own
 * while its connection is suspended, so a long run never holds up other requests. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "auth.h"
#include "broker.h"
#include "dlog.h"
#include "error.h"
#include "metrics.h"
#include "plimsoll.h"

/* Parse "HOST:PORT" (an IPv4 literal, "localhost", or "[IPv6]"; PORT 0 to 65535, 0 picks a free
 * one) into *ret. Returns 0 or -EINVAL. Pure. */
int http_listen_parse(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);

/* True for 127.0.0.0/8 and ::1 (and ::ffff:127.0.0.0/104). */
bool http_addr_is_loopback(const struct sockaddr *a);

typedef struct http_config {
        struct sockaddr_storage listen; /* TCP address */
        socklen_t listen_len;
        const char *socket_path;      /* also listen on this unix socket (mode 0600); NULL: no */
        unsigned max_runs, queue_max; /* admission: runs at once and waiting */
        const auth_tokens *tokens;    /* NULL or empty: no auth (loopback only; the caller checks) */
        const plim_evidence *evidence;
        brk_broker *broker;
        struct hs_manager *sessions; /* NULL: the session procedures answer unimplemented */
        const dlog *log;
        metrics *metrics;
} http_config;

typedef struct http_server http_server;

/* Start listening. The pointed-to parts of cfg must outlive the server. Returns 0 with *ret, or a
 * negative errno with *e. */
int http_start(const http_config *cfg, http_server **ret, hull_error *e);

/* The TCP port actually bound (useful with port 0). */
unsigned http_port(http_server *s);

/* Stop accepting connections; requests on connections already open are answered
 * `unavailable` (not dispatched, capacity). In-flight runs go on. */
void http_quiesce(http_server *s);

/* Requests being handled, each admitted run counted once, and until its thread has ended. */
unsigned http_busy(http_server *s);

/* Stop the server and free it. Call only when http_busy() is 0 (a suspended connection cannot be
 * stopped); returns -EBUSY otherwise, while any run thread exists, and leaves the server (and
 * whatever its threads use, the broker included) running: the caller must then not free them. */
int http_stop(http_server *s);
