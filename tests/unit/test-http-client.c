/* test-http-client.c: the HTTP client (libcurl, dlopen'd) against a real server, hull's own
 * (http-server.h) on 127.0.0.1: GET, POST, PUT, DELETE; response headers to the caller; a
 * streamed answer (server-sent events) read piece by piece while it is still being written; a
 * cancel mid-stream by flag and by fd, and a callback's own error; streamed uploads from an fd
 * (its size known) and from a callback (chunked); the answer's bound; httpc_post as before. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-client.h"
#include "http-server.h"
#include "http-testlib.h"
#include "test.h"

static struct {
        atomic_bool producer_done;
        atomic_int producer_result;
        atomic_uint_fast64_t last_send_ms; /* when the stream's last event went */
} P;

static void sleep_ms(unsigned ms) {
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
}

/* ---- the server's routes ---- */

typedef struct producer {
        http_sse *s;
        unsigned n;   /* events; 0: until the client is gone */
        unsigned gap; /* ms between events */
} producer;

static void *produce(void *arg) {
        producer *p = arg;
        int r = 0;
        char data[32];
        for (unsigned i = 1; r == 0 && (p->n == 0 || i <= p->n) && i < 100000; i++) {
                snprintf(data, sizeof(data), "event %u", i);
                r = http_sse_send(p->s, "tick", data, strlen(data));
                atomic_store(&P.last_send_ms, tl_now_ms());
                if (r == 0)
                        sleep_ms(p->gap);
        }
        atomic_store(&P.producer_result, r);
        http_sse_close(p->s);
        free(p);
        atomic_store(&P.producer_done, true);
        return NULL;
}

static void stream(http_req *r) {
        const char *n = http_req_query(r, "n"), *gap = http_req_query(r, "gap");
        producer *p = calloc(1, sizeof(*p));
        pthread_t t;
        if (!p || http_answer_sse(r, 0, 0, &p->s) < 0) {
                free(p);
                http_answer_text(r, 500, "no stream\n");
                return;
        }
        p->n = n ? (unsigned) strtoul(n, NULL, 10) : 0;
        p->gap = gap ? (unsigned) strtoul(gap, NULL, 10) : 100;
        atomic_store(&P.producer_done, false);
        if (pthread_create(&t, NULL, produce, p) == 0)
                pthread_detach(t);
        else {
                http_sse_close(p->s);
                free(p);
        }
}

typedef struct upload {
        uint64_t bytes, sum;
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
        return 0;
}

static void upload_done(http_req *r) {
        upload *u = http_req_ctx(r);
        char text[160];
        const char *te = http_req_header(r, "Transfer-Encoding", NULL);
        snprintf(text, sizeof(text), "%s bytes=%" PRIu64 " sum=%" PRIu64 " chunked=%s\n", http_req_method(r), u->bytes,
                 u->sum, te && strstr(te, "chunked") ? "yes" : "no");
        http_answer_text(r, 200, text);
}

static void headers(http_req *r) {
        http_answer_header(r, "X-A", "1");
        http_answer_header(r, "X-B", "two words ");
        http_answer_text(r, 200, "headers\n");
}

static void thing(http_req *r) {
        char text[64];
        snprintf(text, sizeof(text), "%s thing\n", http_req_method(r));
        http_answer_text(r, 200, text);
}

static void big(http_req *r) {
        char *b = malloc(100 << 10);
        if (b)
                memset(b, 'b', 100 << 10);
        http_answer(r, 200, "application/octet-stream", b, b ? 100 << 10 : 0);
}

static const http_api api = {.name = "client-test"};

static const http_route routes[] = {
        {.methods = HTTP_GET, .pattern = "/stream", .handler = stream},
        {.methods = HTTP_POST | HTTP_PUT,
         .pattern = "/upload",
         .body_max = 64U << 20,
         .sink = upload_sink,
         .head = upload_head,
         .handler = upload_done},
        {.methods = HTTP_GET, .pattern = "/headers", .handler = headers},
        {.methods = HTTP_GET | HTTP_POST | HTTP_DELETE, .pattern = "/thing", .body_max = 1024, .handler = thing},
        {.methods = HTTP_GET, .pattern = "/big", .handler = big},
};

/* ---- the client's callbacks ---- */

typedef struct seen {
        unsigned pieces, events;
        uint64_t first_ms;
        char text[8192];
        size_t len;
        atomic_bool *cancel_after_two; /* set the flag once two events came (another thread reads it) */
        int fail_after;                /* return an error once this many events came (0: never) */
        unsigned header_a, header_b;
        char value_b[64];
        unsigned responses; /* on_response calls */
        long status;
        char type[64];
        bool data_before_response;
        bool refuse; /* on_response fails */
} seen;

static int on_response(void *userdata, long status, const char *content_type) {
        seen *s = userdata;
        s->responses++;
        s->status = status;
        snprintf(s->type, sizeof(s->type), "%s", content_type);
        return s->refuse ? -EBADMSG : 0;
}

static int on_data(void *userdata, const char *p, size_t n) {
        seen *s = userdata;
        if (s->pieces++ == 0)
                s->first_ms = tl_now_ms();
        if (s->responses == 0)
                s->data_before_response = true;
        size_t k = MIN(n, sizeof(s->text) - 1 - s->len);
        memcpy(s->text + s->len, p, k);
        s->len += k;
        s->text[s->len] = '\0';
        s->events = 0;
        for (const char *c = s->text; (c = strstr(c, "data: event ")); c++)
                s->events++;
        if (s->cancel_after_two && s->events >= 2)
                atomic_store(s->cancel_after_two, true);
        if (s->fail_after && (int) s->events >= s->fail_after)
                return -EBADMSG;
        return 0;
}

static int on_header(void *userdata, const char *name, const char *value) {
        seen *s = userdata;
        if (strcasecmp(name, "X-A") == 0 && strcmp(value, "1") == 0)
                s->header_a++;
        if (strcasecmp(name, "X-B") == 0) {
                s->header_b++;
                snprintf(s->value_b, sizeof(s->value_b), "%s", value);
        }
        return 0;
}

typedef struct gen {
        uint64_t left, i, sum;
} gen;

static ssize_t gen_read(void *userdata, char *buf, size_t n) {
        gen *g = userdata;
        size_t k = (size_t) MIN((uint64_t) n, g->left);
        for (size_t j = 0; j < k; j++, g->i++) {
                buf[j] = (char) (g->i * 13 % 241);
                g->sum = g->sum * 31 + (unsigned char) buf[j];
        }
        g->left -= k;
        return (ssize_t) k;
}

static void *write_later(void *arg) {
        int *fd = arg;
        sleep_ms(400);
        (void) !write(*fd, "x", 1);
        return NULL;
}

static void wait_producer(void) {
        uint64_t end = tl_now_ms() + 20000;
        while (!atomic_load(&P.producer_done) && tl_now_ms() < end)
                sleep_ms(20);
}

/* GET, POST, DELETE, the answer's headers and its bound. */
static void test_requests(httpc *c, const char *base) {
        hull_error e = {0};
        char url[128];
        httpc_answer a;
        /* GET, POST, DELETE; the answer's headers to the caller */
        snprintf(url, sizeof(url), "%s/thing", base);
        CHECK(httpc_perform(c, &(httpc_request){.method = "GET", .url = url, .answer_max = 1024}, &a, &e) == 0);
        CHECK(a.status == 200 && strcmp(a.body, "GET thing\n") == 0);
        httpc_answer_done(&a);
        CHECK(httpc_perform(c, &(httpc_request){.method = "DELETE", .url = url, .answer_max = 1024}, &a, &e) == 0);
        CHECK(a.status == 200 && strcmp(a.body, "DELETE thing\n") == 0);
        httpc_answer_done(&a);
        const char *hs[] = {"Content-Type: application/json", NULL};
        CHECK(httpc_post(c,
                         &(httpc_request){.url = url, .headers = hs, .body = "{}", .body_len = 2, .answer_max = 1024},
                         &a, &e) == 0);
        CHECK(a.status == 200 && strcmp(a.body, "POST thing\n") == 0 && strncmp(a.content_type, "text/plain", 10) == 0);
        httpc_answer_done(&a);
        seen s = {0};
        snprintf(url, sizeof(url), "%s/headers", base);
        CHECK(httpc_perform(c,
                            &(httpc_request){.method = "GET",
                                             .url = url,
                                             .answer_max = 1024,
                                             .on_header = on_header,
                                             .userdata = &s,
                                             .capture_header = "x-a"},
                            &a, &e) == 0);
        CHECK(s.header_a == 1 && s.header_b == 1 && strcmp(s.value_b, "two words") == 0);
        CHECK(a.captured_count == 1 && strcmp(a.captured, "1") == 0);
        httpc_answer_done(&a);

        /* the answer's bound */
        snprintf(url, sizeof(url), "%s/big", base);
        CHECK_EQ_INT(httpc_perform(c, &(httpc_request){.method = "GET", .url = url, .answer_max = 1000}, &a, &e),
                     -EFBIG);
}

/* A streamed answer, cancels by flag and by fd, an idle stream cut. */
static void test_streams(httpc *c, const char *base) {
        hull_error e = {0};
        char url[128];
        httpc_answer a;
        seen s;
        /* a streamed answer, piece by piece, while the server still writes it */
        s = (seen){0};
        snprintf(url, sizeof(url), "%s/stream?n=5", base);
        CHECK(httpc_perform(c,
                            &(httpc_request){.method = "GET",
                                             .url = url,
                                             .on_data = on_data,
                                             .on_response = on_response,
                                             .userdata = &s},
                            &a, &e) == 0);
        /* the status and type came once, before the body */
        CHECK(s.responses == 1 && s.status == 200 && strncmp(s.type, "text/event-stream", 17) == 0);
        CHECK(!s.data_before_response);
        CHECK(a.status == 200 && a.body_len == 0 && strncmp(a.content_type, "text/event-stream", 17) == 0);
        httpc_answer_done(&a);
        CHECK_EQ_INT(s.events, 5);
        TEST_RESULT(s.pieces >= 5, "the stream came in pieces (%u)", s.pieces);
        wait_producer();
        TEST_RESULT(s.first_ms < atomic_load(&P.last_send_ms), "the first piece came before the last event was sent");
        CHECK(strstr(s.text, "event: tick\ndata: event 1\n\n") != NULL);

        /* a cancel mid-stream, by a flag another thread reads (libcurl's progress callback) */
        atomic_bool cancel = false;
        s = (seen){.cancel_after_two = &cancel};
        snprintf(url, sizeof(url), "%s/stream", base);
        uint64_t t0 = tl_now_ms();
        int r = httpc_perform(
                c, &(httpc_request){.method = "GET", .url = url, .on_data = on_data, .userdata = &s, .cancel = &cancel},
                &a, &e);
        TEST_RESULT(r == -ECANCELED, "a cancel by flag stops the stream: %d (%s) after %" PRIu64 " ms, %u events", r,
                    e.msg, tl_now_ms() - t0, s.events);
        CHECK(s.events >= 2 && s.events < 50);
        wait_producer();
        TEST_RESULT(atomic_load(&P.producer_done) && atomic_load(&P.producer_result) == -EPIPE,
                    "... and the server's producer learns the client is gone (%d)", atomic_load(&P.producer_result));

        /* a cancel by fd */
        int pfd[2];
        pthread_t t;
        CHECK(pipe(pfd) == 0);
        s = (seen){0};
        CHECK(pthread_create(&t, NULL, write_later, &pfd[1]) == 0);
        r = httpc_perform(
                c,
                &(httpc_request){.method = "GET", .url = url, .on_data = on_data, .userdata = &s, .cancel_fd = pfd[0]},
                &a, &e);
        pthread_join(t, NULL);
        CHECK_EQ_INT(r, -ECANCELED);
        close(pfd[0]);
        close(pfd[1]);
        wait_producer();

        /* a stream silent for longer than the idle timeout: -ETIME after its first event */
        s = (seen){0};
        snprintf(url, sizeof(url), "%s/stream?n=3&gap=4000", base);
        t0 = tl_now_ms();
        r = httpc_perform(
                c,
                &(httpc_request){
                        .method = "GET", .url = url, .on_data = on_data, .userdata = &s, .idle_timeout_ms = 1000},
                &a, &e);
        TEST_RESULT(r == -ETIME && s.events == 1, "an idle stream is cut: %d (%s) after %" PRIu64 " ms, %u events", r,
                    e.msg, tl_now_ms() - t0, s.events);
        wait_producer();
        /* ... but not one whose events keep coming, however long it takes in all */
        s = (seen){0};
        snprintf(url, sizeof(url), "%s/stream?n=4&gap=500", base);
        r = httpc_perform(
                c,
                &(httpc_request){
                        .method = "GET", .url = url, .on_data = on_data, .userdata = &s, .idle_timeout_ms = 1800},
                &a, &e);
        TEST_RESULT(r == 0 && s.events == 4, "a slow stream that keeps sending is not idle: %d (%s), %u events", r,
                    e.msg, s.events);
        if (r == 0)
                httpc_answer_done(&a);
        wait_producer();
}

/* The callbacks' errors stop the exchange. */
static void test_callbacks(httpc *c, const char *base) {
        hull_error e = {0};
        char url[128];
        httpc_answer a;
        seen s;
        int r;
        /* on_response with a whole answer; its error stops the exchange before the body */
        snprintf(url, sizeof(url), "%s/thing", base);
        s = (seen){0};
        CHECK(httpc_perform(c,
                            &(httpc_request){.method = "GET",
                                             .url = url,
                                             .answer_max = 1024,
                                             .on_response = on_response,
                                             .userdata = &s},
                            &a, &e) == 0);
        CHECK(s.responses == 1 && s.status == 200 && strcmp(a.body, "GET thing\n") == 0);
        httpc_answer_done(&a);
        s = (seen){.refuse = true};
        CHECK_EQ_INT(httpc_perform(c,
                                   &(httpc_request){.method = "GET",
                                                    .url = url,
                                                    .on_data = on_data,
                                                    .on_response = on_response,
                                                    .userdata = &s},
                                   &a, &e),
                     -EBADMSG);
        CHECK(s.responses == 1 && s.pieces == 0);
        snprintf(url, sizeof(url), "%s/stream", base);

        /* the data callback's own error stops the transfer and comes back */
        s = (seen){.fail_after = 3};
        r = httpc_perform(c, &(httpc_request){.method = "GET", .url = url, .on_data = on_data, .userdata = &s}, &a, &e);
        CHECK_EQ_INT(r, -EBADMSG);
        CHECK_EQ_INT(s.events, 3);
        wait_producer();
}

/* Streamed uploads from an fd and from a callback; a refused connection. */
static void test_uploads(httpc *c, const char *base) {
        hull_error e = {0};
        char url[128];
        httpc_answer a;
        /* a streamed upload from an fd (a regular file: its size is sent) */
        char path[] = "/tmp/test-http-client.XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0);
        uint64_t sum = 0, n = 20ULL << 20;
        gen g = {.left = n};
        char buf[65536];
        bool written = true;
        for (ssize_t k; (k = gen_read(&g, buf, sizeof(buf))) > 0;)
                written = written && write(fd, buf, (size_t) k) == k;
        CHECK(written);
        sum = g.sum;
        lseek(fd, 0, SEEK_SET);
        snprintf(url, sizeof(url), "%s/upload", base);
        char want[160];
        CHECK(httpc_perform(c,
                            &(httpc_request){.method = "PUT",
                                             .url = url,
                                             .body_from = HTTPC_BODY_FD,
                                             .body_fd = fd,
                                             .body_size = -1,
                                             .answer_max = 1024},
                            &a, &e) == 0);
        snprintf(want, sizeof(want), "PUT bytes=%" PRIu64 " sum=%" PRIu64 " chunked=no\n", n, sum);
        TEST_RESULT(a.status == 200 && strcmp(a.body, want) == 0, "20 MiB from a file: %s", a.body ? a.body : "");
        httpc_answer_done(&a);
        close(fd);
        unlink(path);

        /* ... and from a callback, its length unknown: chunked */
        g = (gen){.left = 5ULL << 20};
        CHECK(httpc_perform(c,
                            &(httpc_request){.method = "POST",
                                             .url = url,
                                             .body_from = HTTPC_BODY_CALLBACK,
                                             .body_read = gen_read,
                                             .body_size = -1,
                                             .userdata = &g,
                                             .answer_max = 1024},
                            &a, &e) == 0);
        snprintf(want, sizeof(want), "POST bytes=%llu sum=%" PRIu64 " chunked=yes\n", 5ULL << 20, g.sum);
        TEST_RESULT(a.status == 200 && strcmp(a.body, want) == 0, "5 MiB from a callback, chunked: %s",
                    a.body ? a.body : "");
        httpc_answer_done(&a);

        /* nothing listens there */
        CHECK_EQ_INT(httpc_perform(c, &(httpc_request){.method = "GET", .url = "http://127.0.0.1:1/", .answer_max = 10},
                                   &a, &e),
                     -ECONNREFUSED);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        hull_error e = {0};
        dlog log = {.level = getenv("TEST_HTTP_LOG") ? DLOG_DEBUG : DLOG_ERROR, .fd = 2};
        metrics m;
        metrics_init(&m);
        http_config cfg = {.fallback = &api, .log = &log, .metrics = &m};
        CHECK(http_listen_parse("127.0.0.1:0", &cfg.listen, &cfg.listen_len) == 0);
        http_server *srv = NULL;
        httpc *c = NULL;
        if (http_new(&cfg, &srv, &e) < 0 || httpc_new(&c, &e) < 0) {
                printf("skip - no libmicrohttpd or libcurl: %s\n", e.msg);
                return 77;
        }
        CHECK(http_add_routes(srv, &api, routes, ELEMENTSOF(routes), NULL) == 0);
        CHECK(http_start(srv, &e) == 0);
        char base[64];
        snprintf(base, sizeof(base), "http://127.0.0.1:%u", http_port(srv));

        test_requests(c, base);
        test_streams(c, base);
        test_callbacks(c, base);
        test_uploads(c, base);

        httpc_free(c);
        http_quiesce(srv);
        uint64_t end = tl_now_ms() + 10000;
        while (http_busy(srv) > 0 && tl_now_ms() < end)
                sleep_ms(20);
        CHECK_EQ_INT(http_stop(srv), 0);
        return test_done();
}
