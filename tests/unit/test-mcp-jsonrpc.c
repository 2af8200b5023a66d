/* test-mcp-jsonrpc.c: MCP's JSON-RPC framing (line ends, CRLF, empty lines, splits, the bound,
 * a cut line, a handler's error) and messages (the four kinds, what is refused and why, the
 * builders and the one-line writer). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "limits.h"
#include "mcp-jsonrpc.h"
#include "test.h"

typedef struct lines {
        dynbuf out;
        unsigned count;
        unsigned fail_at;
} lines;

static int on_line(void *ud, const char *line, size_t len) {
        lines *l = ud;
        l->count++;
        if (l->fail_at && l->count == l->fail_at)
                return -ECANCELED;
        dynbuf_add(&l->out, line, len);
        dynbuf_add(&l->out, "|", 1);
        return 0;
}

/* Frame text in pieces of at most piece bytes (0: one piece); returns the end (finish's result or
 * the feed's error); the lines, each followed by '|', in *ret (caller frees). */
static int frame(const char *text, size_t piece, size_t max, unsigned fail_at, char **ret) {
        mcp_framer f;
        lines l = {.fail_at = fail_at};
        size_t len = strlen(text);
        int r = 0;
        dynbuf_init(&l.out, 1 << 20);
        mcp_framer_init(&f, max);
        for (size_t at = 0; at < len && r == 0;) {
                size_t n = piece ? MIN(piece, len - at) : len - at;
                r = mcp_framer_feed(&f, text + at, n, on_line, &l);
                at += n;
        }
        if (r == 0)
                r = mcp_framer_finish(&f);
        mcp_framer_done(&f);
        *ret = dynbuf_take(&l.out, NULL);
        return r;
}

static void test_framing(void) {
        char *s;
        const char *text = "{\"a\":1}\n\n{\"b\":2}\r\n\r\n{\"c\":3}\n";
        for (size_t piece = 0; piece <= 4; piece++) {
                CHECK_EQ_INT(frame(text, piece, 64, 0, &s), 0);
                CHECK_EQ_STR(s, "{\"a\":1}|{\"b\":2}|{\"c\":3}|");
                free(s);
        }
        /* A line cut at the end: dropped, and said. */
        CHECK_EQ_INT(frame("{\"a\":1}\n{\"b\"", 0, 64, 0, &s), 1);
        CHECK_EQ_STR(s, "{\"a\":1}|");
        free(s);
        /* The bound: a line of max bytes passes (with or without "\r"), one more byte does not. */
        CHECK_EQ_INT(frame("12345678\n", 1, 8, 0, &s), 0);
        CHECK_EQ_STR(s, "12345678|");
        free(s);
        CHECK_EQ_INT(frame("12345678\r\n", 0, 8, 0, &s), 0);
        CHECK_EQ_STR(s, "12345678|");
        free(s);
        CHECK_EQ_INT(frame("ok\n123456789\nnever\n", 1, 8, 0, &s), -E2BIG);
        CHECK_EQ_STR(s, "ok|");
        free(s);
        CHECK_EQ_INT(frame("123456789", 0, 8, 0, &s), -E2BIG);
        free(s);
        CHECK_EQ_INT(frame("12345678\r\r\n", 0, 8, 0, &s), -E2BIG);
        free(s);
        /* A handler's error stops the framer and sticks. */
        CHECK_EQ_INT(frame("a\nb\nc\n", 0, 8, 2, &s), -ECANCELED);
        CHECK_EQ_STR(s, "a|");
        free(s);
}

static int parse(const char *text, mcp_msg *m, hull_error *e) {
        *m = (mcp_msg){0};
        return mcp_msg_parse(text, strlen(text), m, e);
}

static void test_parse_kinds(void) {
        mcp_msg m;
        hull_error e = {0};
        CHECK_EQ_INT(parse("{\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"},\"jsonrpc\":\"2."
                           "0\",\"id\":0}",
                           &m, &e),
                     0);
        CHECK_EQ_INT(m.kind, MCP_MSG_REQUEST);
        CHECK_EQ_STR(m.method, "initialize");
        CHECK(json_is_integer(m.id) && json_integer_value(m.id) == 0);
        CHECK(json_is_object(m.params));
        mcp_msg_done(&m);
        CHECK(m.root == NULL);

        CHECK_EQ_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":\"x-1\",\"method\":\"tools/list\"}", &m, &e), 0);
        CHECK_EQ_INT(m.kind, MCP_MSG_REQUEST);
        CHECK(m.params == NULL);
        CHECK_EQ_STR(json_string_value(m.id), "x-1");
        mcp_msg_done(&m);

        CHECK_EQ_INT(parse("{\"method\":\"notifications/initialized\",\"jsonrpc\":\"2.0\"}", &m, &e), 0);
        CHECK_EQ_INT(m.kind, MCP_MSG_NOTIFICATION);
        CHECK(m.id == NULL);
        mcp_msg_done(&m);

        CHECK_EQ_INT(parse("{\"result\":{\"content\":[]},\"jsonrpc\":\"2.0\",\"id\":2,\"extra\":1}", &m, &e), 0);
        CHECK_EQ_INT(m.kind, MCP_MSG_RESULT);
        CHECK(json_is_object(m.result));
        mcp_msg_done(&m);

        CHECK_EQ_INT(parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,\"message\":\"bad\",\"data\":{"
                           "\"uri\":\"u\"}}}",
                           &m, &e),
                     0);
        CHECK_EQ_INT(m.kind, MCP_MSG_ERROR);
        CHECK_EQ_INT(m.error_code, MCP_ERR_INVALID_PARAMS);
        CHECK_EQ_STR(m.error_msg, "bad");
        CHECK(json_is_object(m.error_data));
        mcp_msg_done(&m);

        /* The SDK's HTTP error bodies: "id": null means unknown. */
        CHECK_EQ_INT(parse("{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Bad Request\"},\"id\":null}",
                           &m, &e),
                     0);
        CHECK_EQ_INT(m.kind, MCP_MSG_ERROR);
        CHECK(m.id == NULL);
        mcp_msg_done(&m);
}

static void test_parse_refused(void) {
        static const struct {
                const char *text;
                int err;
                const char *says;
        } cases[] = {
                {"not json", -EBADMSG, "not valid JSON"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"} trailing", -EBADMSG, "not valid JSON"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"}", -EBADMSG, "not valid JSON"},
                {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -EINVAL, "batches"},
                {"42", -EINVAL, "not a JSON object"},
                {"{\"id\":1,\"method\":\"ping\"}", -EINVAL, "\"jsonrpc\" is not \"2.0\""},
                {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -EINVAL, "\"jsonrpc\" is not \"2.0\""},
                {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", -EINVAL, "\"id\" is not"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", -EINVAL, "\"id\" is not"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", -EINVAL, "\"method\" is empty"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", -EINVAL, "\"method\" is not a string"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":[1]}", -EINVAL,
                 "\"params\" is not an object"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"result\":{}}", -EINVAL, "a request with"},
                {"{\"jsonrpc\":\"2.0\",\"result\":{}}", -EINVAL, "a result without"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":3}", -EINVAL, "\"result\" is not an object"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}", -EINVAL,
                 "both"},
                {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}", -EINVAL,
                 "integer \"code\""},
                {"{\"jsonrpc\":\"2.0\",\"id\":1}", -EINVAL, "no \"method\""},
                {"{\"jsonrpc\":\"2.0\",\"method\":\"a\\u0000b\"}", -EBADMSG, "not valid JSON"},
                {"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}", -EBADMSG, "not valid JSON"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                mcp_msg m;
                hull_error e = {0};
                int r = parse(cases[i].text, &m, &e);
                TEST_RESULT(r == cases[i].err && strstr(e.msg, cases[i].says), "%s -> %d \"%s\" (want %d, \"%s\")",
                            cases[i].text, r, e.msg, cases[i].err, cases[i].says);
                if (r == 0)
                        mcp_msg_done(&m);
        }
        /* Over the bound before any parsing. */
        size_t big = (size_t) MCP_MESSAGE_MAX + 1;
        char *p = malloc(big);
        memset(p, ' ', big);
        mcp_msg m;
        hull_error e = {0};
        CHECK_EQ_INT(mcp_msg_parse(p, big, &m, &e), -E2BIG);
        free(p);
}

/* The line written into out, without its "\n" (checked to be there, once, at the end). */
static const char *written(dynbuf *out) {
        if (out->len == 0 || out->buf[out->len - 1] != '\n' || memchr(out->buf, '\n', out->len - 1))
                return "(not one line)";
        out->buf[--out->len] = '\0';
        return out->buf;
}

static void test_build_write(void) {
        dynbuf out;
        dynbuf_init(&out, 1 << 20);
        json_t *id = json_integer(5);
        json_t *params = json_pack("{s:s, s:{s:s}}", "name", "echo", "arguments", "message", "a\nb");
        json_t *req = mcp_request_new(id, "tools/call", params);
        CHECK(req != NULL);
        CHECK_EQ_INT(mcp_msg_write(req, &out), 0);
        CHECK_EQ_STR(written(&out), "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
                                    "\"arguments\":{\"message\":\"a\\nb\"}},\"id\":5}");
        mcp_msg m;
        CHECK_EQ_INT(mcp_msg_parse(out.buf, out.len, &m, NULL), 0);
        CHECK(m.kind == MCP_MSG_REQUEST && mcp_id_equal(m.id, id));
        mcp_msg_done(&m);
        json_decref(req);

        dynbuf_reset(&out);
        json_t *res = mcp_result_new(id, NULL);
        CHECK_EQ_INT(mcp_msg_write(res, &out), 0);
        CHECK_EQ_STR(written(&out), "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}");
        json_decref(res);

        dynbuf_reset(&out);
        json_t *err = mcp_error_new(NULL, MCP_ERR_PARSE, "Parse error", NULL);
        CHECK_EQ_INT(mcp_msg_write(err, &out), 0);
        CHECK_EQ_STR(written(&out), "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}");
        json_decref(err);

        dynbuf_reset(&out);
        json_t *note = mcp_notification_new("notifications/initialized", NULL);
        CHECK_EQ_INT(mcp_msg_write(note, &out), 0);
        CHECK_EQ_STR(written(&out), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        json_decref(note);

        /* Invalid ids build nothing (and the stolen values are freed: ASan checks). */
        json_t *bad = json_real(1.5);
        CHECK(mcp_request_new(bad, "x", json_object()) == NULL);
        CHECK(mcp_result_new(bad, json_object()) == NULL);
        CHECK(mcp_error_new(bad, 1, "m", json_object()) == NULL);
        CHECK(mcp_id_equal(id, bad) == false);
        json_t *sid = json_string("5");
        CHECK(mcp_id_equal(id, sid) == false);
        json_decref(sid);
        json_decref(bad);

        /* The writer's bound: out's own, and out unchanged when over it. */
        dynbuf small;
        dynbuf_init(&small, 16);
        json_t *longmsg = mcp_notification_new("notifications/message", json_pack("{s:s}", "data", "0123456789abcdef"));
        CHECK_EQ_INT(mcp_msg_write(longmsg, &small), -E2BIG);
        CHECK_EQ_INT(small.len, 0);
        json_decref(longmsg);
        dynbuf_free(&small);
        json_decref(id);
        dynbuf_free(&out);
}

int main(void) {
        test_framing();
        test_parse_kinds();
        test_parse_refused();
        test_build_write();
        return test_done();
}
