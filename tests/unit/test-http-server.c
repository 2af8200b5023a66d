/* test-http-server.c: the generic HTTP server, live on 127.0.0.1 with a route table of its own:
 * routing (patterns, a base, 404, 405 with Allow, the query), auth scopes, bodies (bounded,
 * streamed into a sink, a chunked body over every bound answered), a NUL in the path or a
 * header refused, handlers on threads of their own, the incomplete connections of one address
 * bounded, server-sent events to real clients (python's http.client and a raw socket: events
 * seen before the stream ends, bounded memory with a slow reader, keep-alive comments, a
 * client that resets), and shutdown. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http-server.h"
#include "http-testlib.h"
#include "sha256.h"
#include "test.h"

#define TOKEN "hull_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OTHER "hull_fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* What the routes and the event producers tell the test. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool acked, acked_before_close;
        bool client_gone;
        bool producer_done;
        int producer_result;
        bool saw_eagain;
        size_t queued_max, queue_bound;
        unsigned long events_sent;
        unsigned sink_calls;
} T = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void t_set(bool *flag) {
        pthread_mutex_lock(&T.lock);
        *flag = true;
        pthread_cond_broadcast(&T.cond);
        pthread_mutex_unlock(&T.lock);
}

/* Wait for a flag, at most ms. */
static bool t_wait(bool *flag, uint64_t ms) {
        uint64_t end = tl_now_ms() + ms;
        pthread_mutex_lock(&T.lock);
        while (!*flag && tl_now_ms() < end) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 50 * 1000000;
                if (ts.tv_nsec >= 1000000000) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000;
                }
                pthread_cond_timedwait(&T.cond, &T.lock, &ts);
        }
        bool v = *flag;
        pthread_mutex_unlock(&T.lock);
        return v;
}

static void sleep_ms(unsigned ms) {
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
}

/* ---- the event producers ---- */

typedef struct producer {
        http_sse *s;
        char mode[16];
        char probe[64]; /* raw: the X-Probe header, found by http_req_each_header */
} producer;

static void *produce(void *arg) {
        producer *p = arg;
        http_sse *s = p->s;
        int r = 0;
        if (strcmp(p->mode, "arrive") == 0) {
                /* three events, then wait until the client says it saw them: the stream is still open */
                r = http_sse_send(s, "note", "one", 3);
                if (r == 0)
                        r = http_sse_send(s, NULL, "two", 3);
                if (r == 0)
                        r = http_sse_send(s, NULL, "three", 5);
                T.acked_before_close = t_wait(&T.acked, 20000);
                if (r == 0)
                        r = http_sse_send(s, NULL, "four\nlines", 10);
        } else if (strcmp(p->mode, "flood") == 0) {
                char data[1000];
                memset(data, 'x', sizeof(data));
                unsigned long n = 0;
                for (uint64_t sent = 0; sent < (32ULL << 20) && r == 0;) {
                        r = http_sse_send(s, NULL, data, sizeof(data));
                        if (r == -EAGAIN) { /* the client reads slowly: wait for room */
                                T.saw_eagain = true;
                                r = http_sse_wait(s, sizeof(data) + 8, 20000);
                                continue;
                        }
                        if (r == 0) {
                                sent += sizeof(data) + 8; /* "data: ", the data, two LFs */
                                n++;
                        }
                }
                T.events_sent = n;
                T.queued_max = http_sse_queued_max(s);
        } else if (strcmp(p->mode, "quiet") == 0) {
                r = http_sse_send(s, NULL, "a", 1);
                sleep_ms(1200);
                if (r == 0)
                        r = http_sse_send(s, NULL, "b", 1);
        } else if (strcmp(p->mode, "gone") == 0 || strcmp(p->mode, "hold") == 0) {
                /* gone: after the client reset, a send fails within a few ticks; hold: sends go on
                 * until the server ends the stream (shutdown) */
                r = http_sse_send(s, NULL, "hello", 5);
                if (strcmp(p->mode, "gone") == 0)
                        t_wait(&T.client_gone, 20000);
                uint64_t end = tl_now_ms() + 15000;
                while (r == 0 && tl_now_ms() < end) {
                        sleep_ms(strcmp(p->mode, "gone") == 0 ? 100 : 50);
                        if (strcmp(p->mode, "gone") == 0) /* no frame: the stream waits, parked */
                                r = http_sse_wait(s, 1, 1) == -EPIPE ? -EPIPE : 0;
                        else
                                r = http_sse_send(s, NULL, "y", 1);
                }
        } else if (strcmp(p->mode, "raw") == 0) {
                /* bytes as they are, each piece in a write of its own, then the stream cut */
                char ev[96];
                int n = snprintf(ev, sizeof(ev), "data: %s\r\n\r\n", p->probe);
                for (int i = 0; i < n && r == 0; i += 3) {
                        r = http_sse_send_raw(s, ev + i, (size_t) MIN(3, n - i));
                        if (r == 0)
                                r = http_sse_drain(s, 20000);
                }
                T.producer_result = r;
                http_sse_abort(s);
                free(p);
                t_set(&T.producer_done);
                return NULL;
        }
        T.producer_result = r;
        http_sse_close(s);
        free(p);
        t_set(&T.producer_done);
        return NULL;
}

/* ---- routes ---- */

static void hello(http_req *r) {
        http_answer_text(r, 200, "hello\n");
}

static void find_probe(void *data, const char *name, const char *value) {
        producer *p = data;
        if (strcasecmp(name, "X-Probe") == 0)
                snprintf(p->probe, sizeof(p->probe), "%s", value);
}

static void events(http_req *r) {
        const char *mode = http_req_query(r, "mode"), *ka = http_req_query(r, "keepalive");
        producer *p = calloc(1, sizeof(*p));
        http_sse *s;
        pthread_t t;
        size_t queue = mode && strcmp(mode, "flood") == 0 ? 64U << 10 : 0;
        T.queue_bound = queue;
        uint64_t keepalive = ka && strcmp(ka, "off") == 0 ? HTTP_SSE_NO_KEEPALIVE : ka ? strtoull(ka, NULL, 10) : 0;
        if (p)
                http_req_each_header(r, find_probe, p);
        if (!p || !mode || http_answer_sse(r, queue, keepalive, &s) < 0) {
                free(p);
                http_answer_text(r, 500, "no stream\n");
                return;
        }
        snprintf(p->mode, sizeof(p->mode), "%s", mode);
        p->s = s;
        T.producer_done = false;
        if (pthread_create(&t, NULL, produce, p) == 0)
                pthread_detach(t);
        else {
                http_sse_close(s);
                free(p);
        }
        http_req_note(r, "item=%s", http_req_param(r, "id"));
}

static void ack(http_req *r) {
        t_set(&T.acked);
        http_answer_text(r, 200, "ok\n");
}

/* The sink's state: bytes and a sum, kept in the request. */
typedef struct upload {
        uint64_t bytes;
        uint64_t sum;
} upload;

static int upload_head(http_req *r) {
        upload *u = calloc(1, sizeof(*u));
        if (!u) {
                http_answer_text(r, 500, "no memory\n");
                return 1;
        }
        http_req_set_ctx(r, u, free);
        return 0;
}

static int upload_sink(http_req *r, const void *data, size_t n) {
        upload *u = http_req_ctx(r);
        const unsigned char *p = data;
        for (size_t i = 0; i < n; i++)
                u->sum = u->sum * 31 + p[i];
        u->bytes += n;
        T.sink_calls++;
        return u->bytes > (40ULL << 20) ? -EFBIG : 0; /* the sink's own refusal */
}

static void upload_done(http_req *r) {
        upload *u = http_req_ctx(r);
        char text[128];
        if (http_req_body_error(r)) {
                snprintf(text, sizeof(text), "sink error %d\n", http_req_body_error(r));
                http_answer_text(r, 422, text);
                return;
        }
        snprintf(text, sizeof(text), "bytes=%" PRIu64 " sum=%" PRIu64 "\n", u->bytes, u->sum);
        http_answer_text(r, 200, text);
}

static void small(http_req *r) {
        size_t len;
        const char *b = http_req_body(r, &len);
        char text[64];
        snprintf(text, sizeof(text), "got %zu: %s\n", len, b);
        http_answer_text(r, 200, text);
}

/* 2 s: the test's calls while it blocks must fit in it, on a machine that may be busy */
static void block_thread(http_req *r) {
        sleep_ms(2000);
        http_answer_text(r, 200, "blocked\n");
}

static void quick_thread(http_req *r) {
        http_answer_text(r, 200, "quick\n");
}

static void quick(http_req *r) {
        if (http_req_spawn(r, quick_thread) < 0)
                http_answer_text(r, 503, "no thread\n");
}

static void block(http_req *r) {
        if (http_req_spawn(r, block_thread) < 0)
                http_answer_text(r, 503, "no thread\n");
}

/* Calls that mostly answer at once (a session's cell): on libmicrohttpd's thread when it serves
 * their connection alone. */
static void short_thread(http_req *r) {
        http_answer_text(r, 200, "short\n");
}

static void short_block_thread(http_req *r) { /* 2 s, as block_thread */
        sleep_ms(2000);
        http_answer_text(r, 200, "short blocked\n");
}

static void short_call(http_req *r) {
        if (http_req_spawn_short(r, short_thread) < 0)
                http_answer_text(r, 503, "no thread\n");
}

static void short_block(http_req *r) {
        if (http_req_spawn_short(r, short_block_thread) < 0)
                http_answer_text(r, 503, "no thread\n");
}

static void secret(http_req *r) {
        char text[128];
        snprintf(text, sizeof(text), "secret for %s\n", http_req_principal(r));
        http_answer_text(r, 200, text);
}

static void based(http_req *r) {
        char text[256];
        snprintf(text, sizeof(text), "base=%s method=%s\n", http_req_param(r, "base"), http_req_param(r, "method"));
        http_answer_text(r, 200, text);
}

static void query(http_req *r) {
        char text[256];
        const char *a = http_req_query(r, "a"), *b = http_req_query(r, "b");
        snprintf(text, sizeof(text), "a=%s b=%s\n", a ? a : "(none)", b ? b : "(none)");
        http_answer_text(r, 200, text);
}

static void begin(http_req *r) {
        const char *id = http_req_header(r, "X-Id", NULL);
        if (id) {
                http_req_set_id(r, id);
                http_answer_header(r, "X-Id", id);
        }
}

static const http_api test_api = {.name = "test", .begin = begin};

static const http_route routes[] = {
        {.methods = HTTP_GET | HTTP_HEAD, .pattern = "/hello", .handler = hello},
        {.methods = HTTP_GET, .pattern = "/items/{id}/events", .handler = events},
        {.methods = HTTP_GET, .pattern = "/ack", .handler = ack},
        {.methods = HTTP_POST | HTTP_PUT,
         .pattern = "/upload",
         .body_max = 64U << 20,
         .sink = upload_sink,
         .head = upload_head,
         .handler = upload_done},
        {.methods = HTTP_POST, .pattern = "/small", .body_max = 16, .handler = small},
        {.methods = HTTP_DELETE, .pattern = "/small", .handler = hello},
        {.methods = HTTP_GET, .pattern = "/block", .handler = block},
        {.methods = HTTP_GET, .pattern = "/quick", .handler = quick},
        {.methods = HTTP_GET, .pattern = "/short", .handler = short_call},
        {.methods = HTTP_GET, .pattern = "/short-block", .handler = short_block},
        {.methods = HTTP_POST, .pattern = "/secret", .scope = "test:secret", .handler = secret},
        {.methods = HTTP_GET, .pattern = "{base...}/svc/{method}", .handler = based},
        {.methods = HTTP_GET, .pattern = "/query", .handler = query},
        {.methods = HTTP_GET, .pattern = "/health", .during_shutdown = true, .handler = hello},
};

/* ---- the tests ---- */

static void test_route_match(void) {
        http_params p;
        CHECK_EQ_INT(http_route_match("/a/{id}/b", "/a/7/b", &p), 1);
        CHECK(p.n == 1 && p.v[0].value_len == 1 && p.v[0].value[0] == '7');
        CHECK_EQ_INT(http_route_match("/a/{id}/b", "/a//b", &p), 0);
        CHECK_EQ_INT(http_route_match("/a/{id}/b", "/a/7/b/", &p), 0);
        CHECK_EQ_INT(http_route_match("/a/{id}", "/a/7/b", &p), 0);
        CHECK_EQ_INT(http_route_match("/a", "/a", &p), 1);
        CHECK_EQ_INT(http_route_match("/a", "/ab", &p), 0);
        CHECK_EQ_INT(http_route_match("{base...}/s/M", "/s/M", &p), 1);
        CHECK(p.n == 1 && p.v[0].value_len == 0);
        CHECK_EQ_INT(http_route_match("{base...}/s/M", "/x/y/s/M", &p), 1);
        CHECK(p.n == 1 && p.v[0].value_len == 4 && memcmp(p.v[0].value, "/x/y", 4) == 0);
        CHECK_EQ_INT(http_route_match("{base...}/s/M", "/x/../s/M", &p), 0);
        CHECK_EQ_INT(http_route_match("{base...}/s/M", "/x/./s/M", &p), 0);
        CHECK_EQ_INT(http_route_match("{base...}/s/M", "//s/M", &p), 0);
        CHECK_EQ_INT(http_route_match("{base...}/s/M", "s/M", &p), 0);
        CHECK_EQ_INT(http_route_match("{base...}/s/M", "/s/M/", &p), 0);
        CHECK_EQ_INT(http_route_match("{base...}/s/{m}", "/p/s/Run", &p), 1);
        CHECK(p.n == 2 && p.v[1].value_len == 3);
        CHECK_EQ_INT(http_route_match("a", "/a", &p), -EINVAL);
        CHECK_EQ_INT(http_route_match("/{}", "/a", &p), -EINVAL);
        CHECK_EQ_INT(http_route_match("/{a-b}", "/a", &p), -EINVAL);
        CHECK_EQ_INT(http_route_match("/x{a}", "/xa", &p), 0); /* a literal, not a parameter */
        CHECK_EQ_INT(http_route_match("{base...}", "/a", &p), -EINVAL);
        CHECK_EQ_INT(http_route_match("/a/{x...}", "/a/b", &p), -EINVAL);
}

static unsigned get(unsigned port, const char *path, char *out, size_t size) {
        char req[1024];
        int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
        tl_exchange(port, req, (size_t) n, out, size);
        return tl_status(out);
}

static void test_routing(unsigned port) {
        char a[8192];
        CHECK_EQ_INT(get(port, "/hello", a, sizeof(a)), 200);
        CHECK(strstr(a, "\r\n\r\nhello\n") != NULL);
        CHECK_EQ_INT(get(port, "/nope", a, sizeof(a)), 404);
        CHECK_EQ_INT(get(port, "/hello/", a, sizeof(a)), 404);
        CHECK_EQ_INT(get(port, "/small", a, sizeof(a)), 405);
        CHECK(strstr(a, "\r\nAllow: POST, DELETE\r\n") != NULL);
        CHECK_EQ_INT(get(port, "/a/b/svc/Run", a, sizeof(a)), 200);
        CHECK(strstr(a, "base=/a/b method=Run\n") != NULL);
        CHECK_EQ_INT(get(port, "/svc/Run", a, sizeof(a)), 200);
        CHECK(strstr(a, "base= method=Run\n") != NULL);
        CHECK_EQ_INT(get(port, "/a/../svc/Run", a, sizeof(a)), 404);
        CHECK_EQ_INT(get(port, "/query?a=1%202&b", a, sizeof(a)), 200);
        CHECK(strstr(a, "a=1 2 b=\n") != NULL);
        CHECK_EQ_INT(get(port, "/query", a, sizeof(a)), 200);
        CHECK(strstr(a, "a=(none) b=(none)\n") != NULL);
        /* the API's begin() echoes a header on every answer, refusals included */
        static const char with_id[] = "GET /nope HTTP/1.1\r\nHost: x\r\nX-Id: abc\r\nConnection: close\r\n\r\n";
        tl_exchange(port, with_id, sizeof(with_id) - 1, a, sizeof(a));
        CHECK(tl_status(a) == 404 && strstr(a, "\r\nX-Id: abc\r\n") != NULL);
        static const char head[] = "HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        tl_exchange(port, head, sizeof(head) - 1, a, sizeof(a));
        CHECK(tl_status(a) == 200 && strstr(a, "hello\n") == NULL);
}

/* The hostile client's NULs: a %00 in the path or the query, a raw NUL in the URI, a NUL in a
 * header value, a folded header: 400, and the handler never sees them. */
static void test_nul(unsigned port) {
        static const struct {
                const char *what;
                const char *req;
                size_t len;
        } bad[] = {
#define R(w, s) {w, s, sizeof(s) - 1}
                R("%00 in the path", "GET /hello%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                R("%00 in the query", "GET /query?a=1%00x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                R("a raw NUL in the path", "GET /hello\0x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                R("a NUL in a header value", "GET /hello HTTP/1.1\r\nHost: x\0y\r\nConnection: close\r\n\r\n"),
                R("a NUL in the last header", "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\0\r\n\r\n"),
                R("a folded header", "GET /hello HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\nConnection: close\r\n\r\n"),
#undef R
        };
        char a[4096];
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                tl_exchange(port, bad[i].req, bad[i].len, a, sizeof(a));
                TEST_RESULT(tl_status(a) == 400 && strstr(a, "hello\n") == NULL, "%s: 400 (got %u)", bad[i].what,
                            tl_status(a));
        }
        static const struct {
                const char *what;
                const char *req;
        } good[] = {
                {"bare LF line ends", "GET /hello HTTP/1.1\nHost: x\nConnection: close\n\n"},
                {"blanks around a value",
                 "GET /hello HTTP/1.1\r\nHost:   x \t\r\nX-Empty:\r\nConnection: close\r\n\r\n"},
                {"an empty line first", "\r\nGET /hello HTTP/1.0\r\n\r\n"},
                {"a cookie", "GET /hello HTTP/1.1\r\nHost: x\r\nCookie: a=b; c=d\r\nConnection: close\r\n\r\n"},
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                tl_exchange(port, good[i].req, strlen(good[i].req), a, sizeof(a));
                TEST_RESULT(tl_status(a) == 200, "%s: 200 (got %u)", good[i].what, tl_status(a));
        }
}

/* hull.db's keys as the server sees them: none, each count counted (ud: an atomic_uint). */
static size_t keys_count(void *ud) {
        atomic_fetch_add((atomic_uint *) ud, 1);
        return 0;
}
static int keys_find(void *ud, const uint8_t digest[static 32], char ret_id[static AUTH_NAME_MAX + 1]) {
        return 0;
}

static void test_auth(unsigned port, atomic_uint *key_counts) {
        char a[4096], req[512];
        static const char none[] = "POST /secret HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        tl_exchange(port, none, sizeof(none) - 1, a, sizeof(a));
        CHECK_EQ_INT(tl_status(a), 401);
        /* a token under the minimum is said to be too short; a tokens file's tokens come from
         * 'hull token new' (this server has no /v1 keys: 'hull key create' would not help) */
        static const char short_tok[] = "POST /secret HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer abc123\r\n"
                                        "Content-Length: 0\r\nConnection: close\r\n\r\n";
        tl_exchange(port, short_tok, sizeof(short_tok) - 1, a, sizeof(a));
        CHECK_EQ_INT(tl_status(a), 401);
        CHECK(strstr(a, "a token of 6 characters, shorter than the minimum of 32") != NULL);
        CHECK(strstr(a, "hull token new") != NULL);
        CHECK(strstr(a, "hull key create") == NULL);
        int n = snprintf(req, sizeof(req),
                         "POST /secret HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s0\r\nContent-Length: 0\r\n"
                         "Connection: close\r\n\r\n",
                         TOKEN);
        tl_exchange(port, req, (size_t) n, a, sizeof(a));
        CHECK_EQ_INT(tl_status(a), 401);
        CHECK(strstr(a, "an unknown token") != NULL && strstr(a, "hull token new") != NULL);
        CHECK(strstr(a, "shorter") == NULL && strstr(a, "hull key create") == NULL);
        n = snprintf(req, sizeof(req),
                     "POST /secret HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\n"
                     "Connection: close\r\n\r\n",
                     OTHER);
        tl_exchange(port, req, (size_t) n, a, sizeof(a));
        CHECK_EQ_INT(tl_status(a), 403);
        n = snprintf(req, sizeof(req),
                     "POST /secret HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\n"
                     "Connection: close\r\n\r\n",
                     TOKEN);
        tl_exchange(port, req, (size_t) n, a, sizeof(a));
        CHECK_EQ_INT(tl_status(a), 200);
        CHECK(strstr(a, "secret for token:") != NULL);
        CHECK_EQ_INT(get(port, "/hello", a, sizeof(a)), 200); /* a route without a scope is open */
        /* ... and asks the keys' store nothing (a health check at full rate would read hull.db) */
        unsigned before = atomic_load(key_counts);
        for (int i = 0; i < 3; i++)
                CHECK_EQ_INT(get(port, "/hello", a, sizeof(a)), 200);
        CHECK_EQ_INT(atomic_load(key_counts), before);
        tl_exchange(port, none, sizeof(none) - 1, a, sizeof(a)); /* a scoped route does count them */
        CHECK(atomic_load(key_counts) > before);
}

/* Send a body of n bytes (a pattern), chunked or with Content-Length, to path; the answer in out. */
static unsigned post_body(unsigned port, const char *path, uint64_t n, bool chunked, uint64_t *ret_sum, char *out,
                          size_t size) {
        char head[512];
        int fd = tl_connect(port);
        if (fd < 0)
                return 0;
        int hn = chunked ? snprintf(head, sizeof(head),
                                    "POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: "
                                    "close\r\n\r\n",
                                    path)
                         : snprintf(head, sizeof(head),
                                    "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %" PRIu64
                                    "\r\nConnection: close\r\n\r\n",
                                    path, n);
        bool ok = tl_send(fd, head, (size_t) hn);
        static char buf[65536];
        uint64_t sum = 0, i = 0;
        while (ok && i < n) {
                size_t k = (size_t) MIN((uint64_t) sizeof(buf), n - i);
                for (size_t j = 0; j < k; j++) {
                        buf[j] = (char) ((i + j) * 7 % 251);
                        sum = sum * 31 + (unsigned char) buf[j];
                }
                if (chunked) {
                        char ch[32];
                        int cn = snprintf(ch, sizeof(ch), "%zx\r\n", k);
                        ok = tl_send(fd, ch, (size_t) cn);
                }
                ok = ok && tl_send(fd, buf, k);
                if (chunked)
                        ok = ok && tl_send(fd, "\r\n", 2);
                i += k;
        }
        if (ok && chunked)
                ok = tl_send(fd, "0\r\n\r\n", 5);
        tl_read_all(fd, out, size, 30000);
        close(fd);
        if (ret_sum)
                *ret_sum = sum;
        return tl_status(out);
}

static void test_bodies(unsigned port) {
        char a[4096], want[128];
        uint64_t sum;
        /* a streamed upload far larger than any buffered body, both framings */
        CHECK_EQ_INT(post_body(port, "/upload", 20ULL << 20, false, &sum, a, sizeof(a)), 200);
        snprintf(want, sizeof(want), "bytes=%llu sum=%" PRIu64 "\n", 20ULL << 20, sum);
        CHECK(strstr(a, want) != NULL);
        CHECK(T.sink_calls > 1); /* piece by piece */
        CHECK_EQ_INT(post_body(port, "/upload", 3ULL << 20, true, &sum, a, sizeof(a)), 200);
        snprintf(want, sizeof(want), "bytes=%llu sum=%" PRIu64 "\n", 3ULL << 20, sum);
        CHECK(strstr(a, want) != NULL);
        /* the sink's own error reaches the handler */
        CHECK_EQ_INT(post_body(port, "/upload", 41ULL << 20, true, NULL, a, sizeof(a)), 422);
        CHECK(strstr(a, "sink error -27") != NULL);
        /* over the route's bound: declared, refused at once; chunked, read to its end and refused */
        CHECK_EQ_INT(post_body(port, "/upload", 65ULL << 20, true, NULL, a, sizeof(a)), 413);
        CHECK_EQ_INT(post_body(port, "/small", 17, false, NULL, a, sizeof(a)), 413);
        CHECK_EQ_INT(post_body(port, "/small", 16, false, NULL, a, sizeof(a)), 200);
        CHECK(strstr(a, "got 16: ") != NULL);
        /* the hostile client's chunked flood: over 16 MiB (the old cut) it is answered, not dropped */
        CHECK_EQ_INT(post_body(port, "/small", 17ULL << 20, true, NULL, a, sizeof(a)), 413);
        CHECK(strstr(a, "the body is over 16 bytes") != NULL);
        static const char huge[] =
                "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\nConnection: close\r\n\r\n";
        tl_exchange(port, huge, sizeof(huge) - 1, a, sizeof(a));
        CHECK_EQ_INT(tl_status(a), 413);
}

typedef struct bg_get {
        unsigned port;
        char path[64];
        char out[4096];
} bg_get;

static void *bg_get_main(void *arg) {
        bg_get *g = arg;
        get(g->port, g->path, g->out, sizeof(g->out));
        return NULL;
}

static void test_spawn(http_server *s, unsigned port) {
        bg_get g = {.port = port, .path = "/block"};
        pthread_t t;
        char a[4096];
        CHECK(pthread_create(&t, NULL, bg_get_main, &g) == 0);
        /* until the blocked call runs (10 s at most), not a fixed 0.2 s: it may come later */
        for (int i = 0; i < 1000 && http_busy(s) < 1; i++)
                sleep_ms(10);
        CHECK(http_busy(s) >= 1);
        CHECK_EQ_INT(get(port, "/hello", a, sizeof(a)), 200); /* a blocked handler holds nobody up */
        CHECK_EQ_INT(http_stop(s), -EBUSY);                   /* ... and the server cannot stop under it */
        pthread_join(t, NULL);
        CHECK(tl_status(g.out) == 200 && strstr(g.out, "blocked\n") != NULL);
        /* A thread that answered parks before its answer goes out: the requests spawned one after
         * another (a session's cells) all run on it, and no thread is made for them. */
        uint64_t made = http_spawn_threads_made(s);
        CHECK(made >= 1);
        for (int i = 0; i < 20; i++) {
                CHECK_EQ_INT(get(port, "/quick", a, sizeof(a)), 200);
                CHECK(strstr(a, "quick\n") != NULL);
        }
        CHECK_EQ_INT((int) (http_spawn_threads_made(s) - made), 0);
        /* the last answer can reach the client a moment before its thread counts itself idle */
        for (int i = 0; i < 200 && http_busy(s) != 0; i++)
                sleep_ms(10);
        CHECK_EQ_INT((int) http_busy(s), 0);
}

typedef struct bg_keep {
        int fd;
        char out[4096];
} bg_keep;

static void *bg_keep_main(void *arg) {
        bg_keep *k = arg;
        static const char req[] = "GET /short-block HTTP/1.1\r\nHost: x\r\n\r\n";
        if (tl_send(k->fd, req, sizeof(req) - 1))
                tl_read_until(k->fd, k->out, sizeof(k->out), "short blocked\n", 5000);
        return NULL;
}

/* A short call on a connection its libmicrohttpd thread serves alone runs on that thread (no
 * hand-off to another and back); a new connection is still served meanwhile (another thread of
 * the daemon accepts it), and a short call there, while one runs so, goes to a thread of its own. */
static void test_spawn_short(http_server *s, unsigned port) {
        static const char req[] = "GET /short HTTP/1.1\r\nHost: x\r\n\r\n";
        char a[4096];
        uint64_t calls = http_inline_calls(s), made = http_spawn_threads_made(s);
        int fd = tl_connect(port);
        unsigned ok = 0;
        for (int i = 0; fd >= 0 && i < 10; i++) {
                memset(a, 0, sizeof(a));
                if (tl_send(fd, req, sizeof(req) - 1) && tl_read_until(fd, a, sizeof(a), "short\n", 5000) > 0 &&
                    tl_status(a) == 200)
                        ok++;
        }
        if (fd >= 0)
                close(fd);
        TEST_RESULT(ok == 10 && http_inline_calls(s) - calls == 10 && http_spawn_threads_made(s) == made,
                    "10 short calls on one keep-alive connection: answered %u, on libmicrohttpd's thread %" PRIu64
                    ", threads made %" PRIu64,
                    ok, http_inline_calls(s) - calls, http_spawn_threads_made(s) - made);

        calls = http_inline_calls(s);
        bg_keep k = {.fd = tl_connect(port)};
        pthread_t t;
        CHECK(k.fd >= 0 && pthread_create(&t, NULL, bg_keep_main, &k) == 0);
        /* until the blocking short call runs on its connection's thread (10 s at most), not a fixed
         * 0.2 s: one that started after the count below was read counted as the /short's */
        for (int i = 0; i < 1000 && http_inline_calls(s) == calls; i++)
                sleep_ms(10);
        CHECK_EQ_INT((int) (http_inline_calls(s) - calls), 1);
        calls = http_inline_calls(s);
        CHECK_EQ_INT(get(port, "/hello", a, sizeof(a)), 200); /* accepted and answered meanwhile */
        CHECK_EQ_INT(get(port, "/short", a, sizeof(a)), 200); /* answered, on a thread of its own */
        CHECK(strstr(a, "short\n") != NULL);
        CHECK_EQ_INT((int) (http_inline_calls(s) - calls), 0);
        pthread_join(t, NULL);
        close(k.fd);
        CHECK(tl_status(k.out) == 200 && strstr(k.out, "short blocked\n") != NULL);
        for (int i = 0; i < 200 && http_busy(s) != 0; i++)
                sleep_ms(10);
        CHECK_EQ_INT((int) http_busy(s), 0);
}

/* 20 connections of one address that never finish their head: the oldest are closed, and that
 * address is still served. */
static void test_incomplete(unsigned port) {
        int fds[20];
        char a[4096];
        for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                fds[i] = tl_connect_from(port, "127.0.0.9");
                if (fds[i] >= 0)
                        tl_send(fds[i], "GET /hel", 8);
                sleep_ms(5);
        }
        sleep_ms(300);
        unsigned ok = 0;
        for (int i = 0; i < 16; i++) {
                int fd = tl_connect_from(port, "127.0.0.9");
                static const char req[] = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
                if (fd >= 0 && tl_send(fd, req, sizeof(req) - 1)) {
                        tl_read_all(fd, a, sizeof(a), 5000);
                        ok += tl_status(a) == 200;
                }
                if (fd >= 0)
                        close(fd);
        }
        TEST_RESULT(ok == 16, "20 unfinished heads from one address: it is still served (%u of 16)", ok);
        char c;
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        CHECK(fds[0] >= 0 && poll(&p, 1, 3000) == 1 && recv(fds[0], &c, 1, 0) <= 0); /* the oldest was closed */
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

static const char py_arrive[] = "import http.client, sys\n"
                                "port = int(sys.argv[1])\n"
                                "c = http.client.HTTPConnection('127.0.0.1', port, timeout=30)\n"
                                "c.request('GET', '/items/7/events?mode=arrive')\n"
                                "r = c.getresponse()\n"
                                "print(r.status, r.getheader('Content-Type'))\n"
                                "events = []\n"
                                "while True:\n"
                                "    line = r.readline()\n"
                                "    if not line:\n"
                                "        break\n"
                                "    line = line.decode().rstrip('\\n')\n"
                                "    if line.startswith('data: '):\n"
                                "        events.append(line[6:])\n"
                                "        if len(events) == 3:\n"
                                "            a = http.client.HTTPConnection('127.0.0.1', port, timeout=30)\n"
                                "            a.request('GET', '/ack')\n"
                                "            a.getresponse().read()\n"
                                "    elif line.startswith('event: '):\n"
                                "        events.append('<' + line[7:] + '>')\n"
                                "print('events', ','.join(events))\n";

static const char py_slow[] = "import http.client, sys, time\n"
                              "c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=60)\n"
                              "c.request('GET', '/items/1/events?mode=flood')\n"
                              "r = c.getresponse()\n"
                              "n, tail = 0, b''\n"
                              "while True:\n"
                              "    b = r.read(65536)\n"
                              "    if not b:\n"
                              "        break\n"
                              "    b = tail + b\n"
                              "    n += b.count(b'data: ')\n"
                              "    tail = b[-5:]\n"
                              "    time.sleep(0.003)\n"
                              "print('events', n)\n";

static long vm_hwm_kib(void) {
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        long v = -1;
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "VmHWM:", 6) == 0)
                        v = strtol(line + 6, NULL, 10);
        if (f)
                fclose(f);
        return v;
}

static void test_sse(unsigned port) {
        char out[8192], portstr[16];
        int pipe_out;
        snprintf(portstr, sizeof(portstr), "%u", port);

        /* events arrive while the stream is open: the client acknowledges the third, and only
         * then does the producer send the fourth and close */
        T.acked = T.acked_before_close = false;
        pid_t pid = tl_python(py_arrive, portstr, &pipe_out);
        int st = pid > 0 ? tl_python_wait(pid, pipe_out, out, sizeof(out), 40000) : -1;
        CHECK_EQ_INT(st, 0);
        CHECK(strstr(out, "200 text/event-stream") != NULL);
        bool all = strstr(out, "events <note>,one,two,three,four,lines\n") != NULL;
        TEST_RESULT(all, "python saw every event");
        if (!all)
                printf("# python printed: %s\n", out);
        TEST_RESULT(T.acked_before_close, "the events arrived before the stream ended");
        t_wait(&T.producer_done, 5000);

        /* a slow reader: 32 MiB of events through a 64 KiB queue; the producer waits, memory stays */
        long hwm0 = vm_hwm_kib();
        T.saw_eagain = false;
        T.producer_done = false;
        pid = tl_python(py_slow, portstr, &pipe_out);
        st = pid > 0 ? tl_python_wait(pid, pipe_out, out, sizeof(out), 120000) : -1;
        CHECK_EQ_INT(st, 0);
        CHECK(t_wait(&T.producer_done, 10000));
        unsigned long n_events = 0;
        sscanf(out, "events %lu", &n_events);
        TEST_RESULT(n_events == T.events_sent && n_events > 0, "every event of the flood arrived (%lu of %lu)",
                    n_events, T.events_sent);
        TEST_RESULT(T.saw_eagain, "the producer was held back (-EAGAIN) while the client read slowly");
        TEST_RESULT(T.queued_max <= T.queue_bound, "the queue stayed within its bound (%zu <= %zu)", T.queued_max,
                    T.queue_bound);
        long grew = vm_hwm_kib() - hwm0;
        TEST_RESULT(grew < 16 << 10, "32 MiB streamed to a slow reader: the peak memory grew %ld KiB", grew);

        /* nothing to send for a while: keep-alive comments; the end of the stream is a chunked end */
        static const char quiet[] =
                "GET /items/2/events?mode=quiet&keepalive=200 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        T.producer_done = false;
        tl_exchange(port, quiet, sizeof(quiet) - 1, out, sizeof(out));
        CHECK(tl_status(out) == 200 && strstr(out, "Cache-Control: no-cache") != NULL);
        const char *a = strstr(out, "data: a\n\n"), *k = strstr(out, ": keep-alive\n\n"),
                   *b = strstr(out, "data: b\n\n");
        TEST_RESULT(a && k && b && a < k && k < b, "keep-alive comments between the events");
        CHECK(strstr(out, "\r\n0\r\n\r\n") != NULL);
        t_wait(&T.producer_done, 5000);

        /* no keep-alive asked for: a quiet stream stays quiet */
        static const char silent[] =
                "GET /items/2/events?mode=quiet&keepalive=off HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        T.producer_done = false;
        tl_exchange(port, silent, sizeof(silent) - 1, out, sizeof(out));
        TEST_RESULT(strstr(out, "data: a\n\n") && strstr(out, "data: b\n\n") && !strstr(out, ": keep-alive"),
                    "HTTP_SSE_NO_KEEPALIVE: no comment in 1.2 s of silence");
        t_wait(&T.producer_done, 5000);

        /* raw bytes (a header's value, found by http_req_each_header), then a cut: no chunked end */
        static const char raw[] = "GET /items/4/events?mode=raw HTTP/1.1\r\nHost: x\r\nX-Probe: probe-42\r\n"
                                  "Connection: close\r\n\r\n";
        T.producer_done = false;
        tl_exchange(port, raw, sizeof(raw) - 1, out, sizeof(out));
        CHECK(t_wait(&T.producer_done, 10000));
        CHECK_EQ_INT(T.producer_result, 0);
        const char *body = strstr(out, "\r\n\r\n");
        /* chunked: each 3-byte write is a chunk of its own ("3\r\ndat\r\n") */
        TEST_RESULT(body && strstr(body, "\r\n3\r\ndat\r\n3\r\na: \r\n3\r\npro\r\n") != NULL,
                    "http_sse_send_raw: the bytes as they are, each drained piece a chunk of its own");
        TEST_RESULT(!strstr(out, "\r\n0\r\n\r\n"), "http_sse_abort: the connection closed without the chunked end");

        /* a client that resets while the stream waits: the producer is told within a few ticks */
        static const char gone[] = "GET /items/3/events?mode=gone HTTP/1.1\r\nHost: x\r\n\r\n";
        T.client_gone = T.producer_done = false;
        int fd = tl_connect(port);
        CHECK(fd >= 0 && tl_send(fd, gone, sizeof(gone) - 1));
        uint64_t end = tl_now_ms() + 10000;
        size_t got = 0;
        out[0] = '\0';
        while (fd >= 0 && !strstr(out, "data: hello") && tl_now_ms() < end && got + 1 < sizeof(out)) {
                size_t k2 = tl_read_all(fd, out + got, sizeof(out) - got, 200);
                got += k2;
        }
        CHECK(strstr(out, "data: hello") != NULL);
        if (fd >= 0)
                tl_reset(fd);
        uint64_t t0 = tl_now_ms();
        t_set(&T.client_gone);
        CHECK(t_wait(&T.producer_done, 20000));
        TEST_RESULT(T.producer_result == -EPIPE,
                    "a client that reset: the producer gets -EPIPE (%d) after %" PRIu64 " ms", T.producer_result,
                    tl_now_ms() - t0);
}

/* Shutdown: streams end, new requests on open connections are refused unless their route
 * serves during shutdown, and the server stops once idle. */
static void test_shutdown(http_server *s, unsigned port) {
        char out[8192];
        static const char hold[] = "GET /items/4/events?mode=hold HTTP/1.1\r\nHost: x\r\n\r\n";
        static const char hello_ka[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
        static const char health_ka[] = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
        T.producer_done = false;
        int sfd = tl_connect(port), k1 = tl_connect(port), k2 = tl_connect(port);
        CHECK(sfd >= 0 && k1 >= 0 && k2 >= 0);
        CHECK(tl_send(sfd, hold, sizeof(hold) - 1));
        CHECK(tl_send(k1, hello_ka, sizeof(hello_ka) - 1) && tl_read_until(k1, out, sizeof(out), "hello\n", 5000) > 0);
        CHECK(tl_send(k2, hello_ka, sizeof(hello_ka) - 1) && tl_read_until(k2, out, sizeof(out), "hello\n", 5000) > 0);
        sleep_ms(200);
        http_quiesce(s);
        CHECK(http_stopping(s));
        CHECK(t_wait(&T.producer_done, 10000));
        CHECK_EQ_INT(T.producer_result, -EPIPE);
        tl_read_until(sfd, out, sizeof(out), "\r\n0\r\n\r\n", 10000);
        CHECK(strstr(out, "\r\n0\r\n\r\n") != NULL); /* the stream ended cleanly */
        CHECK(tl_send(k1, hello_ka, sizeof(hello_ka) - 1));
        tl_read_until(k1, out, sizeof(out), "elsewhere", 10000);
        CHECK_EQ_INT(tl_status(out), 503);
        CHECK(tl_send(k2, health_ka, sizeof(health_ka) - 1));
        tl_read_until(k2, out, sizeof(out), "hello\n", 10000);
        CHECK_EQ_INT(tl_status(out), 200);
        close(sfd);
        close(k1);
        close(k2);
        uint64_t end = tl_now_ms() + 10000;
        while (http_busy(s) > 0 && tl_now_ms() < end)
                sleep_ms(20);
        CHECK_EQ_INT(http_busy(s), 0);
        CHECK_EQ_INT(http_stop(s), 0);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        test_route_match();

        char tokens_text[512], hex1[SHA256_HEX_SIZE], hex2[SHA256_HEX_SIZE];
        sha256_hex(TOKEN, strlen(TOKEN), hex1);
        sha256_hex(OTHER, strlen(OTHER), hex2);
        snprintf(tokens_text, sizeof(tokens_text), "%s test:secret tester\n%s other:thing\n", hex1, hex2);
        auth_tokens tokens = {0};
        hull_error e = {0};
        CHECK(auth_tokens_parse(tokens_text, strlen(tokens_text), &tokens, &e) == 0);

        dlog log = {.level = getenv("TEST_HTTP_LOG") ? DLOG_DEBUG : DLOG_ERROR, .fd = 2};
        metrics m;
        metrics_init(&m);
        atomic_uint key_counts;
        atomic_init(&key_counts, 0);
        http_keys keys = {.count = keys_count, .find = keys_find, .ud = &key_counts};
        http_config cfg = {.tokens = &tokens, .keys = &keys, .fallback = &test_api, .log = &log, .metrics = &m};
        CHECK(http_listen_parse("127.0.0.1:0", &cfg.listen, &cfg.listen_len) == 0);
        http_server *s = NULL;
        if (http_new(&cfg, &s, &e) < 0) {
                printf("skip - no libmicrohttpd: %s\n", e.msg);
                return 77;
        }
        CHECK(http_add_routes(s, &test_api, routes, ELEMENTSOF(routes), NULL) == 0);
        CHECK(http_start(s, &e) == 0);
        unsigned port = http_port(s);
        CHECK(port > 0);

        test_routing(port);
        test_nul(port);
        test_auth(port, &key_counts);
        test_bodies(port);
        test_spawn(s, port);
        test_spawn_short(s, port);
        test_incomplete(port);
        test_sse(port);
        test_shutdown(s, port);
        auth_tokens_done(&tokens);
        return test_done();
}
