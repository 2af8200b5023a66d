/* http-forward.c: see http-forward.h. */
#include "http-forward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http-client.h"
#include "macro.h"
#include "time-util.h"

#define NODE_ID_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

int http_forward_hop(const http_req *r, char ret_from[static 64]) {
        unsigned n = 0;
        const char *v = http_req_header(r, HTTP_FORWARD_HOP_HEADER, &n);
        if (n == 0)
                return 0;
        size_t len = v ? strlen(v) : 0;
        if (n > 1 || len == 0 || len >= 64 || strspn(v, NODE_ID_CHARS) != len)
                return -EINVAL;
        if (ret_from)
                snprintf(ret_from, 64, "%s", v);
        return 1;
}

int http_forward_escape(const char *p, bool path, char *buf, size_t size) {
        static const char hex[] = "0123456789ABCDEF";
        size_t k = 0;
        for (const unsigned char *c = (const unsigned char *) p; *c; c++) {
                bool plain = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
                             *c == '-' || *c == '.' || *c == '_' || *c == '~' || (path && *c == '/');
                if (k + (plain ? 1 : 3) >= size)
                        return -ENAMETOOLONG;
                if (plain)
                        buf[k++] = (char) *c;
                else {
                        buf[k++] = '%';
                        buf[k++] = hex[*c >> 4];
                        buf[k++] = hex[*c & 15];
                }
        }
        if (k >= size)
                return -ENAMETOOLONG;
        buf[k] = '\0';
        return (int) k;
}

typedef struct fwd_url {
        char *url;
        size_t len, size;
        bool full;
} fwd_url;

static void url_add(fwd_url *u, const char *s, bool escape, bool path) {
        if (u->full)
                return;
        int n = escape ? http_forward_escape(s, path, u->url + u->len, u->size - u->len)
                       : (int) snprintf(u->url + u->len, u->size - u->len, "%s", s);
        if (n < 0 || (size_t) n >= u->size - u->len)
                u->full = true;
        else
                u->len += (size_t) n;
}

static void add_query(void *data, const char *name, const char *value) {
        fwd_url *u = data;
        url_add(u, strchr(u->url, '?') ? "&" : "?", false, false);
        url_add(u, name, true, false);
        url_add(u, "=", false, false);
        url_add(u, value ? value : "", true, false);
}

/* The caller's headers the owner needs to answer as this node would. */
typedef struct fwd_headers {
        char *lines[HTTPC_HEADERS_MAX];
        size_t n;
} fwd_headers;

static void keep_header(void *data, const char *name, const char *value) {
        static const char *const pass[] = {"authorization", "x-api-key", "anthropic-version", "anthropic-beta",
                                           "content-type",  "accept",    "mcp-session-id",    "mcp-protocol-version",
                                           "last-event-id"};
        fwd_headers *h = data;
        bool wanted = false;
        for (size_t i = 0; i < ELEMENTSOF(pass); i++)
                wanted |= strcasecmp(name, pass[i]) == 0;
        if (!wanted || h->n + 2 >= HTTPC_HEADERS_MAX)
                return;
        if (asprintf(&h->lines[h->n], "%s: %s", name, value ? value : "") >= 0)
                h->n++;
        else
                h->lines[h->n] = NULL;
}

static void headers_done(fwd_headers *h) {
        for (size_t i = 0; i < h->n; i++) {
                explicit_bzero(h->lines[i], strlen(h->lines[i])); /* the caller's key */
                free(h->lines[i]);
        }
        h->n = 0;
}

/* The holder's answer headers passed on: hull's own, retry-after, an MCP session's id. */
static bool answer_header_passed(const char *name) {
        return strncasecmp(name, "x-hull-", 7) == 0 || strcasecmp(name, "retry-after") == 0 ||
               strcasecmp(name, "mcp-session-id") == 0;
}

static int keep_answer_header(void *ud, const char *name, const char *value) {
        http_req *r = ud;
        if (answer_header_passed(name))
                (void) http_answer_header(r, name, value);
        return 0;
}

/* r's URL on base_url into url (NODE_FORWARD_URL_MAX bytes), its headers into h with the hop
 * header. Returns 0 or -ENAMETOOLONG, -ENOMEM with *e. */
static int fwd_build(http_req *r, const char *base_url, const char *from_node, char *url, fwd_headers *h,
                     hull_error *e) {
        fwd_url u = {.url = url, .size = NODE_FORWARD_URL_MAX};
        url[0] = '\0';
        url_add(&u, base_url, false, false);
        while (u.len > 0 && url[u.len - 1] == '/')
                url[--u.len] = '\0';
        url_add(&u, http_req_path(r), true, true);
        http_req_each_query(r, add_query, &u);
        if (u.full)
                return hull_fail(e, -ENAMETOOLONG, "the forwarded URL is over %u bytes", NODE_FORWARD_URL_MAX);
        http_req_each_header(r, keep_header, h);
        int k = asprintf(&h->lines[h->n], "%s: %s", HTTP_FORWARD_HOP_HEADER, from_node);
        if (k >= 0)
                h->n++;
        h->lines[h->n] = NULL;
        return k < 0 ? hull_err(e, -ENOMEM, "out of memory") : 0;
}

int http_forward(http_req *r, const char *base_url, const char *from_node, const char *to_node, hull_error *e) {
        char url[NODE_FORWARD_URL_MAX];
        fwd_headers h = {0};
        int rr = fwd_build(r, base_url, from_node, url, &h, e);
        size_t body_len = 0;
        const char *body = http_req_body(r, &body_len);
        _cleanup_httpc_ httpc *c = NULL;
        if (rr >= 0)
                rr = httpc_new(&c, e);
        httpc_answer a = {0};
        if (rr >= 0) {
                httpc_request req = {.method = http_req_method(r),
                                     .url = url,
                                     .headers = (const char *const *) h.lines,
                                     .body_from = HTTPC_BODY_BUFFER,
                                     .body = body_len ? body : NULL,
                                     .body_len = body_len,
                                     .on_header = keep_answer_header,
                                     .userdata = r,
                                     .connect_timeout_ms = NODE_FORWARD_CONNECT_MS,
                                     .timeout_ms = NODE_FORWARD_TIMEOUT_MS,
                                     .answer_max = NODE_FORWARD_ANSWER_MAX};
                rr = httpc_perform(c, &req, &a, e);
        }
        headers_done(&h);
        if (rr < 0)
                return rr;
        if (a.status < 100 || a.status > 599) {
                httpc_answer_done(&a);
                return hull_fail(e, -EPROTO, "node %s answered with HTTP status %ld", to_node, a.status);
        }
        (void) http_answer_header(r, HTTP_FORWARD_NODE_HEADER, to_node);
        char ctype[HTTPC_HEADER_VALUE_MAX];
        snprintf(ctype, sizeof(ctype), "%s", a.content_type[0] ? a.content_type : "application/octet-stream");
        char *out = TAKE_PTR(a.body);
        size_t out_len = a.body_len;
        unsigned status = (unsigned) a.status;
        httpc_answer_done(&a);
        (void) http_answer(r, status, ctype, out, out_len);
        return 0;
}

/* ---- a forwarded request whose answer may be a stream ----
 * The transfer runs on a thread of its own (relay_main): the request's thread waits for the
 * holder's head, then answers r with an event stream the transfer feeds as the bytes come (and
 * returns, so that the server sends it), or waits for the whole answer and answers with it. */

void http_relays_init(http_relays *rl) {
        memset(rl, 0, sizeof(*rl));
        pthread_mutex_init(&rl->lock, NULL);
        pthread_cond_init(&rl->cond, NULL);
        atomic_init(&rl->stop, false);
}

static int relays_enter(http_relays *rl, hull_error *e) {
        pthread_mutex_lock(&rl->lock);
        bool stopping = atomic_load(&rl->stop), full = rl->n >= NODE_FORWARD_RELAYS_MAX;
        if (!stopping && !full)
                rl->n++;
        pthread_mutex_unlock(&rl->lock);
        if (stopping)
                return hull_fail(e, -ESHUTDOWN, "this node is stopping");
        if (full)
                return hull_fail(e, -EUSERS, "%u forwarded requests are in flight on this node",
                                 NODE_FORWARD_RELAYS_MAX);
        return 0;
}

static void relays_leave(http_relays *rl) {
        pthread_mutex_lock(&rl->lock);
        rl->n--;
        pthread_cond_broadcast(&rl->cond);
        pthread_mutex_unlock(&rl->lock);
}

bool http_relays_stop(http_relays *rl, uint64_t wait_ms) {
        atomic_store(&rl->stop, true);
        struct timespec until = timespec_after_ms(CLOCK_REALTIME, wait_ms);
        pthread_mutex_lock(&rl->lock);
        while (rl->n > 0 && pthread_cond_timedwait(&rl->cond, &rl->lock, &until) == 0)
                ;
        bool none = rl->n == 0;
        pthread_mutex_unlock(&rl->lock);
        return none;
}

void http_relays_free(http_relays *rl) {
        pthread_cond_destroy(&rl->cond);
        pthread_mutex_destroy(&rl->lock);
}

typedef enum relay_phase {
        RELAY_WAIT, /* no answer yet */
        RELAY_HEAD, /* the holder's status and content type are in */
        RELAY_DONE, /* the transfer ended (not streamed) */
} relay_phase;

typedef enum relay_mode {
        RELAY_UNDECIDED,
        RELAY_STREAM, /* the bytes go to sse as they come */
        RELAY_KEEP,   /* kept whole, for the request's thread to answer with */
        RELAY_DROP,   /* the transfer is stopped */
} relay_mode;

typedef struct relay {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned refs; /* the request's thread's and the transfer's */
        relay_phase phase;
        relay_mode mode;
        http_req *r; /* its answer's headers set by the transfer while the head comes in */
        http_relays *rl;
        http_sse *sse;
        char url[NODE_FORWARD_URL_MAX];
        fwd_headers h;
        char *method, *body; /* copies: the request may end before the transfer does */
        size_t body_len;
        long status;
        char ctype[HTTPC_HEADER_VALUE_MAX];
        char *kept;
        size_t kept_len, kept_size;
        int err;
        hull_error e;
} relay;

static void relay_unref(relay *x) {
        pthread_mutex_lock(&x->lock);
        bool last = --x->refs == 0;
        pthread_mutex_unlock(&x->lock);
        if (!last)
                return;
        headers_done(&x->h);
        pthread_cond_destroy(&x->cond);
        pthread_mutex_destroy(&x->lock);
        free(x->method);
        free(x->body);
        free(x->kept);
        free(x);
}

static int relay_header(void *ud, const char *name, const char *value) {
        relay *x = ud;
        pthread_mutex_lock(&x->lock);
        if (x->phase == RELAY_WAIT && answer_header_passed(name)) /* not a trailer */
                (void) http_answer_header(x->r, name, value);
        pthread_mutex_unlock(&x->lock);
        return 0;
}

/* The head is in: the request's thread decides how the body goes. */
static int relay_response(void *ud, long status, const char *content_type) {
        relay *x = ud;
        pthread_mutex_lock(&x->lock);
        x->status = status;
        snprintf(x->ctype, sizeof(x->ctype), "%s", content_type ? content_type : "");
        x->phase = RELAY_HEAD;
        pthread_cond_broadcast(&x->cond);
        while (x->mode == RELAY_UNDECIDED)
                pthread_cond_wait(&x->cond, &x->lock);
        bool drop = x->mode == RELAY_DROP;
        pthread_mutex_unlock(&x->lock);
        return drop ? -ECANCELED : 0;
}

static int relay_data(void *ud, const char *p, size_t n) {
        relay *x = ud;
        if (x->mode == RELAY_STREAM) { /* set before the first byte, never changed after */
                int k = http_sse_send_raw(x->sse, p, n);
                if (k == -EAGAIN && http_sse_wait(x->sse, n, NODE_FORWARD_SSE_WAIT_MS) == 0)
                        k = http_sse_send_raw(x->sse, p, n);
                return k;
        }
        if (n > NODE_FORWARD_ANSWER_MAX - x->kept_len)
                return -EFBIG;
        if (x->kept_len + n + 1 > x->kept_size) {
                size_t size = MAX(x->kept_size * 2, x->kept_len + n + 1);
                char *p2 = realloc(x->kept, size);
                if (!p2)
                        return -ENOMEM;
                x->kept = p2;
                x->kept_size = size;
        }
        memcpy(x->kept + x->kept_len, p, n);
        x->kept_len += n;
        return 0;
}

static void *relay_main(void *ud) {
        relay *x = ud;
        http_relays *rl = x->rl;
        hull_error e = {0};
        httpc *c = NULL;
        httpc_answer a = {0};
        int rr = httpc_new(&c, &e);
        if (rr >= 0) {
                httpc_request req = {.method = x->method,
                                     .url = x->url,
                                     .headers = (const char *const *) x->h.lines,
                                     .body_from = HTTPC_BODY_BUFFER,
                                     .body = x->body_len ? x->body : NULL,
                                     .body_len = x->body_len,
                                     .on_header = relay_header,
                                     .on_response = relay_response,
                                     .on_data = relay_data,
                                     .userdata = x,
                                     .cancel = &rl->stop,
                                     .connect_timeout_ms = NODE_FORWARD_CONNECT_MS,
                                     .idle_timeout_ms = NODE_FORWARD_IDLE_MS};
                rr = httpc_perform(c, &req, &a, &e);
        }
        httpc_answer_done(&a);
        if (c)
                httpc_free(c);
        headers_done(&x->h);
        pthread_mutex_lock(&x->lock);
        bool streamed = x->mode == RELAY_STREAM;
        if (!streamed) {
                x->err = rr;
                x->e = e;
                x->phase = RELAY_DONE;
                pthread_cond_broadcast(&x->cond);
        }
        pthread_mutex_unlock(&x->lock);
        if (streamed && rr < 0) /* the holder died or stalled mid-stream: the client sees it cut */
                http_sse_abort(x->sse);
        else if (streamed)
                http_sse_close(x->sse);
        relay_unref(x);
        relays_leave(rl); /* last: rl may go once none is in flight */
        return NULL;
}

static bool is_event_stream(const char *ctype) {
        static const char t[] = "text/event-stream";
        return strncasecmp(ctype, t, sizeof(t) - 1) == 0 && strchr("; ", ctype[sizeof(t) - 1]) != NULL;
}

/* Answer r from the head in x (under x->lock): a stream, or the whole answer once it is in. */
static int relay_answer(http_req *r, relay *x, const char *to_node, hull_error *e) {
        if (x->status < 100 || x->status > 599) {
                x->mode = RELAY_DROP;
                pthread_cond_broadcast(&x->cond);
                return hull_fail(e, -EPROTO, "node %s answered with HTTP status %ld", to_node, x->status);
        }
        if (x->status == 200 && is_event_stream(x->ctype)) {
                (void) http_answer_header(r, HTTP_FORWARD_NODE_HEADER, to_node);
                (void) http_answer_header(r, "x-accel-buffering", "no");
                /* the holder's keep-alive comments come through: none of this node's */
                int k = http_answer_sse(r, NODE_FORWARD_SSE_QUEUE, HTTP_SSE_NO_KEEPALIVE, &x->sse);
                x->mode = k < 0 ? RELAY_DROP : RELAY_STREAM;
                pthread_cond_broadcast(&x->cond);
                return k < 0 ? hull_fail(e, k, "the stream could not be answered") : 0;
        }
        x->mode = RELAY_KEEP;
        pthread_cond_broadcast(&x->cond);
        while (x->phase != RELAY_DONE)
                pthread_cond_wait(&x->cond, &x->lock);
        if (x->err < 0) {
                *e = x->e;
                return x->err;
        }
        char ctype[HTTPC_HEADER_VALUE_MAX];
        snprintf(ctype, sizeof(ctype), "%s", x->ctype[0] ? x->ctype : "application/octet-stream");
        char *out = TAKE_PTR(x->kept);
        size_t len = x->kept_len;
        (void) http_answer_header(r, HTTP_FORWARD_NODE_HEADER, to_node);
        (void) http_answer(r, (unsigned) x->status, ctype, out, len);
        return 0;
}

int http_forward_stream(http_req *r, const char *base_url, const char *from_node, const char *to_node, http_relays *rl,
                        hull_error *e) {
        relay *x = calloc(1, sizeof(*x));
        if (!x)
                return hull_err(e, -ENOMEM, "out of memory");
        pthread_mutex_init(&x->lock, NULL);
        pthread_cond_init(&x->cond, NULL);
        x->refs = 1;
        x->r = r;
        x->rl = rl;
        size_t body_len = 0;
        const char *body = http_req_body(r, &body_len);
        int rr = fwd_build(r, base_url, from_node, x->url, &x->h, e);
        x->method = strdup(http_req_method(r));
        x->body = body_len ? malloc(body_len) : NULL;
        x->body_len = body_len;
        if (rr >= 0 && (!x->method || (body_len && !x->body)))
                rr = hull_err(e, -ENOMEM, "out of memory");
        if (rr >= 0 && body_len)
                memcpy(x->body, body, body_len);
        if (rr >= 0)
                rr = relays_enter(rl, e);
        if (rr < 0) {
                relay_unref(x);
                return rr;
        }
        x->refs = 2;
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int k = pthread_create(&t, &attr, relay_main, x);
        pthread_attr_destroy(&attr);
        if (k != 0) {
                x->refs = 1;
                relay_unref(x);
                relays_leave(rl);
                return hull_fail(e, -EAGAIN, "no thread for the forwarded request");
        }
        pthread_mutex_lock(&x->lock);
        while (x->phase == RELAY_WAIT)
                pthread_cond_wait(&x->cond, &x->lock);
        if (x->phase == RELAY_DONE) { /* no answer: the holder was not reached */
                rr = x->err < 0 ? x->err : hull_fail(&x->e, -EPROTO, "node %s sent no answer", to_node);
                *e = x->e;
        } else
                rr = relay_answer(r, x, to_node, e);
        x->r = NULL;
        pthread_mutex_unlock(&x->lock);
        relay_unref(x);
        return rr;
}
