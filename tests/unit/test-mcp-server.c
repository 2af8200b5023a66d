/* test-mcp-server.c: the MCP server over a pair of pipes, with tools of the test's own (no
 * sandbox): initialize's version negotiation, tools/list, calls and their errors (unknown tool,
 * no name, arguments that are not an object or not what the schema says), malformed lines
 * answered without an id, ping while a call runs, progress, cancellation (the call stopped and
 * never answered), a tool's deadline, a result too big to show, the end of the input, a stop,
 * and a line over MCP_MESSAGE_MAX; then a connection without a transport (mcp_conn: a ping
 * answered while a call runs on another thread, the call cancelled and not answered, a result its
 * transport cannot carry turned into an error). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynbuf.h"
#include "fs-util.h"
#include "limits.h"
#include "mcp-jsonrpc.h"
#include "mcp-server.h"
#include "test.h"
#include "time-util.h"

/* ---- the test's tools ---- */

static int echo_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        ret->text = strdup(json_string_value(json_object_get(input, "text")));
        return ret->text ? 0 : -ENOMEM;
}

/* Waits "ms" milliseconds, or until its cancel fd is readable (-ECANCELED). */
static int wait_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        uint64_t end = now_mono_ms() + (uint64_t) json_integer_value(json_object_get(input, "ms"));
        bool noted = false;
        for (;;) {
                uint64_t now = now_mono_ms();
                if (now >= end)
                        break;
                if (!noted && c->progress) {
                        c->progress(c->progress_ud, "waiting");
                        noted = true;
                }
                struct pollfd p = {.fd = c->cancel_fd, .events = POLLIN};
                int k = poll(&p, 1, (int) MIN(end - now, 100));
                if (k > 0)
                        return hull_fail(e, -ECANCELED, "wait: cancelled");
        }
        ret->text = strdup("waited");
        return ret->text ? 0 : -ENOMEM;
}

static int big_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        size_t n = AGENT_TOOL_TEXT_MAX * 2;
        ret->text = malloc(n + 1);
        if (!ret->text)
                return -ENOMEM;
        memset(ret->text, 'x', n);
        ret->text[n] = '\0';
        return 0;
}

static const tool_def echo_tool = {
        .name = "echo",
        .description = "Echo text",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
                        "\"required\":[\"text\"],\"additionalProperties\":false}",
        .run = echo_run,
};
static const tool_def wait_tool = {
        .name = "wait",
        .description = "Wait",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\",\"minimum\":0}},"
                        "\"required\":[\"ms\"]}",
        .run = wait_run,
};
static const tool_def short_tool = {
        /* a deadline of 200 ms: cancelled AGENT_TOOL_GRACE_MS later */
        .name = "short",
        .description = "Wait with a short deadline",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}},\"required\":[\"ms\"]}",
        .timeout_ms = 200,
        .run = wait_run,
};
static const tool_def big_tool = {
        .name = "big",
        .description = "A big text",
        .input_schema = "{\"type\":\"object\"}",
        .run = big_run,
};
static const tool_def *const tools[] = {&echo_tool, &wait_tool, &short_tool, &big_tool};

/* ---- the server in a thread, the client here ---- */

typedef struct conn {
        int to_server, from_server; /* the client's ends */
        int srv_in, srv_out;        /* the server's */
        pthread_t thread;
        atomic_bool stop;
        atomic_bool done; /* the server returned */
        int result;
        hull_error e;
        dynbuf buf; /* bytes read, not yet a line */
} conn;

static void *server_main(void *ud) {
        conn *c = ud;
        mcp_server_config cfg = {
                .tools = tools,
                .n_tools = ELEMENTSOF(tools),
                .name = "hull",
                .version = "test",
                .instructions = "test instructions",
                .stop = &c->stop,
        };
        c->result = mcp_server_run(&cfg, c->srv_in, c->srv_out, &c->e);
        close(c->srv_out); /* the client sees the end */
        atomic_store(&c->done, true);
        return NULL;
}

static void conn_start(conn *c) {
        int a[2], b[2];
        *c = (conn){0};
        if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0)
                abort();
        c->srv_in = a[0];
        c->to_server = a[1];
        c->from_server = b[0];
        c->srv_out = b[1];
        dynbuf_init(&c->buf, MCP_MESSAGE_MAX + 2);
        pthread_create(&c->thread, NULL, server_main, c);
}

/* Wait for the server's end; returns its result. */
static int conn_end(conn *c) {
        if (c->to_server >= 0)
                close(c->to_server);
        c->to_server = -1;
        pthread_join(c->thread, NULL);
        close(c->srv_in);
        close(c->from_server);
        dynbuf_free(&c->buf);
        return c->result;
}

static void send_line(conn *c, const char *line) {
        (void) loop_write(c->to_server, line, strlen(line));
        (void) loop_write(c->to_server, "\n", 1);
}

/* The next message from the server, or NULL after timeout_ms or at its end. */
static json_t *next(conn *c, int timeout_ms) {
        uint64_t end = now_mono_ms() + (uint64_t) timeout_ms;
        for (;;) {
                char *nl = c->buf.buf ? memchr(c->buf.buf, '\n', c->buf.len) : NULL;
                if (nl) {
                        size_t n = (size_t) (nl - c->buf.buf);
                        json_t *m = json_loadb(c->buf.buf, n, 0, NULL);
                        dynbuf_consume(&c->buf, n + 1);
                        return m;
                }
                uint64_t now = now_mono_ms();
                if (now >= end)
                        return NULL;
                struct pollfd p = {.fd = c->from_server, .events = POLLIN};
                if (poll(&p, 1, (int) (end - now)) <= 0)
                        return NULL;
                char tmp[65536];
                ssize_t k = read(c->from_server, tmp, sizeof(tmp));
                if (k <= 0)
                        return NULL;
                dynbuf_add(&c->buf, tmp, (size_t) k);
        }
}

/* The response to request id (messages before it are counted by method in *progress). */
static json_t *answer(conn *c, json_int_t id, unsigned *progress) {
        for (;;) {
                json_t *m = next(c, 30000);
                if (!m)
                        return NULL;
                const char *method = json_string_value(json_object_get(m, "method"));
                if (progress && method && strcmp(method, "notifications/progress") == 0)
                        (*progress)++;
                if (json_integer_value(json_object_get(m, "id")) == id && json_object_get(m, "id"))
                        return m;
                json_decref(m);
        }
}

static const char *result_text(const json_t *m) {
        return json_string_value(
                json_object_get(json_array_get(json_object_get(json_object_get(m, "result"), "content"), 0), "text"));
}

static int64_t error_code(const json_t *m) {
        return json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}

static bool is_error(const json_t *m) {
        return json_is_true(json_object_get(json_object_get(m, "result"), "isError"));
}

/* ---- the tests ---- */

static void test_initialize(void) {
        conn c;
        conn_start(&c);
        static const struct {
                const char *asked, *want;
        } cases[] = {
                {"\"2025-11-25\"", "2025-11-25"},
                {"\"2025-06-18\"", "2025-06-18"},
                {"\"2025-03-26\"", "2025-03-26"},
                {"\"1999-01-01\"", "2025-11-25"},
                {"42", "2025-11-25"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char line[512];
                snprintf(line, sizeof(line),
                         "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"initialize\",\"params\":{\"protocolVersion\":%s,"
                         "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"0\"}}}",
                         i + 1, cases[i].asked);
                send_line(&c, line);
                json_t *m = answer(&c, (json_int_t) (i + 1), NULL);
                const json_t *r = json_object_get(m, "result");
                CHECK_EQ_STR(json_string_value(json_object_get(r, "protocolVersion")), cases[i].want);
                if (i == 0) {
                        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(r, "serverInfo"), "name")),
                                     "hull");
                        CHECK_EQ_STR(json_string_value(json_object_get(r, "instructions")), "test instructions");
                        CHECK(json_is_object(json_object_get(json_object_get(r, "capabilities"), "tools")));
                        /* exactly the members a strict peer accepts */
                        CHECK_EQ_INT(json_object_size(m), 3);
                }
                json_decref(m);
        }
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":\"list\",\"method\":\"tools/list\"}");
        json_t *m = next(&c, 30000); /* the notification was not answered: this is the list */
        CHECK_EQ_STR(json_string_value(json_object_get(m, "id")), "list");
        const json_t *list = json_object_get(json_object_get(m, "result"), "tools");
        CHECK_EQ_INT(json_array_size(list), ELEMENTSOF(tools));
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(list, 0), "name")), "echo");
        CHECK_EQ_STR(
                json_string_value(json_object_get(json_object_get(json_array_get(list, 0), "inputSchema"), "type")),
                "object");
        json_decref(m);
        CHECK_EQ_INT(conn_end(&c), 0);
}

static void test_calls_and_errors(void) {
        conn c;
        conn_start(&c);
        json_t *m;

        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
                      "\"arguments\":{\"text\":\"hello\"}}}");
        m = answer(&c, 1, NULL);
        CHECK_EQ_STR(result_text(m), "hello");
        CHECK(json_is_false(json_object_get(json_object_get(m, "result"), "isError")));
        json_decref(m);

        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
                      "\"arguments\":{\"txt\":1}}}");
        m = answer(&c, 2, NULL);
        CHECK(is_error(m));
        CHECK(result_text(m) && strstr(result_text(m), "missing required field \"text\""));
        CHECK(result_text(m) && strstr(result_text(m), "unknown field \"txt\""));
        json_decref(m);

        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}");
        m = answer(&c, 3, NULL);
        CHECK_EQ_INT(error_code(m), MCP_ERR_INVALID_PARAMS);
        CHECK(strstr(json_string_value(json_object_get(json_object_get(m, "error"), "message")), "echo, wait"));
        json_decref(m);

        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{}}");
        m = answer(&c, 4, NULL);
        CHECK_EQ_INT(error_code(m), MCP_ERR_INVALID_PARAMS);
        json_decref(m);

        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
                      "\"arguments\":[1]}}");
        m = answer(&c, 5, NULL);
        CHECK_EQ_INT(error_code(m), MCP_ERR_INVALID_PARAMS);
        json_decref(m);

        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"resources/list\"}");
        m = answer(&c, 6, NULL);
        CHECK_EQ_INT(error_code(m), MCP_ERR_METHOD_NOT_FOUND);
        json_decref(m);

        /* malformed lines: answered without an id */
        send_line(&c, "not json");
        m = next(&c, 30000);
        CHECK_EQ_INT(error_code(m), MCP_ERR_PARSE);
        CHECK(!json_object_get(m, "id"));
        json_decref(m);
        send_line(&c, "[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}]");
        m = next(&c, 30000);
        CHECK_EQ_INT(error_code(m), MCP_ERR_INVALID_REQUEST);
        CHECK(!json_object_get(m, "id"));
        json_decref(m);

        /* a request with a valid id but params that are not an object: -32600 with its id */
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"tools/call\",\"params\":[1]}");
        m = next(&c, 30000);
        CHECK_EQ_INT(error_code(m), MCP_ERR_INVALID_REQUEST);
        CHECK_EQ_INT(json_integer_value(json_object_get(m, "id")), 77);
        json_decref(m);
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}");
        m = next(&c, 30000);
        CHECK_EQ_INT(error_code(m), MCP_ERR_INVALID_REQUEST);
        CHECK(!json_object_get(m, "id"));
        json_decref(m);

        /* a result too big to show, and no store to keep it in: its start and why */
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"big\"}}");
        m = answer(&c, 8, NULL);
        CHECK(result_text(m) && strlen(result_text(m)) < AGENT_TOOL_TEXT_MAX + 1024);
        CHECK(result_text(m) && strstr(result_text(m), "only the first"));
        json_decref(m);

        /* still serving */
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}");
        m = answer(&c, 9, NULL);
        CHECK(json_is_object(json_object_get(m, "result")) && json_object_size(json_object_get(m, "result")) == 0);
        json_decref(m);
        CHECK_EQ_INT(conn_end(&c), 0);
}

static void test_progress_ping_cancel(void) {
        conn c;
        conn_start(&c);
        json_t *m;
        unsigned progress = 0;

        /* progress while a call with a token runs; a ping answered before the call ends */
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"wait\","
                      "\"arguments\":{\"ms\":2600},\"_meta\":{\"progressToken\":\"tok\"}}}");
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
        m = answer(&c, 2, NULL);
        CHECK(m != NULL);
        json_decref(m);
        json_t *first = NULL;
        double last = 0;
        bool increasing = true;
        for (;;) {
                m = next(&c, 30000);
                if (!m || json_object_get(m, "id"))
                        break;
                const json_t *p = json_object_get(m, "params");
                CHECK_EQ_STR(json_string_value(json_object_get(p, "progressToken")), "tok");
                double v = json_number_value(json_object_get(p, "progress"));
                increasing = increasing && v > last;
                last = v;
                progress++;
                if (!first)
                        first = json_incref(m);
                json_decref(m);
        }
        CHECK_EQ_INT(json_integer_value(json_object_get(m, "id")), 1);
        CHECK_EQ_STR(result_text(m), "waited");
        CHECK(progress >= 1);
        CHECK(increasing);
        const char *msg = json_string_value(json_object_get(json_object_get(first, "params"), "message"));
        CHECK(msg && strstr(msg, "running for") && strstr(msg, "waiting"));
        json_decref(first);
        json_decref(m);

        /* a cancelled call is stopped and never answered; the next one is */
        uint64_t t0 = now_mono_ms();
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"wait\","
                      "\"arguments\":{\"ms\":600000}}}");
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"wait\","
                      "\"arguments\":{\"ms\":600000}}}");
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
                      "\"arguments\":{\"text\":\"after\"}}}");
        usleep(300 * 1000);
        /* 4 is queued behind 3: dropped; 3 runs: stopped */
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":4}}");
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}");
        m = next(&c, 60000);
        CHECK_EQ_INT(json_integer_value(json_object_get(m, "id")), 5);
        CHECK_EQ_STR(result_text(m), "after");
        CHECK(now_mono_ms() - t0 < 300000); /* not the 600 s the calls asked for */
        json_decref(m);

        /* a tool past its deadline is cancelled (AGENT_TOOL_GRACE_MS later) and says it timed out */
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"short\","
                      "\"arguments\":{\"ms\":600000}}}");
        m = answer(&c, 6, NULL);
        CHECK(is_error(m));
        CHECK(result_text(m) && strstr(result_text(m), "short timed out after"));
        json_decref(m);
        CHECK_EQ_INT(conn_end(&c), 0);
}

static void test_end_and_stop(void) {
        conn c;
        json_t *m;

        /* the end of the input: what was read is answered first */
        conn_start(&c);
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"wait\","
                      "\"arguments\":{\"ms\":300}}}");
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
                      "\"arguments\":{\"text\":\"last\"}}}");
        close(c.to_server);
        c.to_server = -1;
        m = answer(&c, 2, NULL);
        CHECK_EQ_STR(result_text(m), "last");
        json_decref(m);
        CHECK_EQ_INT(conn_end(&c), 0);

        /* a stop: the call in flight is cancelled, the server returns */
        conn_start(&c);
        send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"wait\","
                      "\"arguments\":{\"ms\":600000}}}");
        usleep(300 * 1000);
        uint64_t t0 = now_mono_ms();
        atomic_store(&c.stop, true);
        pthread_join(c.thread, NULL);
        CHECK_EQ_INT(c.result, 0);
        CHECK(now_mono_ms() - t0 < 300000);
        close(c.to_server);
        close(c.srv_in);
        close(c.from_server);
        dynbuf_free(&c.buf);

        /* a line over MCP_MESSAGE_MAX ends the connection with -E2BIG */
        conn_start(&c);
        (void) fcntl(c.to_server, F_SETFL, O_NONBLOCK);
        char chunk[65536];
        memset(chunk, 'x', sizeof(chunk));
        size_t sent = 0;
        /* bytes without a line end until the server gives up (it stops reading then) */
        while (!atomic_load(&c.done) && sent < (size_t) MCP_MESSAGE_MAX * 2) {
                ssize_t k = write(c.to_server, chunk, sizeof(chunk));
                if (k > 0)
                        sent += (size_t) k;
                else {
                        struct pollfd p = {.fd = c.to_server, .events = POLLOUT};
                        (void) poll(&p, 1, 100);
                }
        }
        pthread_join(c.thread, NULL);
        CHECK(sent > MCP_MESSAGE_MAX);
        CHECK_EQ_INT(c.result, -E2BIG);
        CHECK(strstr(c.e.msg, "MiB"));
        close(c.to_server);
        close(c.srv_in);
        close(c.from_server);
        dynbuf_free(&c.buf);
}

/* ---- a connection without a transport (hull serve's /mcp uses it) ---- */

typedef struct sink {
        pthread_mutex_t lock;
        json_t *msgs;    /* what was sent, in order */
        bool refuse_big; /* answer -E2BIG to a result, as a transport with a bound does */
} sink;

static int sink_send(void *ud, json_t *msg) {
        sink *k = ud;
        if (k->refuse_big && json_object_get(msg, "result")) {
                json_decref(msg);
                return -E2BIG;
        }
        pthread_mutex_lock(&k->lock);
        json_array_append_new(k->msgs, msg);
        pthread_mutex_unlock(&k->lock);
        return 0;
}

static void parse(const char *line, mcp_msg *m) {
        hull_error e = {0};
        CHECK(mcp_msg_parse(line, strlen(line), m, &e) >= 0);
}

typedef struct call_arg {
        mcp_conn *mc;
        sink *k;
        mcp_msg m;
        int r;
} call_arg;

static void *call_main(void *ud) {
        call_arg *a = ud;
        a->r = mcp_conn_request(a->mc, &a->m, sink_send, a->k);
        return NULL;
}

static void test_conn(void) {
        mcp_server_config cfg = {.tools = tools, .n_tools = ELEMENTSOF(tools), .name = "hull", .version = "test"};
        mcp_conn *mc = NULL;
        hull_error e = {0};
        sink a = {.msgs = json_array()}, b = {.msgs = json_array()};
        mcp_msg m;
        pthread_mutex_init(&a.lock, NULL);
        pthread_mutex_init(&b.lock, NULL);
        CHECK_EQ_INT(mcp_conn_new(&cfg, &mc, &e), 0);

        parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &m);
        CHECK_EQ_INT(mcp_conn_request(mc, &m, sink_send, &b), 0);
        mcp_msg_done(&m);
        CHECK_EQ_INT(json_array_size(b.msgs), 1);
        CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(json_array_get(b.msgs, 0), "result"), "tools")),
                     ELEMENTSOF(tools));

        /* a call on another thread with progress; a ping answered while it runs; cancelled */
        call_arg ca = {.mc = mc, .k = &a};
        parse("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"wait\","
              "\"arguments\":{\"ms\":600000},\"_meta\":{\"progressToken\":7}}}",
              &ca.m);
        pthread_t t;
        CHECK_EQ_INT(pthread_create(&t, NULL, call_main, &ca), 0);
        uint64_t t0 = now_mono_ms();
        for (;;) { /* until the first progress: the call runs */
                pthread_mutex_lock(&a.lock);
                size_t n = json_array_size(a.msgs);
                pthread_mutex_unlock(&a.lock);
                if (n > 0 || now_mono_ms() - t0 > 60000)
                        break;
                usleep(20 * 1000);
        }
        parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", &m);
        CHECK_EQ_INT(mcp_conn_request(mc, &m, sink_send, &b), 0);
        mcp_msg_done(&m);
        CHECK_EQ_INT(json_array_size(b.msgs), 2);
        CHECK(json_is_object(json_object_get(json_array_get(b.msgs, 1), "result")));
        parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}", &m);
        mcp_conn_notify(mc, &m);
        mcp_msg_done(&m);
        pthread_join(t, NULL);
        mcp_msg_done(&ca.m);
        CHECK_EQ_INT(ca.r, 0);
        CHECK(now_mono_ms() - t0 < 300000);
        size_t i;
        json_t *v;
        bool answered = false;
        json_array_foreach(a.msgs, i, v) {
                if (json_object_get(v, "id"))
                        answered = true;
                else
                        CHECK_EQ_STR(json_string_value(json_object_get(v, "method")), "notifications/progress");
        }
        CHECK(json_array_size(a.msgs) >= 1);
        CHECK(!answered); /* a cancelled call is not answered */

        /* a transport that cannot carry the result gets an error instead */
        sink big = {.msgs = json_array(), .refuse_big = true};
        pthread_mutex_init(&big.lock, NULL);
        parse("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
              "\"arguments\":{\"text\":\"hi\"}}}",
              &m);
        CHECK_EQ_INT(mcp_conn_request(mc, &m, sink_send, &big), 0);
        mcp_msg_done(&m);
        CHECK_EQ_INT(json_array_size(big.msgs), 1);
        CHECK_EQ_INT(error_code(json_array_get(big.msgs, 0)), MCP_ERR_INTERNAL);

        mcp_conn_free(mc);
        json_decref(a.msgs);
        json_decref(b.msgs);
        json_decref(big.msgs);
        pthread_mutex_destroy(&a.lock);
        pthread_mutex_destroy(&b.lock);
        pthread_mutex_destroy(&big.lock);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        CHECK(mcp_server_version_supported("2025-11-25"));
        CHECK(!mcp_server_version_supported("2024-11-05"));
        CHECK(!mcp_server_version_supported(NULL));
        test_initialize();
        test_calls_and_errors();
        test_progress_ping_cancel();
        test_end_and_stop();
        test_conn();
        return test_done();
}
