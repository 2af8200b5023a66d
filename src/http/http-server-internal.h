/* http-server-internal.h: what the HTTP server's files share (http-server.c: connections, the
 * watchdog, answers, libmicrohttpd's callbacks, start and stop; http-route.c: route matching;
 * http-sse.c: server-sent events). Not a public interface. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>

#include "dlib-microhttpd.h"
#include "dynbuf.h"
#include "http-server.h"
#include "limits.h"

typedef struct http_table {
        const http_api *api;
        const http_route *routes;
        size_t n;
        void *data;
} http_table;

/* Where a connection is: waiting for a head (from its start, or its previous request's end),
 * receiving a body, or busy (handled, answered, streaming): only the first two are incomplete. */
typedef enum conn_phase {
        PHASE_HEAD,
        PHASE_BODY,
        PHASE_BUSY,
} conn_phase;

/* An address as the per-address bound counts it: IPv4 (mapped IPv6 too), IPv6, or a unix
 * socket's peer uid. */
typedef struct addr_key {
        sa_family_t family;
        uint8_t a[16];
} addr_key;

typedef struct http_conn {
        int fd;
        addr_key key;
        conn_phase phase;
        uint64_t since_us;   /* when the phase's deadline started: the head's wait */
        uint64_t receive_ms; /* the request's deadline once its route is known */
        bool cut;            /* shut down by us; gone once libmicrohttpd notices */
        unsigned served;     /* requests completed on it (then a late head is mostly an idle keep-alive) */
        int worker;          /* the libmicrohttpd thread it was accepted on (http_server.workers), -1: unknown */
        struct http_conn *prev, *next;
} http_conn;

struct http_server {
        http_config cfg;
        struct MHD_Daemon *tcp, *local;
        char *socket_path; /* to unlink at stop */
        http_table tables[SERVE_ROUTES_MAX];
        size_t n_tables, n_routes;
        atomic_uint requests;     /* requests not yet completed */
        atomic_uint threads;      /* spawned threads not yet ended: the last thing each does is to
                                   * decrement it, so at 0 none uses the server */
        atomic_size_t body_bytes; /* request-body buffers held, across connections */
        /* Spawned threads that finished their request wait a while for the next one
         * (http-spawn.c): spawn_lock guards the queue and the counts. */
        pthread_mutex_t spawn_lock;
        pthread_cond_t spawn_cond;
        struct http_req *spawn_queue; /* requests given to parked threads, not yet taken */
        unsigned spawn_parked;        /* parked threads no queued request is promised to */
        bool spawn_closing;
        atomic_uint spawn_alive;         /* threads parked or about to be: http_stop waits for 0 */
        atomic_uint_fast64_t spawn_made; /* threads ever created (http_spawn_threads_made) */
        atomic_bool stopping;
        atomic_uint_fast64_t seq; /* log ids of requests that got none */
        /* The connections and the event streams, for the watchdog: lock guards both lists, every
         * conn's phase and cut, and the stream list links. */
        pthread_mutex_t lock;
        http_conn *conns;
        http_sse *streams;
        /* libmicrohttpd's threads, each with how many connections it serves (under lock): a short
         * call runs on its thread when it serves no other connection (http_req_spawn_short). */
        struct {
                pthread_t thread;
                unsigned conns;
        } workers[2 * SERVE_HTTP_THREADS];
        unsigned n_workers;
        bool inline_busy;                  /* a short call runs on a libmicrohttpd thread (at most one) */
        atomic_uint_fast64_t inline_calls; /* short calls ever run so (http_inline_calls) */
        pthread_t watchdog;
        bool watchdog_running;
        int watchdog_pipe[2]; /* written to at stop: the watchdog ends */
};

typedef enum req_state {
        REQ_NEW,     /* the head is not complete yet */
        REQ_BODY,    /* the body is arriving */
        REQ_SPAWNED, /* a thread has it, the connection suspended */
        REQ_DONE,    /* queued, or closed */
} req_state;

struct http_req {
        http_server *srv;
        struct MHD_Connection *conn;
        http_conn *c;
        req_state state;
        const http_table *table;
        const http_route *route; /* NULL: none */
        const char *method;
        char path[SERVE_PATH_MAX + 1]; /* percent-decoded, without the query; "" when over-long */
        bool path_too_long;
        bool bad_uri;        /* a %00 in the raw URI, or a raw NUL cut it */
        const char *raw_uri; /* in libmicrohttpd's buffer, to check against the version */
        size_t raw_uri_len;
        /* the route's {name}s: names in the pattern, values copied into param_buf */
        size_t n_params;
        struct {
                const char *name;
                size_t len;
        } param_names[SERVE_ROUTE_PARAMS_MAX];
        const char *param_values[SERVE_ROUTE_PARAMS_MAX];
        char param_buf[SERVE_PATH_MAX + SERVE_ROUTE_PARAMS_MAX];
        char principal[SERVE_SHORT_STR_MAX];
        uint64_t start_us, received_unix_ms;
        char id[SERVE_SHORT_STR_MAX]; /* for the log */
        char log_path[SERVE_SHORT_STR_MAX];
        char note[SERVE_SHORT_STR_MAX]; /* extra log fields */
        /* the body */
        dynbuf body;
        size_t body_accounted; /* of the budget: the buffer's allocation */
        uint64_t body_seen;    /* bytes received, kept or not */
        bool too_large, over_budget;
        bool drain; /* refused from the head: the answer waits until the body is read and dropped */
        int body_error;
        /* the answer */
        struct {
                char *name, *value;
        } headers[SERVE_ANSWER_HEADERS_MAX];
        size_t n_headers;
        struct MHD_Response *answer;
        unsigned answer_status;
        unsigned status; /* what was queued; 0 until then */
        http_sse *sse;   /* a reference, while the stream is the answer */
        http_handler_fn *spawned;
        struct http_req *spawn_next; /* in the server's spawn_queue */
        void *ctx;
        void (*ctx_free)(void *);
};

struct http_sse {
        pthread_mutex_t lock;
        pthread_cond_t room;
        http_server *srv;
        struct MHD_Connection *conn;
        int fd;
        dynbuf q;   /* frames; bytes before off are sent */
        size_t off; /* the first unsent byte */
        size_t queued_max;
        uint64_t keepalive_us, last_us; /* a comment when nothing went since last_us + keepalive_us */
        size_t max;                     /* the queue's bound (a frame alone may be larger: SERVE_SSE_FRAME_MAX) */
        const char *keepalive_frame;    /* what goes out then (static); NULL: a comment */
        bool parked;                    /* the connection is suspended until a frame comes */
        bool ended;                     /* no more frames: the producer closed it, or shutdown */
        bool gone;                      /* the request is over (client gone, error, done) */
        bool abort;                     /* ended by http_sse_abort: cut, not ended */
        unsigned refs;                  /* the producer's, the response's, the request's */
        bool listed;                    /* in the server's list (under its lock) */
        struct http_sse *prev, *next;
};

/* The route for r's path and method (NULL: none; *ret_allowed the methods the path has). (http-route.c) */
const http_route *http_route_find(http_server *s, http_req *r, const http_table **ret_table, unsigned *ret_allowed);

/* r's headers and the content type on a new response; NULL (and the response destroyed) on
 * failure. (http-server.c) */
struct MHD_Response *http_dress(http_req *r, struct MHD_Response *resp, const char *content_type);

/* Under the server's lock: the watchdog's look at a stream (keep-alive, a client gone), and a
 * stream's wake-up; the end of the request a stream answers. (http-sse.c) */
void http_sse_tick_locked(http_sse *x, uint64_t now);
void http_sse_wake_locked(http_sse *x);
void http_sse_request_done(http_server *s, http_sse *x);

/* http-spawn.c: the threads of http_req_spawn */
void http_spawn_init(http_server *s);
void http_spawn_close(http_server *s);
void http_spawn_done(http_server *s);
