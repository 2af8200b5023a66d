/* http-server.h: hull serve's HTTP/1.1 server, on libmicrohttpd (loaded with dlopen; internal
 * polling threads on epoll). It knows no API: route tables say which method and path pattern go
 * to which handler, which token scope a route needs and how large its body may be; an API
 * (http_api) words the refusals the server decides (no route, wrong method, no token, a body too
 * large...). It bounds what a hostile client can hold: the time to send a request's head and
 * its whole body, the connections of one address still sending a request, the request bodies
 * held at once. Answers are whole buffers or streams (server-sent events fed from any thread
 * through a bounded queue); a handler that blocks continues on a thread of its own while its
 * connection is suspended. One log line per request; HTTP status counts in the metrics.
 *
 * Threads: handlers, heads and sinks run on a polling thread and must not block; a function
 * given to http_req_spawn() runs on its own thread. A request is used by one thread at a time. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "auth.h"
#include "dlog.h"
#include "error.h"
#include "macro.h"
#include "metrics.h"

/* Parse "HOST:PORT" (an IPv4 literal, "localhost", or "[IPv6]"; PORT 0 to 65535, 0 picks a free
 * one) into *ret. Returns 0 or -EINVAL. Pure. */
int http_listen_parse(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);

/* True for 127.0.0.0/8 and ::1 (and ::ffff:127.0.0.0/104). */
bool http_addr_is_loopback(const struct sockaddr *a);

typedef struct http_server http_server;
typedef struct http_req http_req;

/* Methods, as a route's set. */
enum {
        HTTP_GET = 1U << 0,
        HTTP_HEAD = 1U << 1,
        HTTP_POST = 1U << 2,
        HTTP_PUT = 1U << 3,
        HTTP_DELETE = 1U << 4,
};

/* What the server refuses by itself, and the status it suggests. */
typedef enum http_refusal {
        HTTP_REFUSAL_NOT_FOUND,       /* no route for the path (404) */
        HTTP_REFUSAL_METHOD,          /* a route has the path, not the method (405; Allow is set) */
        HTTP_REFUSAL_BAD_HEAD,        /* a NUL in the path, the query or a header; a folded header (400) */
        HTTP_REFUSAL_UNAUTHENTICATED, /* no, malformed or unknown credential (401) */
        HTTP_REFUSAL_FORBIDDEN,       /* the token lacks the route's scope (403) */
        HTTP_REFUSAL_TOO_LARGE,       /* the body is over the route's bound (413) */
        HTTP_REFUSAL_BUSY,            /* the bodies' budget is out, or no thread: retry later (429) */
        HTTP_REFUSAL_STOPPING,        /* the server is shutting down (503) */
        _HTTP_REFUSAL_MAX,
} http_refusal;

/* An API: the wording of one family of routes. Each callback is optional. */
typedef struct http_api {
        const char *name;
        /* First, for every request routed to this API (or without a route, for the server's
         * fallback API): read what the API echoes (a request ID: http_req_set_id,
         * http_answer_header). */
        void (*begin)(http_req *r);
        /* Answer a refusal the server decided: status is its suggestion, msg one sentence saying
         * what was wrong and what to do. Must answer (http_answer*); NULL or no answer: plain
         * text with that status. */
        void (*refuse)(http_req *r, http_refusal why, unsigned status, const char *msg);
} http_api;

/* A route's handler: answers r (http_answer*, http_answer_sse), or hands it to a thread
 * (http_req_spawn) that does. A handler that answers nothing gets its connection closed. */
typedef void http_handler_fn(http_req *r);

/* A route's body sink: each piece of the body as it arrives (a streamed upload). Returns 0 or a
 * negative errno: the rest of the body is then dropped and the handler sees the error in
 * http_req_body_error(). */
typedef int http_sink_fn(http_req *r, const void *data, size_t n);

typedef struct http_route {
        unsigned methods; /* HTTP_* */
        /* Segments separated by '/': literals match themselves, "{name}" one non-empty segment
         * (http_req_param), and a first segment "{name...}" any number of clean segments ("",
         * or "/a/b": none empty, "." or ".."), a base path such as plimsoll's clients add. */
        const char *pattern;
        const char *scope;    /* the token scope it needs when the server has tokens; NULL: open */
        size_t body_max;      /* bytes of body it takes; 0: none */
        http_sink_fn *sink;   /* NULL: the body is kept in memory (http_req_body), within the
                               * budget all connections share */
        bool during_shutdown; /* still served after http_quiesce (health checks) */
        uint64_t receive_ms;  /* the whole request must be in by then; 0: SERVE_REQUEST_RECEIVE_MS (a
                               * large upload's route allows more; the head's bound is the same) */
        /* After routing, auth and the bounds that need only the head, before any byte of the
         * body: checks of its own (content type...), and a sink's set-up. Returns 0 to go on, or
         * 1 once it answered. NULL: none. */
        int (*head)(http_req *r);
        http_handler_fn *handler; /* once the body is in */
        int tag;                  /* the table's own: tells its routes apart (a procedure, say) */
        /* Takes a key whose id starts with HTTP_SCOPED_KEY_PREFIX (a self-hosted worker's,
         * valid for some resources only: the head checks which); other routes refuse it. */
        bool scoped_keys;
} http_route;

#define HTTP_SCOPED_KEY_PREFIX "scoped:"

/* A second source of keys beside the tokens file: hull.db's API keys, which hold every scope. */
typedef struct http_keys {
        /* How many keys exist now (> 0: every route with a scope needs a credential); SIZE_MAX
         * when they cannot be read now (503 with retry-after). */
        size_t (*count)(void *ud);
        /* 1 when a key with this SHA-256 digest exists (its id, for the principal, in ret_id), 0
         * when not, -1 when the keys cannot be read now (503 with retry-after). */
        int (*find)(void *ud, const uint8_t digest[static 32], char ret_id[static AUTH_NAME_MAX + 1]);
        void *ud;
} http_keys;

/* A fallback for the paths under prefix ("/v1" covers "/v1" and "/v1/..."): the API that words
 * refusals of requests there without a route (each face words its own errors). */
typedef struct http_fallback {
        const char *prefix;
        const http_api *api;
        void *data;
} http_fallback;

typedef struct http_config {
        struct sockaddr_storage listen; /* TCP address */
        socklen_t listen_len;
        const char *socket_path;   /* also listen on this unix socket (mode 0600); NULL: no */
        const auth_tokens *tokens; /* NULL or empty (and no keys): no auth (loopback only; the caller checks) */
        unsigned max_connections;  /* open connections of the TCP listener; 0: SERVE_CONNECTIONS_MAX */
        unsigned max_per_address;  /* ... of one address; 0: SERVE_CONNECTIONS_PER_IP_MAX */
        const http_keys *keys;     /* NULL: none. A credential is "Authorization: Bearer K" or "x-api-key: K" */
        const http_api *fallback;  /* words refusals of requests without a route */
        void *fallback_data;       /* http_req_data() for those */
        /* ... unless a prefix of these (the first that matches) covers the path */
        const http_fallback *prefixed;
        size_t n_prefixed;
        const dlog *log;
        metrics *metrics;
} http_config;

/* A server that does not listen yet. The pointed-to parts of cfg must outlive it. Returns 0 with
 * *ret, or a negative errno with *e (libmicrohttpd cannot be loaded: -ENOENT). */
int http_new(const http_config *cfg, http_server **ret, hull_error *e);

/* Add a route table: its routes go to api, and http_req_data() of their requests is data.
 * Tables and routes must outlive the server; a path is matched against the tables in the order
 * they were added, each in its order. Before http_start only. Returns 0 or -E2BIG (more than
 * SERVE_ROUTES_MAX routes in all). */
int http_add_routes(http_server *s, const http_api *api, const http_route *routes, size_t n, void *data);

/* Start listening (TCP, and the unix socket if any). Returns 0 or a negative errno with *e. */
int http_start(http_server *s, hull_error *e);

/* The TCP port actually bound (useful with port 0). */
unsigned http_port(http_server *s);

/* Stop accepting connections; requests on connections already open are refused
 * (HTTP_REFUSAL_STOPPING) unless their route serves during shutdown; event streams are ended.
 * Calls in flight go on. */
void http_quiesce(http_server *s);

/* True once http_quiesce was called. */
bool http_stopping(http_server *s);

/* Requests being handled, each spawned thread counted until it has ended. */
unsigned http_busy(http_server *s);

/* Stop the server and free it (NULL: nothing). Call only when http_busy() is 0 (a suspended
 * connection cannot be stopped); returns -EBUSY otherwise, while any spawned thread exists, and
 * leaves the server (and whatever its threads use) running: the caller must then not free them. */
int http_stop(http_server *s);

/* ---- a request ---- */

const char *http_req_method(const http_req *r); /* "GET", "POST", ... */
const char *http_req_path(const http_req *r);   /* percent-decoded, without the query */
/* A "{name}" of the route's pattern; NULL when it has none of that name. */
const char *http_req_param(const http_req *r, const char *name);
/* A query-string argument, percent-decoded; NULL when absent ("" when given without a value). */
const char *http_req_query(const http_req *r, const char *name);
/* Call fn for each query-string argument in order (names and values percent-decoded; a
 * repeated name once per value). */
void http_req_each_query(const http_req *r, void (*fn)(void *data, const char *name, const char *value), void *data);
/* The value of the one header called name (any case); NULL when absent or repeated; *ret_count
 * (may be NULL) says how often it came. */
const char *http_req_header(const http_req *r, const char *name, unsigned *ret_count);
/* Who is calling: "token:<first 16 bytes of its digest in hex>" on a route with a scope when
 * the server has tokens or keys (a key of hull.db: "key:<its id>"), else "local". */
const char *http_req_principal(const http_req *r);
uint64_t http_req_received_unix_ms(const http_req *r);
/* The connection's socket, to watch for a hang-up while a spawned thread works (sock_hung_up). */
int http_req_fd(const http_req *r);
/* The tag of r's route (0 without one). */
int http_req_tag(const http_req *r);
/* The route table's data (or the fallback's). */
void *http_req_data(const http_req *r);
/* The log line's id (default "n<seq>"): the caller's request ID, say (cleaned, cut). */
void http_req_set_id(http_req *r, const char *id);
const char *http_req_id(const http_req *r);
/* Add "key=value ..." fields to the request's log line. */
void http_req_note(http_req *r, const char *fmt, ...) _printf_(2, 3);
/* State of the handler's own, freed with free_fn when the request ends. */
void http_req_set_ctx(http_req *r, void *ctx, void (*free_fn)(void *));
void *http_req_ctx(const http_req *r);

/* Call fn for each header of r's request, in the order received (names as sent). */
void http_req_each_header(const http_req *r, void (*fn)(void *data, const char *name, const char *value), void *data);

/* A buffered body: its bytes (NUL-terminated, not counted; "" when none) and length. */
const char *http_req_body(const http_req *r, size_t *ret_len);
/* Give the body's memory (and its share of the budget) back once it is parsed. */
void http_req_body_release(http_req *r);
/* A sink's error (negative errno), 0 when none. */
int http_req_body_error(const http_req *r);

/* Run fn on a thread of its own (a parked one or a new one), the connection suspended meanwhile; fn answers r, and when
 * it returns the answer is sent. From a handler only. Returns 0 (r then belongs to fn), or -EAGAIN when no thread could
 * be made (nothing happened: the handler answers). */
int http_req_spawn(http_req *r, http_handler_fn *fn);
/* As http_req_spawn, for a call that mostly answers in well under a millisecond (a session's cell): when
 * libmicrohttpd's thread serves r's connection and no other, and no other such call runs, fn runs on that
 * thread before this returns, without the two hand-offs between threads; else it is http_req_spawn. */
int http_req_spawn_short(http_req *r, http_handler_fn *fn);
/* How many calls http_req_spawn_short ran on libmicrohttpd's thread. */
uint64_t http_inline_calls(http_server *s);
/* How many threads http_req_spawn ever created: a thread that finished its request waits up to
 * SERVE_SPAWN_PARKED_MS for the next one (at most SERVE_SPAWN_PARKED_MAX wait). */
uint64_t http_spawn_threads_made(http_server *s);

/* ---- answers: each request is answered once; -EALREADY for a second answer ---- */

/* A header on r's answer, whatever it will be (copied; at most SERVE_ANSWER_HEADERS_MAX).
 * Returns 0, -E2BIG or -ENOMEM. */
int http_answer_header(http_req *r, const char *name, const char *value);
/* A whole answer: takes body (malloc'ed, len bytes; NULL for none) whatever happens. Returns 0
 * or -ENOMEM, -EALREADY. */
int http_answer(http_req *r, unsigned status, const char *content_type, char *body, size_t len);
/* The size bytes of the regular file fd from its start (sent with sendfile where possible);
 * takes fd (closed with the answer) whatever happens. Returns 0 or -ENOMEM, -EALREADY. */
int http_answer_fd(http_req *r, unsigned status, const char *content_type, int fd, uint64_t size);
/* Plain text (copied). */
int http_answer_text(http_req *r, unsigned status, const char *text);
/* Answer the way r's API words a refusal (the fallback's when r has no route). */
void http_refuse(http_req *r, http_refusal why, const char *fmt, ...) _printf_(3, 4);
unsigned http_refusal_status(http_refusal why);

/* ---- server-sent events ----
 * A producer (any thread) pushes frames into a bounded queue; the polling thread drains it into
 * the connection as the client reads, and suspends the connection while the queue is empty (no
 * thread per stream). A comment (": keep-alive") goes out when no frame went for keepalive_ms;
 * a waiting stream whose client hung up (sock_hung_up) is ended. The stream ends when the
 * producer closes it or the client goes. */
typedef struct http_sse http_sse;

#define HTTP_SSE_NO_KEEPALIVE UINT64_MAX

/* Answer r with 200, text/event-stream. queue_max: bytes of frames waiting at most (0:
 * SERVE_SSE_QUEUE_DEFAULT, at most SERVE_SSE_QUEUE_MAX); keepalive_ms 0: SERVE_SSE_KEEPALIVE_MS,
 * HTTP_SSE_NO_KEEPALIVE: none (a silent stream stays silent).
 * Returns 0 with *ret, the producer's handle (end it with http_sse_close, exactly once), or
 * -ENOMEM, -EALREADY. */
int http_answer_sse(http_req *r, size_t queue_max, uint64_t keepalive_ms, http_sse **ret);
/* What the keep-alive sends (a whole frame, static: "event: ping\ndata: {}\n\n"); the default is
 * a comment. */
void http_sse_set_keepalive(http_sse *s, const char *frame);
/* Queue one event: "event: EVENT" (when not NULL; one line, no CR or LF) and data as "data:"
 * lines (split at LF). A frame larger than the queue's bound goes in when the queue is empty.
 * Returns 0, -EAGAIN (no room now: the client reads slowly; wait with http_sse_wait), -EPIPE (the
 * client is gone or the stream was ended), -E2BIG (the frame is over SERVE_SSE_FRAME_MAX), -EINVAL
 * (a bad event name), -ENOMEM. */
int http_sse_send(http_sse *s, const char *event, const char *data, size_t len);
/* Queue bytes as they are: the producer frames its events itself (or breaks the framing on
 * purpose, as a test server does). The errors of http_sse_send but -EINVAL. */
int http_sse_send_raw(http_sse *s, const void *p, size_t n);
/* Wait until n bytes fit the queue (or it is empty), the stream is gone, or timeout_ms. Returns 0, -EPIPE or
 * -ETIMEDOUT. */
int http_sse_wait(http_sse *s, size_t n, uint64_t timeout_ms);
/* Wait until every queued byte went to the connection (so the next one goes in a write of its
 * own), the stream is gone, or timeout_ms. Returns 0, -EPIPE or -ETIMEDOUT. */
int http_sse_drain(http_sse *s, uint64_t timeout_ms);
/* The most bytes the queue held at once (for tests and metrics). */
size_t http_sse_queued_max(http_sse *s);
/* End the stream once what is queued is sent, and give the handle up. */
void http_sse_close(http_sse *s);
/* Like http_sse_close, but the answer is cut instead of ended: once what is queued is sent, the
 * connection is closed without the end of the chunked body (a server that died mid-stream). */
void http_sse_abort(http_sse *s);

/* ---- pure helpers (fuzzed) ---- */

typedef struct http_params {
        size_t n;
        struct {
                const char *name; /* points into the pattern: name_len bytes */
                size_t name_len;
                const char *value; /* points into the path: value_len bytes */
                size_t value_len;
        } v[SERVE_ROUTE_PARAMS_MAX];
} http_params;

/* Does path match pattern (see http_route)? 1 with *ret (may be NULL) filled, 0 when not,
 * -EINVAL for a malformed pattern. Pure. */
int http_route_match(const char *pattern, const char *path, http_params *ret);
