/* http.c: libmicrohttpd glue: listeners, routing, auth, body bounds, admission, the run threads,
 * health and metrics endpoints, one log line per request.
 *
 * One request is an `exchange`. libmicrohttpd calls on_request() once when the headers are in
 * (routing, auth and the header checks answer here, before any byte of the body is read), once
 * per piece of the body (appended up to the procedure's bound, within a budget all connections
 * share), and once when the body is complete (the procedure runs). The whole request must arrive
 * within SERVE_REQUEST_RECEIVE_MS of the connection's start or of its previous request's end. A Run that is admitted
 * suspends its connection and starts a thread that waits for the broker; the thread leaves the finished answer in the
 * exchange and resumes the connection, and the next on_request() queues it. on_completed() logs, counts and frees. */
#include "http.h"
#include "sessions.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "parse-util.h"
#include "time-util.h"

/* libmicrohttpd is loaded when hull serve starts instead of being linked: linked, every hull
 * command (hull exec's start-up is benchmarked) would load it and GnuTLS with its ten
 * dependencies, about 1 ms. The pointers have the types of the header's declarations. */
#define MHD_SONAME "libmicrohttpd.so.12"
typedef struct mhd_api {
        void *handle;
        __typeof__(MHD_start_daemon) *start_daemon;
        __typeof__(MHD_stop_daemon) *stop_daemon;
        __typeof__(MHD_quiesce_daemon) *quiesce_daemon;
        __typeof__(MHD_get_daemon_info) *get_daemon_info;
        __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
        __typeof__(MHD_add_response_header) *add_response_header;
        __typeof__(MHD_queue_response) *queue_response;
        __typeof__(MHD_destroy_response) *destroy_response;
        __typeof__(MHD_get_connection_values) *get_connection_values;
        __typeof__(MHD_suspend_connection) *suspend_connection;
        __typeof__(MHD_resume_connection) *resume_connection;
        __typeof__(MHD_get_connection_info) *get_connection_info;
} mhd_api;

struct http_server {
        http_config cfg;
        mhd_api mhd;
        struct MHD_Daemon *tcp, *local;
        char *socket_path;         /* to unlink at stop */
        atomic_uint requests;      /* exchanges not yet completed */
        atomic_uint admitted;      /* runs admitted whose thread has not yet ended: the thread's
                                    * last act is to decrement it, so at 0 none uses s */
        atomic_uint session_calls; /* the same for session procedures' threads */
        atomic_size_t body_bytes;  /* request-body buffers held, across connections */
        atomic_bool stopping;
        atomic_uint_fast64_t seq; /* ids for requests without a well-formed request ID */
};

typedef enum route {
        ROUTE_RPC,
        ROUTE_HULL, /* /hull.v1.Workspace/... and /hull.v1.Sessions/... */
        ROUTE_HEALTHZ,
        ROUTE_READYZ,
        ROUTE_METRICS,
        ROUTE_NOT_FOUND,
} route;

typedef struct exchange {
        http_server *srv;
        struct MHD_Connection *conn;
        route route;
        plim_procedure proc;
        hull_api_procedure hproc;
        char principal[SERVE_SHORT_STR_MAX]; /* who is calling: a token's name (or digest), or "local" */
        bool post;
        uint64_t start_us, received_unix_ms;
        char rid[PLIM_REQUEST_ID_LEN + 1]; /* the request ID to echo, "" when none */
        char id[SERVE_SHORT_STR_MAX];      /* for the log: the request ID or "n<seq>" */
        char path[SERVE_SHORT_STR_MAX];    /* cleaned, for the log */
        char *body;
        size_t body_len, body_cap;
        uint64_t body_seen;             /* bytes received, kept or not */
        size_t body_max;                /* what this procedure's body may be */
        bool over_budget;               /* the bodies of all connections took the budget */
        unsigned status;                /* what was queued; 0 until then */
        char note[SERVE_SHORT_STR_MAX]; /* extra log fields */
        /* an admitted run */
        plim_request req;
        brk_request plan;
        bool dispatched;             /* handed to a run thread: never handled again */
        struct MHD_Response *answer; /* left by the run thread */
        unsigned answer_status;
} exchange;

/* A connection's state: when its current request began (accept, or the end of the previous
 * request), for the deadline on receiving a whole request. */
typedef struct conn_state {
        uint64_t since_us;
} conn_state;

/* ---- addresses ---- */

int http_listen_parse(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) {
        char host[SERVE_SHORT_STR_MAX];
        const char *colon, *hs = s;
        size_t hl;
        uint64_t port;

        if (s[0] == '[') {
                const char *close = strchr(s, ']');
                if (!close || close[1] != ':')
                        return -EINVAL;
                hs = s + 1;
                hl = (size_t) (close - hs);
                colon = close + 1;
        } else {
                colon = strrchr(s, ':');
                if (!colon)
                        return -EINVAL;
                hl = (size_t) (colon - s);
        }
        if (hl == 0 || hl >= sizeof(host) || parse_uint64(colon + 1, 0, 65535, &port) < 0)
                return -EINVAL;
        memcpy(host, hs, hl);
        host[hl] = '\0';
        struct sockaddr_storage ss = {0};
        if (s[0] != '[') {
                struct sockaddr_in *a = (struct sockaddr_in *) &ss;
                a->sin_family = AF_INET;
                a->sin_port = htons((uint16_t) port);
                if (strcmp(host, "localhost") == 0)
                        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                else if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
                        return -EINVAL;
                *ret_len = sizeof(*a);
        } else {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *) &ss;
                a->sin6_family = AF_INET6;
                a->sin6_port = htons((uint16_t) port);
                if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
                        return -EINVAL;
                *ret_len = sizeof(*a);
        }
        *ret = ss;
        return 0;
}

bool http_addr_is_loopback(const struct sockaddr *a) {
        if (a->sa_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *) a)->sin_addr.s_addr) >> 24) == 127;
        if (a->sa_family == AF_INET6) {
                const struct in6_addr *x = &((const struct sockaddr_in6 *) a)->sin6_addr;
                return IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
        }
        return false;
}

/* ---- answers ---- */

static bool add_header(const exchange *x, struct MHD_Response *r, const char *k, const char *v) {
        return x->srv->mhd.add_response_header(r, k, v) == MHD_YES;
}

/* A response with our headers; takes body (malloc'ed). NULL on failure. */
static struct MHD_Response *response_new(const exchange *x, const char *content_type, char *body, size_t len,
                                         const char *not_dispatched) {
        struct MHD_Response *r = x->srv->mhd.create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!r) {
                free(body);
                return NULL;
        }
        if (!add_header(x, r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) ||
            (x->rid[0] && !add_header(x, r, PLIM_REQUEST_ID_HEADER, x->rid)) ||
            (not_dispatched && !add_header(x, r, PLIM_NOT_DISPATCHED_HEADER, not_dispatched))) {
                x->srv->mhd.destroy_response(r);
                return NULL;
        }
        return r;
}

static enum MHD_Result queue(exchange *x, unsigned status, struct MHD_Response *r) {
        if (!r)
                return MHD_NO;
        x->status = status;
        enum MHD_Result q = x->srv->mhd.queue_response(x->conn, status, r);
        x->srv->mhd.destroy_response(r);
        return q;
}

static enum MHD_Result answer_text(exchange *x, unsigned status, const char *content_type, const char *text) {
        char *body = strdup(text);
        return body ? queue(x, status, response_new(x, content_type, body, strlen(body), NULL)) : MHD_NO;
}

/* The error body for f; status 0 means Connect's status for the code. not_dispatched: the
 * header for refusals written before the procedure's handler was reached. */
static struct MHD_Response *error_response(exchange *x, const plim_error *f, const char *not_dispatched,
                                           unsigned *status, unsigned status_override) {
        char *body;
        size_t len;
        metrics_refusal(x->srv->cfg.metrics, f->reason);
        snprintf(x->note, sizeof(x->note), "code=%s%s%s", plim_code_to_string(f->code),
                 f->reason ? " not_dispatched=" : "", plim_reason_to_string(f->reason));
        if (plim_error_json(f, &body, &len) < 0)
                return NULL;
        *status = status_override ? status_override : plim_code_http_status(f->code);
        return response_new(x, "application/json", body, len, not_dispatched);
}

static enum MHD_Result answer_error(exchange *x, const plim_error *f, const char *not_dispatched,
                                    unsigned status_override) {
        unsigned status;
        struct MHD_Response *r = error_response(x, f, not_dispatched, &status, status_override);
        return queue(x, status, r);
}

static enum MHD_Result refuse(exchange *x, plim_code code, plim_reason reason, const char *not_dispatched,
                              unsigned status_override, const char *msg) {
        plim_error f;
        plim_fail(&f, code, reason, "%s", msg);
        return answer_error(x, &f, not_dispatched, status_override);
}

static enum MHD_Result answer_json(exchange *x, char *body, size_t len) {
        return queue(x, 200, response_new(x, "application/json", body, len, NULL));
}

/* ---- headers ---- */

typedef struct header_count {
        const char *name;
        unsigned n;
        const char *value;
} header_count;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        header_count *c = cls;
        if (key && strcasecmp(key, c->name) == 0) {
                c->n++;
                c->value = value;
        }
        return MHD_YES;
}

/* The value of the one header called name; NULL when absent; *ret_n says how many there were. */
static const char *header(const exchange *x, const char *name, unsigned *ret_n) {
        header_count c = {.name = name};
        x->srv->mhd.get_connection_values(x->conn, MHD_HEADER_KIND, count_header, &c);
        if (ret_n)
                *ret_n = c.n;
        return c.n == 1 ? c.value : NULL;
}

/* ---- the run thread ---- */

static metrics_outcome outcome_of(const plim_request *r, const brk_result *res) {
        switch ((brk_outcome) res->outcome) {
        case BRK_OUTCOME_COMPLETED:
                for (uint32_t i = 0; i < res->n_steps; i++)
                        if (res->steps[i].status != 0)
                                return METRICS_RUN_FAILED;
                return res->n_steps == (r->kind == PLIM_KIND_JAVASCRIPT ? 1 : r->n_steps) ? METRICS_RUN_OK
                                                                                          : METRICS_RUN_FAILED;
        case BRK_OUTCOME_TIMED_OUT:
                return METRICS_RUN_TIMED_OUT;
        case BRK_OUTCOME_SETUP_FAILED:
                return METRICS_RUN_SETUP_FAILED;
        case BRK_OUTCOME_CANCELLED:
        case BRK_OUTCOME_ERROR:
        case BRK_OUTCOME_NOT_STARTED:
                break;
        }
        return METRICS_RUN_ERROR;
}

static void *run_thread(void *arg) {
        exchange *x = arg;
        http_server *s = x->srv;
        struct MHD_Connection *conn = x->conn;
        const http_config *cfg = &s->cfg;
        brk_result res = {0};
        hull_error e = {0};
        plim_error f = {0};
        char *body = NULL, clean[HULL_ERROR_MSG_MAX];
        size_t len = 0;
        uint64_t t0 = now_mono_us();

        /* The client's socket is watched while the run lasts: a client that goes away gets its
         * run dropped from the queue or stopped. */
        const union MHD_ConnectionInfo *ci = s->mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        int watch_fd = ci ? (int) ci->connect_fd : -1;
        int r = brk_call(cfg->broker, &x->plan, (uint64_t) x->req.effective_timeout_ms + BRK_RESULT_SLACK_MS, watch_fd,
                         &res, &e);
        uint64_t ended = now_unix_ms();
        if (r == -ECANCELED) {
                dlog_log(cfg->log, DLOG_INFO, "event=run-cancelled id=%s reason=client-gone", x->id);
                plim_fail(&f, PLIM_CODE_CANCELED, PLIM_REASON_NONE,
                          "the caller hung up; the run was stopped, or never started");
                metrics_run_ended(cfg->metrics, METRICS_RUN_ERROR, now_mono_us() - t0);
        } else if (r < 0) {
                dlog_log(cfg->log, DLOG_ERROR, "event=run-lost id=%s error=\"%s\"", x->id,
                         dlog_clean(e.msg, clean, sizeof(clean)));
                plim_fail(&f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "internal error %s", x->id);
                metrics_run_ended(cfg->metrics, METRICS_RUN_ERROR, now_mono_us() - t0);
        } else {
                r = plim_run_answer(&x->req, &res, cfg->evidence, x->received_unix_ms, ended, &body, &len, &f);
                if (r == -ENOMEM)
                        plim_fail(&f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
                if (res.outcome == BRK_OUTCOME_NOT_STARTED) {
                        metrics_run_dropped(cfg->metrics);
                        if (atomic_load(&s->stopping))
                                f.code = PLIM_CODE_UNAVAILABLE;
                } else
                        metrics_run_ended(cfg->metrics, outcome_of(&x->req, &res), now_mono_us() - t0);
                if (r < 0 && f.code == PLIM_CODE_INTERNAL) { /* the detail goes to the log only */
                        dlog_log(cfg->log, DLOG_ERROR, "event=run-failed id=%s error=\"%s\"", x->id,
                                 dlog_clean(f.message, clean, sizeof(clean)));
                        plim_fail(&f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "internal error %s", x->id);
                }
        }
        if (r == 0) {
                hs_audit_run(cfg->sessions, x->req.root, body, len);
                x->answer = response_new(x, "application/json", body, len, NULL);
                x->answer_status = 200;
                snprintf(x->note, sizeof(x->note), "kind=%s outcome=%s run_ms=%" PRIu64,
                         plim_kind_to_string(x->req.kind),
                         res.outcome == BRK_OUTCOME_COMPLETED   ? "completed"
                         : res.outcome == BRK_OUTCOME_TIMED_OUT ? "timed_out"
                                                                : "setup_failed",
                         res.ended_unix_ms - res.started_unix_ms);
        } else
                x->answer = error_response(x, &f, NULL, &x->answer_status, 0);
        brk_result_done(&res);
        /* From here on x belongs to libmicrohttpd again. */
        s->mhd.resume_connection(conn);
        /* Last: once admitted is 0, http_stop may free s. */
        atomic_fetch_sub(&s->admitted, 1);
        return NULL;
}

static void body_free(exchange *x);

/* ---- session procedures: each on a thread of its own ---- */

static void *session_thread(void *arg) {
        exchange *x = arg;
        http_server *s = x->srv;
        struct MHD_Connection *conn = x->conn;
        hs_answer a;
        const union MHD_ConnectionInfo *ci = s->mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        int watch_fd = ci ? (int) ci->connect_fd : -1;
        hs_rpc(s->cfg.sessions, x->proc, x->hproc, x->principal, x->body, x->body_len, x->received_unix_ms, watch_fd,
               &a);
        if (a.ok) {
                x->answer = response_new(x, "application/json", a.body, a.len, NULL);
                x->answer_status = 200;
        } else {
                free(a.body);
                if (a.f.code == PLIM_CODE_INTERNAL && a.f.reason == PLIM_REASON_NONE && !a.f.unanswered[0]) {
                        char clean[HULL_ERROR_MSG_MAX];
                        dlog_log(s->cfg.log, DLOG_ERROR, "event=session-failed id=%s error=\"%s\"", x->id,
                                 dlog_clean(a.f.message, clean, sizeof(clean)));
                }
                x->answer = error_response(x, &a.f, a.f.before_handler ? "request" : NULL, &x->answer_status, 0);
        }
        if (a.note[0])
                snprintf(x->note + strlen(x->note), sizeof(x->note) - strlen(x->note), "%s%s", x->note[0] ? " " : "",
                         a.note);
        body_free(x);
        s->mhd.resume_connection(conn);
        atomic_fetch_sub(&s->session_calls, 1);
        return NULL;
}

static enum MHD_Result do_session(exchange *x) {
        http_server *s = x->srv;
        pthread_attr_t attr;
        pthread_t t;
        atomic_fetch_add(&s->session_calls, 1);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, SERVE_RUN_THREAD_STACK);
        x->dispatched = true;
        s->mhd.suspend_connection(x->conn);
        int r = pthread_create(&t, &attr, session_thread, x);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                s->mhd.resume_connection(x->conn);
                x->dispatched = false;
                atomic_fetch_sub(&s->session_calls, 1);
                return refuse(x, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                              "no thread for the call; retry later; nothing ran");
        }
        return MHD_YES;
}

/* ---- request bodies ---- */

/* Release x's body buffer and its share of the budget. */
static void body_free(exchange *x) {
        if (x->body_cap)
                atomic_fetch_sub(&x->srv->body_bytes, x->body_cap);
        free(TAKE_PTR(x->body));
        x->body_len = x->body_cap = 0;
}

/* Keep n more bytes of the body, growing the buffer by doubling up to the procedure's bound and
 * within the budget all connections share. Returns 0, -E2BIG when the budget is out (the body
 * is then dropped), or -ENOMEM. */
static int body_append(exchange *x, const char *p, size_t n) {
        if (x->body_len + n > x->body_cap) {
                size_t cap = MAX(x->body_cap * 2, (size_t) SERVE_BODY_INITIAL);
                while (cap < x->body_len + n)
                        cap *= 2;
                cap = MIN(cap, x->body_max);
                size_t more = cap - x->body_cap;
                if (atomic_fetch_add(&x->srv->body_bytes, more) + more > SERVE_BODIES_BUDGET_BYTES) {
                        atomic_fetch_sub(&x->srv->body_bytes, more);
                        body_free(x);
                        return -E2BIG;
                }
                char *b = realloc(x->body, cap);
                if (!b) {
                        atomic_fetch_sub(&x->srv->body_bytes, more);
                        return -ENOMEM;
                }
                x->body = b;
                x->body_cap = cap;
        }
        memcpy(x->body + x->body_len, p, n);
        x->body_len += n;
        return 0;
}

/* ---- procedures ---- */

static enum MHD_Result do_run(exchange *x) {
        http_server *s = x->srv;
        plim_error f;

        int q = plim_run_parse(x->body, x->body_len, &x->req, &f);
        body_free(x); /* the request keeps what it needs */
        if (q < 0)
                return answer_error(x, &f, f.before_handler ? "request" : NULL, 0);
        if (x->req.trace_id_dropped)
                dlog_log(s->cfg.log, DLOG_INFO, "event=trace-id-dropped id=%s", x->id);
        if (plim_run_admit(&x->req, s->cfg.evidence, &f) < 0)
                return answer_error(x, &f, NULL, 0);
        if (atomic_fetch_add(&s->admitted, 1) >= s->cfg.max_runs + s->cfg.queue_max) {
                atomic_fetch_sub(&s->admitted, 1);
                return refuse(x, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                              "every run slot and the queue are taken; retry later; nothing ran");
        }
        if (plim_plan(&x->req, s->cfg.evidence, &x->plan) < 0) {
                atomic_fetch_sub(&s->admitted, 1);
                dlog_log(s->cfg.log, DLOG_ERROR, "event=run-refused id=%s error=\"out of memory for the run's plan\"",
                         x->id);
                return refuse(x, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                              "out of memory; retry later; nothing ran");
        }
        metrics_run_started(s->cfg.metrics);

        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, SERVE_RUN_THREAD_STACK);
        /* The exchange is not completed before the thread resumes it; the thread itself is
         * counted in admitted. */
        x->dispatched = true;
        s->mhd.suspend_connection(x->conn);
        int r = pthread_create(&t, &attr, run_thread, x);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                s->mhd.resume_connection(x->conn);
                x->dispatched = false;
                atomic_fetch_sub(&s->admitted, 1);
                metrics_run_dropped(s->cfg.metrics);
                return refuse(x, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                              "no thread for the run; retry later; nothing ran");
        }
        return MHD_YES;
}

static enum MHD_Result do_rpc(exchange *x) {
        plim_error f;
        char *body;
        size_t len;

        switch (x->proc) {
        case PLIM_PROC_DESCRIBE:
                if (plim_describe_parse(x->body, x->body_len, &f) < 0)
                        return answer_error(x, &f, f.before_handler ? "request" : NULL, 0);
                if (plim_describe_json(x->srv->cfg.evidence, &body, &len) < 0)
                        return MHD_NO;
                return answer_json(x, body, len);
        case PLIM_PROC_RUN:
                return do_run(x);
        case PLIM_PROC_OPEN_SESSION:
        case PLIM_PROC_SESSION_RUN:
        case PLIM_PROC_CLOSE_SESSION:
                if (!x->srv->cfg.sessions) {
                        plim_session_refuse(x->body, x->body_len, x->proc, &f);
                        return answer_error(x, &f, f.before_handler ? "request" : NULL, 0);
                }
                return do_session(x);
        case PLIM_PROC_NONE:
                if (x->route == ROUTE_HULL) {
                        if (!x->srv->cfg.sessions)
                                return refuse(x, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "unsupported", 0,
                                              "sessions are off on this daemon; nothing ran");
                        return do_session(x);
                }
                break;
        case PLIM_PROC_UNKNOWN:
                break;
        }
        return MHD_NO;
}

/* ---- the first call: routing and every check that needs only the headers ---- */

static enum MHD_Result on_headers(exchange *x, const char *method) {
        http_server *s = x->srv;
        unsigned n;

        if (x->route == ROUTE_NOT_FOUND)
                return refuse(x, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "unsupported", 404,
                              "no such path on hull serve; nothing ran");
        if (x->route != ROUTE_RPC && x->route != ROUTE_HULL) {
                if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                        return answer_text(x, 405, "text/plain; charset=utf-8", "use GET\n");
                switch (x->route) {
                case ROUTE_HEALTHZ:
                        return answer_text(x, 200, "text/plain; charset=utf-8", "ok\n");
                case ROUTE_READYZ:
                        if (atomic_load(&s->stopping))
                                return answer_text(x, 503, "text/plain; charset=utf-8", "not ready: shutting down\n");
                        if (!brk_alive(s->cfg.broker))
                                return answer_text(x, 503, "text/plain; charset=utf-8",
                                                   "not ready: the sandbox broker is gone\n");
                        return answer_text(x, 200, "text/plain; charset=utf-8", "ready\n");
                case ROUTE_METRICS: {
                        char *body;
                        size_t len;
                        if (metrics_render(s->cfg.metrics, &body, &len) < 0)
                                return MHD_NO;
                        return queue(x, 200,
                                     response_new(x, "text/plain; version=0.0.4; charset=utf-8", body, len, NULL));
                }
                case ROUTE_NOT_FOUND:
                case ROUTE_RPC:
                case ROUTE_HULL:
                        break;
                }
        }
        if (x->proc == PLIM_PROC_UNKNOWN || (x->route == ROUTE_HULL && x->hproc == HULL_API_UNKNOWN))
                return refuse(x, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "unsupported", 404,
                              "hull serve has no such procedure; nothing ran");
        if (!x->post)
                return refuse(x, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_REQUEST, "request", 405,
                              "the procedures take POST; nothing ran");

        if (s->cfg.tokens && s->cfg.tokens->n > 0) {
                const char *h = header(x, MHD_HTTP_HEADER_AUTHORIZATION, &n);
                const auth_token *who = NULL;
                auth_verdict v = n > 1 ? AUTH_MALFORMED : auth_check(s->cfg.tokens, h, AUTH_SCOPE_CODE_RUN, &who);
                if (v == AUTH_NO_SCOPE)
                        return refuse(x, PLIM_CODE_PERMISSION_DENIED, PLIM_REASON_PERMISSION, NULL, 0,
                                      "the token lacks the scope code:run; nothing ran");
                if (v != AUTH_OK) {
                        char msg[HULL_ERROR_MSG_MAX];
                        snprintf(msg, sizeof(msg), "%s: send Authorization: Bearer <token>; nothing ran",
                                 auth_verdict_to_string(v));
                        return refuse(x, PLIM_CODE_UNAUTHENTICATED, PLIM_REASON_PERMISSION, NULL, 0, msg);
                }
                if (who && who->name[0])
                        snprintf(x->note, sizeof(x->note), "caller=%s", who->name);
                /* Sessions belong to the token that opened them (its digest: two tokens may share a
                 * name). */
                if (who) {
                        char *p = x->principal;
                        p += snprintf(p, sizeof(x->principal), "token:");
                        for (size_t i = 0; i < 16; i++)
                                p += snprintf(p, 3, "%02x", who->digest[i]);
                }
        }
        if (atomic_load(&s->stopping))
                return refuse(x, PLIM_CODE_UNAVAILABLE, PLIM_REASON_CAPACITY, NULL, 0,
                              "hull serve is shutting down; retry elsewhere; nothing ran");
        if (!plim_content_type_is_json(header(x, MHD_HTTP_HEADER_CONTENT_TYPE, NULL)))
                return refuse(x, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "request", 0,
                              "the body must be Content-Type: application/json; nothing ran");
        const char *enc = header(x, MHD_HTTP_HEADER_CONTENT_ENCODING, &n);
        if (n > 1 || (enc && strcasecmp(enc, "identity") != 0))
                return refuse(x, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "request", 0,
                              "compressed bodies are not accepted (send Content-Encoding: identity); nothing ran");
        /* A body a little over the bound is read and dropped, so that the client, which sends
         * all of it before it reads, gets the answer; a much larger one is refused at once. */
        const char *cl = header(x, MHD_HTTP_HEADER_CONTENT_LENGTH, NULL);
        uint64_t clen;
        if (cl && parse_uint64(cl, 0, UINT64_MAX, &clen) == 0 && clen > SERVE_BODY_DISCARD_MAX) {
                char msg[HULL_ERROR_MSG_MAX];
                snprintf(msg, sizeof(msg), "the body is over %u bytes; nothing ran", SERVE_BODY_MAX);
                return refuse(x, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "request", 0, msg);
        }
        return MHD_YES;
}

static route route_of(const char *url, plim_procedure *ret_proc, hull_api_procedure *ret_hproc) {
        *ret_proc = plim_procedure_from_path(url);
        *ret_hproc = HULL_API_NONE;
        if (*ret_proc != PLIM_PROC_NONE)
                return ROUTE_RPC;
        *ret_hproc = hull_api_procedure_from_path(url);
        if (*ret_hproc != HULL_API_NONE)
                return ROUTE_HULL;
        if (strcmp(url, "/healthz") == 0)
                return ROUTE_HEALTHZ;
        if (strcmp(url, "/readyz") == 0)
                return ROUTE_READYZ;
        if (strcmp(url, "/metrics") == 0)
                return ROUTE_METRICS;
        return ROUTE_NOT_FOUND;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **req_cls) {
        http_server *s = cls;
        exchange *x = *req_cls;

        if (!x || !x->dispatched) { /* still receiving: the whole request has a deadline */
                const union MHD_ConnectionInfo *ci =
                        s->mhd.get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
                const conn_state *cs = ci ? ci->socket_context : NULL;
                if (cs && now_mono_us() - cs->since_us > (uint64_t) SERVE_REQUEST_RECEIVE_MS * 1000) {
                        dlog_log(s->cfg.log, DLOG_INFO, "event=request-too-slow id=%s ms=%u", x ? x->id : "-",
                                 SERVE_REQUEST_RECEIVE_MS);
                        return MHD_NO;
                }
        }
        if (!x) {
                x = calloc(1, sizeof(*x));
                if (!x)
                        return MHD_NO;
                *req_cls = x;
                atomic_fetch_add(&s->requests, 1);
                x->srv = s;
                x->conn = conn;
                x->start_us = now_mono_us();
                x->received_unix_ms = now_unix_ms();
                x->route = route_of(url, &x->proc, &x->hproc);
                snprintf(x->principal, sizeof(x->principal), "local");
                x->post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
                x->body_max = x->proc == PLIM_PROC_DESCRIBE ? PLIM_DESCRIBE_BODY_MAX : SERVE_BODY_MAX;
                dlog_clean(url, x->path, sizeof(x->path));
                unsigned n;
                const char *rid = header(x, PLIM_REQUEST_ID_HEADER, &n);
                if (rid && plim_request_id_is_valid(rid))
                        memcpy(x->rid, rid, PLIM_REQUEST_ID_LEN + 1);
                if (x->rid[0])
                        memcpy(x->id, x->rid, sizeof(x->rid));
                else
                        snprintf(x->id, sizeof(x->id), "n%" PRIuFAST64, atomic_fetch_add(&s->seq, 1) + 1);
                return on_headers(x, method);
        }
        if (x->dispatched) { /* resumed by the run thread; without an answer (no memory), close */
                struct MHD_Response *r = TAKE_PTR(x->answer);
                return r ? queue(x, x->answer_status, r) : MHD_NO;
        }
        if (*upload_size > 0) {
                size_t n = *upload_size;
                *upload_size = 0;
                x->body_seen += n;
                if (x->body_seen > SERVE_BODY_DISCARD_MAX)
                        return MHD_NO;                              /* a chunked flood: close the connection */
                if (x->body_seen > x->body_max || x->over_budget) { /* refused once the body is complete */
                        body_free(x);
                        return MHD_YES;
                }
                int r = body_append(x, upload, n);
                if (r == -E2BIG)
                        x->over_budget = true;
                else if (r < 0)
                        return MHD_NO;
                return MHD_YES;
        }
        if (x->over_budget)
                return refuse(x, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0,
                              "the server holds too many request bodies at once; retry later; nothing ran");
        if (x->body_seen > x->body_max) {
                char msg[HULL_ERROR_MSG_MAX];
                snprintf(msg, sizeof(msg), "the body is over %zu bytes; nothing ran", x->body_max);
                return refuse(x, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "request", 0, msg);
        }
        return do_rpc(x);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls, enum MHD_RequestTerminationCode toe) {
        http_server *s = cls;
        exchange *x = *req_cls;
        if (!x)
                return;
        *req_cls = NULL;
        if (x->status)
                metrics_http(s->cfg.metrics, x->status);
        dlog_log(s->cfg.log, x->status >= 500 ? DLOG_WARN : DLOG_INFO,
                 "event=request id=%s %s path=%s status=%u%s ms=%.1f%s%s", x->id,
                 x->post ? "method=POST" : "method=GET", x->path, x->status,
                 toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=yes",
                 (double) (now_mono_us() - x->start_us) / 1000.0, x->note[0] ? " " : "", x->note);
        if (x->answer)
                s->mhd.destroy_response(x->answer);
        plim_plan_done(&x->plan);
        plim_request_done(&x->req);
        body_free(x);
        free(x);
        /* A keep-alive connection's next request has its own deadline. */
        const union MHD_ConnectionInfo *ci = s->mhd.get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        conn_state *cs = ci ? ci->socket_context : NULL;
        if (cs)
                cs->since_us = now_mono_us();
        atomic_fetch_sub(&s->requests, 1);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                conn_state *cs = malloc(sizeof(*cs)); /* without it, no receive deadline */
                if (cs)
                        cs->since_us = now_mono_us();
                *socket_context = cs;
        } else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
                free(TAKE_PTR(*socket_context));
}

_printf_(2, 0) static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        http_server *s = cls;
        char msg[SERVE_LOG_LINE_MAX], clean[SERVE_LOG_LINE_MAX];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        size_t n = strlen(msg);
        while (n > 0 && msg[n - 1] == '\n')
                msg[--n] = '\0';
        for (char *p = msg; *p; p++)
                if (*p == ' ')
                        *p = '_';
        dlog_log(s->cfg.log, DLOG_DEBUG, "event=libmicrohttpd msg=%s", dlog_clean(msg, clean, sizeof(clean)));
}

/* ---- start and stop ---- */

static struct MHD_Daemon *daemon_start(http_server *s, unsigned flags, enum MHD_OPTION where, const void *value,
                                       unsigned per_ip_max) {
        return s->mhd.start_daemon(
                MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | flags, 0, NULL, NULL,
                on_request, s, where, value, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_max,
                MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_THREAD_POOL_SIZE,
                (unsigned) SERVE_HTTP_THREADS, MHD_OPTION_CONNECTION_LIMIT, (unsigned) SERVE_CONNECTIONS_MAX,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) SERVE_CONNECTION_MEMORY_BYTES,
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) SERVE_CONNECTION_IDLE_S, MHD_OPTION_LISTEN_BACKLOG_SIZE,
                (unsigned) SERVE_LISTEN_BACKLOG, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s, MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1, MHD_OPTION_END);
}

/* A listening unix socket at path, mode 0600 before anyone can connect. A stale socket there
 * is replaced; any other file is not. */
static int unix_listener(const char *path, hull_error *e) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct stat st;
        if (strlen(path) >= sizeof(sa.sun_path))
                return hull_err(e, -ENAMETOOLONG, "serve: the socket path %s is too long", path);
        memcpy(sa.sun_path, path, strlen(path) + 1);
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return hull_err(e, -EEXIST, "serve: %s exists and is not a socket", path);
                if (unlink(path) < 0)
                        return hull_err(e, negative_errno(), "serve: cannot remove the old socket %s", path);
        }
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return hull_err(e, negative_errno(), "serve: cannot create a unix socket");
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return hull_err(e, negative_errno(), "serve: cannot bind %s", path);
        if (chmod(path, 0600) < 0 || listen(fd, SERVE_LISTEN_BACKLOG) < 0) {
                int r = negative_errno();
                unlink(path);
                return hull_err(e, r, "serve: cannot listen on %s", path);
        }
        return TAKE_FD(fd);
}

static int mhd_load(mhd_api *m, hull_error *e) {
        m->handle = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!m->handle)
                return hull_err_hint(e, -ENOENT, "install libmicrohttpd12 (scripts/install-deps.sh does)",
                                     "serve: cannot load %s: %s", MHD_SONAME, dlerror());
#define LOAD(f)                                                                                                        \
        if (!(*(void **) &m->f = dlsym(m->handle, "MHD_" #f)))                                                         \
                return hull_err(e, -ENOENT, "serve: %s lacks MHD_%s", MHD_SONAME, #f);
        LOAD(start_daemon);
        LOAD(stop_daemon);
        LOAD(quiesce_daemon);
        LOAD(get_daemon_info);
        LOAD(create_response_from_buffer);
        LOAD(add_response_header);
        LOAD(queue_response);
        LOAD(destroy_response);
        LOAD(get_connection_values);
        LOAD(suspend_connection);
        LOAD(resume_connection);
        LOAD(get_connection_info);
#undef LOAD
        return 0;
}

int http_start(const http_config *cfg, http_server **ret, hull_error *e) {
        http_server *s = calloc(1, sizeof(*s));
        if (!s)
                return hull_err(e, -ENOMEM, "serve: out of memory");
        s->cfg = *cfg;
        int r = mhd_load(&s->mhd, e);
        if (r < 0) {
                http_stop(s);
                return r;
        }
        atomic_init(&s->requests, 0);
        atomic_init(&s->admitted, 0);
        atomic_init(&s->session_calls, 0);
        atomic_init(&s->body_bytes, 0);
        atomic_init(&s->stopping, false);
        atomic_init(&s->seq, 0);

        if (cfg->socket_path) {
                int fd = unix_listener(cfg->socket_path, e);
                if (fd < 0) {
                        free(s);
                        return fd;
                }
                s->socket_path = strdup(cfg->socket_path);
                s->local = daemon_start(s, 0, MHD_OPTION_LISTEN_SOCKET, (const void *) (intptr_t) fd, 0);
                if (!s->local || !s->socket_path) {
                        if (!s->local)
                                close(fd);
                        http_stop(s);
                        return hull_err(e, -EIO, "serve: cannot serve on the unix socket %s", cfg->socket_path);
                }
        }
        unsigned flags = cfg->listen.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0;
        s->tcp = daemon_start(s, flags, MHD_OPTION_SOCK_ADDR, &cfg->listen, SERVE_CONNECTIONS_PER_IP_MAX);
        if (!s->tcp) {
                char host[INET6_ADDRSTRLEN] = "?";
                const struct sockaddr *a = (const struct sockaddr *) &cfg->listen;
                inet_ntop(a->sa_family,
                          a->sa_family == AF_INET6 ? (const void *) &((const struct sockaddr_in6 *) a)->sin6_addr
                                                   : (const void *) &((const struct sockaddr_in *) a)->sin_addr,
                          host, sizeof(host));
                http_stop(s);
                return hull_err_hint(e, -EADDRINUSE, "pick another --listen address or stop what holds it",
                                     "serve: cannot listen on %s port %u", host,
                                     ntohs(a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *) a)->sin6_port
                                                                    : ((const struct sockaddr_in *) a)->sin_port));
        }
        *ret = s;
        return 0;
}

unsigned http_port(http_server *s) {
        const union MHD_DaemonInfo *i = s->tcp ? s->mhd.get_daemon_info(s->tcp, MHD_DAEMON_INFO_BIND_PORT) : NULL;
        return i ? i->port : 0;
}

void http_quiesce(http_server *s) {
        atomic_store(&s->stopping, true);
        struct MHD_Daemon *ds[2] = {s->tcp, s->local};
        for (size_t i = 0; i < 2; i++)
                if (ds[i]) {
                        MHD_socket fd = s->mhd.quiesce_daemon(ds[i]);
                        if (fd != MHD_INVALID_SOCKET)
                                close(fd);
                }
        if (s->socket_path)
                unlink(s->socket_path);
}

unsigned http_busy(http_server *s) {
        /* An admitted run's exchange is also a request: counted once, and still counted after its
         * exchange completed until its thread has ended. */
        unsigned requests = atomic_load(&s->requests),
                 runs = atomic_load(&s->admitted) + atomic_load(&s->session_calls);
        return MAX(requests, runs);
}

int http_stop(http_server *s) {
        if (!s)
                return 0;
        if (atomic_load(&s->admitted) > 0 || atomic_load(&s->session_calls) > 0)
                return -EBUSY;
        if (s->tcp)
                s->mhd.stop_daemon(s->tcp);
        if (s->local)
                s->mhd.stop_daemon(s->local);
        if (s->socket_path)
                unlink(s->socket_path);
        if (s->mhd.handle)
                dlclose(s->mhd.handle);
        free(s->socket_path);
        free(s);
        return 0;
}
