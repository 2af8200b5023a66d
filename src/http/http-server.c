/* http-server.c: libmicrohttpd glue: listeners, route tables, auth, bounded heads and bodies,
 * answers whole or streamed, spawned threads, the watchdog, one log line per request.
 *
 * One request is an http_req. libmicrohttpd calls uri_log() when the request line is in (the
 * request is made there, with the raw URI), on_request() once the head is complete (routing,
 * auth and every check that needs only the head answer here, before any byte of the body is
 * read), once per piece of the body (kept within the route's bound and a budget all connections
 * share, or handed to the route's sink), and once when the body is complete (the handler runs).
 * A handler that spawns a thread leaves its connection suspended; the thread leaves the answer
 * in the request and resumes the connection, and the next on_request() queues it. A short call
 * (http_req_spawn_short) runs on libmicrohttpd's own thread instead when that thread serves its
 * connection and no other (each connection records the thread that accepted it).
 * on_completed() logs, counts and frees.
 *
 * libmicrohttpd calls on_request() only once a head is complete and cuts a connection only when
 * no byte came for SERVE_CONNECTION_IDLE_S, so a head trickled a byte a second would never end.
 * Each connection therefore has a socket context (http_conn) that records its phase and since
 * when; a watchdog thread shuts down the sockets whose head or request is overdue, and a new
 * connection closes the oldest incomplete one of its address (or of all) past the bounds. */
#include "http-server-internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dynbuf.h"
#include "fs-util.h"
#include "limits.h"
#include "macro.h"
#include "parse-util.h"
#include "sock-util.h"
#include "time-util.h"

/* libmicrohttpd is loaded when the server is made (src/shared/dlib-microhttpd.h says why). */
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

static addr_key addr_key_of(const struct sockaddr *a, int fd) {
        addr_key k = {.family = AF_UNSPEC};
        if (a && a->sa_family == AF_INET) {
                k.family = AF_INET;
                memcpy(k.a, &((const struct sockaddr_in *) a)->sin_addr, 4);
        } else if (a && a->sa_family == AF_INET6) {
                const struct in6_addr *x = &((const struct sockaddr_in6 *) a)->sin6_addr;
                if (IN6_IS_ADDR_V4MAPPED(x)) {
                        k.family = AF_INET;
                        memcpy(k.a, x->s6_addr + 12, 4);
                } else {
                        k.family = AF_INET6;
                        memcpy(k.a, x->s6_addr, 16);
                }
        } else {
                struct ucred cred;
                socklen_t len = sizeof(cred);
                k.family = AF_UNIX;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
                        memcpy(k.a, &cred.uid, sizeof(cred.uid));
        }
        return k;
}

static const char *addr_key_string(const addr_key *k, char *buf, size_t size) {
        if (k->family == AF_INET || k->family == AF_INET6)
                inet_ntop(k->family, k->a, buf, (socklen_t) size);
        else {
                uint32_t uid;
                memcpy(&uid, k->a, sizeof(uid));
                snprintf(buf, size, "unix-uid-%" PRIu32, uid);
        }
        return buf;
}

/* ---- connections and the watchdog ---- */

/* Set c's phase; restart: a request completed, the next head's deadline starts now. */
static void conn_set_phase(http_server *s, http_conn *c, conn_phase phase, bool restart) {
        if (!c)
                return;
        pthread_mutex_lock(&s->lock);
        c->phase = phase;
        c->receive_ms = SERVE_REQUEST_RECEIVE_MS;
        if (restart) {
                c->since_us = now_mono_us();
                c->served++;
        }
        pthread_mutex_unlock(&s->lock);
}

static bool conn_cut(http_server *s, http_conn *c) {
        if (!c)
                return false;
        pthread_mutex_lock(&s->lock);
        bool cut = c->cut;
        pthread_mutex_unlock(&s->lock);
        return cut;
}

/* Shut c's socket down (under s->lock): libmicrohttpd sees the end and closes the connection. */
static void cut_locked(http_server *s, http_conn *c, const char *why, uint64_t ms) {
        char addr[INET6_ADDRSTRLEN + 16];
        c->cut = true;
        (void) shutdown(c->fd, SHUT_RDWR);
        /* An idle keep-alive connection cut at the head's deadline is routine: debug, as evictions. */
        dlog_log(s->cfg.log, ms && !c->served ? DLOG_INFO : DLOG_DEBUG,
                 "event=connection-cut reason=%s addr=%s phase=%s%s", why, addr_key_string(&c->key, addr, sizeof(addr)),
                 c->phase == PHASE_HEAD ? "head" : "body", ms ? "" : " msg=\"too many incomplete connections\"");
}

/* A new connection: past the bounds on incomplete connections (of its address, of all), the
 * oldest incomplete one is cut, a head before a body. Under s->lock. */
static void evict_locked(http_server *s, const http_conn *fresh) {
        for (int pass = 0; pass < 2; pass++) {
                unsigned n = 0;
                http_conn *oldest[2] = {NULL, NULL}; /* head, body */
                for (http_conn *c = s->conns; c; c = c->next) {
                        if (c->cut || c->phase == PHASE_BUSY || c == fresh)
                                continue;
                        if (pass == 0 && memcmp(&c->key, &fresh->key, sizeof(c->key)) != 0)
                                continue;
                        n++;
                        http_conn **o = &oldest[c->phase == PHASE_HEAD ? 0 : 1];
                        if (!*o || c->since_us < (*o)->since_us)
                                *o = c;
                }
                if (n >= (pass == 0 ? SERVE_INCOMPLETE_PER_ADDR_MAX : SERVE_INCOMPLETE_MAX)) {
                        http_conn *victim = oldest[0] ? oldest[0] : oldest[1];
                        if (victim)
                                cut_locked(s, victim, pass == 0 ? "address-incomplete-max" : "incomplete-max", 0);
                }
        }
}

/* The slot of the calling libmicrohttpd thread in s->workers, -1 when the table is full. Under s->lock. */
static int worker_slot_locked(http_server *s) {
        pthread_t self = pthread_self();
        for (unsigned i = 0; i < s->n_workers; i++)
                if (pthread_equal(s->workers[i].thread, self))
                        return (int) i;
        if (s->n_workers >= ELEMENTSOF(s->workers))
                return -1;
        s->workers[s->n_workers].thread = self;
        s->workers[s->n_workers].conns = 0;
        return (int) s->n_workers++;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
        http_server *s = cls;
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                http_conn *c = calloc(1, sizeof(*c)); /* without it, no deadlines: the idle timeout still holds */
                if (!c)
                        return;
                const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
                c->fd = fi ? (int) fi->connect_fd : -1;
                c->key = addr_key_of(ai ? ai->client_addr : NULL, c->fd);
                c->phase = PHASE_HEAD;
                c->since_us = now_mono_us();
                pthread_mutex_lock(&s->lock);
                evict_locked(s, c);
                c->worker = worker_slot_locked(s);
                if (c->worker >= 0)
                        s->workers[c->worker].conns++;
                c->next = s->conns;
                if (s->conns)
                        s->conns->prev = c;
                s->conns = c;
                pthread_mutex_unlock(&s->lock);
                *socket_context = c;
        } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
                /* libmicrohttpd closes the socket after this: once unlinked, the watchdog cannot
                 * shut down a reused fd */
                http_conn *c = *socket_context;
                if (!c)
                        return;
                pthread_mutex_lock(&s->lock);
                if (c->worker >= 0)
                        s->workers[c->worker].conns--;
                if (c->prev)
                        c->prev->next = c->next;
                else
                        s->conns = c->next;
                if (c->next)
                        c->next->prev = c->prev;
                pthread_mutex_unlock(&s->lock);
                free(c);
                *socket_context = NULL;
        }
}

static void *watchdog_main(void *arg) {
        http_server *s = arg;
        for (;;) {
                struct pollfd p = {.fd = s->watchdog_pipe[0], .events = POLLIN};
                if (poll(&p, 1, SERVE_HTTP_TICK_MS) > 0)
                        return NULL;
                uint64_t now = now_mono_us();
                pthread_mutex_lock(&s->lock);
                for (http_conn *c = s->conns; c; c = c->next) {
                        if (c->cut || c->phase == PHASE_BUSY)
                                continue;
                        uint64_t bound = c->phase == PHASE_HEAD ? SERVE_HEAD_RECEIVE_MS : c->receive_ms;
                        if (now - c->since_us > bound * 1000ULL)
                                cut_locked(s, c, c->phase == PHASE_HEAD ? "head-too-slow" : "request-too-slow", bound);
                }
                for (http_sse *x = s->streams; x; x = x->next)
                        http_sse_tick_locked(x, now);
                pthread_mutex_unlock(&s->lock);
        }
}

/* ---- answers ---- */

unsigned http_refusal_status(http_refusal why) {
        switch (why) {
        case HTTP_REFUSAL_NOT_FOUND:
                return 404;
        case HTTP_REFUSAL_METHOD:
                return 405;
        case HTTP_REFUSAL_BAD_HEAD:
                return 400;
        case HTTP_REFUSAL_UNAUTHENTICATED:
                return 401;
        case HTTP_REFUSAL_FORBIDDEN:
                return 403;
        case HTTP_REFUSAL_TOO_LARGE:
                return 413;
        case HTTP_REFUSAL_BUSY:
                return 429;
        case HTTP_REFUSAL_STOPPING:
                return 503;
        case _HTTP_REFUSAL_MAX:
                break;
        }
        return 500;
}

int http_answer_header(http_req *r, const char *name, const char *value) {
        if (r->n_headers >= ELEMENTSOF(r->headers) || strlen(value) > SERVE_HEADER_VALUE_MAX)
                return -E2BIG;
        char *n = strdup(name), *v = strdup(value);
        if (!n || !v) {
                free(n);
                free(v);
                return -ENOMEM;
        }
        r->headers[r->n_headers].name = n;
        r->headers[r->n_headers].value = v;
        r->n_headers++;
        return 0;
}

/* Add r's headers and the content type to a new response; NULL (and the response destroyed)
 * on failure. */
struct MHD_Response *http_dress(http_req *r, struct MHD_Response *resp, const char *content_type) {
        if (!resp)
                return NULL;
        bool ok = !content_type || MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) == MHD_YES;
        for (size_t i = 0; ok && i < r->n_headers; i++)
                ok = MHD_add_response_header(resp, r->headers[i].name, r->headers[i].value) == MHD_YES;
        if (!ok) {
                MHD_destroy_response(resp);
                return NULL;
        }
        return resp;
}

int http_answer(http_req *r, unsigned status, const char *content_type, char *body, size_t len) {
        if (r->answer || r->sse) {
                free(body);
                return -EALREADY;
        }
        struct MHD_Response *resp = MHD_create_response_from_buffer(
                body ? len : 0, body ? body : (void *) "", body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (!resp) {
                free(body);
                return -ENOMEM;
        }
        resp = http_dress(r, resp, content_type);
        if (!resp)
                return -ENOMEM;
        r->answer = resp;
        r->answer_status = status;
        return 0;
}

int http_answer_fd(http_req *r, unsigned status, const char *content_type, int fd, uint64_t size) {
        if (r->answer || r->sse) {
                safe_close(fd);
                return -EALREADY;
        }
        /* libmicrohttpd sends it (sendfile where it can) and closes fd with the answer */
        struct MHD_Response *resp = MHD_create_response_from_fd64(size, fd);
        if (!resp) {
                safe_close(fd);
                return -ENOMEM;
        }
        resp = http_dress(r, resp, content_type);
        if (!resp)
                return -ENOMEM;
        r->answer = resp;
        r->answer_status = status;
        return 0;
}

int http_answer_text(http_req *r, unsigned status, const char *text) {
        char *b = strdup(text);
        if (!b)
                return -ENOMEM;
        return http_answer(r, status, "text/plain; charset=utf-8", b, strlen(b));
}

/* The fallback that covers r's path: the first prefixed one that matches, else the default. */
static const http_fallback *fallback_of(const http_req *r, http_fallback *def) {
        const char *path = r->path;
        for (size_t i = 0; i < r->srv->cfg.n_prefixed; i++) {
                const http_fallback *f = &r->srv->cfg.prefixed[i];
                size_t n = strlen(f->prefix);
                if (strncmp(path, f->prefix, n) == 0 && (path[n] == '\0' || path[n] == '/'))
                        return f;
        }
        *def = (http_fallback){.prefix = "", .api = r->srv->cfg.fallback, .data = r->srv->cfg.fallback_data};
        return def;
}

static const http_api *api_of(const http_req *r) {
        http_fallback def;
        return r->table ? r->table->api : fallback_of(r, &def)->api;
}

void http_refuse(http_req *r, http_refusal why, const char *fmt, ...) {
        char msg[HULL_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        const http_api *api = api_of(r);
        unsigned status = http_refusal_status(why);
        if (api && api->refuse)
                api->refuse(r, why, status, msg);
        if (!r->answer && !r->sse) {
                char text[HULL_ERROR_MSG_MAX + 2];
                snprintf(text, sizeof(text), "%s\n", msg);
                (void) http_answer_text(r, status, text);
        }
}

/* Queue what r's handler left; MHD_NO (the connection closes) when it left nothing. */
static enum MHD_Result queue(http_req *r) {
        struct MHD_Response *resp = TAKE_PTR(r->answer);
        r->state = REQ_DONE;
        if (!resp)
                return MHD_NO;
        r->status = r->answer_status;
        enum MHD_Result q = MHD_queue_response(r->conn, r->answer_status, resp);
        MHD_destroy_response(resp);
        return q;
}

/* ---- the request ---- */

const char *http_req_method(const http_req *r) {
        return r->method;
}

const char *http_req_path(const http_req *r) {
        return r->path;
}

const char *http_req_param(const http_req *r, const char *name) {
        size_t n = strlen(name);
        for (size_t i = 0; i < r->n_params; i++)
                if (r->param_names[i].len == n && memcmp(r->param_names[i].name, name, n) == 0)
                        return r->param_values[i];
        return NULL;
}

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

const char *http_req_header(const http_req *r, const char *name, unsigned *ret_count) {
        header_count c = {.name = name};
        MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_header, &c);
        if (ret_count)
                *ret_count = c.n;
        return c.n == 1 ? c.value : NULL;
}

typedef struct header_each {
        void (*fn)(void *data, const char *name, const char *value);
        void *data;
} header_each;

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        header_each *h = cls;
        if (key)
                h->fn(h->data, key, value ? value : "");
        return MHD_YES;
}

void http_req_each_header(const http_req *r, void (*fn)(void *data, const char *name, const char *value), void *data) {
        header_each h = {.fn = fn, .data = data};
        MHD_get_connection_values(r->conn, MHD_HEADER_KIND, each_header, &h);
}

typedef struct query_find {
        const char *name;
        const char *value;
        bool found;
} query_find;

static enum MHD_Result find_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        query_find *q = cls;
        if (!q->found && key && strcmp(key, q->name) == 0) {
                q->found = true;
                q->value = value ? value : "";
        }
        return MHD_YES;
}

const char *http_req_query(const http_req *r, const char *name) {
        query_find q = {.name = name};
        MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, find_query, &q);
        return q.found ? q.value : NULL;
}

static enum MHD_Result each_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        header_each *h = cls;
        if (key)
                h->fn(h->data, key, value ? value : "");
        return MHD_YES;
}

void http_req_each_query(const http_req *r, void (*fn)(void *data, const char *name, const char *value), void *data) {
        header_each h = {.fn = fn, .data = data};
        MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, each_query, &h);
}

const char *http_req_principal(const http_req *r) {
        return r->principal;
}

uint64_t http_req_received_unix_ms(const http_req *r) {
        return r->received_unix_ms;
}

int http_req_fd(const http_req *r) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        return ci ? (int) ci->connect_fd : -1;
}

int http_req_tag(const http_req *r) {
        return r->route ? r->route->tag : 0;
}

void *http_req_data(const http_req *r) {
        http_fallback def;
        return r->table ? r->table->data : fallback_of(r, &def)->data;
}

void http_req_set_id(http_req *r, const char *id) {
        dlog_clean(id, r->id, sizeof(r->id));
}

const char *http_req_id(const http_req *r) {
        return r->id;
}

void http_req_note(http_req *r, const char *fmt, ...) {
        size_t n = strlen(r->note);
        if (n && n + 1 < sizeof(r->note))
                r->note[n++] = ' ';
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->note + n, sizeof(r->note) - n, fmt, ap);
        va_end(ap);
}

void http_req_set_ctx(http_req *r, void *ctx, void (*free_fn)(void *)) {
        if (r->ctx_free)
                r->ctx_free(r->ctx);
        r->ctx = ctx;
        r->ctx_free = free_fn;
}

void *http_req_ctx(const http_req *r) {
        return r->ctx;
}

/* ---- bodies ---- */

const char *http_req_body(const http_req *r, size_t *ret_len) {
        *ret_len = r->body.len;
        return r->body.buf ? r->body.buf : "";
}

void http_req_body_release(http_req *r) {
        if (r->body_accounted)
                atomic_fetch_sub(&r->srv->body_bytes, r->body_accounted);
        r->body_accounted = 0;
        dynbuf_free(&r->body);
}

int http_req_body_error(const http_req *r) {
        return r->body_error;
}

/* Keep n more bytes within the budget all connections share. The budget counts allocations: it
 * may be passed by one buffer's growth at a time per polling thread, never more. */
static void body_keep(http_req *r, const char *p, size_t n) {
        int q = dynbuf_add(&r->body, p, n);
        if (q == 0 && r->body.cap > r->body_accounted) {
                size_t more = r->body.cap - r->body_accounted;
                r->body_accounted = r->body.cap;
                if (atomic_fetch_add(&r->srv->body_bytes, more) + more > SERVE_BODIES_BUDGET_BYTES)
                        q = -E2BIG;
        }
        if (q < 0) { /* over the budget (or out of memory): refused once the body is in */
                r->over_budget = true;
                http_req_body_release(r);
        }
}

/* ---- the head ---- */

typedef struct head_walk {
        const char *end; /* where the previous line's value ended */
        bool broken;
} head_walk;

static enum MHD_Result walk_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                   const char *value, size_t value_size) {
        head_walk *w = cls;
        if (kind != MHD_HEADER_KIND || w->broken)
                return MHD_YES;
        /* the previous line ended in CR LF or LF, each replaced by a NUL */
        bool next = key == w->end + 1 || (key == w->end + 2 && w->end[1] == '\0');
        bool colon = value >= key + key_size + 1;
        for (const char *p = key + key_size + 1; colon && p < value; p++)
                colon = *p == ' ' || *p == '\t';
        w->broken = !next || !colon;
        w->end = value + value_size;
        return MHD_YES;
}

/* Is the head whole: no NUL cut a value, no header was folded? libmicrohttpd 0.9.75 keeps every
 * header as C strings where they were received (value sizes are their strlen), so a NUL
 * inside a value hides the rest of it. Its parser leaves the head in place, delimiters replaced
 * by NULs: each header line must start right after the previous line's end (one or two NULs),
 * its value after the colon and blanks, and the blank line must end the head. A folded line is
 * moved elsewhere by libmicrohttpd, so it fails too (RFC 9112 5.2 lets a server refuse it). */
static bool head_is_whole(http_req *r, const char *method, const char *version) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        if (!ci || !version)
                return false;
        head_walk w = {.end = version + strlen(version)};
        MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, walk_header, &w);
        const char *head_end = method + ci->header_size;
        return !w.broken && head_end >= w.end + 2 && head_end <= w.end + 4;
}

/* ---- libmicrohttpd's callbacks ---- */

static http_req *req_new(http_server *s, struct MHD_Connection *conn) {
        http_req *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        atomic_fetch_add(&s->requests, 1);
        r->srv = s;
        r->conn = conn;
        r->start_us = now_mono_us();
        r->received_unix_ms = now_unix_ms();
        snprintf(r->principal, sizeof(r->principal), "local");
        snprintf(r->id, sizeof(r->id), "n%" PRIuFAST64, atomic_fetch_add(&s->seq, 1) + 1);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        r->c = ci ? ci->socket_context : NULL;
        return r;
}

/* The request line is in: make the request, with the raw URI (before libmicrohttpd decodes it,
 * a "%00" would cut it silently). */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *conn) {
        http_server *s = cls;
        http_req *r = req_new(s, conn);
        if (r && uri) {
                char path[SERVE_SHORT_STR_MAX];
                r->raw_uri = uri;
                r->raw_uri_len = strlen(uri);
                r->bad_uri = strstr(uri, "%00") != NULL;
                /* for the log until the head is in: the path as sent, without the query */
                size_t n = MIN(strcspn(uri, "?"), sizeof(path) - 1);
                memcpy(path, uri, n);
                path[n] = '\0';
                dlog_clean(path, r->log_path, sizeof(r->log_path));
        }
        return r;
}

static void auth_note(http_req *r, const auth_token *who) {
        if (who->name[0])
                http_req_note(r, "caller=%s", who->name);
        /* Calls belong to the token that made them (its digest: two tokens may share a name). */
        char *p = r->principal;
        p += snprintf(p, sizeof(r->principal), "token:");
        for (size_t i = 0; i < 16; i++)
                p += snprintf(p, 3, "%02x", who->digest[i]);
}

/* Refusals before a route is known: a NUL in the URI or a header, a folded header, no route for
 * the path, or not for the method. Returns true once r is refused. */
static bool refuse_unrouted(http_req *r, const char *method, const char *version, unsigned allowed) {
        if (r->bad_uri || !head_is_whole(r, method, version)) {
                http_refuse(r, HTTP_REFUSAL_BAD_HEAD,
                            r->bad_uri ? "the path or the query holds a NUL byte (%%00)"
                                       : "a header holds a NUL byte or is folded over lines");
                return true;
        }
        if (!r->route && allowed) {
                char allow[64] = "";
                static const char *const names[] = {"GET", "HEAD", "POST", "PUT", "DELETE"};
                for (size_t i = 0; i < ELEMENTSOF(names); i++)
                        if (allowed & (1U << i))
                                snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow), "%s%s",
                                         allow[0] ? ", " : "", names[i]);
                (void) http_answer_header(r, MHD_HTTP_HEADER_ALLOW, allow);
                http_refuse(r, HTTP_REFUSAL_METHOD, "this path takes %s", allow);
                return true;
        }
        if (!r->route) {
                http_refuse(r, HTTP_REFUSAL_NOT_FOUND, "no such path on hull serve");
                return true;
        }
        return false;
}

/* The route's scope, when the server has tokens or keys: the caller becomes the token's (or
 * key's) principal. Returns true once r is refused. */
static bool refuse_unauthorized(http_req *r) {
        const auth_tokens *tokens = r->srv->cfg.tokens;
        const http_keys *keys = r->srv->cfg.keys;
        const char *scope = r->route->scope;
        if (!scope) /* before the key count: an open route (a health check) asks the store nothing */
                return false;
        size_t n_keys = keys ? keys->count(keys->ud) : 0;
        if (n_keys == SIZE_MAX) { /* the keys' store away (a database restarting): not the caller's fault */
                http_refuse(r, HTTP_REFUSAL_STOPPING,
                            "the API keys cannot be read now (the database cannot be reached): try again");
                return true;
        }
        bool have_tokens = tokens && tokens->n > 0, have_keys = n_keys > 0;
        if (!have_tokens && !have_keys)
                return false;
        unsigned na, nk;
        const char *ha = http_req_header(r, MHD_HTTP_HEADER_AUTHORIZATION, &na);
        const char *hk = http_req_header(r, "x-api-key", &nk);
        const char *tok = NULL;
        size_t n = 0;
        const auth_token *who = NULL;
        uint8_t digest[32];
        auth_verdict v = na > 1 || nk > 1 ? AUTH_MALFORMED : auth_credential(ha, hk, &tok, &n);
        if (v == AUTH_OK)
                v = auth_check_token(tokens, tok, n, scope, &who, digest);
        if (v == AUTH_UNKNOWN && keys) {
                char id[AUTH_NAME_MAX + 1];
                int found = keys->find(keys->ud, digest, id);
                if (found == 1) {
                        v = AUTH_OK;
                        snprintf(r->principal, sizeof(r->principal), "key:%s", id);
                        if (strncmp(id, HTTP_SCOPED_KEY_PREFIX, strlen(HTTP_SCOPED_KEY_PREFIX)) == 0 &&
                            !r->route->scoped_keys) {
                                explicit_bzero(digest, sizeof(digest));
                                http_refuse(r, HTTP_REFUSAL_FORBIDDEN,
                                            "this credential is a self-hosted worker's (an environment key or a "
                                            "sessions token): it serves only its environment's work and sessions");
                                return true;
                        }
                } else if (found < 0) { /* the keys' store away (a database restarting): not the caller's fault */
                        explicit_bzero(digest, sizeof(digest));
                        http_refuse(r, HTTP_REFUSAL_STOPPING,
                                    "the API keys cannot be read now (the database cannot be reached): try again");
                        return true;
                }
        }
        explicit_bzero(digest, sizeof(digest));
        if (v == AUTH_NO_SCOPE) {
                http_refuse(r, HTTP_REFUSAL_FORBIDDEN, "the token lacks the scope %s", scope);
                return true;
        }
        if (v != AUTH_OK) {
                /* what the server checks against: its --tokens file, hull.db's /v1 keys, or both */
                const char *make = have_tokens && have_keys
                                           ? "make a token with 'hull token new --tokens FILE' or a key with 'hull key "
                                             "create'"
                                   : have_tokens
                                           ? "make one with 'hull token new --tokens FILE', FILE the one hull serve "
                                             "--tokens reads"
                                           : "make one with 'hull key create'";
                char what[96];
                if (v == AUTH_UNKNOWN && n > 0 && n < AUTH_TOKEN_MIN)
                        snprintf(what, sizeof(what), "a token of %zu characters, shorter than the minimum of %u", n,
                                 AUTH_TOKEN_MIN);
                else
                        snprintf(what, sizeof(what), "%s", auth_verdict_to_string(v));
                http_refuse(r, HTTP_REFUSAL_UNAUTHENTICATED,
                            "%s: send Authorization: Bearer <%s> or x-api-key: <%s> (%s)", what,
                            have_keys ? "key" : "token", have_keys ? "key" : "token", make);
                return true;
        }
        if (who)
                auth_note(r, who);
        return false;
}

/* Send a refusal made from the head alone. A client that sends its whole body before it reads
 * (most do: an SDK's multipart upload to a route hull does not serve) would have its connection
 * reset if the answer went out and the connection closed on an unread body, and see no answer:
 * the body is read and dropped first, up to SERVE_BODY_DISCARD_MAX. A larger one is answered at
 * once (then the connection closes), as is a client that waits for "100 Continue". */
static enum MHD_Result queue_after_body(http_req *r) {
        const char *cl = http_req_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH, NULL);
        uint64_t clen = 0;
        bool chunked = http_req_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING, NULL) != NULL;
        bool body = chunked || (cl && parse_uint64(cl, 0, UINT64_MAX, &clen) == 0 && clen > 0);
        if (!r->answer || !body || http_req_header(r, MHD_HTTP_HEADER_EXPECT, NULL) || clen > SERVE_BODY_DISCARD_MAX)
                return queue(r);
        r->drain = true;
        return MHD_YES;
}

/* The first call: the head is complete. Every check that needs only the head, in order. */
static enum MHD_Result on_head(http_req *r, const char *url, const char *method, const char *version) {
        http_server *s = r->srv;
        unsigned allowed = 0;

        r->method = method;
        r->state = REQ_BODY;
        if (conn_cut(s, r->c)) /* the watchdog was first */
                return MHD_NO;
        conn_set_phase(s, r->c, PHASE_BODY, false);
        if (strlen(url) > SERVE_PATH_MAX)
                r->path_too_long = true;
        else
                memcpy(r->path, url, strlen(url) + 1);
        dlog_clean(url, r->log_path, sizeof(r->log_path));
        /* a raw NUL in the URI cut it: the version does not follow it */
        if (r->raw_uri && version != r->raw_uri + r->raw_uri_len + 1)
                r->bad_uri = true;
        r->route = http_route_find(s, r, &r->table, &allowed);
        const http_api *api = api_of(r);
        if (api && api->begin)
                api->begin(r);

        if (refuse_unrouted(r, method, version, allowed) || refuse_unauthorized(r))
                return queue_after_body(r);
        const http_route *rt = r->route;
        if (atomic_load(&s->stopping) && !rt->during_shutdown) {
                http_refuse(r, HTTP_REFUSAL_STOPPING, "hull serve is shutting down; retry elsewhere");
                return queue_after_body(r);
        }
        if (rt->receive_ms && r->c) {
                pthread_mutex_lock(&s->lock);
                r->c->receive_ms = rt->receive_ms;
                pthread_mutex_unlock(&s->lock);
        }
        if (rt->head && rt->head(r) != 0)
                return queue_after_body(r);
        /* A body a little over the bound is read and dropped, so that the client, which sends
         * all of it before it reads, gets the answer; a much larger one is refused at once. */
        const char *cl = http_req_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH, NULL);
        uint64_t clen;
        if (cl && parse_uint64(cl, 0, UINT64_MAX, &clen) == 0 &&
            clen > MAX(rt->body_max, (size_t) SERVE_BODY_DISCARD_MAX)) {
                http_refuse(r, HTTP_REFUSAL_TOO_LARGE, "the body is over %zu bytes", rt->body_max);
                return queue(r);
        }
        dynbuf_init(&r->body, rt->body_max);
        return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **req_cls) {
        http_server *s = cls;
        http_req *r = *req_cls;

        if (!r) { /* no request line seen by uri_log (libmicrohttpd passes none without a URI) */
                r = req_new(s, conn);
                if (!r)
                        return MHD_NO;
                *req_cls = r;
        }
        switch (r->state) {
        case REQ_NEW:
                return on_head(r, url, method, version);
        case REQ_SPAWNED: /* resumed by its thread */
                return queue(r);
        case REQ_DONE:
                return MHD_NO;
        case REQ_BODY:
                break;
        }
        if (conn_cut(s, r->c))
                return MHD_NO;
        if (*upload_size > 0) {
                size_t n = *upload_size;
                *upload_size = 0;
                r->body_seen += n;
                if (r->drain) /* refused: dropped, answered at its end or past the bound */
                        return r->body_seen > SERVE_BODY_DISCARD_MAX ? queue(r) : MHD_YES;
                if (r->too_large || r->body_seen > r->route->body_max) {
                        /* dropped; refused once the body is in (a chunked body too: read to its
                         * end within the request's deadline) */
                        r->too_large = true;
                        http_req_body_release(r);
                } else if (r->route->sink) {
                        if (r->body_error == 0) {
                                int q = r->route->sink(r, upload, n);
                                if (q < 0)
                                        r->body_error = q;
                        }
                } else if (!r->over_budget)
                        body_keep(r, upload, n);
                return MHD_YES;
        }
        /* The body is complete. */
        conn_set_phase(s, r->c, PHASE_BUSY, false);
        if (r->drain)
                return queue(r);
        if (r->too_large)
                http_refuse(r, HTTP_REFUSAL_TOO_LARGE, "the body is over %zu bytes", r->route->body_max);
        else if (r->over_budget)
                http_refuse(r, HTTP_REFUSAL_BUSY, "the server holds too many request bodies at once; retry later");
        else {
                r->route->handler(r);
                if (r->state == REQ_SPAWNED)
                        return MHD_YES;
        }
        return queue(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls, enum MHD_RequestTerminationCode toe) {
        http_server *s = cls;
        http_req *r = *req_cls;
        if (!r)
                return;
        *req_cls = NULL;
        if (r->status)
                metrics_http(s->cfg.metrics, r->status);
        dlog_log(s->cfg.log, r->status >= 500 ? DLOG_WARN : DLOG_INFO,
                 "event=request id=%s method=%s path=%s status=%u%s ms=%.1f%s%s", r->id, r->method ? r->method : "-",
                 r->log_path[0] ? r->log_path : "-", r->status,
                 toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=yes",
                 (double) (now_mono_us() - r->start_us) / 1000.0, r->note[0] ? " " : "", r->note);
        if (r->sse)
                http_sse_request_done(s, r->sse);
        if (r->answer)
                MHD_destroy_response(r->answer);
        if (r->ctx_free)
                r->ctx_free(r->ctx);
        for (size_t i = 0; i < r->n_headers; i++) {
                free(r->headers[i].name);
                free(r->headers[i].value);
        }
        http_req_body_release(r);
        /* A keep-alive connection's next request has its own deadlines. */
        conn_set_phase(s, r->c, PHASE_HEAD, true);
        free(r);
        atomic_fetch_sub(&s->requests, 1);
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
                                       unsigned per_ip_max, unsigned max) {
        /* the logger first: libmicrohttpd's messages about the options after it go to hull's log, not
         * to stderr (it says so at start otherwise) */
        return MHD_start_daemon(
                MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | flags, 0, NULL, NULL,
                on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s, where, value,
                MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_max, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                MHD_OPTION_URI_LOG_CALLBACK, uri_log, s, MHD_OPTION_THREAD_POOL_SIZE, (unsigned) SERVE_HTTP_THREADS,
                MHD_OPTION_CONNECTION_LIMIT, max, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                (size_t) SERVE_CONNECTION_MEMORY_BYTES, MHD_OPTION_CONNECTION_TIMEOUT,
                (unsigned) SERVE_CONNECTION_IDLE_S, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned) SERVE_LISTEN_BACKLOG,
                MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1, MHD_OPTION_END);
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

int http_new(const http_config *cfg, http_server **ret, hull_error *e) {
        if (cfg->metrics && metrics_http_register(cfg->metrics) < 0)
                return hull_err(e, -E2BIG, "serve: the metrics registry is full");
        http_server *s = calloc(1, sizeof(*s));
        if (!s)
                return hull_err(e, -ENOMEM, "serve: out of memory");
        s->cfg = *cfg;
        s->watchdog_pipe[0] = s->watchdog_pipe[1] = -1;
        pthread_mutex_init(&s->lock, NULL);
        atomic_init(&s->requests, 0);
        atomic_init(&s->threads, 0);
        http_spawn_init(s);
        atomic_init(&s->body_bytes, 0);
        atomic_init(&s->stopping, false);
        atomic_init(&s->seq, 0);
        int r = dlib_load(DLIB_MICROHTTPD, e);
        if (r < 0) {
                http_stop(s);
                return r;
        }
        *ret = s;
        return 0;
}

int http_add_routes(http_server *s, const http_api *api, const http_route *routes, size_t n, void *data) {
        if (s->n_routes + n > SERVE_ROUTES_MAX || s->n_tables >= ELEMENTSOF(s->tables))
                return -E2BIG;
        s->tables[s->n_tables++] = (http_table){.api = api, .routes = routes, .n = n, .data = data};
        s->n_routes += n;
        return 0;
}

int http_start(http_server *s, hull_error *e) {
        const http_config *cfg = &s->cfg;
        if (pipe2(s->watchdog_pipe, O_CLOEXEC) < 0)
                return hull_err(e, negative_errno(), "serve: cannot make the watchdog's pipe");
        int q = pthread_create(&s->watchdog, NULL, watchdog_main, s);
        if (q != 0)
                return hull_err(e, -q, "serve: cannot start the watchdog thread");
        s->watchdog_running = true;
        if (cfg->socket_path) {
                int fd = unix_listener(cfg->socket_path, e);
                if (fd < 0)
                        return fd;
                s->socket_path = strdup(cfg->socket_path);
                s->local = daemon_start(s, 0, MHD_OPTION_LISTEN_SOCKET, (const void *) (intptr_t) fd, 0,
                                        (unsigned) SERVE_CONNECTIONS_MAX);
                if (!s->local || !s->socket_path) {
                        if (!s->local)
                                close(fd);
                        return hull_err(e, -EIO, "serve: cannot serve on the unix socket %s", cfg->socket_path);
                }
        }
        unsigned flags = cfg->listen.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0;
        s->tcp = daemon_start(s, flags, MHD_OPTION_SOCK_ADDR, &cfg->listen,
                              cfg->max_per_address ? cfg->max_per_address : SERVE_CONNECTIONS_PER_IP_MAX,
                              cfg->max_connections ? cfg->max_connections : SERVE_CONNECTIONS_MAX);
        if (!s->tcp) {
                char host[INET6_ADDRSTRLEN] = "?";
                const struct sockaddr *a = (const struct sockaddr *) &cfg->listen;
                inet_ntop(a->sa_family,
                          a->sa_family == AF_INET6 ? (const void *) &((const struct sockaddr_in6 *) a)->sin6_addr
                                                   : (const void *) &((const struct sockaddr_in *) a)->sin_addr,
                          host, sizeof(host));
                return hull_err_hint(e, -EADDRINUSE, "pick another --listen address or stop what holds it",
                                     "serve: cannot listen on %s port %u", host,
                                     ntohs(a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *) a)->sin6_port
                                                                    : ((const struct sockaddr_in *) a)->sin_port));
        }
        return 0;
}

unsigned http_port(http_server *s) {
        const union MHD_DaemonInfo *i = s->tcp ? MHD_get_daemon_info(s->tcp, MHD_DAEMON_INFO_BIND_PORT) : NULL;
        return i ? i->port : 0;
}

void http_quiesce(http_server *s) {
        atomic_store(&s->stopping, true);
        struct MHD_Daemon *ds[2] = {s->tcp, s->local};
        for (size_t i = 0; i < 2; i++)
                if (ds[i]) {
                        MHD_socket fd = MHD_quiesce_daemon(ds[i]);
                        if (fd != MHD_INVALID_SOCKET)
                                close(fd);
                }
        if (s->socket_path)
                unlink(s->socket_path);
        /* Event streams end: what is queued goes out, then the requests complete. */
        pthread_mutex_lock(&s->lock);
        for (http_sse *x = s->streams; x; x = x->next) {
                pthread_mutex_lock(&x->lock);
                x->ended = true;
                pthread_cond_broadcast(&x->room);
                http_sse_wake_locked(x);
                pthread_mutex_unlock(&x->lock);
        }
        pthread_mutex_unlock(&s->lock);
}

bool http_stopping(http_server *s) {
        return atomic_load(&s->stopping);
}

unsigned http_busy(http_server *s) {
        /* A spawned thread's request is also a request: counted once, and still counted after
         * its request completed until the thread has ended. */
        unsigned requests = atomic_load(&s->requests), threads = atomic_load(&s->threads);
        return MAX(requests, threads);
}

int http_stop(http_server *s) {
        if (!s)
                return 0;
        if (atomic_load(&s->threads) > 0)
                return -EBUSY;
        http_spawn_close(s); /* the parked threads end */
        if (s->tcp)
                MHD_stop_daemon(s->tcp);
        if (s->local)
                MHD_stop_daemon(s->local);
        if (s->watchdog_running) {
                (void) loop_write(s->watchdog_pipe[1], "x", 1);
                pthread_join(s->watchdog, NULL);
        }
        safe_close(s->watchdog_pipe[0]);
        safe_close(s->watchdog_pipe[1]);
        if (s->socket_path)
                unlink(s->socket_path);
        pthread_mutex_destroy(&s->lock);
        http_spawn_done(s);
        free(s->socket_path);
        free(s);
        return 0;
}
