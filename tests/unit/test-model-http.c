/* test-model-http.c: the HTTP providers (model_client_new, model_call) against a loopback server in
 * this process that writes exact bytes: both APIs, streamed and not (model-apis.md §1.7 and §2.7
 * byte for byte into §1.6 and §2.6's answers), and every fault of §4's table: retries honouring
 * retry-after-ms and x-should-retry, 401, 404, context overflow in three shapes, a 5xx storm,
 * billing never retried, errors inside a stream, streams cut both ways (close-delimited and
 * chunked), single-byte writes and splits inside UTF-8, "\r\n" and JSON escapes, compatible
 * servers' quirks, a 200 with JSON to a streaming request, a body that is not JSON, a stream
 * going idle, a cancel from another thread, the caller's deadline, nothing listening. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dynbuf.h"
#include "model-internal.h"
#include "model.h"
#include "test.h"
#include "time-util.h"

#define MAX_REPLIES 8
#define MAX_REQUESTS 16

/* ---- the server: one scripted reply per connection, in order (the last one repeats) ---- */

typedef struct reply {
        char *bytes; /* the whole answer, head and body, exactly as written (owned) */
        size_t len;
        size_t piece;       /* written in pieces of this many bytes (0: at once) ... */
        const size_t *cuts; /* ... or split at these offsets (ascending, 0 ends them) */
        unsigned gap_ms;    /* the pause between pieces */
        unsigned hold_ms;   /* then the connection stays open this long (or until the client goes) */
} reply;

typedef struct request {
        char *head, *body;
} request;

typedef struct server {
        int fd, stop[2];
        unsigned port;
        pthread_t thread;
        reply replies[MAX_REPLIES];
        size_t n_replies;
        request requests[MAX_REQUESTS];
        atomic_uint n_requests;
} server;

static void sleep_ms(unsigned ms) {
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
}

static bool stopped(server *s, int fd, unsigned ms) {
        struct pollfd p[2] = {{.fd = s->stop[0], .events = POLLIN}, {.fd = fd, .events = POLLIN}};
        return poll(p, 2, (int) ms) > 0 && (p[0].revents || p[1].revents);
}

static bool send_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return false;
                p += k;
                n -= (size_t) k;
        }
        return true;
}

/* The request: its head and a Content-Length body. */
static void read_request(server *s, int fd) {
        dynbuf b;
        char buf[4096];
        size_t want = 0;
        char *end = NULL;
        dynbuf_init(&b, 8 << 20);
        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                if (poll(&p, 1, 10000) <= 0)
                        break;
                ssize_t k = read(fd, buf, sizeof(buf));
                if (k <= 0)
                        break;
                dynbuf_add(&b, buf, (size_t) k);
                if (!end && (end = strstr(b.buf, "\r\n\r\n"))) {
                        const char *cl = strcasestr(b.buf, "\r\nContent-Length:");
                        want = (size_t) (end - b.buf) + 4 + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
                }
                if (end && b.len >= want)
                        break;
                end = end ? strstr(b.buf, "\r\n\r\n") : NULL;
        }
        unsigned i = atomic_load(&s->n_requests);
        if (i < MAX_REQUESTS && b.buf && (end = strstr(b.buf, "\r\n\r\n"))) {
                s->requests[i].head = strndup(b.buf, (size_t) (end - b.buf) + 2);
                s->requests[i].body = strdup(end + 4);
                atomic_store(&s->n_requests, i + 1);
        }
        dynbuf_free(&b);
}

static void *serve(void *arg) {
        server *s = arg;
        for (unsigned n = 0;; n++) {
                struct pollfd p[2] = {{.fd = s->stop[0], .events = POLLIN}, {.fd = s->fd, .events = POLLIN}};
                if (poll(p, 2, -1) <= 0 || p[0].revents)
                        return NULL;
                int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0)
                        continue;
                int one = 1;
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                read_request(s, c);
                reply *r = &s->replies[MIN((size_t) n, s->n_replies - 1)];
                size_t at = 0, cut = 0;
                bool ok = true;
                while (ok && at < r->len) {
                        size_t to = r->len;
                        if (r->piece)
                                to = MIN(at + r->piece, r->len);
                        else if (r->cuts && r->cuts[cut])
                                to = r->cuts[cut++];
                        ok = send_all(c, r->bytes + at, to - at);
                        at = to;
                        if (ok && at < r->len && r->gap_ms && stopped(s, c, r->gap_ms))
                                break;
                }
                if (r->hold_ms)
                        stopped(s, c, r->hold_ms);
                close(c);
        }
}

static void server_start(server *s) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        socklen_t len = sizeof(a);
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s->fd < 0 || bind(s->fd, (struct sockaddr *) &a, sizeof(a)) < 0 || listen(s->fd, 16) < 0 ||
            getsockname(s->fd, (struct sockaddr *) &a, &len) < 0 || pipe2(s->stop, O_CLOEXEC) < 0 ||
            pthread_create(&s->thread, NULL, serve, s) != 0) {
                printf("not ok - cannot start the loopback server: %m\n");
                exit(1);
        }
        s->port = ntohs(a.sin_port);
}

static void server_stop(server *s) {
        (void) !write(s->stop[1], "x", 1);
        pthread_join(s->thread, NULL);
        close(s->fd);
        close(s->stop[0]);
        close(s->stop[1]);
        for (size_t i = 0; i < s->n_replies; i++)
                free(s->replies[i].bytes);
        for (unsigned i = 0; i < atomic_load(&s->n_requests); i++) {
                free(s->requests[i].head);
                free(s->requests[i].body);
        }
        *s = (server){0};
}

/* Replies. */
static reply *add(server *s, char *bytes) {
        reply *r = &s->replies[s->n_replies++];
        *r = (reply){.bytes = bytes, .len = strlen(bytes)};
        return r;
}

static reply *add_json(server *s, const char *status, const char *headers, const char *body) {
        char *b = NULL;
        if (asprintf(&b,
                     "HTTP/1.1 %s\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\nConnection: "
                     "close\r\n\r\n%s",
                     status, headers, strlen(body), body) < 0)
                exit(1);
        return add(s, b);
}

static reply *add_stream(server *s, const char *headers, const char *body) {
        char *b = NULL;
        if (asprintf(
                    &b,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n%s"
                    "Connection: close\r\n\r\n%s",
                    headers, body) < 0)
                exit(1);
        return add(s, b);
}

/* A stream sent chunked whose last chunk never comes: data in one chunk of its own length. */
static reply *add_chunked_cut(server *s, const char *data) {
        char *b = NULL;
        if (asprintf(&b,
                     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                     "Connection: close\r\n\r\n%zx\r\n%s\r\n",
                     strlen(data), data) < 0)
                exit(1);
        return add(s, b);
}

/* A whole answer of any type. */
static reply *add_typed(server *s, const char *status, const char *type, const char *headers, const char *body) {
        char *b = NULL;
        if (asprintf(&b, "HTTP/1.1 %s\r\nContent-Type: %s\r\n%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     status, type, headers, strlen(body), body) < 0)
                exit(1);
        return add(s, b);
}

static char *slurp(const char *name) {
        char path[512];
        snprintf(path, sizeof(path), "%s/model/%s", TEST_DATA_DIR, name);
        FILE *f = fopen(path, "rb");
        dynbuf b;
        char buf[4096];
        dynbuf_init(&b, 1 << 20);
        if (!f) {
                printf("not ok - cannot open %s\n", path);
                exit(1);
        }
        for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;)
                dynbuf_add(&b, buf, n);
        fclose(f);
        return dynbuf_take(&b, NULL);
}

/* ---- the client's side ---- */

typedef struct seen {
        dynbuf text;
        char tools[256];
        unsigned retries;
        uint64_t delays[8];
        model_fail retry_kinds[8];
        char retry_msg[HULL_ERROR_MSG_MAX];
        int text_error;           /* on_text returns this */
        atomic_bool *cancel_text; /* set once text came */
} seen;

static int on_text(void *ud, const char *p, size_t n) {
        seen *s = ud;
        dynbuf_add(&s->text, p, n);
        if (s->cancel_text)
                atomic_store(s->cancel_text, true);
        return s->text_error;
}

static int on_tool(void *ud, const char *id, const char *name) {
        seen *s = ud;
        size_t n = strlen(s->tools);
        snprintf(s->tools + n, sizeof(s->tools) - n, "%s%s=%s", n ? "," : "", id, name);
        return 0;
}

static void on_retry(void *ud, unsigned attempt, uint64_t delay_ms, const model_failure *f, const char *msg) {
        seen *s = ud;
        if (s->retries < 8) {
                s->delays[s->retries] = delay_ms;
                s->retry_kinds[s->retries] = f->kind;
        }
        s->retries++;
        snprintf(s->retry_msg, sizeof(s->retry_msg), "%s", msg);
}

typedef struct outcome {
        int r;
        model_response a;
        model_failure f;
        hull_error e;
        seen s;
        uint64_t ms;
} outcome;

static model_request the_request(json_t **msgs, json_t **tools) {
        *msgs = json_loads(
                "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What does notes.txt say?\"}]}]", 0,
                NULL);
        *tools = json_loads("[{\"name\":\"read_file\",\"description\":\"Read a UTF-8 text file from the workspace.\","
                            "\"input_schema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
                            "\"required\":[\"path\"]}}]",
                            0, NULL);
        return (model_request){.system = "You are a file assistant.", .messages = *msgs, .tools = *tools};
}

/* One call against s with cfg (its base URL set here unless it has one). */
static void call(server *s, model_config cfg, model_call_opts o, outcome *out) {
        char base[64];
        json_t *msgs, *tools;
        model_request req = the_request(&msgs, &tools);
        model_client *c = NULL;

        seen keep = {.text_error = out->s.text_error, .cancel_text = out->s.cancel_text};
        *out = (outcome){.s = keep};
        dynbuf_init(&out->s.text, 1 << 20);
        snprintf(base, sizeof(base), "http://127.0.0.1:%u%s", s ? s->port : 1,
                 cfg.api == MODEL_API_OPENAI ? "/v1" : "");
        if (!cfg.base_url)
                cfg.base_url = base;
        if (!cfg.model)
                cfg.model = cfg.api == MODEL_API_OPENAI ? "gpt-5.4" : "claude-sonnet-4-6";
        if (!cfg.max_output_tokens)
                cfg.max_output_tokens = 1024;
        out->r = model_client_new(&cfg, &c, &out->e);
        if (out->r == 0) {
                o.on_text = on_text;
                o.on_tool_use = on_tool;
                o.on_retry = on_retry;
                o.ud = &out->s;
                uint64_t t0 = now_mono_ms();
                out->r = model_call(c, &req, &o, &out->a, &out->f, &out->e);
                out->ms = now_mono_ms() - t0;
        }
        model_client_free(c);
        json_decref(msgs);
        json_decref(tools);
}

static void outcome_done(outcome *o) {
        model_response_done(&o->a);
        dynbuf_free(&o->s.text);
}

static json_t *decoded(model_api api, const char *file) {
        char *body = slurp(file);
        model_response a = {0};
        model_api_error err;
        hull_error e = {0};
        int r = api == MODEL_API_OPENAI ? model_openai_decode(body, strlen(body), &a, &err, &e)
                                        : model_anthropic_decode(body, strlen(body), &a, &err, &e);
        free(body);
        return r == 0 ? a.message : NULL;
}

static json_t *request_body(server *s, unsigned i) {
        return i < atomic_load(&s->n_requests) ? json_loads(s->requests[i].body, 0, NULL) : NULL;
}

static bool has_header(server *s, unsigned i, const char *line) {
        return i < atomic_load(&s->n_requests) && strcasestr(s->requests[i].head, line) != NULL;
}

/* What a call gave, for a report: "what: r ... kind ...". */
#define REPORT_FMT "r %d kind %s attempts %u status %ld %" PRIu64 " ms: %s"
#define REPORT_ARGS(o) (o).r, model_fail_to_string((o).f.kind), (o).f.attempts, (o).f.status, (o).ms, (o).e.msg
#define REPORT(o) REPORT_FMT, REPORT_ARGS(o)

/* ---- the exchanges ---- */

static void test_openai(bool stream) {
        server s = {0};
        outcome o = {0};
        char *body = slurp(stream ? "openai-stream-1.sse" : "openai-response-1.json");
        json_t *want = decoded(MODEL_API_OPENAI, "openai-response-1.json");
        if (stream)
                add_stream(&s, "x-request-id: req_oa1\r\n", body);
        else
                add_json(&s, "200 OK", "x-request-id: req_oa1\r\n", body);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .api_key = "sk-test", .stream = stream, .compat = -1},
             (model_call_opts){0}, &o);
        _cleanup_free_ char *got = o.a.message ? json_dumps(o.a.message, JSON_COMPACT) : NULL;
        TEST_RESULT(o.r == 0 && json_equal(o.a.message, want), "openai %s: %s (%s)", stream ? "streamed" : "whole",
                    o.e.msg, got ? got : "");
        CHECK(o.a.stop == MODEL_STOP_TOOL_USE && o.a.usage.input_tokens == 61 && o.a.usage.output_tokens == 18);
        CHECK_EQ_STR(o.a.request_id, "req_oa1");
        CHECK_EQ_STR(o.a.model, "gpt-5.4");
        CHECK_EQ_INT(o.a.attempts, 1);
        CHECK_EQ_STR(o.s.tools, stream ? "call_Xk12=read_file" : "");
        /* what was sent: a compatible server (not api.openai.com): system and max_tokens */
        json_t *sent = request_body(&s, 0);
        CHECK(strncmp(s.requests[0].head, "POST /v1/chat/completions HTTP/1.1\r\n", 36) == 0);
        CHECK(has_header(&s, 0, "\r\nAuthorization: Bearer sk-test\r\n") &&
              has_header(&s, 0, "\r\nContent-Type: application/json\r\n"));
        CHECK(has_header(&s, 0, "\r\nAccept: application/json\r\n"));
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(sent, "messages"), 0), "role")),
                     "system");
        CHECK_EQ_INT(json_integer_value(json_object_get(sent, "max_tokens")), 1024);
        CHECK(json_is_false(json_object_get(sent, "store")));
        CHECK(stream ? json_is_true(json_object_get(json_object_get(sent, "stream_options"), "include_usage"))
                     : !json_object_get(sent, "stream"));
        json_decref(sent);
        json_decref(want);
        free(body);
        outcome_done(&o);
        server_stop(&s);
}

static void test_anthropic(bool stream) {
        server s = {0};
        outcome o = {0};
        char *body = slurp(stream ? "anthropic-stream-1.sse" : "anthropic-response-1.json");
        json_t *want = decoded(MODEL_API_ANTHROPIC, "anthropic-response-1.json");
        if (stream)
                add_stream(&s, "request-id: req_011AbC\r\n", body);
        else
                add_json(&s, "200 OK", "request-id: req_011AbC\r\n", body);
        server_start(&s);
        /* the whole answer's request carries the model object's effort and speed */
        call(&s,
             (model_config){.api = MODEL_API_ANTHROPIC,
                            .api_key = "sk-ant",
                            .stream = stream,
                            .effort = stream ? NULL : "high",
                            .fast = !stream},
             (model_call_opts){0}, &o);
        TEST_RESULT(o.r == 0 && json_equal(o.a.message, want), "anthropic %s: %s", stream ? "streamed" : "whole",
                    o.e.msg);
        CHECK(o.a.stop == MODEL_STOP_TOOL_USE && o.a.usage.input_tokens == 412 && o.a.usage.output_tokens == 55);
        CHECK_EQ_STR(o.a.request_id, "req_011AbC");
        CHECK_EQ_STR(o.s.text.buf ? o.s.text.buf : "", stream ? "I'll read it." : "");
        CHECK_EQ_STR(o.s.tools, stream ? "toolu_01Xy=read_file" : "");
        json_t *sent = request_body(&s, 0);
        CHECK(strncmp(s.requests[0].head, "POST /v1/messages HTTP/1.1\r\n", 28) == 0);
        CHECK(has_header(&s, 0, "\r\nx-api-key: sk-ant\r\n") &&
              has_header(&s, 0, "\r\nanthropic-version: 2023-06-01\r\n"));
        CHECK(!has_header(&s, 0, "\r\nAuthorization:"));
        CHECK(has_header(&s, 0, "\r\nanthropic-beta: fast-mode-2026-02-01\r\n") == !stream);
        /* prompt caching: the system prompt a text block with a breakpoint, one after the last tool */
        const json_t *sys = json_object_get(sent, "system"), *tools = json_object_get(sent, "tools");
        CHECK(json_array_size(sys) == 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(sys, 0), "text")), "You are a file assistant.");
        CHECK_EQ_STR(
                json_string_value(json_object_get(json_object_get(json_array_get(sys, 0), "cache_control"), "type")),
                "ephemeral");
        CHECK(json_array_size(tools) >= 1);
        for (size_t i = 0; i < json_array_size(tools); i++)
                CHECK((json_object_get(json_array_get(tools, i), "cache_control") != NULL) ==
                      (i + 1 == json_array_size(tools)));
        if (stream)
                CHECK(!json_object_get(sent, "output_config") && !json_object_get(sent, "speed"));
        else {
                CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(sent, "output_config"), "effort")),
                             "high");
                CHECK_EQ_STR(json_string_value(json_object_get(sent, "speed")), "fast");
        }
        CHECK_EQ_INT(json_integer_value(json_object_get(sent, "max_tokens")), 1024);
        CHECK(stream == json_is_true(json_object_get(sent, "stream")));
        json_decref(sent);
        json_decref(want);
        free(body);
        outcome_done(&o);
        server_stop(&s);
}

/* The transcripts a byte at a time; and a stream with "\r\n" line ends whose writes split a
 * "\r\n", a multi-byte character and a JSON escape. */
static void test_fragments(void) {
        for (model_api api = 0; api < _MODEL_API_MAX; api++) {
                server s = {0};
                outcome o = {0};
                char *body = slurp(api == MODEL_API_OPENAI ? "openai-stream-1.sse" : "anthropic-stream-1.sse");
                json_t *want =
                        decoded(api, api == MODEL_API_OPENAI ? "openai-response-1.json" : "anthropic-response-1.json");
                reply *r = add_stream(&s, "", body);
                r->piece = 1;
                r->gap_ms = 1;
                server_start(&s);
                call(&s, (model_config){.api = api, .stream = true}, (model_call_opts){0}, &o);
                TEST_RESULT(o.r == 0 && json_equal(o.a.message, want), "%s a byte at a time: %s",
                            model_api_to_string(api), o.e.msg);
                json_decref(want);
                free(body);
                outcome_done(&o);
                server_stop(&s);
        }
        server s = {0};
        outcome o = {0};
        const char *body =
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"caf\xc3\xa9 "
                "\"}}]}\r\n\r\n"
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":"
                "\"function\",\"function\":{\"name\":\"w\",\"arguments\":\"{\\\"s\\\":\\\"\\\\u20ac\\\"}\"}}]}}]}"
                "\r\n\r\n"
                "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\r\n\r\n"
                "data: [DONE]\r\n\r\n";
        reply *r = add_stream(&s, "", body);
        size_t head = r->len - strlen(body);
        const char *b = r->bytes + head;
        static size_t cuts[8];
        cuts[0] = head + (size_t) (strstr(b, "\xc3\xa9") - b) + 1;  /* inside é */
        cuts[1] = head + (size_t) (strstr(b, "\r\n\r\n") - b) + 1;  /* inside "\r\n" */
        cuts[2] = head + (size_t) (strstr(b, "\\\\u20ac") - b) + 3; /* inside the escape */
        cuts[3] = 0;
        r->cuts = cuts;
        r->gap_ms = 50;
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true}, (model_call_opts){0}, &o);
        json_t *want = json_loads(
                "[{\"type\":\"text\",\"text\":\"caf\\u00e9 \"},{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":"
                "\"w\",\"input\":{\"s\":\"\\u20ac\"},\"arguments\":\"{\\\"s\\\":\\\"\\\\u20ac\\\"}\"}]",
                0, NULL);
        TEST_RESULT(o.r == 0 && json_equal(json_object_get(o.a.message, "content"), want),
                    "splits inside UTF-8, \\r\\n and an escape: %s", o.e.msg);
        CHECK_EQ_STR(o.s.text.buf, "caf\xc3\xa9 ");
        json_decref(want);
        outcome_done(&o);
        server_stop(&s);
}

/* ---- faults ---- */

static const char *const rate_limited =
        "{\"error\":{\"message\":\"Rate limit reached for requests\",\"type\":\"requests\",\"param\":null,\"code\":"
        "\"rate_limit_exceeded\"}}";

static void test_retries(void) {
        server s = {0};
        outcome o = {0};
        char *ok = slurp("openai-response-2.json");

        /* 429 with retry-after-ms, then success */
        add_json(&s, "429 Too Many Requests", "retry-after-ms: 1\r\nx-request-id: req_r1\r\n", rate_limited);
        add_json(&s, "200 OK", "", ok);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == 0 && o.a.attempts == 2 && o.s.retries == 1, "429 then success: " REPORT(o));
        CHECK(o.s.delays[0] == 1 && o.s.retry_kinds[0] == MODEL_FAIL_RATE_LIMITED);
        CHECK(strstr(o.s.retry_msg, "rate-limiting") && strstr(o.s.retry_msg, "[request req_r1]"));
        CHECK_EQ_INT(atomic_load(&s.n_requests), 2);
        outcome_done(&o);
        server_stop(&s);

        /* x-should-retry: false on a 529: one request */
        add_json(&s, "529 Overloaded", "x-should-retry: false\r\nretry-after-ms: 1\r\n",
                 "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_ANTHROPIC, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EAGAIN && o.f.kind == MODEL_FAIL_OVERLOADED && o.f.attempts == 1 && o.s.retries == 0,
                    "x-should-retry false: " REPORT(o));
        CHECK_EQ_INT(atomic_load(&s.n_requests), 1);
        CHECK_EQ_STR(o.f.api_type, "overloaded_error");
        outcome_done(&o);
        server_stop(&s);

        /* x-should-retry: true on a 400: retried */
        add_json(&s, "400 Bad Request", "x-should-retry: true\r\nretry-after-ms: 1\r\n", "{\"error\":\"try again\"}");
        add_json(&s, "200 OK", "", ok);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == 0 && o.a.attempts == 2, "x-should-retry true: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);

        /* a 5xx storm: three 500s, retries exhausted */
        add_json(&s, "500 Internal Server Error", "retry-after-ms: 1\r\n",
                 "{\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":"
                 "\"server_error\",\"param\":null,\"code\":null}}");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EIO && o.f.kind == MODEL_FAIL_SERVER && o.f.attempts == 3 && o.s.retries == 2,
                    "a 5xx storm: " REPORT(o));
        CHECK(strstr(o.e.msg, "after 3 attempts") && strstr(o.e.msg, "500 server_error: The server had an error"));
        CHECK_EQ_INT(atomic_load(&s.n_requests), 3);
        outcome_done(&o);
        server_stop(&s);

        /* 503 without retry-after: the backoff (0.5 s less jitter) */
        add_json(&s, "503 Service Unavailable", "", "{\"error\":{\"message\":\"busy\",\"type\":\"server_error\"}}");
        add_json(&s, "200 OK", "", ok);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .max_retries = 1}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == 0 && o.s.retries == 1 && o.s.delays[0] >= 375 && o.s.delays[0] <= 500,
                    "the backoff without retry-after: %" PRIu64 " ms: " REPORT_FMT, o.s.delays[0], REPORT_ARGS(o));
        outcome_done(&o);
        server_stop(&s);

        /* billing is never retried */
        add_json(&s, "429 Too Many Requests", "retry-after-ms: 1\r\n",
                 "{\"error\":{\"message\":\"You exceeded your current quota, please check your plan and billing "
                 "details.\",\"type\":\"insufficient_quota\",\"param\":null,\"code\":\"insufficient_quota\"}}");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EDQUOT && o.f.kind == MODEL_FAIL_BILLING && o.f.attempts == 1,
                    "insufficient_quota: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        add_json(
                &s, "429 Too Many Requests", "",
                "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"spend limit\",\"details\":{"
                "\"error_code\":\"enforced_spend_limit_reached\"}}}");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_ANTHROPIC, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EDQUOT && o.f.kind == MODEL_FAIL_BILLING && o.f.attempts == 1,
                    "enforced_spend_limit_reached: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        free(ok);
}

static void check_fail(model_api api, const char *status, const char *headers, const char *body, bool stream,
                       int want_r, model_fail kind, const char *want_text) {
        server s = {0};
        outcome o = {0};
        add_json(&s, status, headers, body);
        server_start(&s);
        call(&s, (model_config){.api = api, .stream = stream, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == want_r && o.f.kind == kind && o.e.err == want_r && strstr(o.e.msg, want_text) &&
                            o.f.attempts == 1 && !o.a.message,
                    "%s %s: " REPORT_FMT, model_api_to_string(api), status, REPORT_ARGS(o));
        outcome_done(&o);
        server_stop(&s);
}

static void test_failures(void) {
        check_fail(
                MODEL_API_OPENAI, "401 Unauthorized", "x-request-id: req_401\r\n",
                "{\"error\":{\"message\":\"Incorrect API key provided: sk-bad.\",\"type\":\"invalid_request_error\","
                "\"param\":null,\"code\":\"invalid_api_key\"}}",
                false, -EACCES, MODEL_FAIL_AUTH,
                "refused the API key: 401 invalid_api_key: Incorrect API key provided: sk-bad. (set OPENAI_API_KEY or "
                "--api-key) [request req_401]");
        check_fail(
                MODEL_API_ANTHROPIC, "401 Unauthorized", "",
                "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
                true, -EACCES, MODEL_FAIL_AUTH, "ANTHROPIC_API_KEY");
        check_fail(MODEL_API_OPENAI, "404 Not Found", "",
                   "{\"error\":{\"message\":\"The model `gpt-5.4` does not exist or you do not have access to it.\","
                   "\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}",
                   true, -ENOENT, MODEL_FAIL_NOT_FOUND, "does not know the model \"gpt-5.4\"");
        check_fail(MODEL_API_ANTHROPIC, "404 Not Found", "",
                   "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: claude-nope\"}}",
                   false, -ENOENT, MODEL_FAIL_NOT_FOUND, "404 not_found_error: model: claude-nope");
        /* context overflow: OpenAI, Anthropic, llama.cpp (400 and its 500), and in a 200 to a stream */
        check_fail(MODEL_API_OPENAI, "400 Bad Request", "",
                   "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens. However, your "
                   "messages resulted in 130000 tokens.\",\"type\":\"invalid_request_error\",\"param\":\"messages\","
                   "\"code\":\"context_length_exceeded\"}}",
                   true, -E2BIG, MODEL_FAIL_CONTEXT, "the prompt is over gpt-5.4's context window");
        check_fail(
                MODEL_API_ANTHROPIC, "400 Bad Request", "",
                "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: "
                "210000 tokens > 200000 maximum\"}}",
                true, -E2BIG, MODEL_FAIL_CONTEXT, "prompt is too long: 210000 tokens > 200000 maximum");
        check_fail(MODEL_API_OPENAI, "400 Bad Request", "",
                   "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size, try "
                   "increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":1407,\"n_ctx\":256}}",
                   true, -E2BIG, MODEL_FAIL_CONTEXT, "exceeds the available context size");
        check_fail(
                MODEL_API_OPENAI, "500 Internal Server Error", "",
                "{\"error\":{\"code\":500,\"message\":\"Context size has been exceeded.\",\"type\":\"server_error\"}}",
                false, -E2BIG, MODEL_FAIL_CONTEXT, "Context size has been exceeded.");
        check_fail(MODEL_API_OPENAI, "200 OK", "",
                   "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size\",\"type\":"
                   "\"exceed_context_size_error\"}}",
                   true, -E2BIG, MODEL_FAIL_CONTEXT, "context window");
        /* vLLM's flat error; a gateway's string error; FastAPI's detail */
        check_fail(MODEL_API_OPENAI, "400 Bad Request", "",
                   "{\"object\":\"error\",\"message\":\"Unexpected message role.\",\"type\":\"BadRequestError\","
                   "\"param\":null,\"code\":400}",
                   false, -EINVAL, MODEL_FAIL_BAD_REQUEST,
                   "refused the request: 400 BadRequestError: Unexpected message role.");
        check_fail(MODEL_API_OPENAI, "403 Forbidden", "", "{\"error\":\"key not allowed\"}", false, -EACCES,
                   MODEL_FAIL_AUTH, "key not allowed");
        check_fail(MODEL_API_OPENAI, "422 Unprocessable Entity", "", "{\"detail\":\"extra_forbidden\"}", false, -EINVAL,
                   MODEL_FAIL_BAD_REQUEST, "422: extra_forbidden");
        /* a 200 that is not a model answer */
        check_fail(MODEL_API_OPENAI, "200 OK", "", "{\"hello\":\"world\"}", false, -EPROTO, MODEL_FAIL_MALFORMED,
                   "no choices[0].message");
}

static void test_not_json(void) {
        server s = {0};
        outcome o = {0};
        /* a proxy's HTML page on a 502: retried, then reported with its first bytes */
        add_typed(&s, "502 Bad Gateway", "text/html", "retry-after-ms: 1\r\n", "<html><h1>502 Bad Gateway</h1></html>");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .max_retries = 1}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EIO && o.f.kind == MODEL_FAIL_SERVER && o.f.attempts == 2 &&
                            strstr(o.e.msg, "502: <html><h1>502 Bad Gateway"),
                    "HTML on a 502: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        /* HTML on a 200 to a streaming request: never fed to the SSE decoder */
        add_typed(&s, "200 OK", "text/html", "", "<html>login page</html>");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true, .max_retries = 1}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EPROTO && o.f.kind == MODEL_FAIL_MALFORMED && o.f.attempts == 1 &&
                            strstr(o.e.msg, "200 text/html") && strstr(o.e.msg, "<html>login page"),
                    "HTML on a 200: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        /* an empty 200 to a streaming request (LM Studio): a stream without its end */
        add(&s, strdup("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 0\r\nConnection: "
                       "close\r\n\r\n"));
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EPROTO && o.f.kind == MODEL_FAIL_TRUNCATED, "an empty stream: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        /* a 200 with a whole answer to a streaming request: read as JSON, its text handed on */
        char *ok = slurp("anthropic-response-1.json");
        add_json(&s, "200 OK", "", ok);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_ANTHROPIC, .stream = true}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == 0 && o.a.stop == MODEL_STOP_TOOL_USE, "JSON to a streaming request: " REPORT(o));
        CHECK_EQ_STR(o.s.text.buf, "I'll read it.");
        CHECK_EQ_STR(o.s.tools, "toolu_01Xy=read_file");
        free(ok);
        outcome_done(&o);
        server_stop(&s);
}

static void test_stream_faults(void) {
        server s = {0};
        outcome o = {0};
        char *ok = slurp("openai-stream-1.sse");

        /* an error mid-stream after text went to the caller: no retry */
        add_stream(&s, "x-request-id: req_mid\r\n",
                   "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n"
                   "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"param\":null,"
                   "\"code\":null}}\n\n");
        add_stream(&s, "", ok);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EIO && o.f.kind == MODEL_FAIL_SERVER && o.f.attempts == 1 &&
                            strstr(o.e.msg, "server_error: The server had an error") && strstr(o.e.msg, "req_mid"),
                    "an error mid-stream: " REPORT(o));
        CHECK_EQ_STR(o.s.text.buf, "Hel");
        outcome_done(&o);
        server_stop(&s);

        /* Anthropic's error event before anything was handed on: retried */
        char *aok = slurp("anthropic-stream-1.sse");
        add_stream(&s, "",
                   "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[],\"usage\":{"
                   "\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n"
                   "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
                   "\"Overloaded\"}}\n\n");
        add_stream(&s, "", aok);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_ANTHROPIC, .stream = true, .max_retries = 2}, (model_call_opts){0},
             &o);
        TEST_RESULT(o.r == 0 && o.a.attempts == 2 && o.s.retries == 1 && o.s.retry_kinds[0] == MODEL_FAIL_OVERLOADED,
                    "an overloaded_error event before any content, then success: " REPORT(o));
        CHECK_EQ_STR(o.s.text.buf, "I'll read it.");
        outcome_done(&o);
        server_stop(&s);
        /* llama.cpp before #16486: a 200 stream whose only event is the context error */
        add_stream(&s, "",
                   "data: {\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size\","
                   "\"type\":\"exceed_context_size_error\"}}\n\n");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -E2BIG && o.f.kind == MODEL_FAIL_CONTEXT && o.f.attempts == 1,
                    "a context error inside a 200 stream: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);

        /* cut before [DONE] (the connection closes) after text: truncated, not retried */
        add_stream(&s, "",
                   "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"in");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EPROTO && o.f.kind == MODEL_FAIL_TRUNCATED && o.f.attempts == 1 &&
                            strstr(o.e.msg, "cut its answer short") && strstr(o.e.msg, "in the middle of an event"),
                    "cut in a data line: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        /* cut before message_stop, chunked, the last chunk never sent: truncated; before any
         * content: retried, and the second try succeeds */
        add_chunked_cut(&s, "event: ping\ndata: {\"type\": \"ping\"}\n\nevent: message_start\ndata: {\"ty");
        add_stream(&s, "", aok);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_ANTHROPIC, .stream = true, .max_retries = 2}, (model_call_opts){0},
             &o);
        TEST_RESULT(o.r == 0 && o.a.attempts == 2 && o.s.retry_kinds[0] == MODEL_FAIL_TRUNCATED,
                    "a chunked stream cut, retried: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        add_chunked_cut(&s,
                        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                        "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {"
                        "\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
                        "\"Hi\"}}\n\n");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_ANTHROPIC, .stream = true, .max_retries = 2}, (model_call_opts){0},
             &o);
        TEST_RESULT(o.r == -EPROTO && o.f.kind == MODEL_FAIL_TRUNCATED && o.f.attempts == 1,
                    "a chunked stream cut after text: " REPORT(o));
        CHECK_EQ_STR(o.s.text.buf, "Hi");
        outcome_done(&o);
        server_stop(&s);

        /* compatible servers' quirks over the wire: no index, a whole call in one piece, the
         * usage on the finish chunk, finish_reason stop with calls, no [DONE] */
        add_stream(
                &s, "",
                "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
                "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"x1\",\"function\":{\"name\":\"read_file\","
                "\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]}}]}\n\n"
                "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"x2\",\"function\":{\"name\":\"read_file\","
                "\"arguments\":{\"path\":\"b\"}}}]}}]}\n\n"
                "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,"
                "\"completion_tokens\":3}}\n\n");
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == 0 && o.a.stop == MODEL_STOP_TOOL_USE &&
                            json_array_size(json_object_get(o.a.message, "content")) == 2 &&
                            o.a.usage.input_tokens == 7,
                    "Ollama's stream: " REPORT(o));
        CHECK_EQ_STR(o.s.tools, "x1=read_file,x2=read_file");
        outcome_done(&o);
        server_stop(&s);
        free(ok);
        free(aok);
}

typedef struct canceler {
        atomic_bool *flag;
        unsigned after_ms;
} canceler;

static void *cancel_later(void *arg) {
        canceler *c = arg;
        sleep_ms(c->after_ms);
        atomic_store(c->flag, true);
        return NULL;
}

static void test_time(void) {
        server s = {0};
        outcome o = {0};
        reply *r;

        /* a stream gone silent past the idle timeout */
        r = add_stream(&s, "",
                       "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n");
        r->hold_ms = 15000;
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true, .idle_timeout_ms = 1000}, (model_call_opts){0},
             &o);
        TEST_RESULT(o.r == -ETIMEDOUT && o.f.kind == MODEL_FAIL_TIMEOUT && strstr(o.e.msg, "idle timeout") &&
                            o.ms < 12000,
                    "an idle stream: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        /* a slow stream that keeps sending Anthropic's pings is not idle */
        char *aok = slurp("anthropic-stream-1.sse");
        dynbuf b;
        dynbuf_init(&b, 1 << 20);
        for (int i = 0; i < 6; i++)
                dynbuf_add_str(&b, "event: ping\ndata: {\"type\": \"ping\"}\n\n");
        size_t pings = b.len;
        dynbuf_add_str(&b, aok);
        r = add_stream(&s, "", b.buf);
        static size_t ping_cuts[8];
        size_t head = r->len - b.len;
        for (int i = 0; i < 6; i++)
                ping_cuts[i] = head + (size_t) (i + 1) * (pings / 6);
        ping_cuts[6] = 0;
        r->cuts = ping_cuts;
        r->gap_ms = 400;
        dynbuf_free(&b);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_ANTHROPIC, .stream = true, .idle_timeout_ms = 1500},
             (model_call_opts){0}, &o);
        TEST_RESULT(o.r == 0 && o.a.stop == MODEL_STOP_TOOL_USE, "pings keep a slow stream alive: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        free(aok);

        /* a cancel from another thread while the stream is open */
        atomic_bool cancel = false;
        pthread_t t;
        canceler c = {.flag = &cancel, .after_ms = 300};
        r = add_stream(&s, "", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n");
        r->hold_ms = 20000;
        server_start(&s);
        pthread_create(&t, NULL, cancel_later, &c);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true}, (model_call_opts){.cancel = &cancel}, &o);
        pthread_join(t, NULL);
        TEST_RESULT(o.r == -ECANCELED && o.f.kind == MODEL_FAIL_CANCELED && o.ms < 15000,
                    "a cancel mid-stream: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        /* ... and while waiting to retry */
        atomic_store(&cancel, false);
        add_json(&s, "429 Too Many Requests", "retry-after: 30\r\n", rate_limited);
        server_start(&s);
        pthread_create(&t, NULL, cancel_later, &c);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .max_retries = 2}, (model_call_opts){.cancel = &cancel}, &o);
        pthread_join(t, NULL);
        TEST_RESULT(o.r == -ECANCELED && o.f.kind == MODEL_FAIL_CANCELED && o.s.retries == 1 &&
                            o.s.delays[0] == 30000 && o.ms < 15000,
                    "a cancel while waiting to retry: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);

        /* the caller's deadline: a server that never answers */
        r = add(&s, strdup(""));
        r->hold_ms = 20000;
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_ANTHROPIC, .max_retries = 2},
             (model_call_opts){.deadline_mono_ms = now_mono_ms() + 1500}, &o);
        TEST_RESULT(o.r == -ETIMEDOUT && o.f.kind == MODEL_FAIL_TIMEOUT && o.f.attempts == 1 &&
                            strstr(o.e.msg, "deadline") && o.ms < 15000,
                    "the deadline: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        /* ... and a retry-after that would end past it: no retry */
        add_json(&s, "429 Too Many Requests", "retry-after: 5\r\n", rate_limited);
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .max_retries = 2},
             (model_call_opts){.deadline_mono_ms = now_mono_ms() + 2000}, &o);
        TEST_RESULT(o.r == -EAGAIN && o.f.kind == MODEL_FAIL_RATE_LIMITED && o.f.attempts == 1 &&
                            strstr(o.e.msg, "deadline leaves no time"),
                    "no retry past the deadline: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        /* the request timeout */
        r = add(&s, strdup(""));
        r->hold_ms = 20000;
        server_start(&s);
        call(&s, (model_config){.api = MODEL_API_OPENAI, .request_timeout_ms = 1000}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -ETIMEDOUT && o.f.kind == MODEL_FAIL_TIMEOUT && strstr(o.e.msg, "request timeout"),
                    "the request timeout: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
}

static void test_client(void) {
        outcome o = {0};
        /* nothing listens: retried (a connection error), then one line */
        call(NULL, (model_config){.api = MODEL_API_OPENAI, .max_retries = 1}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -ECONNREFUSED && o.f.kind == MODEL_FAIL_UNREACHABLE && o.f.attempts == 2 &&
                            strstr(o.e.msg, "openai at http://127.0.0.1:1/v1 is unreachable") &&
                            strstr(o.e.msg, "is the server running"),
                    "nothing listening: " REPORT(o));
        outcome_done(&o);

        /* the configuration's checks */
        const struct {
                model_config cfg;
                const char *want;
        } bad[] = {
                {{.api = MODEL_API_OPENAI}, "no model"},
                {{.api = MODEL_API_OPENAI, .model = "m", .base_url = "ftp://x"}, "not an http"},
                {{.api = MODEL_API_OPENAI, .model = "m", .api_key = "a\nb"}, "line break"},
                {{.api = MODEL_API_OPENAI, .model = "m", .headers = (const char *const[]){"no colon", NULL}},
                 "extra header 1"},
                {{.api = MODEL_API_OPENAI, .model = "m", .headers = (const char *const[]){"A: b\r\nC: d", NULL}},
                 "extra header 1"},
                {{.api = MODEL_API_OPENAI, .model = "m", .max_retries = 99}, "at most"},
                {{.api = (model_api) 7, .model = "m"}, "unknown provider"},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                model_client *c = NULL;
                hull_error e = {0};
                int r = model_client_new(&bad[i].cfg, &c, &e);
                TEST_RESULT(r == -EINVAL && !c && strstr(e.msg, bad[i].want), "refused: %s (%d)", e.msg, r);
        }

        /* api.openai.com's way (compat 0): developer, max_completion_tokens; extra headers sent;
         * a callback's own error ends the call with it */
        server s = {0};
        char *ok = slurp("openai-stream-1.sse");
        add_stream(&s, "", ok);
        server_start(&s);
        o.s.text_error = 0;
        call(&s,
             (model_config){.api = MODEL_API_OPENAI,
                            .compat = 0,
                            .stream = true,
                            .headers = (const char *const[]){"X-Gateway: yes", "api-key: azure", NULL}},
             (model_call_opts){0}, &o);
        json_t *sent = request_body(&s, 0);
        CHECK(o.r == 0);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(sent, "messages"), 0), "role")),
                     "developer");
        CHECK_EQ_INT(json_integer_value(json_object_get(sent, "max_completion_tokens")), 1024);
        CHECK(has_header(&s, 0, "\r\nX-Gateway: yes\r\n") && has_header(&s, 0, "\r\napi-key: azure\r\n"));
        CHECK(!has_header(&s, 0, "\r\nAuthorization:")); /* no key: no credential header */
        json_decref(sent);
        outcome_done(&o);
        server_stop(&s);
        add_stream(&s, "", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n");
        server_start(&s);
        o = (outcome){.s = {.text_error = -EINTR}};
        call(&s, (model_config){.api = MODEL_API_OPENAI, .stream = true, .max_retries = 2}, (model_call_opts){0}, &o);
        TEST_RESULT(o.r == -EINTR && o.f.attempts == 1 && strstr(o.e.msg, "stopped by its caller"),
                    "a callback's error: " REPORT(o));
        outcome_done(&o);
        server_stop(&s);
        free(ok);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        model_client *c = NULL;
        hull_error e = {0};
        if (model_client_new(&(model_config){.api = MODEL_API_OPENAI, .model = "m"}, &c, &e) < 0) {
                printf("skip - no libcurl: %s\n", e.msg);
                return 77;
        }
        model_client_free(c);
        test_openai(false);
        test_openai(true);
        test_anthropic(false);
        test_anthropic(true);
        test_fragments();
        test_retries();
        test_failures();
        test_not_json();
        test_stream_faults();
        test_time();
        test_client();
        return test_done();
}
